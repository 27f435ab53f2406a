package bolt

import (
	"sync"
	"time"
)

// clock is a settable clock for the tests in this package that need the
// embedded backends' internals (compaction, file growth); the behaviour
// every backend shares, retention included, is tested in store/storetest.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
