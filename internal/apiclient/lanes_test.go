package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

type waiterName struct{}

// holdTurn makes a High waiter that holds the turn of l, waiting for a
// token an hour away, until the returned function cancels it.
func holdTurn(t *testing.T, l *lanes) (release func()) {
	t.Helper()
	if err := l.Wait(t.Context(), Low); err != nil { // takes the one token
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, High) }()
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.busy
	})
	return func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the holder's Wait: %v, want context.Canceled", err)
		}
	}
}

// waitFor polls cond until it holds; a safety net of 30 s turns a broken
// queue into a failure rather than a hung test.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never met")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLanesServeHighBeforeLow(t *testing.T) {
	t.Parallel()
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	l := newLanes(lim)
	var (
		mu    sync.Mutex
		order []string
	)
	l.onTurn = func(ctx context.Context) {
		if name, ok := ctx.Value(waiterName{}).(string); ok {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
	}
	release := holdTurn(t, l)

	// Arrival order: low1, low2, high1, low3, high2.
	arrivals := []struct {
		name string
		p    Priority
	}{{"low1", Low}, {"low2", Low}, {"high1", High}, {"low3", Low}, {"high2", High}}
	var wg sync.WaitGroup
	for i, a := range arrivals {
		ctx := context.WithValue(t.Context(), waiterName{}, a.name)
		wg.Go(func() {
			if err := l.Wait(ctx, a.p); err != nil {
				t.Errorf("%s: %v", a.name, err)
			}
		})
		waitFor(t, func() bool { w := l.waiting(); return w[High]+w[Low] == i+1 })
	}
	// Tokens for everyone from now on; the turn is handed on in lane order.
	lim.SetLimit(rate.Inf)
	release()
	wg.Wait()
	want := []string{"high1", "high2", "low1", "low2", "low3"}
	if !slices.Equal(order, want) {
		t.Errorf("served %v, want %v", order, want)
	}
	if w := l.waiting(); w != [numPriorities]int{} {
		t.Errorf("still waiting: %v", w)
	}
}

// recorder returns an onTurn hook that records waiter names, and a
// function that returns them so far.
func recorder() (func(ctx context.Context), func() []string) {
	var (
		mu    sync.Mutex
		order []string
	)
	return func(ctx context.Context) {
			if name, ok := ctx.Value(waiterName{}).(string); ok {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
			}
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(order)
		}
}

// TestLanesHighPreemptsLowWaitingForAToken: a Low waiter waiting for a
// token gives the turn to a High one that arrives, and takes it back after.
func TestLanesHighPreemptsLowWaitingForAToken(t *testing.T) {
	t.Parallel()
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	l := newLanes(lim)
	onTurn, order := recorder()
	l.onTurn = onTurn
	if err := l.Wait(t.Context(), High); err != nil { // the one token
		t.Fatal(err)
	}
	lowErr := make(chan error, 1)
	go func() { lowErr <- l.Wait(context.WithValue(t.Context(), waiterName{}, "low"), Low) }()
	waitFor(t, func() bool { return len(order()) == 1 })
	hctx, cancel := context.WithCancel(context.WithValue(t.Context(), waiterName{}, "high"))
	highErr := make(chan error, 1)
	go func() { highErr <- l.Wait(hctx, High) }()
	waitFor(t, func() bool { return len(order()) == 2 })
	if got := order(); !slices.Equal(got, []string{"low", "high"}) {
		t.Fatalf("turns %v, want [low high]", got)
	}
	// The High waiter now waits for the next token; the Low one for the
	// turn, first in its lane.
	if w := l.waiting(); w != [numPriorities]int{0, 1} {
		t.Fatalf("waiting %v, want the low waiter queued", w)
	}
	lim.SetLimit(rate.Inf)
	cancel()
	if err := <-highErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("high: %v", err)
	}
	if err := <-lowErr; err != nil {
		t.Fatalf("low: %v", err)
	}
	if got := order(); !slices.Equal(got, []string{"low", "high", "low"}) {
		t.Errorf("turns %v, want [low high low]", got)
	}
	if l.busy {
		t.Error("the turn is still held")
	}
}

