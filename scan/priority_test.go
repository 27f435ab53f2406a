package scan_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

// laneLog records the lane of each request the client makes.
type laneLog struct {
	mu    sync.Mutex
	lanes []string
}

func (l *laneLog) observe(e reputation.Event) {
	if e.IsWait {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lanes = append(l.lanes, e.Op+" "+e.Priority)
}

// take returns the requests made since the last take, in lanes other
// than want, and how many there were in all.
func (l *laneLog) take(want string) (others []string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lanes {
		if !strings.HasSuffix(s, " "+want) {
			others = append(others, s)
		}
	}
	n = len(l.lanes)
	l.lanes = nil
	return others, n
}

// The URL pipeline's requests wait for the service's budgets in the lane of
// the work they are for (reputation.WithPriority): a new link's in High; a
// scheduled recheck's, a deferred check's and a resumed analysis's in Low,
// behind them.
func TestURLRequestsWaitInTheirWorksLane(t *testing.T) {
	t.Parallel()
	var lanes laneLog
	rig := newRecheckRig(t, sim.Config{}, 10, reputation.WithObserver(lanes.observe))
	check := func(what, want string) {
		t.Helper()
		if others, n := lanes.take(want); n == 0 || len(others) > 0 {
			t.Errorf("%s: %d requests, these not in lane %s: %q", what, n, want, others)
		}
	}

	const link = "https://example.com/new"
	if v := rig.urls.Check(t.Context(), link, scan.CheckOptions{}); v.Level != verdict.Clean {
		t.Fatalf("new link: %+v", v)
	}
	check("a new link", "high")

	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	if st, err := rig.r.Run(t.Context()); err != nil || st.Checked != 1 {
		t.Fatalf("recheck run: %+v %v", st, err)
	}
	check("a recheck", "low")

	const deferred = "https://example.com/deferred"
	if err := rig.mem.Defer(deferred, card.Ref{Channel: "C1", SourceTS: "1.1"}); err != nil {
		t.Fatal(err)
	}
	if st, err := rig.r.Run(t.Context()); err != nil || st.Deferred != 1 || st.DeferredFailed != 0 {
		t.Fatalf("deferred check run: %+v %v", st, err)
	}
	check("a deferred check", "low")

	// An analysis a previous process submitted and did not finish.
	const resumed = "https://example.com/resumed"
	sub, err := rig.rep.Scan(t.Context(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	lanes.take("")
	if v := rig.urls.Check(t.Context(), resumed, scan.CheckOptions{TaskID: sub.TaskID}); v.Level != verdict.Clean || v.TaskID != sub.TaskID {
		t.Fatalf("resumed: %+v", v)
	}
	check("a resumed analysis", "low")
}

// A link read from a channel's history (CheckOptions.Background) is
// analysed in the Low lane, behind every link someone waits for; when a
// live message's check joins that analysis in flight, its next requests
// are High: the live card does not wait behind the history.
func TestBackgroundCheckWaitsInLowUntilSomeoneJoins(t *testing.T) {
	t.Parallel()
	var lanes laneLog
	// Each status shows for 30 polls: the analysis is in flight long
	// enough for the live check to join it.
	rig := newRecheckRig(t, sim.Config{Profile: sim.Profile{PerPoll: true, PollsPerPhase: 30}}, 10, reputation.WithObserver(lanes.observe))

	const history = "https://example.com/history-only"
	if v := rig.urls.Check(t.Context(), history, scan.CheckOptions{Background: true}); v.Level != verdict.Clean {
		t.Fatalf("history link: %+v", v)
	}
	if others, n := lanes.take("low"); n == 0 || len(others) > 0 {
		t.Errorf("a history link: %d requests, these not in lane low: %q", n, others)
	}

	const shared = "https://example.com/history-then-live"
	done := make(chan scan.URLVerdict, 1)
	go func() { done <- rig.urls.Check(t.Context(), shared, scan.CheckOptions{Background: true}) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lanes.mu.Lock()
		n := len(lanes.lanes)
		lanes.mu.Unlock()
		if n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the history's analysis made no requests")
		}
		time.Sleep(time.Millisecond)
	}
	if others, _ := lanes.take("low"); len(others) > 0 {
		t.Errorf("before the join, requests not in lane low: %q", others)
	}
	live := rig.urls.Check(t.Context(), shared, scan.CheckOptions{For: scan.Requester{User: "U1", Channel: "C1"}})
	if v := <-done; v.Level != verdict.Clean || live.Level != verdict.Clean {
		t.Fatalf("history %+v, live %+v", v, live)
	}
	lanes.mu.Lock()
	after := slices.Clone(lanes.lanes)
	lanes.mu.Unlock()
	// A request made as the join happened may still be Low; every one
	// after it is High, the result's among them.
	if len(after) < 3 {
		t.Fatalf("after the join: %q", after)
	}
	for _, s := range after[2:] {
		if !strings.HasSuffix(s, " high") {
			t.Errorf("after the join, a request in %q (all: %q)", s, after)
			break
		}
	}
}
