package scan_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

type recheckRig struct {
	sim    *sim.Server
	simURL string
	db     store.State
	urls   *scan.URLs
	r      *scan.Recheck
	mem    *scanstore.URLMemory
	rep    *reputation.Client
	clock  *testutil.Clock
	t0     time.Time
	mu     sync.Mutex
	seen   []scan.Change
	// unshown is what OnChange returns: the URLs whose flip it could not
	// show everywhere.
	unshown []string
}

// newRecheckRig is a recheck over the simulator and a store on disk; opts
// are added to the reputation client's.
func newRecheckRig(t *testing.T, simCfg sim.Config, max int, opts ...reputation.Option) *recheckRig {
	t.Helper()
	srv, base := simtest.Start(t, simCfg)
	rep, err := reputation.New(base, "k", append([]reputation.Option{reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(1, time.Millisecond, time.Millisecond)}, opts...)...)
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
	mem := &scanstore.URLMemory{DB: db, Schedule: sched, Now: clock.Now}
	urls := scan.NewURLs(rep, scan.URLOptions{Memory: mem, Now: clock.Now, Wait: reputation.WaitOptions{
		Backoff: reputation.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Deadline: 2 * time.Second}})
	t.Cleanup(urls.Close)
	rig := &recheckRig{sim: srv, simURL: base, db: db, urls: urls, mem: mem, rep: rep, clock: clock, t0: t0}
	rig.r = &scan.Recheck{Store: mem, URLs: urls, Max: max, Now: clock.Now,
		OnChange: func(_ context.Context, ch []scan.Change) []string {
			rig.mu.Lock()
			defer rig.mu.Unlock()
			rig.seen = append(rig.seen, ch...)
			return rig.unshown
		}}
	return rig
}

func TestRecheckPicksOldestDueFirstWithinMax(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 2)
	var urls []string
	for i := range 5 {
		u := fmt.Sprintf("https://example.com/%d", i)
		urls = append(urls, u)
		if v := rig.urls.Check(t.Context(), u, scan.CheckOptions{}); v.Level != verdict.Clean {
			t.Fatalf("%s: %+v", u, v)
		}
		rig.clock.Set(rig.clock.Now().Add(time.Minute)) // first seen one minute apart
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("nothing is due yet: %+v", st)
	}
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Due != 2 || st.Checked != 2 {
		t.Fatalf("run 1: %+v %v", st, err)
	}
	for i, u := range urls {
		want := 1
		if i < 2 {
			want = 2 // the two oldest were rechecked
		}
		if n := len(rig.sim.URLTasks(u)); n != want {
			t.Errorf("%s: %d scans, want %d", u, n, want)
		}
	}
	st, _ = rig.r.Run(t.Context())
	st2, _ := rig.r.Run(t.Context())
	if st.Checked != 2 || st2.Checked != 1 {
		t.Fatalf("runs 2 and 3: %+v %+v", st, st2)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("all rechecked at 1h; the 6h age is not due yet: %+v", st)
	}
	tg, _ := rig.db.Target(urls[0])
	if tg.Rechecks != 1 || !tg.NextCheck.Equal(tg.FirstSeen.Add(6*time.Hour)) {
		t.Fatalf("schedule not advanced: %+v", tg)
	}
}

func TestRecheckReportsAFlip(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	const u = "https://example.org/landing"
	rig.urls.Check(t.Context(), u, scan.CheckOptions{})
	rig.urls.Check(t.Context(), "https://example.org/steady", scan.CheckOptions{})
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.clock.Set(rig.t0.Add(61 * time.Minute))
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Checked != 2 || st.Changed != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	if len(rig.seen) != 1 || rig.seen[0].Target.Target != u || rig.seen[0].Was != verdict.Clean || rig.seen[0].Now.Level != verdict.Malicious {
		t.Fatalf("changes %+v", rig.seen)
	}
	hist, _ := rig.db.History(u)
	if len(hist) != 2 || hist[1].Source != "recheck" || hist[1].Level != verdict.Malicious {
		t.Fatalf("history %+v", hist)
	}
	// The cache did not answer the recheck.
	if n := len(rig.sim.URLTasks(u)); n != 2 {
		t.Fatalf("%d scans", n)
	}
}

