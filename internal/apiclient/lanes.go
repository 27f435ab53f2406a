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

// WithPriorityFunc returns a context whose requests wait for their budget
// in the lane f names when each request is made: an analysis that runs for
// nobody (a channel's history) waits in Low until someone waiting for it
// joins, and its next request is then High. A WithPriority made on the
// returned context overrides f.
func WithPriorityFunc(ctx context.Context, f func() Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, f)
}

// PriorityOf returns the lane ctx's requests wait in (High unless
// WithPriority or WithPriorityFunc said otherwise).
func PriorityOf(ctx context.Context) Priority {
	switch v := ctx.Value(priorityKey{}).(type) {
	case Priority:
		return v
	case func() Priority:
		if p := v(); p >= High && p < numPriorities {
			return p
		}
	}
	return High
}

// lanes is a token queue in front of a rate.Limiter: waiters take turns,
// highest priority first and, within a priority, fairly between the flows
// they are made for (Flow, fairQueue: round-robin between users, then
// between a user's channels; arrival order within one), and only the
// waiter whose turn it is may take a token. rate.Limiter's own Wait would
// let a thousand waiters book a thousand future tokens, and a request
// arriving after them would wait behind all of them. Here the waiter with
// the turn takes no token before one is there:
//
//   - a High waiter takes the next token;
//   - a Low waiter takes one only when it leaves a quarter of the burst
//     (rounded down) in the bucket, so new work finds that reserve ready
//     when the backlog keeps the budget busy, and otherwise waits at most
//     for the next token; the backlog still gets every token new work does
//     not use.
//
// While it waits for its token, the holder gives the turn up to any waiter
// that arrives and goes before it (a High one for a Low holder; one of a
// flow whose turn comes first), and takes it back after them. So whose
// request gets a token is decided when the token is there: a user whose
// link arrives behind another user's burst of a thousand waits for the
// next token, not for the burst's next one.
//
// The limiter itself stays the one Share adjusts.
type lanes struct {
	lim *rate.Limiter

	mu      sync.Mutex
	busy    bool        // a waiter holds the turn
	holder  *laneWaiter // the waiter holding the turn (busy)
	queues  [numPriorities]fairQueue
	seq     uint64        // arrivals so far
	preempt chan struct{} // set while the holder waits for a token

	// onTurn, if set (tests), is called with the waiter's context when it
	// gets the turn, before it looks at the budget.
	onTurn func(ctx context.Context)
}

type laneWaiter struct {
	turn    chan struct{} // closed when the turn is handed to this waiter
	p       Priority
	seq     uint64 // arrival order
	flows   *Flows // whom the request is for (nil: the anonymous flow)
	key     flowKey
	granted bool // under lanes.mu
	queued  bool // in queues[p], under lanes.mu
}

func newLanes(lim *rate.Limiter) *lanes { return &lanes{lim: lim} }

// Wait blocks until the budget grants a token to a request in lane p, or
// ctx ends. The request is made for FlowsOf(ctx). Like rate.Limiter.Wait,
// a High waiter fails at once when ctx's deadline comes before its token
// would.
func (l *lanes) Wait(ctx context.Context, p Priority) error {
	if l.lim.Limit() == rate.Inf {
		return nil
	}
	if p < High || p >= numPriorities {
		p = High
	}
	w := &laneWaiter{turn: make(chan struct{}), p: p, flows: FlowsOf(ctx)}
	if w.flows != nil {
		w.flows.subscribe(w, l)
		defer w.flows.unsubscribe(w)
	}
	if err := l.acquire(ctx, w); err != nil {
		return err
	}
	for {
		if l.onTurn != nil {
			l.onTurn(ctx)
		}
		yielded, err := l.take(ctx, w)
		if !yielded {
			l.release()
			return err
		}
		// Given up to a waiter that goes first: w is queued again.
		if err := l.await(ctx, w); err != nil {
			return err
		}
	}
}

