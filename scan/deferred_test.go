package scan_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
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

// The deferred checks: a link not sent because its requester had used
// their allowance is checked later by the recheck, for nobody in
// particular, and its outcome is reported whatever it is.

var flooder = scan.Requester{User: "U0FLOOD", Channel: "C0SEC"}

// noAllowance refuses everyone and counts who was asked.
type noAllowance struct {
	mu    sync.Mutex
	asked []scan.Requester
}

func (a *noAllowance) Take(r scan.Requester) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return false
}

func (*noAllowance) Refused(context.Context, string, []scan.Requester) {}

func (a *noAllowance) askedFor() []scan.Requester {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

type deferRig struct {
	*recheckRig
	mem     *scanstore.URLMemory
	allow   *noAllowance
	reports []scan.RunStats
}

// newDeferRig is the recheck rig with a pipeline that refuses every
// requester (nothing is sent for anyone) and hosts (if set) as its gate.
func newDeferRig(t *testing.T, max int, hosts scan.HostGate) *deferRig {
	t.Helper()
	srv, base := simtest.Start(t, sim.Config{})
	rep, err := reputation.New(base, "k", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(1, time.Millisecond, time.Millisecond))
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
	mem := &scanstore.URLMemory{DB: db, Schedule: store.Schedule{time.Hour, 6 * time.Hour}, Now: clock.Now}
	allow := &noAllowance{}
	urls := scan.NewURLs(rep, scan.URLOptions{Memory: mem, Now: clock.Now, Allowance: allow, Hosts: hosts, Wait: reputation.WaitOptions{
		Backoff: reputation.Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Deadline: 2 * time.Second}})
	t.Cleanup(urls.Close)
	rig := &deferRig{recheckRig: &recheckRig{sim: srv, simURL: base, db: db, urls: urls, clock: clock, t0: t0}, mem: mem, allow: allow}
	rig.r = &scan.Recheck{Store: mem, URLs: urls, Max: max, Now: clock.Now,
		OnChange: func(_ context.Context, ch []scan.Change) []string {
			rig.mu.Lock()
			rig.seen = append(rig.seen, ch...)
			rig.mu.Unlock()
			return nil
		},
		OnRun: func(st scan.RunStats) { rig.reports = append(rig.reports, st) }}
	return rig
}

// refuse checks url for the flooder (refused) and defers it for a card.
func (rig *deferRig) refuse(t *testing.T, url, cardTS string) {
	t.Helper()
	v := rig.urls.Check(t.Context(), url, scan.CheckOptions{For: flooder})
	if !errors.Is(v.Err, scan.ErrOverAllowance) || v.Level != verdict.Unknown {
		t.Fatalf("%s for a requester with no allowance left: %+v", url, v)
	}
	if err := rig.mem.Defer(url, card.Ref{Channel: "C0SEC", SourceTS: cardTS}); err != nil {
		t.Fatal(err)
	}
}

func (rig *deferRig) changes() []scan.Change {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return slices.Clone(rig.seen)
}

// TestDeferredCheckIsMadeByTheNextRunForNobody: a phishing link refused
// for its poster's allowance is checked by the next run (at once, not at
// the schedule's first age), for nobody (the allowance is not asked), and
// reported as a deferred change from "could not check" with the cards
// that show it; its verdict is recorded as the URL's first scan, so its
// schedule starts there; the deferral is over.
func TestDeferredCheckIsMadeByTheNextRunForNobody(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 10, nil)
	const u = "https://secure-login.phish.test/verify"
	rig.refuse(t, u, "1.1")
	if n := len(rig.sim.URLTasks(u)); n != 0 {
		t.Fatalf("refused, yet submitted %d times", n)
	}
	rig.clock.Set(rig.t0.Add(time.Minute))
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Due != 1 || st.Deferred != 1 || st.DeferredFailed != 0 || st.Checked != 0 || st.Changed != 0 {
		t.Fatalf("run: %+v %v; want one deferred check", st, err)
	}
	if st.Lag != time.Minute {
		t.Errorf("lag %v, want the deferred check's minute", st.Lag)
	}
	ch := rig.changes()
	if len(ch) != 1 || !ch[0].Target.Deferred || ch[0].Target.Target != u || ch[0].Was != verdict.Unknown ||
		ch[0].Now.Level != verdict.Malicious || ch[0].Now.Err != nil || len(ch[0].Target.Cards) != 1 || ch[0].Target.Cards[0].SourceTS != "1.1" {
		t.Fatalf("changes %+v", ch)
	}
	if n := len(rig.sim.URLTasks(u)); n != 1 {
		t.Errorf("%d submissions, want the deferred check's", n)
	}
	if asked := rig.allow.askedFor(); !slices.Equal(asked, []scan.Requester{flooder}) {
		t.Errorf("the allowance was asked for %v, want the flooder's first try only", asked)
	}
	tg, err := rig.db.Target(u)
	if err != nil || tg.Level != verdict.Malicious || !tg.Deferred.IsZero() || tg.Rechecks != 0 || !tg.NextCheck.Equal(tg.FirstSeen.Add(time.Hour)) {
		t.Fatalf("after the deferred check: %+v %v", tg, err)
	}
	if h, _ := rig.db.History(u); len(h) != 1 || h[0].Source != "deferred" {
		t.Fatalf("history %+v", h)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("due again after its check: %+v", st)
	}
}

