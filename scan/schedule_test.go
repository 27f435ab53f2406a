package scan

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
)

// statusCalls counts the status requests the simulator received for task id.
func statusCalls(srv *sim.Server, id string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Op == sim.OpStatus && strings.Contains(r.Path, "/"+id+"/") {
			n++
		}
	}
	return n
}

// With no schedule configured, the pipeline learns from its own analyses
// how long the service takes, and counts each analysis's status calls.
func TestURLsLearnHowLongAnalysesTake(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	sleep := func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }
	u, srv := newURLs(t, sim.Config{Now: clock.Now, Profile: sim.RealisticProfile()}, func(o *URLOptions) {
		o.Wait = reputation.WaitOptions{Sleep: sleep}
	})
	l := u.LearnedSchedule()
	if l == nil {
		t.Fatal("no learned schedule by default")
	}
	var last URLVerdict
	for i := range 12 {
		v := u.Check(t.Context(), fmt.Sprintf("https://d30s.test/%d", i), CheckOptions{})
		if v.Err != nil || v.Polls == 0 || v.Polls != statusCalls(srv, v.TaskID) {
			t.Fatalf("check %d: err %v, Polls %d, simulator saw %d", i, v.Err, v.Polls, statusCalls(srv, v.TaskID))
		}
		last = v
	}
	st := l.Stats()
	if st.Samples != 12 || !st.Learning || st.Median < 28*time.Second || st.Median > 32*time.Second {
		t.Fatalf("learned %+v, want 12 samples around 30 s", st)
	}
	// DefaultBackoff needs ~14 calls for 30 s; once learned, 8 or so.
	if last.Polls > 10 {
		t.Errorf("a 30 s analysis after learning made %d status calls", last.Polls)
	}

	// A resumed analysis did not start its wait at submission: not learned.
	v := u.Check(t.Context(), "https://d30s.test/0", CheckOptions{TaskID: last.TaskID})
	if v.Err != nil || v.TaskID != last.TaskID || v.Polls != 1 {
		t.Fatalf("resume: %+v", v)
	}
	if st := l.Stats(); st.Samples != 12 {
		t.Errorf("a resumed analysis was learned: %d samples", st.Samples)
	}
}

func TestURLsScheduleChoice(t *testing.T) {
	t.Parallel()
	fixed, _ := newURLs(t, sim.Config{}, nil) // fastWait: a Backoff
	if fixed.LearnedSchedule() != nil {
		t.Error("a configured Backoff was replaced by a learned schedule")
	}
	mine := reputation.NewLearnedSchedule()
	shared, _ := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.Wait = reputation.WaitOptions{Schedule: mine, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	})
	if shared.LearnedSchedule() != mine {
		t.Fatal("the configured LearnedSchedule is not the one used")
	}
	if v := shared.Check(t.Context(), "https://example.com/x", CheckOptions{}); v.Err != nil || v.Polls != 3 {
		t.Fatalf("check: %+v", v) // fast profile: pending, processing, completed
	}
	if mine.Stats().Samples != 1 {
		t.Errorf("the configured LearnedSchedule learned nothing: %+v", mine.Stats())
	}
	var other reputation.Schedule = reputation.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
	custom, _ := newURLs(t, sim.Config{}, func(o *URLOptions) { o.Wait = reputation.WaitOptions{Schedule: other} })
	if custom.LearnedSchedule() != nil {
		t.Error("a configured Schedule was replaced by a learned one")
	}
}