// take waits, holding the turn, for a token for w and takes it, charging
// w's flow. yielded is true when w gave the turn up meanwhile to a waiter
// that goes before it: w is then queued again and the turn handed on.
func (l *lanes) take(ctx context.Context, w *laneWaiter) (yielded bool, err error) {
	preempt := make(chan struct{}, 1)
	for {
		lim := l.lim.Limit()
		now := time.Now()
		need := 1.0
		if w.p == Low {
			need += float64(l.lim.Burst() / 4)
		}
		have := l.lim.TokensAt(now)
		if lim == rate.Inf || have >= need || lim <= 0 && have >= 1 {
			if lim != rate.Inf {
				if r := l.lim.ReserveN(now, 1); !r.OK() {
					return false, fmt.Errorf("rate: burst %d below 1", l.lim.Burst())
				}
			}
			l.mu.Lock()
			l.queues[w.p].charge(w.key)
			l.mu.Unlock()
			return false, nil
		}
		d := time.Second
		if lim > 0 {
			d = time.Duration((need - have) / float64(lim) * float64(time.Second))
		}
		if dl, ok := ctx.Deadline(); ok && w.p == High && dl.Before(now.Add(d)) {
			return false, fmt.Errorf("rate: waiting %v would exceed the context deadline", d)
		}
		l.mu.Lock()
		if l.beaten(w) {
			preempt <- struct{}{} // a waiter that goes first came while we looked
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
		if err != nil {
			l.mu.Unlock()
			return false, err
		}
		if !yield {
			l.mu.Unlock()
			continue
		}
		// Give the turn to whoever goes first; w waits in its place (in
		// its set's soonest turn: the set may have grown meanwhile).
		w.granted = false
		w.turn = make(chan struct{})
		w.key = l.bestKey(w)
		l.queues[w.p].push(w)
		l.handOn()
		l.mu.Unlock()
		return true, nil
	}
}

// beaten reports whether a queued waiter goes before w, which holds the
// turn: one of a higher lane, or one whose flow's turn comes first in w's
// lane. Under l.mu.
func (l *lanes) beaten(w *laneWaiter) bool {
	for p := High; p < w.p; p++ {
		if l.queues[p].n > 0 {
			return true
		}
	}
	return l.queues[w.p].pick(w) != w
}

// signal tells the holder waiting for a token to check whether a waiter
// goes before it now. Under l.mu.
func (l *lanes) signal() {
	if l.preempt == nil || l.holder == nil || !l.beaten(l.holder) {
		return
	}
	select {
	case l.preempt <- struct{}{}:
	default:
	}
}

// acquire queues w and waits for the turn (at once when nobody holds it).
func (l *lanes) acquire(ctx context.Context, w *laneWaiter) error {
	l.mu.Lock()
	l.seq++
	w.seq = l.seq
	w.key = l.bestKey(w)
	if !l.busy {
		l.busy, l.holder, w.granted = true, w, true
		l.mu.Unlock()
		return nil
	}
	l.queues[w.p].push(w)
	l.signal()
	l.mu.Unlock()
	return l.await(ctx, w)
}

// bestKey is the queue w waits in: the flow of its set whose turn comes
// soonest (the first of them on a tie), or the anonymous one. Under l.mu.
func (l *lanes) bestKey(w *laneWaiter) flowKey {
	list := w.flows.List()
	if len(list) == 0 {
		return flowKey{}
	}
	q := &l.queues[w.p]
	best := keyOf(list[0])
	bestEst := q.estimate(best)
	for _, f := range list[1:] {
		k := keyOf(f)
		if e := q.estimate(k); e < bestEst {
			best, bestEst = k, e
		}
	}
	return best
}

// rekey moves w, if it is queued, to the queue of the flow of its set
// whose turn comes soonest (its set grew: Flows.Add).
func (l *lanes) rekey(w *laneWaiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !w.queued {
		return
	}
	q := &l.queues[w.p]
	q.remove(w)
	w.key = l.bestKey(w)
	q.push(w)
	l.signal()
}

// await waits until w, queued, gets the turn, or ctx ends (w then leaves
// the queue, or passes on a turn that came at the same time).
func (l *lanes) await(ctx context.Context, w *laneWaiter) error {
	l.mu.Lock()
	turn := w.turn
	l.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		if w.granted {
			// The turn arrived as ctx ended: pass it on.
			l.mu.Unlock()
			l.release()
			return ctx.Err()
		}
		l.queues[w.p].remove(w)
		l.mu.Unlock()
		return ctx.Err()
	}
}

// release hands the turn on: the holder is done with it.
func (l *lanes) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handOn()
}

// handOn gives the turn to the next waiter, highest priority first and
// fairly within a priority (fairQueue.pick), or frees it. Under l.mu.
func (l *lanes) handOn() {
	for p := range l.queues {
		q := &l.queues[p]
		if w := q.pick(nil); w != nil {
			q.remove(w)
			w.granted = true
			l.holder = w
			close(w.turn)
			return
		}
	}
	l.busy, l.holder = false, nil
}

// waiting returns how many requests wait for the turn in each lane.
func (l *lanes) waiting() [numPriorities]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n [numPriorities]int
	for p := range l.queues {
		n[p] = l.queues[p].n
	}
	return n
}
