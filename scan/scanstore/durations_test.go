package scanstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/store/bolt"
)

// flakyDurations refuses writes while down.
type flakyDurations struct {
	DurationStore
	down atomic.Bool
}

func (f *flakyDurations) RecordDurations(service string, ds []time.Duration, keep int) error {
	if f.down.Load() {
		return errors.New("database unavailable")
	}
	return f.DurationStore.RecordDurations(service, ds, keep)
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
	}
}

// TestDurationsSurviveARestartAndAreShared: the durations one process's
// schedule learned are kept, so the next process's schedule plans from
// them from its start (not from the prior); two keepers on one store (two
// replicas on PostgreSQL) seed each other's schedules; a store that
// refuses writes for a while loses none.
func TestDurationsSurviveARestartAndAreShared(t *testing.T) {
	t.Parallel()
	db, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	flaky := &flakyDurations{DurationStore: db}

	first := reputation.NewLearnedSchedule()
	a := NewDurations(flaky, 0, nil)
	if err := a.Learn("reputation", first); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx, 20*time.Millisecond) })
	learn := a.Observed("reputation")
	flaky.down.Store(true)
	for i := range 10 {
		d := time.Duration(40+i) * time.Second
		first.Observe(d)
		learn(d)
	}
	time.Sleep(50 * time.Millisecond)
	if ds, _ := db.Durations("reputation", 64); len(ds) != 0 {
		t.Fatalf("%d durations written while the store was down", len(ds))
	}
	flaky.down.Store(false)
	learn(50 * time.Second) // the next flush writes it after the rest
	waitUntil(t, "11 durations kept", func() bool { ds, _ := db.Durations("reputation", 64); return len(ds) == 11 })
	cancel()
	wg.Wait()
	if ds, _ := db.Durations("reputation", 64); ds[0] != 40*time.Second || ds[10] != 50*time.Second {
		t.Fatalf("kept %v, want the order learned", ds)
	}

	// The next process: its schedule plans from them at once.
	restarted := reputation.NewLearnedSchedule()
	if restarted.Stats().Learning {
		t.Fatal("a fresh schedule is learning")
	}
	b := NewDurations(db, 0, nil)
	if err := b.Learn("reputation", restarted); err != nil {
		t.Fatal(err)
	}
	if st := restarted.Stats(); !st.Learning || st.Samples != 11 || st.Median != 45*time.Second {
		t.Fatalf("after the restart: %+v; want the 11 durations kept", st)
	}
	if d := restarted.Next(0, 0); d == reputation.LearnedProbe {
		t.Errorf("the restarted schedule probes after %v as if it knew nothing", d)
	}

	// Two replicas: what one learns reaches the other's schedule.
	other := reputation.NewLearnedSchedule()
	c := NewDurations(db, 0, nil)
	if err := c.Learn("reputation", other); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	wg.Go(func() { b.Run(ctx, 20*time.Millisecond) })
	wg.Go(func() { c.Run(ctx, 20*time.Millisecond) })
	c.Observed("reputation")(90 * time.Second)
	waitUntil(t, "the other replica's duration seeds this one", func() bool {
		return slices.Contains(restarted.Samples(), 90*time.Second)
	})
	cancel()
	wg.Wait()
}

// TestDurationsAreBoundedPerService: a store keeps the latest Keep per
// service, apart.
func TestDurationsAreBoundedPerService(t *testing.T) {
	t.Parallel()
	db := bolt.Memory(bolt.Options{})
	k := NewDurations(db, 5, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { k.Run(ctx, time.Hour); close(done) }()
	for i := range 8 {
		k.Observed("reputation")(time.Duration(i+1) * time.Second)
	}
	k.Observed("sandbox")(200 * time.Second)
	cancel()
	<-done
	if ds, _ := db.Durations("reputation", 64); !slices.Equal(ds, []time.Duration{4 * time.Second, 5 * time.Second, 6 * time.Second, 7 * time.Second, 8 * time.Second}) {
		t.Fatalf("reputation kept %v", ds)
	}
	if ds, _ := db.Durations("sandbox", 64); !slices.Equal(ds, []time.Duration{200 * time.Second}) {
		t.Fatalf("sandbox kept %v", ds)
	}
}
