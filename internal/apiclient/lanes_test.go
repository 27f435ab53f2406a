package apiclient

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
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
