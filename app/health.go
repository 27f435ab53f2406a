package app

import (
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/commands"
)

// serviceHealth follows how each analysis service answered its last
// request (the clients' observers feed it), for the App Home.
type serviceHealth struct {
	mu   sync.Mutex
	last map[string]commands.ServiceHealth // by display name
	// order and configured are fixed at wiring.
	order      []string
	configured map[string]bool
}

func newServiceHealth(reputationOn, sandboxOn bool) *serviceHealth {
	return &serviceHealth{last: map[string]commands.ServiceHealth{},
		order:      []string{"URL reputation", "Sandbox"},
		configured: map[string]bool{"URL reputation": reputationOn, "Sandbox": sandboxOn}}
}

// observe records one request attempt's outcome: reason is the clients'
// failure reason ("" on success; apiclient.Reason values). A budget wait
// or a cancelled request says nothing of the service.
func (h *serviceHealth) observe(name, reason string, isWait bool) {
	if isWait || reason == "canceled" {
		return
	}
	s := commands.ServiceHealth{Name: name, Configured: true, Known: true, Reachable: true, At: time.Now()}
	switch reason {
	case "", "api", "client":
		// Answered (a documented error is an answer).
	case "auth":
		s.Detail = "it refused our API key"
	case "rate_limited", "quota":
		s.Detail = "it is rate limiting us"
	case "bad_body":
		s.Detail = "its last answer could not be read"
	case "server":
		s.Reachable, s.Detail = false, "server errors"
	case "timeout":
		s.Reachable, s.Detail = false, "timed out"
	default: // transport
		s.Reachable, s.Detail = false, "connection failed"
	}
	h.mu.Lock()
	h.last[name] = s
	h.mu.Unlock()
}

// states returns each service's health, in display order.
func (h *serviceHealth) states() []commands.ServiceHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]commands.ServiceHealth, 0, len(h.order))
	for _, name := range h.order {
		s, ok := h.last[name]
		if !ok {
			s = commands.ServiceHealth{Name: name, Configured: h.configured[name]}
		}
		out = append(out, s)
	}
	return out
}
