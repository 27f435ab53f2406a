package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/verdict"
)

var (
	flooder = Requester{User: "UFLOOD", Channel: "CGENERAL"}
	victim  = Requester{User: "UVICTIM", Channel: "CSEC"}
)

// budgetURLs is a URL pipeline whose client has run and report budgets of
// perSecond each (burst 1), against a simulator whose analyses take 300 ms.
func budgetURLs(t *testing.T, perSecond float64, mod func(*URLOptions)) (*URLs, *sim.Server) {
	t.Helper()
	srv, base := simtest.Start(t, sim.Config{Profile: sim.Profile{Name: "fair", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond}})
	limit := reputation.Limit{Rate: perSecond, Burst: 1}
	rep, err := reputation.New(base, simKey, reputation.WithRateLimits(limit, limit),
		reputation.WithRetries(2, time.Millisecond, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	opt := URLOptions{Wait: reputation.WaitOptions{
		Backoff:  reputation.Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond},
		Deadline: time.Minute,
	}}
	if mod != nil {
		mod(&opt)
	}
	u := NewURLs(rep, opt)
	t.Cleanup(u.Close)
	return u, srv
}

// waitUntil polls cond every few milliseconds for up to 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// TestFloodDoesNotHoldBackAnotherRequester: one requester's 20 links,
// each polled without pause and never finishing, keep both budgets (20/s)
// busy; another requester's link is then submitted within about one
// submission of the flood, and its status checks alternate with the
// flood's instead of waiting behind them. In arrival order the second
// link would wait for the 20 submissions and each of its polls for about
// 20 of the flood's.
func TestFloodDoesNotHoldBackAnotherRequester(t *testing.T) {
	t.Parallel()
	u, srv := budgetURLs(t, 20, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 20 {
		wg.Go(func() { u.Check(ctx, fmt.Sprintf("https://f%d.pending.test/", i), CheckOptions{For: flooder}) })
	}
	waitUntil(t, "the flood's first submissions", func() bool { return srv.Count(sim.ServiceReputation, sim.OpScan) >= 2 })
	before := srv.Count(sim.ServiceReputation, sim.OpScan)

	v := u.Check(t.Context(), "https://login.phish.test/verify", CheckOptions{For: victim})
	if v.Level != verdict.Malicious || v.Err != nil {
		t.Fatalf("the second requester's link: %s, %v", v.Level, v.Err)
	}
	mine, ok := srv.URLTask(v.TaskID)
	if !ok {
		t.Fatalf("task %s unknown to the simulator", v.TaskID)
	}
	floodFirst := 0
	for i := range 20 {
		for _, id := range srv.URLTasks(fmt.Sprintf("https://f%d.pending.test/", i)) {
			if task, _ := srv.URLTask(id); task.Created.Before(mine.Created) {
				floodFirst++
			}
		}
	}
	if ahead := floodFirst - before; ahead > 2 {
		t.Errorf("%d of the flood's submissions went before the second requester's link, after it arrived; want at most 2", ahead)
	}

	// Its polls: between its first status check and its result, the
	// flood's report requests number about as many as its own.
	var own, others int
	started := false
	for _, r := range srv.Requests() {
		if r.Service != sim.ServiceReputation || r.Bucket != sim.BucketReport {
			continue
		}
		isMine := strings.Contains(r.Path, "/"+v.TaskID+"/")
		if isMine && r.Op == sim.OpStatus {
			started = true
		}
		if !started {
			continue
		}
		if isMine {
			own++
			if r.Op == sim.OpResult {
				break
			}
		} else {
			others++
		}
	}
	if own < 2 || others > 2*own+2 {
		t.Errorf("during the second link's polling: %d of its own report requests, %d of the flood's; want the flood's at most about as many", own, others)
	}
	t.Logf("flood submissions ahead of the second link: %d; its report requests %d, the flood's meanwhile %d", floodFirst-before, own, others)
}

// TestFloodTakesAtMostHalfTheSlots: one requester whose analyses never end
// holds at most half of MaxConcurrent, so another's link is analysed at
// once instead of waiting for one of them to give its slot back.
func TestFloodTakesAtMostHalfTheSlots(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.MaxConcurrent = 4
		o.Wait.Deadline = 2 * time.Minute
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 6 {
		wg.Go(func() { u.Check(ctx, fmt.Sprintf("https://s%d.pending.test/", i), CheckOptions{For: flooder}) })
	}
	waitUntil(t, "the flood's submissions", func() bool { return srv.Count(sim.ServiceReputation, sim.OpScan) >= 2 })
	vctx, vcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer vcancel()
	v := u.Check(vctx, "https://evil.test/payload", CheckOptions{For: victim})
	if v.Level != verdict.Malicious {
		t.Fatalf("the second requester's link: %s (%s): it waited for a slot the flood holds", v.Level, v.Problem)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 3 {
		t.Errorf("%d submissions, want the flood's 2 (half the slots) and the second link", n)
	}
	// A link of nobody in particular (a recheck) has its own share.
	if v := u.Check(vctx, "https://casino.test/", CheckOptions{Recheck: true}); v.Level != verdict.Malicious {
		t.Errorf("a recheck beside the flood: %s (%s)", v.Level, v.Problem)
	}
}

// TestSharedAnalysisTakesTheSlotOfWhoeverJoins: an analysis the flooder
// started, waiting for a slot its share has not, is joined by another
// requester: it takes a slot in that requester's share at once.
func TestSharedAnalysisTakesTheSlotOfWhoeverJoins(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.MaxConcurrent = 4
		o.Wait.Deadline = 2 * time.Minute
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 4 {
		wg.Go(func() { u.Check(ctx, fmt.Sprintf("https://j%d.pending.test/", i), CheckOptions{For: flooder}) })
	}
	waitUntil(t, "the flood's submissions", func() bool { return srv.Count(sim.ServiceReputation, sim.OpScan) >= 2 })
	const shared = "https://secure-login.phish.test/verify"
	queued := make(chan URLVerdict, 1)
	go func() { queued <- u.Check(ctx, shared, CheckOptions{For: flooder}) }()
	waitUntil(t, "the flooder's fifth link to wait", func() bool { return u.InFlight() == 5 })
	vctx, vcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer vcancel()
	v := u.Check(vctx, shared, CheckOptions{For: victim})
	if v.Level != verdict.Malicious {
		t.Fatalf("the joined analysis: %s (%s), want it analysed in the second requester's share", v.Level, v.Problem)
	}
	if got := <-queued; got.TaskID != v.TaskID {
		t.Errorf("the flooder's check got task %q, the joiner's %q: want one analysis", got.TaskID, v.TaskID)
	}
	if n := len(srv.URLTasks(shared)); n != 1 {
		t.Errorf("%d submissions of the shared link", n)
	}
}

// capAllowance is an Allowance of n per requester, recording what it is
// asked.
type capAllowance struct {
	mu      sync.Mutex
	n       int
	used    map[Requester]int
	asked   []Requester
	refused [][]Requester
}

func (a *capAllowance) Take(r Requester) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	if a.used[r] >= a.n {
		return false
	}
	if a.used == nil {
		a.used = map[Requester]int{}
	}
	a.used[r]++
	return true
}

func (a *capAllowance) Refused(_ context.Context, _ string, who []Requester) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = append(a.refused, who)
}

// TestAllowanceCountsWhatIsSubmitted: a requester past the allowance gets
// "could not check" with the allowance's problem and nothing is sent; a
// cached verdict costs nothing; another requester is not affected;
// rechecks are not counted.
func TestAllowanceCountsWhatIsSubmitted(t *testing.T) {
	t.Parallel()
	a := &capAllowance{n: 2}
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) { o.Allowance = a })
	for i := range 2 {
		if v := u.Check(t.Context(), fmt.Sprintf("https://evil.test/%d", i), CheckOptions{For: flooder}); v.Level != verdict.Malicious {
			t.Fatalf("link %d within the allowance: %s (%s)", i, v.Level, v.Problem)
		}
	}
	v := u.Check(t.Context(), "https://evil.test/2", CheckOptions{For: flooder})
	if v.Level != verdict.Unknown || v.Problem != OverAllowanceProblem || v.Err != ErrOverAllowance || v.TaskID != "" {
		t.Fatalf("past the allowance: %+v", v)
	}
	if n := len(srv.URLTasks("https://evil.test/2")); n != 0 {
		t.Fatalf("a link past the allowance was submitted %d times", n)
	}
	// A cached verdict is not counted, nor submitted.
	if v := u.Check(t.Context(), "https://evil.test/0", CheckOptions{For: flooder}); !v.Cached || v.Level != verdict.Malicious {
		t.Fatalf("cached verdict: %+v", v)
	}
	// The refusal was not cached: another requester gets it checked.
	if v := u.Check(t.Context(), "https://evil.test/2", CheckOptions{For: victim}); v.Level != verdict.Malicious {
		t.Fatalf("another requester's link: %s (%s)", v.Level, v.Problem)
	}
	if v := u.Check(t.Context(), "https://casino.test/", CheckOptions{Recheck: true}); v.Level != verdict.Malicious {
		t.Fatalf("a recheck: %s (%s)", v.Level, v.Problem)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if want := []Requester{flooder, flooder, flooder, victim}; !slices.Equal(a.asked, want) {
		t.Errorf("asked for %v, want %v (the cached verdict and the recheck not counted)", a.asked, want)
	}
	if len(a.refused) != 1 || !slices.Equal(a.refused[0], []Requester{flooder}) {
		t.Errorf("refusals told: %v", a.refused)
	}
}