// TestLanesLowLeavesAReserve: Low waiters leave a quarter of the burst in
// the bucket, which a High waiter then gets at once.
func TestLanesLowLeavesAReserve(t *testing.T) {
	t.Parallel()
	l := newLanes(rate.NewLimiter(rate.Every(time.Hour), 8)) // reserve 2
	for i := range 6 {
		if err := l.Wait(t.Context(), Low); err != nil {
			t.Fatalf("low %d: %v", i, err)
		}
	}
	lctx, cancel := context.WithCancel(t.Context())
	lowErr := make(chan error, 1)
	go func() { lowErr <- l.Wait(lctx, Low) }()
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.preempt != nil // the seventh waits for a token
	})
	hctx, hcancel := context.WithTimeout(t.Context(), time.Minute)
	defer hcancel()
	for i := range 2 {
		// Without the reserve the token is an hour away: an error at once.
		if err := l.Wait(hctx, High); err != nil {
			t.Fatalf("high %d: %v", i, err)
		}
	}
	cancel()
	if err := <-lowErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("low: %v", err)
	}
	if l.busy {
		t.Error("the turn is still held")
	}
}

func TestLanesCancelledWaiterLeavesTheQueue(t *testing.T) {
	t.Parallel()
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	l := newLanes(lim)
	var (
		mu    sync.Mutex
		order []string
	)
	l.onTurn = func(ctx context.Context) {
		if name, ok := ctx.Value(waiterName{}).(string); ok {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
	}
	release := holdTurn(t, l)
	gone, cancel := context.WithCancel(context.WithValue(t.Context(), waiterName{}, "gone"))
	errc := make(chan error, 1)
	go func() { errc <- l.Wait(gone, High) }()
	waitFor(t, func() bool { return l.waiting()[High] == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	if w := l.waiting(); w[High] != 0 {
		t.Fatalf("the cancelled waiter is still queued: %v", w)
	}
	errc2 := make(chan error, 1)
	go func() { errc2 <- l.Wait(context.WithValue(t.Context(), waiterName{}, "next"), Low) }()
	waitFor(t, func() bool { return l.waiting()[Low] == 1 })
	lim.SetLimit(rate.Inf)
	release()
	if err := <-errc2; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"next"}) {
		t.Errorf("served %v, want [next]", order)
	}
}

func TestLanesDeadlineBeforeTheToken(t *testing.T) {
	t.Parallel()
	l := newLanes(rate.NewLimiter(rate.Every(time.Hour), 1))
	if err := l.Wait(t.Context(), High); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := l.Wait(ctx, High); err == nil {
		t.Fatal("waited for a token due after the deadline")
	}
	// The refused reservation was given back and the turn released: the
	// next caller is not queued behind it.
	if w := l.waiting(); w != [numPriorities]int{} {
		t.Errorf("waiting: %v", w)
	}
}

// TestPriorityFromContext: a request's lane comes from its context, High
// by default, and the client's wait events say which lane they waited in.
func TestPriorityFromContext(t *testing.T) {
	t.Parallel()
	if p := PriorityOf(t.Context()); p != High {
		t.Errorf("default priority %v, want high", p)
	}
	if p := PriorityOf(WithPriority(t.Context(), Low)); p != Low {
		t.Errorf("priority %v, want low", p)
	}
	if p := PriorityOf(WithPriority(t.Context(), Priority(7))); p != High {
		t.Errorf("out-of-range priority became %v, want high", p)
	}
	// A priority func is read at each request: Low until someone joins.
	var joined atomic.Bool
	fctx := WithPriorityFunc(t.Context(), func() Priority {
		if joined.Load() {
			return High
		}
		return Low
	})
	if p := PriorityOf(fctx); p != Low {
		t.Errorf("func priority %v before a join, want low", p)
	}
	joined.Store(true)
	if p := PriorityOf(fctx); p != High {
		t.Errorf("func priority %v after a join, want high", p)
	}
	if p := PriorityOf(WithPriority(fctx, Low)); p != Low {
		t.Errorf("WithPriority over a func gave %v, want low", p)
	}
	if p := PriorityOf(WithPriorityFunc(t.Context(), func() Priority { return 9 })); p != High {
		t.Errorf("out-of-range func priority became %v, want high", p)
	}
	var (
		mu    sync.Mutex
		waits []Priority
	)
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }, func(cfg *Config) {
		// 20/s: each request after the first waits about 50 ms, more than
		// a request takes on a loaded machine (at 200/s it did not wait).
		cfg.ReportLimit = Limit{Rate: 20, Burst: 1}
		cfg.Observe = func(ev Event) {
			if ev.IsWait {
				mu.Lock()
				waits = append(waits, ev.Priority)
				mu.Unlock()
			}
		}
	})
	ctx := WithPriority(t.Context(), Low)
	for range 3 {
		if err := c.DoJSON(ctx, Request{Op: "status", Method: http.MethodGet, Path: []string{"status", "1"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 {
		t.Fatal("no budget wait observed at 20/s with a burst of 1")
	}
	for _, p := range waits {
		if p != Low {
			t.Errorf("wait event in lane %v, want low", p)
		}
	}
}

// flowCtx is a context named name whose requests are made for the flow
// of user in channel.
func flowCtx(t *testing.T, name, user, channel string) context.Context {
	return WithFlow(context.WithValue(t.Context(), waiterName{}, name), Flow{User: user, Channel: channel})
}

// queueUp starts a Wait in lane p for each ctx, in order, each once the
// one before is queued, and returns a function that waits for them all.
func queueUp(t *testing.T, l *lanes, p Priority, ctxs ...context.Context) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	for _, ctx := range ctxs {
		before := l.waiting()[p]
		wg.Go(func() {
			if err := l.Wait(ctx, p); err != nil {
				t.Errorf("%v: %v", ctx.Value(waiterName{}), err)
			}
		})
		waitFor(t, func() bool { return l.waiting()[p] == before+1 })
	}
	return wg.Wait
}

// TestLanesTakeTurnsBetweenUsers: within a lane, users take turns (one
// request each per round), and a user's channels take turns within the
// user's turns; arrival order only decides within one user's channel.
func TestLanesTakeTurnsBetweenUsers(t *testing.T) {
	t.Parallel()
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	l := newLanes(lim)
	onTurn, order := recorder()
	l.onTurn = onTurn
	release := holdTurn(t, l)
	wait := queueUp(t, l, High,
		flowCtx(t, "a1", "UA", "CX"), flowCtx(t, "a2", "UA", "CX"), flowCtx(t, "a3", "UA", "CX"), flowCtx(t, "a4", "UA", "CX"),
		flowCtx(t, "b1", "UB", "CX"), flowCtx(t, "a5", "UA", "CY"), flowCtx(t, "b2", "UB", "CX"))
	lim.SetLimit(rate.Inf)
	release()
	wait()
	// In arrival order it would be a1 a2 a3 a4 b1 a5 b2: B's first request
	// behind A's four, A's other channel behind its first.
	want := []string{"a1", "b1", "a5", "b2", "a2", "a3", "a4"}
	if got := order(); !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

// TestLanesNewUserTakesTheTurnFromABacklog: the waiter holding the turn for
// a token gives it up to a request of a user who has had no turn yet, and
// a request of the same user as the holder does not take it.
func TestLanesNewUserTakesTheTurnFromABacklog(t *testing.T) {
	t.Parallel()
	l := newLanes(rate.NewLimiter(rate.Every(time.Hour), 1))
	onTurn, order := recorder()
	l.onTurn = onTurn
	if err := l.Wait(flowCtx(t, "a0", "UA", "CX"), High); err != nil { // the one token
		t.Fatal(err)
	}
	// a1 holds the turn, waiting for a token an hour away; a2 and a3 queue.
	actx, cancelA := context.WithCancel(flowCtx(t, "a1", "UA", "CX"))
	defer cancelA()
	aErr := make(chan error, 3)
	go func() { aErr <- l.Wait(actx, High) }()
	waitFor(t, func() bool { return len(order()) == 2 })
	for _, name := range []string{"a2", "a3"} {
		ctx, cancel := context.WithCancel(flowCtx(t, name, "UA", "CX"))
		defer cancel()
		stopA := cancelA
		cancelA = func() { stopA(); cancel() }
		before := l.waiting()[High]
		go func() { aErr <- l.Wait(ctx, High) }()
		waitFor(t, func() bool { return l.waiting()[High] == before+1 })
	}
	if got := order(); !slices.Equal(got, []string{"a0", "a1"}) {
		t.Fatalf("turns %v: A's queued requests took the turn from a1", got)
	}
	bctx, cancelB := context.WithCancel(flowCtx(t, "b1", "UB", "CX"))
	bErr := make(chan error, 1)
	go func() { bErr <- l.Wait(bctx, High) }()
	waitFor(t, func() bool { return len(order()) == 3 })
	if got := order(); !slices.Equal(got, []string{"a0", "a1", "b1"}) {
		t.Fatalf("turns %v, want b1 right after a1", got)
	}
	// b1 now waits for the next token, and all of A's requests behind it.
	if w := l.waiting(); w[High] != 3 {
		t.Fatalf("waiting %v, want a1, a2 and a3 queued", w)
	}
	cancelB()
	if err := <-bErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("b1: %v", err)
	}
	cancelA()
	for range 3 {
		if err := <-aErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
}

// TestLanesSharedRequestMovesToTheSoonerTurn: a request made for a set of
// flows waits in the turn of the one that comes first; when a flow joins
// the set (another user asks for the same analysis), the waiting request
// moves to that flow's turn if it comes sooner.
func TestLanesSharedRequestMovesToTheSoonerTurn(t *testing.T) {
	t.Parallel()
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	l := newLanes(lim)
	onTurn, order := recorder()
	l.onTurn = onTurn
	release := holdTurn(t, l)
	shared := NewFlows(Flow{User: "UA", Channel: "CX"})
	wait := queueUp(t, l, High,
		flowCtx(t, "a1", "UA", "CX"), flowCtx(t, "a2", "UA", "CX"), flowCtx(t, "a3", "UA", "CX"),
		WithFlows(context.WithValue(t.Context(), waiterName{}, "x"), shared))
	if !shared.Add(Flow{User: "UB", Channel: "CZ"}) || shared.Add(Flow{User: "UB", Channel: "CZ"}) {
		t.Fatal("Add: a new flow not added, or a known one added twice")
	}
	lim.SetLimit(rate.Inf)
	release()
	wait()
	// Under A's turns alone, x would be last.
	if got, want := order(), []string{"a1", "x", "a2", "a3"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
	// A new request of the set waits in the sooner turn from the start.
	l2 := newLanes(rate.NewLimiter(rate.Every(time.Hour), 1))
	onTurn2, order2 := recorder()
	l2.onTurn = onTurn2
	release2 := holdTurn(t, l2)
	lim2 := l2.lim
	wait2 := queueUp(t, l2, High,
		flowCtx(t, "a1", "UA", "CX"), flowCtx(t, "a2", "UA", "CX"),
		WithFlows(context.WithValue(t.Context(), waiterName{}, "y"), shared))
	lim2.SetLimit(rate.Inf)
	release2()
	wait2()
	if got, want := order2(), []string{"a1", "y", "a2"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

// TestFairQueueForgetsIdleFlows: the state kept for users who no longer
// wait stays bounded however many users came and went.
func TestFairQueueForgetsIdleFlows(t *testing.T) {
	t.Parallel()
	var q fairQueue
	for i := range 10_000 {
		q.charge(flowKey{user: fmt.Sprint("U", i), channel: "C"})
	}
	if n := len(q.users); n > 2*q.active+17 {
		t.Errorf("%d users remembered after 10,000 came and went", n)
	}
	// A user remembered or forgotten starts at the virtual time: the next
	// one's turn comes before a backlog's.
	w := &laneWaiter{seq: 1, key: flowKey{user: "busy"}}
	q.push(w)
	q.charge(w.key)
	q.charge(w.key)
	newcomer := &laneWaiter{seq: 2, key: flowKey{user: "U1"}}
	q.push(newcomer)
	if got := q.pick(nil); got != newcomer {
		t.Errorf("picked seq %d, want the newcomer", got.seq)
	}
}
