package store

import (
	"sync"
	"testing"
	"time"
)

// clock is a settable clock for the tests in this package that need the
// embedded backends' internals (retention batches, compaction); the
// behaviour every backend shares is tested in store/storetest.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// eachBackend runs fn against the file store and the memory store.
func eachBackend(t *testing.T, fn func(t *testing.T, db *DB, c *clock)) {
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		c := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
		db, err := Open(t.TempDir(), Options{Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, db, c)
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
		fn(t, Memory(Options{Now: c.now}), c)
	})
}
