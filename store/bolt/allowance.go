package bolt

import (
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// allowances is the embedded store's TakeAllowance state: the times of
// each key's uses within the window, oldest first. It is held in memory:
// the file is opened by one process, so there is nobody to share it with,
// and a use is not worth a commit (an fsync) on the path of every
// submission; a restart forgets the hour's counts.
type allowances struct {
	mu    sync.Mutex
	uses  map[string][]time.Time
	calls int
}

// TakeAllowance records one use of key's allowance, limit uses per sliding
// window, if one is left: ok is false, and nothing is recorded, when key
// has had limit uses within the window that ends now. The embedded store
// keeps the counts in memory (see allowances); PostgreSQL keeps them in the
// database, shared by the replicas.
func (db *DB) TakeAllowance(key string, limit int, window time.Duration) (bool, error) {
	if limit < 1 || window <= 0 {
		return false, store.ErrBadAllowance
	}
	now := db.now()
	cutoff := now.Add(-window)
	a := &db.allow
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.uses == nil {
		a.uses = map[string][]time.Time{}
	}
	uses := dropUntil(a.uses[key], cutoff)
	ok := len(uses) < limit
	if ok {
		uses = append(uses, now)
	}
	if len(uses) == 0 {
		delete(a.uses, key)
	} else {
		a.uses[key] = uses
	}
	// Now and then, forget the keys idle for a window: memory stays
	// proportional to the keys used within the last window.
	if a.calls++; a.calls%1024 == 0 {
		for k, u := range a.uses {
			if !u[len(u)-1].After(cutoff) {
				delete(a.uses, k)
			}
		}
	}
	return ok, nil
}

// dropUntil drops the times at or before cutoff from the front of uses
// (oldest first).
func dropUntil(uses []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(uses) && !uses[i].After(cutoff) {
		i++
	}
	if i == 0 {
		return uses
	}
	return append(uses[:0:0], uses[i:]...)
}
