package scan_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/scan/scanstore"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// switchGate says every host is internal once on is set.
type switchGate struct{ on atomic.Bool }

func (g *switchGate) CheckURL(context.Context, string) (string, bool) {
	return "10.0.0.0/8 is a private network (RFC 1918)", g.on.Load()
}

// A URL whose host moved inside the network since it was first scanned is
// not sent again by a recheck, is not announced as a change, and keeps its
// verdict; the next age of the schedule stays due.
func TestRecheckOfAHostNowInternalIsNotSent(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{})
	rep, err := reputation.New(base, "k", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(t0)
	db, err := bolt.Open(t.TempDir(), bolt.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sched := store.Schedule{time.Hour, 6 * time.Hour}
	gate := &switchGate{}
	mem := &scanstore.URLMemory{DB: db, Schedule: sched, Now: clock.Now}
	urls := scan.NewURLs(rep, scan.URLOptions{Memory: mem, Now: clock.Now,
		Hosts: gate, Wait: reputation.WaitOptions{Backoff: reputation.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Deadline: 2 * time.Second}})
	t.Cleanup(urls.Close)
	var changes atomic.Int32
	r := &scan.Recheck{Store: mem, URLs: urls, Max: 10, Now: clock.Now,
		OnChange: func(_ context.Context, ch []scan.Change) []string { changes.Add(int32(len(ch))); return nil }}

	const u = "https://moved.example.org/app"
	if v := urls.Check(t.Context(), u, scan.CheckOptions{}); v.Level != verdict.Clean {
		t.Fatalf("first scan: %+v", v)
	}
	gate.on.Store(true)
	clock.Set(t0.Add(61 * time.Minute))
	st, err := r.Run(t.Context())
	if err != nil || st.Changed != 0 || changes.Load() != 0 {
		t.Fatalf("%+v %v (changes %d)", st, err, changes.Load())
	}
	if n := len(srv.URLTasks(u)); n != 1 {
		t.Fatalf("%d submissions: the recheck sent a host that resolves inside the network", n)
	}
	tg, _ := db.Target(u)
	if tg.Level != verdict.Clean || !tg.NextCheck.Equal(tg.FirstSeen.Add(6*time.Hour)) {
		t.Fatalf("target %+v", tg)
	}
}