// deferMeanwhile is the recheck's memory, with another card deferring
// the same link right after the run listed the due deferred checks, before
// it claims them (a message posted at that moment).
type deferMeanwhile struct {
	*scanstore.URLMemory
	rig  *deferRig
	t    *testing.T
	once sync.Once
}

func (d *deferMeanwhile) DueDeferred(now time.Time, limit int) ([]scan.DueURL, error) {
	due, err := d.URLMemory.DueDeferred(now, limit)
	d.once.Do(func() {
		for _, tg := range due {
			d.rig.refuse(d.t, tg.Target, "1.2")
		}
	})
	return due, err
}

// TestAClaimedDeferredCheckReachesACardDeferredMeanwhile: a card that
// defers a link after the run listed it as due but before the run claimed
// it is told the outcome with the first card: the claim takes its
// deferral too, so no later run will make the check for it.
func TestAClaimedDeferredCheckReachesACardDeferredMeanwhile(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 10, nil)
	rig.r.Store = &deferMeanwhile{URLMemory: rig.mem, rig: rig, t: t}
	const u = "https://secure-login.phish.test/meanwhile"
	rig.refuse(t, u, "1.1")
	rig.clock.Set(rig.t0.Add(time.Minute))
	if st, err := rig.r.Run(t.Context()); err != nil || st.Deferred != 1 {
		t.Fatalf("run: %+v %v; want one deferred check", st, err)
	}
	ch := rig.changes()
	if len(ch) != 1 {
		t.Fatalf("changes %+v", ch)
	}
	var told []string
	for _, c := range ch[0].Target.Cards {
		told = append(told, c.SourceTS)
	}
	slices.Sort(told)
	if !slices.Equal(told, []string{"1.1", "1.2"}) {
		t.Fatalf("the outcome went to the cards %v, want both 1.1 and the one deferred meanwhile, 1.2", told)
	}
	if tg, err := rig.db.Target(u); err != nil || !tg.Deferred.IsZero() {
		t.Fatalf("after the run: deferred %v %v; want none pending", tg.Deferred, err)
	}
}

