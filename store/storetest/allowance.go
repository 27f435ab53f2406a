package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// allowance: TakeAllowance grants limit uses of a key per sliding window,
// refuses the next without recording it, grants again as the oldest use
// leaves the window, keeps keys apart, and grants exactly limit uses to
// concurrent callers.
func allowance(t *testing.T, db store.State, c *Clock) {
	take := func(key string, limit int) bool {
		t.Helper()
		ok, err := db.TakeAllowance(key, limit, time.Hour)
		must(t, err)
		return ok
	}
	start := c.Now()
	for i := range 3 { // at 0, 10 and 20 minutes
		if !take("U1", 3) {
			t.Fatalf("use %d of 3 refused", i+1)
		}
		c.Add(10 * time.Minute)
	}
	for range 2 { // at 30 minutes, twice: refused, and not counted
		if take("U1", 3) {
			t.Fatal("a fourth use within the hour was granted")
		}
	}
	if !take("U2", 3) {
		t.Fatal("another key's use was refused")
	}
	// The use at 0 leaves the window at 60 minutes; the refused ones at 30
	// were not recorded, so one is free then, and one only.
	c.Set(start.Add(time.Hour + time.Second))
	if !take("U1", 3) {
		t.Fatal("a use was refused after the oldest left the window")
	}
	if take("U1", 3) {
		t.Fatal("two uses granted when one left the window")
	}
	// A higher limit for the same key counts the same uses.
	if !take("U1", 4) {
		t.Fatal("refused under a limit above the uses in the window")
	}
	// Concurrent callers: exactly the limit is granted.
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			ok, err := db.TakeAllowance("U3", 5, time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := granted.Load(); n != 5 {
		t.Fatalf("%d of 20 concurrent uses granted, want the limit, 5", n)
	}
	for _, bad := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Hour}, {-1, time.Hour}, {1, 0}} {
		if _, err := db.TakeAllowance("U4", bad.limit, bad.window); !errors.Is(err, store.ErrBadAllowance) {
			t.Errorf("limit %d, window %v: %v, want ErrBadAllowance", bad.limit, bad.window, err)
		}
	}
	// Many keys, each used once: all granted (nothing is shared between keys).
	for i := range 50 {
		if !take(fmt.Sprint("many-", i), 1) {
			t.Fatalf("key %d refused", i)
		}
	}
}
