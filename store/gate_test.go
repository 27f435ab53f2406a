package store

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// gateRun records the order in which writers get through a writeGate.
type gateRun struct {
	g     *writeGate
	mu    sync.Mutex
	order []string
	wg    sync.WaitGroup
}

// queue starts a writer and returns once it waits at the gate; inside,
// it records its name, runs then (if any), and leaves.
func (r *gateRun) queue(t *testing.T, name string, urgent bool, then func()) {
	t.Helper()
	waiting := func() (n int) {
		r.g.mu.Lock()
		defer r.g.mu.Unlock()
		return int(r.g.next-r.g.serving) + r.g.urgentWaiting
	}
	before := waiting()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.g.lock(urgent)
		r.mu.Lock()
		r.order = append(r.order, name)
		r.mu.Unlock()
		if then != nil {
			then()
		}
		r.g.unlock()
	}()
	for waiting() == before {
		time.Sleep(time.Millisecond) // until it is queued (not a timing assertion)
	}
}

func TestWriteGateLetsTheJournalGoFirst(t *testing.T) {
	r := &gateRun{g: &writeGate{}}
	r.g.lock(false) // a card write in progress
	r.queue(t, "card1", false, nil)
	r.queue(t, "card2", false, nil)
	r.queue(t, "card3", false, nil)
	r.queue(t, "journal", true, nil)
	r.g.unlock()
	r.wg.Wait()
	if want := []string{"journal", "card1", "card2", "card3"}; !slices.Equal(r.order, want) {
		t.Fatalf("order %v, want %v", r.order, want)
	}
}

func TestWriteGateAlternatesSoNeitherStarves(t *testing.T) {
	r := &gateRun{g: &writeGate{}}
	r.g.lock(false)
	r.queue(t, "card1", false, nil)
	r.queue(t, "journal1", true, func() {
		// While the first journal write runs, another one queues: the
		// card waiting goes before it.
		r.queue(t, "journal2", true, nil)
	})
	r.queue(t, "card2", false, nil)
	r.g.unlock()
	r.wg.Wait()
	if want := []string{"journal1", "card1", "journal2", "card2"}; !slices.Equal(r.order, want) {
		t.Fatalf("order %v, want %v", r.order, want)
	}
}
