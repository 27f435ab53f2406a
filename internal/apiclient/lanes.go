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
// and only the waiter whose turn it is may hold a reservation. rate.Limiter's
// own Wait would let a thousand low-priority waiters book a thousand future
// tokens, and a high-priority request arriving after them would wait
// behind all of them. Here:
//
//   - a High waiter with the turn reserves the next token and waits for it;
//   - a Low waiter with the turn reserves nothing until a token is there
//     now with a quarter of the burst (rounded down) left over, and gives
//     the turn up to any High waiter that arrives meanwhile. So new work
//     finds that reserve ready when the backlog keeps the budget busy, and
//     otherwise waits at most for the next token; the backlog still gets
//     every token new work does not use.
//
// The limiter itself stays the one Share adjusts.
type lanes struct {
	lim *rate.Limiter

	mu      sync.Mutex
	busy    bool // a waiter holds the turn
	queues  [numPriorities][]*laneWaiter
	preempt chan struct{} // set while a Low holder waits for a token

	// onTurn, if set (tests), is called with the waiter's context when it
	// gets the turn, before it looks at the budget.
	onTurn func(ctx context.Context)
}

type laneWaiter struct {
	turn    chan struct{} // closed when the turn is handed to this waiter
	granted bool          // under lanes.mu
}

func newLanes(lim *rate.Limiter) *lanes { return &lanes{lim: lim} }

// Wait blocks until the budget grants a token to a request in lane p, or
// ctx ends. Like rate.Limiter.Wait, a High waiter fails at once when ctx's
// deadline comes before its token would.
func (l *lanes) Wait(ctx context.Context, p Priority) error {
	if l.lim.Limit() == rate.Inf {
		return nil
	}
	if p < High || p >= numPriorities {
		p = High
	}
	if err := l.acquire(ctx, p); err != nil {
		return err
	}
	if p == Low {
		held, err := l.waitLow(ctx)
		if held {
			l.release()
		}
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

// waitLow takes a token for a Low waiter that holds the turn, once one is
// there with the High reserve left over; it hands the turn to High waiters
// that arrive meanwhile and takes it back after them. held says whether
// the waiter still holds the turn (for the caller to release).
func (l *lanes) waitLow(ctx context.Context) (held bool, err error) {
	preempt := make(chan struct{}, 1)
	for {
		if l.onTurn != nil {
			l.onTurn(ctx)
		}
		lim := l.lim.Limit()
		if lim == rate.Inf {
			return true, nil
		}
		now := time.Now()
		need := 1 + float64(l.lim.Burst()/4)
		have := l.lim.TokensAt(now)
		if have >= need || lim <= 0 && have >= 1 {
			if r := l.lim.ReserveN(now, 1); !r.OK() {
				return true, fmt.Errorf("rate: burst %d below 1", l.lim.Burst())
			}
			return true, nil
		}
		d := time.Second
		if lim > 0 {
			d = time.Duration((need - have) / float64(lim) * float64(time.Second))
		}
		l.mu.Lock()
		if len(l.queues[High]) > 0 {
			preempt <- struct{}{} // High waiters came while we looked
		}
		l.preempt = preempt
		l.mu.Unlock()
		t := time.NewTimer(max(d, time.Millisecond))
		yield := false
		select {
		case <-t.C:
		case <-ctx.Done():
			err = ctx.Err()
		case <-preempt:
			yield = true
		}
		t.Stop()
		l.mu.Lock()
		l.preempt = nil
		select {
		case <-preempt: // a signal that came too late to matter
		default:
		}
		if err != nil || !yield {
			l.mu.Unlock()
			if err != nil {
				return true, err
			}
			continue
		}
		// Give the turn to the High waiters, first in line for it after them.
		w := &laneWaiter{turn: make(chan struct{})}
		l.queues[Low] = append([]*laneWaiter{w}, l.queues[Low]...)
		l.mu.Unlock()
		l.release()
		if err := l.await(ctx, w, Low); err != nil {
			return false, err
		}
	}
}

// acquire waits for the turn.
func (l *lanes) acquire(ctx context.Context, p Priority) error {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return nil
	}
	w := &laneWaiter{turn: make(chan struct{})}
	l.queues[p] = append(l.queues[p], w)
	if p == High && l.preempt != nil {
		select {
		case l.preempt <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
	return l.await(ctx, w, p)
}

// await waits until w, queued in lane p, gets the turn, or ctx ends (w then
// leaves the queue, or passes on a turn that came at the same time).
func (l *lanes) await(ctx context.Context, w *laneWaiter, p Priority) error {
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
