package apiclient

import (
	"context"
	"slices"
	"sync"
)

// Flow names whom a request is made for, so that the waiters of a budget
// take turns between people rather than in arrival order (see lanes):
// within a priority, each User gets a turn in round-robin, and each of a
// user's Channels in round-robin within the user's turns. Both are opaque
// keys the caller chooses (a person's id, an integration's, a channel's);
// a Flow with neither is the one anonymous flow, served in arrival order.
type Flow struct {
	User    string
	Channel string
}

// Flows is the set of Flows one piece of work is done for: an analysis
// shared by several messages is one analysis, and each of its requests
// waits in the turn of whichever of its flows comes first. Add may be
// called while requests wait: a waiting request moves to the new flow's
// turn when that one comes sooner. A Flows is safe for concurrent use.
type Flows struct {
	mu   sync.Mutex
	list []Flow
	// subs are the waiters of requests made for this set, each with the
	// lanes it waits in: told when a flow is added.
	subs map[*laneWaiter]*lanes
}

// NewFlows returns the set holding flows (duplicates are kept once).
func NewFlows(flows ...Flow) *Flows {
	s := &Flows{}
	for _, f := range flows {
		s.add(f)
	}
	return s
}

func (s *Flows) add(f Flow) bool {
	if slices.Contains(s.list, f) {
		return false
	}
	s.list = append(s.list, f)
	return true
}

// Add puts f in the set; it reports whether f was new. The requests
// waiting for a budget on behalf of the set are moved to f's turn when it
// comes sooner than the one they wait for.
func (s *Flows) Add(f Flow) bool {
	s.mu.Lock()
	added := s.add(f)
	var subs []struct {
		w *laneWaiter
		l *lanes
	}
	if added {
		for w, l := range s.subs {
			subs = append(subs, struct {
				w *laneWaiter
				l *lanes
			}{w, l})
		}
	}
	s.mu.Unlock()
	// Outside s.mu: lanes take their own lock first, then s.mu (List).
	for _, sub := range subs {
		sub.l.rekey(sub.w)
	}
	return added
}

// List returns the flows in the order they were added.
func (s *Flows) List() []Flow {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// subscribe makes Add tell l about w; unsubscribe stops it.
func (s *Flows) subscribe(w *laneWaiter, l *lanes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[*laneWaiter]*lanes{}
	}
	s.subs[w] = l
}

func (s *Flows) unsubscribe(w *laneWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, w)
}

type flowsKey struct{}

// WithFlows returns a context whose requests wait for their budget in the
// turns of flows (nil: the anonymous flow).
func WithFlows(ctx context.Context, flows *Flows) context.Context {
	return context.WithValue(ctx, flowsKey{}, flows)
}

// WithFlow returns a context whose requests wait for their budget in f's
// turn.
func WithFlow(ctx context.Context, f Flow) context.Context {
	return WithFlows(ctx, NewFlows(f))
}

// FlowsOf returns the flows ctx's requests are made for (nil: the
// anonymous flow).
func FlowsOf(ctx context.Context) *Flows {
	s, _ := ctx.Value(flowsKey{}).(*Flows)
	return s
}