// TestAllowanceOfASharedAnalysis: an analysis made for several requesters
// is charged to the first with one left, in the order they came.
func TestAllowanceOfASharedAnalysis(t *testing.T) {
	t.Parallel()
	a := &capAllowance{n: 1, used: map[Requester]int{flooder: 1}}
	rs := newRequesters(flooder)
	rs.add(victim)
	rs.add(flooder) // known: not added twice
	if !rs.allowed(t.Context(), a, "reputation") {
		t.Fatal("refused although the second requester had one left")
	}
	if a.used[victim] != 1 || len(a.refused) != 0 {
		t.Fatalf("used %v, refusals %v", a.used, a.refused)
	}
	if rs.allowed(t.Context(), a, "reputation") {
		t.Fatal("allowed with nobody left")
	}
	if len(a.refused) != 1 || !slices.Equal(a.refused[0], []Requester{flooder, victim}) {
		t.Fatalf("refusal told %v, want both requesters", a.refused)
	}
	// Refused: nobody joins it any more (a newcomer starts another analysis,
	// paid by their own allowance).
	if added, ok := rs.add(Requester{User: "ULATE", Channel: "C1"}); added || ok {
		t.Fatalf("joined a refused analysis: added %v, ok %v", added, ok)
	}
	if !newRequesters(Requester{}).allowed(t.Context(), a, "reputation") {
		t.Fatal("an analysis for nobody in particular was refused")
	}
}