// RunDueBy brings the next recheck forward: at t0 nothing is due by the
// clock, but everything due by t0+1h is rechecked now, with the change
// announced and the schedule advanced past that age (the shell's recheck).
func TestRecheckRunDueByBringsTheNextAgeForward(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	const u = "https://example.org/soon"
	rig.urls.Check(t.Context(), u, scan.CheckOptions{})
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.97})
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("Run: nothing is due at t0: %+v", st)
	}
	if st, _ := rig.r.RunDueBy(t.Context(), rig.t0.Add(59*time.Minute)); st.Due != 0 {
		t.Fatalf("RunDueBy before the first age: %+v", st)
	}
	st, err := rig.r.RunDueBy(t.Context(), rig.t0.Add(time.Hour))
	if err != nil || st.Due != 1 || st.Checked != 1 || st.Changed != 1 {
		t.Fatalf("RunDueBy at the first age: %+v %v", st, err)
	}
	if len(rig.seen) != 1 || rig.seen[0].Was != verdict.Clean || rig.seen[0].Now.Level != verdict.Malicious {
		t.Fatalf("changes %+v", rig.seen)
	}
	tg, _ := rig.db.Target(u)
	if tg.Rechecks != 1 || !tg.NextCheck.Equal(tg.FirstSeen.Add(6*time.Hour)) {
		t.Fatalf("schedule not advanced to the next age: %+v", tg)
	}
	if st, _ := rig.r.RunDueBy(t.Context(), rig.t0.Add(time.Hour)); st.Due != 0 {
		t.Fatalf("the 1h age is done: %+v", st)
	}
}

func TestRecheckRunsNeverOverlap(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	rig.urls.Check(t.Context(), "https://example.com/slow", scan.CheckOptions{})
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	rig.sim.SetFaults(sim.Faults{Delay: 300 * time.Millisecond})
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(50 * time.Millisecond)
			}
			_, results[i] = rig.r.Run(t.Context())
		}()
	}
	wg.Wait()
	if results[0] != nil || !errors.Is(results[1], scan.ErrRunning) {
		t.Fatalf("results %v", results)
	}
	if n := len(rig.sim.URLTasks("https://example.com/slow")); n != 2 {
		t.Fatalf("%d scans: the overlapping run must not scan", n)
	}
}

func TestRecheckFailureIsRescheduledNotRepeated(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	rig.urls.Check(t.Context(), "https://example.com/down", scan.CheckOptions{})
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	rig.sim.SetFaults(sim.Faults{ErrorEvery: 1, ErrorStatus: 503})
	st, _ := rig.r.Run(t.Context())
	if st.Failed != 1 || st.Changed != 0 {
		t.Fatalf("%+v", st)
	}
	tg, _ := rig.db.Target("https://example.com/down")
	if tg.Level != verdict.Clean || !tg.NextCheck.Equal(tg.FirstSeen.Add(6*time.Hour)) {
		t.Fatalf("a failed recheck must keep the verdict and move on: %+v", tg)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("retried at once: %+v", st)
	}
}