// TestDeferredChecksAndRechecksShareARun: a flood of deferred checks,
// due before any recheck, takes half of a run, not all of it, and the
// scheduled rechecks the other half; a kind with fewer due leaves its
// places to the other.
func TestDeferredChecksAndRechecksShareARun(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 8, nil)
	// 30 deferred checks due from t0; 6 rechecks due from t0+1h.
	for i := range 30 {
		rig.refuse(t, fmt.Sprintf("https://flood.example.com/%d", i), fmt.Sprint(i))
	}
	var scheduled []string
	for i := range 6 {
		u := fmt.Sprintf("https://example.org/old/%d", i)
		scheduled = append(scheduled, u)
		if _, _, err := rig.db.RecordVerdict(store.Verdict{Target: u, Kind: "url", Level: verdict.Clean, Source: "scan"}, nil,
			store.Schedule{time.Hour}, false); err != nil {
			t.Fatal(err)
		}
	}
	rig.clock.Set(rig.t0.Add(2 * time.Hour))
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Due != 8 || st.Deferred != 4 || st.Checked != 4 {
		t.Fatalf("run 1: %+v %v; want 4 deferred checks and 4 rechecks", st, err)
	}
	// The rechecks left take their half; the rest goes to the flood.
	st, _ = rig.r.Run(t.Context())
	if st.Due != 8 || st.Checked != 2 || st.Deferred != 6 {
		t.Fatalf("run 2: %+v; want the 2 rechecks left and 6 deferred checks", st)
	}
	for _, u := range scheduled {
		if n := len(rig.sim.URLTasks(u)); n != 1 {
			t.Errorf("%s rechecked %d times, want once", u, n)
		}
	}
	for st.Due > 0 {
		st, _ = rig.r.Run(t.Context())
	}
	if n := len(rig.changes()); n != 30 {
		t.Fatalf("%d deferred checks announced, want 30", n)
	}
	// Few deferred checks: the rechecks take the places they leave.
	for i := range 2 {
		rig.refuse(t, fmt.Sprintf("https://late.example.com/%d", i), fmt.Sprint("late", i))
	}
	for i := range 20 {
		if _, _, err := rig.db.RecordVerdict(store.Verdict{Target: fmt.Sprintf("https://example.org/new/%d", i), Kind: "url", Level: verdict.Clean,
			Source: "scan"}, nil, store.Schedule{time.Hour}, false); err != nil {
			t.Fatal(err)
		}
	}
	rig.clock.Set(rig.clock.Now().Add(2 * time.Hour))
	if st, _ := rig.r.Run(t.Context()); st.Due != 8 || st.Deferred != 2 || st.Checked != 6 {
		t.Fatalf("2 deferred and 20 rechecks due: %+v; want both deferred and 6 rechecks", st)
	}
}

// TestDeferredCheckReusesAFreshVerdict: a link someone else got checked
// after it was deferred is not submitted again: the deferred check takes
// the verdict within the TTL, and reports it although the level did not
// change (the deferred card still waits for it).
func TestDeferredCheckReusesAFreshVerdict(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 10, nil)
	const u = "https://example.com/shared"
	rig.refuse(t, u, "1.1")
	// Checked meanwhile for someone the allowance does not concern (a
	// check for nobody in particular, as this rig refuses everyone).
	if v := rig.urls.Check(t.Context(), u, scan.CheckOptions{Deferred: true}); v.Level != verdict.Clean || v.Cached {
		t.Fatalf("first check: %+v", v)
	}
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Deferred != 1 {
		t.Fatalf("run: %+v %v", st, err)
	}
	if ch := rig.changes(); len(ch) != 1 || ch[0].Was != verdict.Clean || ch[0].Now.Level != verdict.Clean || !ch[0].Now.Cached {
		t.Fatalf("changes %+v: want the cached clean verdict reported", ch)
	}
	if n := len(rig.sim.URLTasks(u)); n != 1 {
		t.Fatalf("%d submissions, want 1", n)
	}
}

