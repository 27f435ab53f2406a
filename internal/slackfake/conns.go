package slackfake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// DefaultMaxConnections is Slack's allowance of simultaneous Socket Mode
// connections per app (docs.slack.dev "Using Socket Mode", "Using multiple
// connections"; Slack's Socket Mode docs, "Using multiple connections").
const DefaultMaxConnections = 10

// DefaultDeliverySeed seeds the default random DeliveryPolicy.
const DefaultDeliverySeed = 1

// DeliveryPolicy chooses the Socket Mode connection an envelope goes to.
// open holds the IDs of the connections that can take it (open, no
// disconnect frame sent), ascending and never empty; env is the envelope
// (its Acks empty, ConnID zero). The result must be one of open; any other
// value sends the envelope to open[0].
//
// Slack sends each payload to any one of an app's open connections and
// promises no distribution pattern (Slack's Socket Mode docs, "Using multiple connections"). The
// policy runs with the fake's lock held: it must be quick and must not call
// the Server's methods. The default is RandomDelivery(DefaultDeliverySeed).
type DeliveryPolicy func(open []int, env Envelope) int

// RandomDelivery picks one of the open connections uniformly at random from
// a generator seeded with seed, so a test that delivers in a fixed order to
// a fixed set of connections sees the same choices on every run.
func RandomDelivery(seed uint64) DeliveryPolicy {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(open []int, _ Envelope) int {
		mu.Lock()
		defer mu.Unlock()
		return open[rng.IntN(len(open))]
	}
}

// RoundRobinDelivery cycles over the open connections in ID order: each
// envelope goes to the lowest open ID above the previous pick, wrapping
// around.
func RoundRobinDelivery() DeliveryPolicy {
	var mu sync.Mutex
	last := 0
	return func(open []int, _ Envelope) int {
		mu.Lock()
		defer mu.Unlock()
		i, _ := slices.BinarySearch(open, last+1)
		if i == len(open) {
			i = 0
		}
		last = open[i]
		return last
	}
}

// DeliverToConnection sends every envelope to connection id while it is
// open, and to the lowest open ID otherwise.
func DeliverToConnection(id int) DeliveryPolicy {
	return func(open []int, _ Envelope) int {
		if slices.Contains(open, id) {
			return id
		}
		return open[0]
	}
}

// WithDeliveryPolicy sets how envelopes are spread over the app's open
// connections (default RandomDelivery(DefaultDeliverySeed)).
func WithDeliveryPolicy(p DeliveryPolicy) Option {
	return func(c *config) { c.policy = p }
}

// WithMaxConnections sets how many Socket Mode connections may be open at
// once (default, and for n < 1, DefaultMaxConnections: Slack's 10). A
// WebSocket beyond it is refused as Slack does (see refuseSocket) and
// counted in State.RefusedConnections.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxConns = n } }

// SetDeliveryPolicy replaces the delivery policy for the envelopes routed
// from now on (nil restores the default).
func (s *Server) SetDeliveryPolicy(p DeliveryPolicy) {
	if p == nil {
		p = RandomDelivery(DefaultDeliverySeed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// Connection describes one Socket Mode connection the fake accepted.
type Connection struct {
	ID       int
	OpenedAt time.Time
	ClosedAt time.Time // zero while open
	// Closing is set once a disconnect frame was queued on it: no envelope
	// is routed there any more.
	Closing bool
	Sent    int // envelopes written to it (events, commands, interactions, raw frames)
	Acks    int // acks received on it
}

// Open reports whether the connection is still open.
func (c Connection) Open() bool { return c.ClosedAt.IsZero() }

// Connections returns every Socket Mode connection accepted since start,
// by ID.
func (st *State) Connections() []Connection {
	out := make([]Connection, len(st.conns))
	for i, c := range st.conns {
		out[i] = *c
	}
	return out
}

// OpenConnIDs returns the IDs of the connections envelopes can go to now
// (open and not closing), ascending.
func (st *State) OpenConnIDs() []int {
	var ids []int
	for _, c := range st.conns {
		if c.Open() && !c.Closing {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// RefusedConnections is the number of WebSockets refused with
// too_many_websockets because the app already had its maximum open.
func (st *State) RefusedConnections() int { return st.refused }

// EnvelopesOn returns the envelopes written to connection id, in order of
// creation.
func (st *State) EnvelopesOn(id int) []Envelope {
	var out []Envelope
	for _, e := range st.envelopes {
		if e.ConnID == id && !e.SentAt.IsZero() {
			out = append(out, e.clone())
		}
	}
	return out
}

// Conns returns every Socket Mode connection accepted since start. See
// State.Connections.
func (s *Server) Conns() (out []Connection) {
	s.Inspect(func(st *State) { out = st.Connections() })
	return out
}

// OpenConnIDs returns the IDs of the connections envelopes can go to now.
func (s *Server) OpenConnIDs() (out []int) {
	s.Inspect(func(st *State) { out = st.OpenConnIDs() })
	return out
}

// EnvelopesOn returns the envelopes written to connection id.
func (s *Server) EnvelopesOn(id int) (out []Envelope) {
	s.Inspect(func(st *State) { out = st.EnvelopesOn(id) })
	return out
}

// WaitOpenConns waits until at least n connections can take envelopes
// (open, not closing) and returns their IDs.
func (s *Server) WaitOpenConns(ctx context.Context, n int) ([]int, error) {
	var ids []int
	err := s.WaitFor(ctx, func(st *State) bool {
		ids = st.OpenConnIDs()
		return len(ids) >= n
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %d open connections (have %v): %w", n, s.OpenConnIDs(), err)
	}
	return ids, nil
}

// DropConn closes connection id abruptly, without a close frame, like a
// network failure. Envelopes queued on it but not yet written go to another
// open connection (events wait for the next one if none is open; a slash
// command or interaction is lost, as a user's action is on Slack). Envelopes
// written but not acked are redelivered when their ack window ends.
func (s *Server) DropConn(id int) error {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("slackfake: no open connection %d", id)
	}
	_ = c.ws.NetConn().Close()
	return nil
}

// DisconnectConn sends {"type":"disconnect","reason":reason} on connection
// id only and closes it once the client has, or after the disconnect grace.
func (s *Server) DisconnectConn(id int, reason string) error {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("slackfake: no open connection %d", id)
	}
	s.disconnectConn(c, reason)
	return nil
}

// pickConnLocked chooses the connection for env with the delivery policy,
// among the open connections without a pending disconnect.
func (s *Server) pickConnLocked(env *Envelope) *wsConn {
	ids := make([]int, 0, len(s.conns))
	for id, c := range s.conns {
		if !c.closing {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	id := s.policy(slices.Clone(ids), *env)
	if c := s.conns[id]; c != nil && !c.closing {
		return c
	}
	s.logf("delivery policy chose connection %d, not one of %v: using %d", id, ids, ids[0])
	return s.conns[ids[0]]
}