// joiningAllowance refuses everyone but late, and makes late join the
// analysis while the first requester is being asked.
type joiningAllowance struct {
	capAllowance
	rs   *requesters
	late Requester
}

func (a *joiningAllowance) Take(r Requester) bool {
	if r != a.late {
		a.rs.add(a.late) // someone joins while the others are asked
		a.capAllowance.Take(r)
		return false
	}
	return a.capAllowance.Take(r)
}

// TestRequesterWhoJoinsDuringTheAskIsAskedToo: an analysis is refused only
// when everyone who asked for it by then is over: a requester who joins
// while the others are being asked is asked too.
func TestRequesterWhoJoinsDuringTheAskIsAskedToo(t *testing.T) {
	t.Parallel()
	rs := newRequesters(flooder)
	a := &joiningAllowance{capAllowance: capAllowance{n: 1}, rs: rs, late: victim}
	if !rs.allowed(t.Context(), a, "reputation") {
		t.Fatal("refused although a requester who joined meanwhile had one left")
	}
	if want := []Requester{flooder, victim}; !slices.Equal(a.asked, want) {
		t.Errorf("asked %v, want %v", a.asked, want)
	}
}

// TestSlotsGoToWhoeverHoldsFewest: a freed slot goes to the waiter whose
// requesters hold the fewest, and nobody holds more than half.
func TestSlotsGoToWhoeverHoldsFewest(t *testing.T) {
	t.Parallel()
	s := newSlots(4)
	keys := func(k ...string) func() []string { return func() []string { return k } }
	var held []func()
	for range 2 {
		rel, err := s.acquire(t.Context(), keys("A"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, rel)
	}
	got := make(chan string, 8)
	wait := func(name string, k ...string) {
		go func() {
			rel, err := s.acquire(t.Context(), keys(k...))
			if err != nil {
				return
			}
			got <- name
			t.Cleanup(rel)
		}()
	}
	wait("a3", "A") // A holds its half: waits
	waitUntil(t, "a3 queued", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 1 })
	wait("b1", "B")
	if name := <-got; name != "b1" {
		t.Fatalf("%s got a slot first, want b1 (A holds its half)", name)
	}
	wait("c1", "C")
	if name := <-got; name != "c1" {
		t.Fatalf("%s got the last slot, want c1", name)
	}
	wait("b2", "B")
	waitUntil(t, "a3 and b2 queued", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 2 })
	// A gives one back: A and B hold one each, so the first to come, a3.
	held[0]()
	held[0]() // twice is harmless
	if name := <-got; name != "a3" {
		t.Fatalf("%s got the freed slot, want a3 (first come among equals)", name)
	}
	held[1]()
	if name := <-got; name != "b2" {
		t.Fatalf("%s got the freed slot, want b2", name)
	}
}

