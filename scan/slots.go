package scan

import (
	"context"
	"slices"
	"sync"
)

// slots bounds the analyses (or downloads) in flight, and shares them
// between requesters: one requester holds at most perKey of them (half, at
// least one), so another's new link finds a slot free however many links
// the first sent; and a slot that frees goes to the waiter whose
// requesters hold the fewest, first come first served among equals. A
// waiter made for several requesters (a shared analysis) may take a slot
// under any of them, and is charged to the one holding the fewest.
//
// Why a cap per requester and not only a fair order: slots are held for a
// whole analysis (a minute, for a slow service), so a newcomer behind a
// burst that took every slot would wait for one of the burst's analyses to
// end, however fairly the next free slot were given.
type slots struct {
	size, perKey int

	mu      sync.Mutex
	used    int
	held    map[string]int
	waiters []*slotWaiter // arrival order
}

type slotWaiter struct {
	keys  func() []string
	ready chan string // receives the key charged
}

func newSlots(size int) *slots {
	size = max(size, 1)
	return &slots{size: size, perKey: max(1, size/2), held: map[string]int{}}
}

// acquire waits for a slot for a waiter made for the requesters keys
// returns (read again at every chance: the set may grow), or ctx's end. The
// returned release gives the slot back; it may be called more than once.
func (s *slots) acquire(ctx context.Context, keys func() []string) (release func(), err error) {
	w := &slotWaiter{keys: keys, ready: make(chan string, 1)}
	s.mu.Lock()
	s.waiters = append(s.waiters, w)
	s.grant()
	s.mu.Unlock()
	var key string
	select {
	case key = <-w.ready:
	case <-ctx.Done():
		s.mu.Lock()
		if i := slices.Index(s.waiters, w); i >= 0 {
			s.waiters = slices.Delete(s.waiters, i, i+1)
			s.mu.Unlock()
			return nil, ctx.Err()
		}
		s.mu.Unlock()
		key = <-w.ready // granted as ctx ended: give it back
		s.free(key)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { s.free(key) }) }, nil
}

// poke looks again for a waiter that can take a free slot (a waiter's
// requesters grew: one of them may hold fewer).
func (s *slots) poke() {
	s.mu.Lock()
	s.grant()
	s.mu.Unlock()
}

func (s *slots) free(key string) {
	s.mu.Lock()
	s.used--
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key)
	}
	s.grant()
	s.mu.Unlock()
}

// grant hands the free slots to the waiters that may take one: the
// waiter whose least-holding requester holds the fewest, the first to
// come among equals. Under s.mu.
func (s *slots) grant() {
	for s.used < s.size && len(s.waiters) > 0 {
		best, bestKey, bestHeld := -1, "", 0
		for i, w := range s.waiters {
			for _, k := range w.keys() {
				h := s.held[k]
				if h >= s.perKey {
					continue
				}
				if best < 0 || h < bestHeld {
					best, bestKey, bestHeld = i, k, h
				}
			}
			if best >= 0 && bestHeld == 0 {
				break // nobody goes before a first come holding none
			}
		}
		if best < 0 {
			return // every waiter's requesters hold their share
		}
		w := s.waiters[best]
		s.waiters = slices.Delete(s.waiters, best, best+1)
		s.used++
		s.held[bestKey]++
		w.ready <- bestKey
	}
}
