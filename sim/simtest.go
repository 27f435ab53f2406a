package sim

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Start serves a new Server for cfg on a local httptest server that is
// closed when tb's test ends. baseURL ("http://127.0.0.1:port", no trailing
// slash) is the base of both services: the URL service lives under
// baseURL+"/api/<key>/" and the sandbox under baseURL+"/apineo/<key>/".
func Start(tb testing.TB, cfg Config) (srv *Server, baseURL string) {
	tb.Helper()
	srv = New(cfg)
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return srv, ts.URL
}

// ManualClock is a clock for Config.Now that moves only when told. It is
// safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set sets the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