func TestRecheckInterruptedByShutdownStaysDue(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	rig.urls.Check(t.Context(), "https://example.com/interrupted", scan.CheckOptions{})
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	rig.sim.SetFaults(sim.Faults{Delay: 2 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	rig.r.Run(ctx)
	if due, _ := rig.db.Due(rig.clock.Now(), 10); len(due) != 1 {
		t.Fatalf("an interrupted recheck must stay due: %+v", due)
	}
}

// countingDue counts the Due calls of a recheck.
type countingDue struct{ calls atomic.Int32 }

func (c *countingDue) Due(time.Time, int) ([]scan.DueURL, error) { c.calls.Add(1); return nil, nil }
func (c *countingDue) RecheckFailed(string) error                { return nil }

// testLease is a term of the recheck's lead that the test ends.
type testLease struct {
	token    uint64
	once     sync.Once
	done     chan struct{}
	released atomic.Int32
}

func newTestLease(token uint64) *testLease {
	return &testLease{token: token, done: make(chan struct{})}
}

func (l *testLease) Token() uint64         { return l.token }
func (l *testLease) Done() <-chan struct{} { return l.done }
func (l *testLease) end()                  { l.once.Do(func() { close(l.done) }) }
func (l *testLease) Release()              { l.released.Add(1); l.end() }

// With several replicas on one database, only the one that leads runs a
// tick; the others follow and touch nothing.
func TestRecheckRunsOnlyWhereItLeads(t *testing.T) {
	due := &countingDue{}
	leading := false
	lease := newTestLease(1)
	r := &scan.Recheck{Store: due, Lead: func(context.Context) (scan.Lease, bool, error) {
		if !leading {
			return nil, false, nil
		}
		return lease, true, nil
	}}
	st, err := r.Run(t.Context())
	if err != nil || !st.Follower || due.calls.Load() != 0 {
		t.Fatalf("a follower ran the recheck: %+v, %v, %d Due calls", st, err, due.calls.Load())
	}
	leading = true
	st, err = r.Run(t.Context())
	if err != nil || st.Follower || due.calls.Load() != 1 || lease.released.Load() != 1 {
		t.Fatalf("the leader: %+v, %v, %d Due calls, %d releases", st, err, due.calls.Load(), lease.released.Load())
	}
}

// TestTwoLeadersRecheckEachURLOnce: two processes that both believe they
// lead the recheck (one lost its lead without noticing) run at the same
// moment on one store, each with its own pipeline: each due URL is
// claimed by one of them and rechecked once in all.
func TestTwoLeadersRecheckEachURLOnce(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 20)
	var urls []string
	for i := range 12 {
		u := fmt.Sprintf("https://example.com/twice/%d", i)
		urls = append(urls, u)
		if v := rig.urls.Check(t.Context(), u, scan.CheckOptions{}); v.Level != verdict.Clean {
			t.Fatalf("%s: %+v", u, v)
		}
	}
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	// The second process: its own pipeline on the same store.
	rep, err := reputation.New(rig.simURL, "k", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(1, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	mem := &scanstore.URLMemory{DB: rig.db, Schedule: store.Schedule{time.Hour, 6 * time.Hour}, Now: rig.clock.Now}
	urls2 := scan.NewURLs(rep, scan.URLOptions{Memory: mem, Now: rig.clock.Now, Wait: reputation.WaitOptions{
		Backoff: reputation.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Deadline: 2 * time.Second}})
	t.Cleanup(urls2.Close)
	other := &scan.Recheck{Store: mem, URLs: urls2, Max: 20, Now: rig.clock.Now}
	var wg sync.WaitGroup
	var a, b scan.RunStats
	wg.Go(func() { a, _ = rig.r.Run(t.Context()) })
	wg.Go(func() { b, _ = other.Run(t.Context()) })
	wg.Wait()
	if a.Checked+b.Checked != len(urls) || a.Taken+b.Taken != a.Due+b.Due-len(urls) {
		t.Fatalf("runs %+v and %+v: want %d rechecks in all, the rest taken by the other run", a, b, len(urls))
	}
	for _, u := range urls {
		if n := len(rig.sim.URLTasks(u)); n != 2 {
			t.Errorf("%s: %d scans, want the first and one recheck", u, n)
		}
	}
}

// TestRecheckStopsStartingWhenItsTermEnds: a run whose term of the lead
// ends starts no more rechecks (one at a time here: the one under way
// finishes); the rest stay due for the next leader.
func TestRecheckStopsStartingWhenItsTermEnds(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	for i := range 5 {
		rig.urls.Check(t.Context(), fmt.Sprintf("https://example.com/term/%d", i), scan.CheckOptions{})
	}
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	lease := newTestLease(4)
	rig.r.Parallel = 1
	rig.r.Lead = func(context.Context) (scan.Lease, bool, error) { return lease, true, nil }
	var once sync.Once
	rig.sim.SetFaults(sim.Faults{Delay: 100 * time.Millisecond})
	go func() {
		// The term ends while the first recheck is under way.
		for rig.sim.Count(sim.ServiceReputation, sim.OpScan) < 6 {
			time.Sleep(5 * time.Millisecond)
		}
		once.Do(lease.end)
	}()
	st, err := rig.r.Run(t.Context())
	if err != nil || !st.LeadLost || st.Checked != 1 {
		t.Fatalf("%+v %v: want one recheck, then the run stopped", st, err)
	}
	if due, _ := rig.db.Due(rig.clock.Now(), 10); len(due) != 4 {
		t.Fatalf("%d due after the run, want the 4 not started", len(due))
	}
}

// TestRecheckRunReportsItsLag: a run says how late the oldest due recheck
// was when it began (the recheck lag metric), from the store's due times:
// an hour late, then the next one's lateness once that one is done, and 0
// with nothing due.
func TestRecheckRunReportsItsLag(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 1)
	for i := range 2 {
		if v := rig.urls.Check(t.Context(), fmt.Sprintf("https://example.com/lag/%d", i), scan.CheckOptions{}); v.Level != verdict.Clean {
			t.Fatalf("%+v", v)
		}
		rig.clock.Set(rig.clock.Now().Add(10 * time.Minute))
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 || st.Lag != 0 {
		t.Fatalf("nothing due yet: %+v", st)
	}
	rig.clock.Set(rig.t0.Add(2 * time.Hour)) // due at t0+1h and t0+1h10m
	if st, err := rig.r.Run(t.Context()); err != nil || st.Lag != time.Hour {
		t.Fatalf("run 1: lag %v, want 1h (%+v, %v)", st.Lag, st, err)
	}
	if st, err := rig.r.Run(t.Context()); err != nil || st.Lag != 50*time.Minute {
		t.Fatalf("run 2: lag %v, want 50m (%+v, %v)", st.Lag, st, err)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 || st.Lag != 0 {
		t.Fatalf("nothing due: %+v", st)
	}
}

// unannouncing is the recheck's memory of a process killed after a
// flip's verdict was written and before its announcement was done: the
// flips are never marked announced.
type unannouncing struct{ *scanstore.URLMemory }

func (unannouncing) FlipAnnounced(string, verdict.Level) error { return errors.New("killed") }

// TestAFlipNotAnnouncedIsAnnouncedByTheNextRun: the verdict that flips a
// URL records the flip with it; a run that did not announce it (killed)
// leaves it pending, and the next run announces it, from the level the
// cards show, with the verdict recorded, without checking the URL again;
// once announced it is not announced again.
func TestAFlipNotAnnouncedIsAnnouncedByTheNextRun(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	const u = "https://example.org/flips-then-dies"
	rig.urls.Check(t.Context(), u, scan.CheckOptions{})
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.clock.Set(rig.t0.Add(61 * time.Minute))
	// Killed before the announcement: no OnChange, never marked announced.
	dying := &scan.Recheck{Store: unannouncing{rig.mem}, URLs: rig.urls, Max: 10, Now: rig.clock.Now}
	if st, err := dying.Run(t.Context()); err != nil || st.Changed != 1 {
		t.Fatalf("the run that dies: %+v %v", st, err)
	}
	if fs, _ := rig.db.PendingFlips(10); len(fs) != 1 || fs[0].Was != verdict.Clean {
		t.Fatalf("pending after the dead run: %+v", fs)
	}
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Checked != 0 || st.Changed != 1 {
		t.Fatalf("the next run: %+v %v; want the pending flip announced, nothing checked", st, err)
	}
	if len(rig.seen) != 1 || rig.seen[0].Target.Target != u || rig.seen[0].Was != verdict.Clean ||
		rig.seen[0].Now.Level != verdict.Malicious || rig.seen[0].Now.Scores[verdict.CatPhishing] < 0.9 {
		t.Fatalf("announced %+v", rig.seen)
	}
	if n := len(rig.sim.URLTasks(u)); n != 2 {
		t.Fatalf("%d scans: the pending flip was checked again", n)
	}
	if fs, _ := rig.db.PendingFlips(10); len(fs) != 0 {
		t.Fatalf("still pending after its announcement: %+v", fs)
	}
	if st, _ := rig.r.Run(t.Context()); st.Changed != 0 {
		t.Fatalf("announced again: %+v", st)
	}
}

// TestAFlipNotShownEverywhereIsAnnouncedAgain: a run whose OnChange says
// a flip is not shown on every card (Slack refused a card) leaves the flip
// pending; the next run announces it again, without checking the URL
// again, and once OnChange shows it the flip is done.
func TestAFlipNotShownEverywhereIsAnnouncedAgain(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	const u = "https://example.org/flips-unshown"
	rig.urls.Check(t.Context(), u, scan.CheckOptions{})
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.clock.Set(rig.t0.Add(61 * time.Minute))
	rig.unshown = []string{u}
	for run := 1; run <= 2; run++ {
		if st, err := rig.r.Run(t.Context()); err != nil || st.Changed != 1 {
			t.Fatalf("run %d, Slack refusing: %+v %v", run, st, err)
		}
		if fs, _ := rig.db.PendingFlips(10); len(fs) != 1 || fs[0].Was != verdict.Clean {
			t.Fatalf("run %d: pending %+v, want the flip from clean", run, fs)
		}
	}
	rig.mu.Lock()
	rig.unshown = nil
	rig.mu.Unlock()
	if st, err := rig.r.Run(t.Context()); err != nil || st.Changed != 1 || st.Checked != 0 {
		t.Fatalf("the run Slack takes it: %+v %v", st, err)
	}
	if fs, _ := rig.db.PendingFlips(10); len(fs) != 0 {
		t.Fatalf("still pending once shown: %+v", fs)
	}
	if st, _ := rig.r.Run(t.Context()); st.Changed != 0 {
		t.Fatalf("announced again once shown: %+v", st)
	}
	if len(rig.seen) != 3 || rig.seen[2].Was != verdict.Clean || rig.seen[2].Now.Level != verdict.Malicious {
		t.Fatalf("announced %d times (%+v), want 3, the last from clean to malicious", len(rig.seen), rig.seen)
	}
	if n := len(rig.sim.URLTasks(u)); n != 2 {
		t.Fatalf("%d scans, want the first and one recheck", n)
	}
}

// TestAFlipSlackRefusesForADayIsGivenUp: a flip whose cards OnChange
// never shows is announced again by every run for a day, then no more (a
// card Slack keeps refusing is not tried for ever).
func TestAFlipSlackRefusesForADayIsGivenUp(t *testing.T) {
	t.Parallel()
	rig := newRecheckRig(t, sim.Config{}, 10)
	const u = "https://example.org/flips-never-shown"
	rig.urls.Check(t.Context(), u, scan.CheckOptions{})
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.unshown = []string{u}
	rig.clock.Set(rig.t0.Add(61 * time.Minute))
	if st, err := rig.r.Run(t.Context()); err != nil || st.Changed != 1 {
		t.Fatalf("the flip: %+v %v", st, err)
	}
	// The rechecks due meanwhile (6 h, 24 h) find it malicious still.
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.clock.Set(rig.t0.Add(23 * time.Hour))
	if st, _ := rig.r.Run(t.Context()); st.Changed != 1 {
		t.Fatalf("23 h on: %+v, want the flip announced again", st)
	}
	if fs, _ := rig.db.PendingFlips(10); len(fs) != 1 {
		t.Fatalf("23 h on: pending %+v, want the flip", fs)
	}
	rig.sim.FlipOnNextScan(u, sim.Scores{Phishing: 0.96})
	rig.clock.Set(rig.t0.Add(25*time.Hour + 2*time.Minute))
	rig.r.Run(t.Context())
	if fs, _ := rig.db.PendingFlips(10); len(fs) != 0 {
		t.Fatalf("a day on: still pending %+v", fs)
	}
	if tg, _ := rig.db.Target(u); tg.Level != verdict.Malicious {
		t.Fatalf("the URL is %v, want malicious still", tg.Level)
	}
}
