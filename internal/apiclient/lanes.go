package apiclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Priority is the lane a request waits in for its budget: when tokens are
// short, every High waiter is served before any Low one. The zero value is
// High, so a request that says nothing is served as new work.
type Priority int

// Priorities. Keep in sync with lanes.queues (one queue per priority).
const (
	// High is new work someone is waiting for: a new link's submission
	// and polls, a verdict report from a button click.
	High Priority = iota
	// Low is work nobody is watching right now: analyses resumed after a
	// restart and scheduled rechecks.
	Low
	numPriorities
)

// String names the priority in logs and metrics.
func (p Priority) String() string {
	if p == Low {
		return "low"
	}
	return "high"
}

type priorityKey struct{}

// WithPriority returns a context whose requests wait for their budget in
// lane p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	if p < High || p >= numPriorities {
		p = High
	}
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf returns the lane ctx's requests wait in (High unless
// WithPriority said otherwise).
func PriorityOf(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}

// lanes is a token queue in front of a rate.Limiter: waiters take turns,
// highest priority first and first come first served within a priority,
// and only the waiter whose turn it is holds a reservation. rate.Limiter's
// own Wait would let a thousand low-priority waiters book a thousand future
// tokens, and a high-priority request arriving after them would wait
// behind all of them; here it waits at most for the token being waited for
// now. The limiter itself stays the one Share adjusts.
type lanes struct {
	lim *rate.Limiter

	mu     sync.Mutex
	busy   bool // a waiter holds the turn
	queues [numPriorities][]*laneWaiter

	// onTurn, if set (tests), is called with the waiter's context when it
	// gets the turn, before it reserves its token.
	onTurn func(ctx context.Context)
}

type laneWaiter struct {
	turn    chan struct{} // closed when the turn is handed to this waiter
	granted bool          // under lanes.mu
}

func newLanes(lim *rate.Limiter) *lanes { return &lanes{lim: lim} }

// Wait blocks until the budget grants a token to a request in lane p, or
// ctx ends. Like rate.Limiter.Wait, it fails at once when ctx's deadline
// comes before the token would.
func (l *lanes) Wait(ctx context.Context, p Priority) error {
	if l.lim.Limit() == rate.Inf {
		return nil
	}
	if err := l.acquire(ctx, p); err != nil {
		return err
	}
	defer l.release()
	if l.onTurn != nil {
		l.onTurn(ctx)
	}
	now := time.Now()
	r := l.lim.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("rate: burst %d below 1", l.lim.Burst())
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && dl.Before(now.Add(d)) {
		r.CancelAt(now)
		return fmt.Errorf("rate: waiting %v would exceed the context deadline", d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// acquire waits for the turn.
func (l *lanes) acquire(ctx context.Context, p Priority) error {
	if p < High || p >= numPriorities {
		p = High
	}
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return nil
	}
	w := &laneWaiter{turn: make(chan struct{})}
	l.queues[p] = append(l.queues[p], w)
	l.mu.Unlock()
	select {
	case <-w.turn:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		if w.granted {
			// The turn arrived as ctx ended: pass it on.
			l.mu.Unlock()
			l.release()
			return ctx.Err()
		}
		q := l.queues[p]
		for i, x := range q {
			if x == w {
				l.queues[p] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		l.mu.Unlock()
		return ctx.Err()
	}
}

// release hands the turn to the next waiter, highest priority first.
func (l *lanes) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.queues {
		if q := l.queues[p]; len(q) > 0 {
			w := q[0]
			q[0] = nil
			l.queues[p] = q[1:]
			w.granted = true
			close(w.turn)
			return
		}
	}
	l.busy = false
}

// waiting returns how many requests wait for the turn in each lane.
func (l *lanes) waiting() [numPriorities]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n [numPriorities]int
	for p, q := range l.queues {
		n[p] = len(q)
	}
	return n
}
