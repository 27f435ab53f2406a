// Package testutil holds the helpers tests across the module share: a
// goroutine-safe log sink, a logger that writes to one, a clock that moves
// only when told, a heap sampler with synthetic content for memory
// bounds, the parallelism of the end-to-end packages, and the test
// suite's environment: the variables the tests read, each documented
// (TestVariables, the one list of them), and the environment of the
// processes tests start (ChildEnv). It imports only the standard library
// (no testing package either), so any package's tests can use it without
// a cycle, and the production binary never links it.
package testutil

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
)

// SyncBuffer is an io.Writer that several goroutines may write to while a
// test reads what was written. The zero value is ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Logger returns a text logger at level that writes to a new SyncBuffer,
// and the buffer.
func Logger(level slog.Leveler) (*slog.Logger, *SyncBuffer) {
	buf := &SyncBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})), buf
}

// Clock is a clock that moves only when told: Now for the code under test,
// Set and Advance for the test, and Sleep for code that takes a sleep
// function (it advances the clock by the delay and records it). It is safe
// for concurrent use.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep advances the clock by d without waiting, records d, and returns
// ctx's error.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return ctx.Err()
}

// Slept returns the delays Sleep was asked for, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}
