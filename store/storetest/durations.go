package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// durations: RecordDurations keeps the latest keep durations of a
// service, oldest first, apart from the other services', in one write for
// several, and concurrent writers lose none of theirs.
func durations(t *testing.T, db store.State, _ *Clock) {
	if ds, err := db.Durations("reputation", 64); err != nil || len(ds) != 0 {
		t.Fatalf("before any: %v %v", ds, err)
	}
	for i := 1; i <= 5; i++ {
		must(t, db.RecordDurations("reputation", []time.Duration{time.Duration(i) * time.Second}, 3))
	}
	must(t, db.RecordDurations("sandbox", []time.Duration{200 * time.Second}, 3))
	must(t, db.RecordDurations("sandbox", nil, 3))
	ds, err := db.Durations("reputation", 64)
	must(t, err)
	if want := []time.Duration{3 * time.Second, 4 * time.Second, 5 * time.Second}; !slices.Equal(ds, want) {
		t.Fatalf("reputation: %v, want the latest 3 oldest first %v", ds, want)
	}
	if ds, _ := db.Durations("reputation", 2); !slices.Equal(ds, []time.Duration{4 * time.Second, 5 * time.Second}) {
		t.Fatalf("the latest 2: %v", ds)
	}
	if ds, _ := db.Durations("sandbox", 64); !slices.Equal(ds, []time.Duration{200 * time.Second}) {
		t.Fatalf("sandbox: %v", ds)
	}
	// A larger keep grows the list again; sub-second durations are kept
	// exactly.
	must(t, db.RecordDurations("reputation", []time.Duration{1500*time.Millisecond + 7}, 5))
	if ds, _ := db.Durations("reputation", 64); len(ds) != 4 || ds[3] != 1500*time.Millisecond+7 {
		t.Fatalf("after keep 5: %v", ds)
	}
	// Several in one write, more than keep: the latest keep of them.
	must(t, db.RecordDurations("batch", []time.Duration{1, 2, 3, 4, 5, 6}, 4))
	must(t, db.RecordDurations("batch", []time.Duration{7, 8}, 4))
	if ds, _ := db.Durations("batch", 64); !slices.Equal(ds, []time.Duration{5, 6, 7, 8}) {
		t.Fatalf("batches: %v, want 5 6 7 8", ds)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := db.RecordDurations("concurrent", []time.Duration{time.Duration(i+1) * time.Millisecond}, 64); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ds, _ = db.Durations("concurrent", 64)
	slices.Sort(ds)
	if len(ds) != 20 || ds[0] != time.Millisecond || ds[19] != 20*time.Millisecond {
		t.Fatalf("concurrent writers: %d durations %v", len(ds), ds)
	}
}
