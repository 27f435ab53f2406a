package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases,
		testCase{"EventQueueKeepsOrderAndDropsTheOldest", eventQueueOrderAndBound},
		testCase{"EventQueueConcurrentEnqueuesAreContiguous", eventQueueConcurrent})
}

func body(seq uint64) ([]byte, error) { return fmt.Appendf(nil, `{"seq":%d}`, seq), nil }

func eventQueueOrderAndBound(t *testing.T, db store.State, _ *Clock) {
	if n, err := db.EventsQueued(); err != nil || n != 0 {
		t.Fatalf("empty queue: %d, %v", n, err)
	}
	for i := 1; i <= 5; i++ {
		seq, dropped, err := db.EnqueueEvent(body, 3)
		must(t, err)
		wantDropped := 0
		if i > 3 {
			wantDropped = 1
		}
		if seq != uint64(i) || dropped != wantDropped {
			t.Fatalf("enqueue %d: seq %d dropped %d, want %d and %d", i, seq, dropped, i, wantDropped)
		}
	}
	got, err := db.QueuedEvents(10)
	must(t, err)
	if len(got) != 3 || got[0].Seq != 3 || got[2].Seq != 5 || string(got[0].Body) != `{"seq":3}` {
		t.Fatalf("queued after bound 3: %+v", got)
	}
	if n, _ := db.EventsQueued(); n != 3 {
		t.Fatalf("EventsQueued = %d, want 3", n)
	}
	must(t, db.DeleteEvent(3))
	must(t, db.DeleteEvent(3)) // absent: no error
	got, err = db.QueuedEvents(1)
	must(t, err)
	if len(got) != 1 || got[0].Seq != 4 {
		t.Fatalf("oldest after delete: %+v", got)
	}
	must(t, db.DeleteEvent(4))
	must(t, db.DeleteEvent(5))
	if n, _ := db.EventsQueued(); n != 0 {
		t.Fatalf("EventsQueued = %d after sending all, want 0", n)
	}
	// The sequence goes on after the queue emptied.
	seq, _, err := db.EnqueueEvent(body, 0)
	must(t, err)
	if seq != 6 {
		t.Fatalf("next seq = %d, want 6", seq)
	}
	// A build error records nothing.
	if _, _, err := db.EnqueueEvent(func(uint64) ([]byte, error) { return nil, fmt.Errorf("boom") }, 0); err == nil {
		t.Fatal("build error not returned")
	}
	if seq, _, _ := db.EnqueueEvent(body, 0); seq != 7 {
		t.Fatalf("seq after a failed enqueue = %d, want 7", seq)
	}
}

func eventQueueConcurrent(t *testing.T, db store.State, _ *Clock) {
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, _, err := db.EnqueueEvent(body, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := db.QueuedEvents(1000)
	must(t, err)
	if len(got) != writers*each {
		t.Fatalf("%d queued, want %d", len(got), writers*each)
	}
	for i, e := range got {
		if e.Seq != uint64(i+1) || string(e.Body) != fmt.Sprintf(`{"seq":%d}`, i+1) {
			t.Fatalf("event %d: seq %d body %s", i, e.Seq, e.Body)
		}
	}
}