// TestDeferredCheckThatFailsIsReportedOnce: a deferred check the service
// cannot complete is reported (the card says why) and not tried again
// run after run.
func TestDeferredCheckThatFailsIsReportedOnce(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 10, nil)
	const u = "https://www.fail.test/landing"
	rig.refuse(t, u, "1.1")
	st, err := rig.r.Run(t.Context())
	if err != nil || st.Deferred != 1 || st.DeferredFailed != 1 {
		t.Fatalf("run: %+v %v", st, err)
	}
	ch := rig.changes()
	if len(ch) != 1 || ch[0].Now.Err == nil || ch[0].Now.Level != verdict.Unknown || ch[0].Now.Problem == "" {
		t.Fatalf("changes %+v: want the failure reported", ch)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("a failed deferred check is due again: %+v", st)
	}
	if tg, _ := rig.db.Target(u); tg.Level != verdict.Unknown || !tg.Deferred.IsZero() || !tg.NextCheck.IsZero() {
		t.Fatalf("after the failure: %+v", tg)
	}
}

// TestDeferredAgainDuringItsCheckStaysPending: a card that defers the
// link while its check is under way (or that the announcement could not
// reach, which defers it again) gets the next run's outcome: ending the
// check leaves the new deferral pending.
func TestDeferredAgainDuringItsCheckStaysPending(t *testing.T) {
	t.Parallel()
	rig := newDeferRig(t, 10, nil)
	const u = "https://evil.test/again"
	rig.refuse(t, u, "1.1")
	rig.r.OnChange = func(context.Context, []scan.Change) []string {
		if err := rig.mem.Defer(u, card.Ref{Channel: "C0SEC", SourceTS: "2.1"}); err != nil {
			t.Error(err)
		}
		return nil
	}
	if st, _ := rig.r.Run(t.Context()); st.Deferred != 1 {
		t.Fatalf("run 1: %+v", st)
	}
	rig.r.OnChange = nil
	st, _ := rig.r.Run(t.Context())
	if st.Deferred != 1 {
		t.Fatalf("run 2: %+v; want the second card's deferral made", st)
	}
	if n := len(rig.sim.URLTasks(u)); n != 1 {
		t.Fatalf("%d submissions: the second deferred check should reuse the first's verdict", n)
	}
	if st, _ := rig.r.Run(t.Context()); st.Due != 0 {
		t.Fatalf("run 3: %+v", st)
	}
}

// gateHosts holds every host lookup until open is closed.
type gateHosts struct{ open chan struct{} }

func (g *gateHosts) CheckURL(ctx context.Context, _ string) (string, bool) {
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return "", false
}

// TestDeferredCheckThatJoinsARefusedAnalysisMakesItsOwn: a deferred check
// that joins an analysis of the same link started for someone who has no
// allowance left is not refused with it (it asks for none): it starts its
// own, and gets the verdict.
func TestDeferredCheckThatJoinsARefusedAnalysisMakesItsOwn(t *testing.T) {
	t.Parallel()
	gate := &gateHosts{open: make(chan struct{})}
	rig := newDeferRig(t, 10, gate)
	const u = "https://malware.test/payload"
	// Check calls OnStatus once the check is in the pipeline's table of
	// analyses (started, or joined).
	inFlight := func(ch chan struct{}) func(string) {
		var once sync.Once
		return func(string) { once.Do(func() { close(ch) }) }
	}
	started, joined := make(chan struct{}), make(chan struct{})
	live := make(chan scan.URLVerdict, 1)
	go func() {
		live <- rig.urls.Check(t.Context(), u, scan.CheckOptions{For: flooder, OnStatus: inFlight(started)})
	}()
	<-started
	// The flooder's analysis waits at the gate, before its allowance is
	// asked: the deferred check joins it.
	deferred := make(chan scan.URLVerdict, 1)
	go func() {
		deferred <- rig.urls.Check(t.Context(), u, scan.CheckOptions{Deferred: true, OnStatus: inFlight(joined)})
	}()
	<-joined
	close(gate.open)
	if v := <-live; !errors.Is(v.Err, scan.ErrOverAllowance) {
		t.Fatalf("the flooder's check: %+v", v)
	}
	if v := <-deferred; v.Err != nil || v.Level != verdict.Malicious {
		t.Fatalf("the deferred check: %+v; want its own verdict", v)
	}
}