// TestFileAllowanceCountsUploads: a file past its requester's allowance is
// not uploaded (could not check, with the allowance's problem); a file the
// sandbox already knows is not counted; another requester's upload is.
func TestFileAllowanceCountsUploads(t *testing.T) {
	t.Parallel()
	a := &capAllowance{n: 1}
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Allowance = a })
	known := []byte("MZ known before SIM:MALSCORE=8.1")
	sub, err := e.sb.CreateFile(t.Context(), "earlier.exe", bytes.NewReader(known))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sb.Wait(t.Context(), sub.TaskIDs[0], fastSandboxWait); err != nil {
		t.Fatal(err)
	}
	if v := e.files.Check(t.Context(), e.share("known.exe", known), FileCheckOptions{For: flooder}); !v.Reused || v.Level != verdict.Malicious {
		t.Fatalf("a file the sandbox knows: %+v", v)
	}
	if v := e.files.Check(t.Context(), e.share("first.exe", []byte("MZ first SIM:MALSCORE=7")), FileCheckOptions{For: flooder}); v.Level != verdict.Malicious {
		t.Fatalf("the first upload: %s (%s)", v.Level, v.Problem)
	}
	over := e.share("second.exe", []byte("MZ second SIM:MALSCORE=7"))
	v := e.files.Check(t.Context(), over, FileCheckOptions{For: flooder})
	if v.Level != verdict.Unknown || v.Problem != OverAllowanceFileProblem || !errors.Is(v.Err, ErrOverAllowance) || v.SHA256 == "" {
		t.Fatalf("past the allowance: %+v", v)
	}
	if n := e.uploads(); n != 2 {
		t.Fatalf("%d uploads, want the earlier one and the first", n)
	}
	if v := e.files.Check(t.Context(), over, FileCheckOptions{For: victim}); v.Level != verdict.Malicious {
		t.Fatalf("another requester's check of the same file: %s (%s)", v.Level, v.Problem)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if want := []Requester{flooder, flooder, victim}; !slices.Equal(a.asked, want) {
		t.Errorf("asked for %v, want %v (the known file not counted)", a.asked, want)
	}
}
