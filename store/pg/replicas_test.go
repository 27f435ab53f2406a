package pg_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

const testLease = time.Second // dead after 600 ms, beats every 200 ms

func openReplica(t *testing.T, schema, base, id string) *pg.DB {
	t.Helper()
	db, err := pg.Open(context.Background(), base, pg.Options{Schema: schema, Replica: id, Lease: testLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db.Replica() != "" {
			db.Close()
		}
	})
	return db
}

// waitHealthy waits until db may judge the other replicas (its heartbeat
// healthy for 3/5 of the lease).
func waitHealthy(t *testing.T) { time.Sleep(testLease * 3 / 5) }

// TestReplicas: the jobs and analyses of a replica that dies are taken
// over by the others within the lease, each by exactly one; a live
// replica's are never taken.
func TestReplicas(t *testing.T) {
	base := pgtest.URL(t)
	t.Run("DeadReplicasJobsAreTakenOverOnceWithinTheLease", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		a := openReplica(t, schema, base, "a")
		b := openReplica(t, schema, base, "b")
		c := openReplica(t, schema, base, "c")
		var jobs []*store.Job
		for i := range 40 {
			jobs = append(jobs, &store.Job{Kind: "message", EventID: fmt.Sprintf("Ev%d", i), Payload: []byte(`{}`)})
		}
		if _, err := a.RecordJobs(jobs); err != nil {
			t.Fatal(err)
		}
		mine := []*store.Job{{Kind: "message", EventID: "EvB", Payload: []byte(`{}`)}}
		if _, err := b.RecordJobs(mine); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t)
		time.Sleep(testLease) // a, b and c keep beating: nobody is dead
		for _, db := range []*pg.DB{a, b, c} {
			if got, err := db.OrphanJobs(); err != nil || len(got) != 0 {
				t.Fatalf("%s took %d jobs of live replicas (%v)", db.Replica(), len(got), err)
			}
		}
		if n := b.Replicas(); n != 3 {
			t.Fatalf("b sees %d replicas, want 3", n)
		}

		a.Crash()
		died := time.Now()
		var mu sync.Mutex
		taken := map[uint64]string{}
		var took time.Duration
		var wg sync.WaitGroup
		for _, db := range []*pg.DB{b, c} {
			wg.Go(func() {
				for time.Since(died) < 3*testLease {
					got, err := db.OrphanJobs()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, j := range got {
						if j.Owner != "a" {
							t.Errorf("%s took job %d from %q, want a", db.Replica(), j.ID, j.Owner)
						}
						if prev, dup := taken[j.ID]; dup {
							t.Errorf("job %d taken by %s and %s", j.ID, prev, db.Replica())
						}
						taken[j.ID] = db.Replica()
					}
					if len(taken) == len(jobs) && took == 0 {
						took = time.Since(died)
					}
					mu.Unlock()
					time.Sleep(db.SweepEvery())
				}
			})
		}
		wg.Wait()
		if len(taken) != len(jobs) {
			t.Fatalf("%d of %d jobs taken over", len(taken), len(jobs))
		}
		for _, j := range jobs {
			if _, ok := taken[j.ID]; !ok {
				t.Fatalf("job %d not taken over", j.ID)
			}
		}
		if took > testLease {
			t.Fatalf("taken over %v after the crash, want within the lease (%v)", took, testLease)
		}
		t.Logf("40 jobs of a crashed replica taken over in %v (lease %v)", took.Round(time.Millisecond), testLease)
		// b's own job stayed b's.
		if got, _ := c.OrphanJobs(); len(got) != 0 {
			t.Fatalf("c took %d more jobs", len(got))
		}
		if n := b.Replicas(); n != 2 {
			t.Fatalf("b sees %d replicas after a's crash, want 2", n)
		}
	})

	t.Run("AGracefulStopHandsItsJobsOverAtOnce", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		a := openReplica(t, schema, base, "a")
		b := openReplica(t, schema, base, "b")
		if _, err := a.RecordJobs([]*store.Job{{Kind: "message", EventID: "E1", Payload: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t)
		a.Close()
		got, err := b.OrphanJobs()
		if err != nil || len(got) != 1 || got[0].EventID != "E1" {
			t.Fatalf("after a's stop b took %v (%v), want E1", got, err)
		}
	})

	t.Run("AnAnalysisIsOneReplicasUntilItDies", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		a := openReplica(t, schema, base, "a")
		b := openReplica(t, schema, base, "b")
		const u = "https://one.test/"
		if c, err := a.ClaimAnalysis("reputation", u); err != nil || !c.Mine || c.Existed {
			t.Fatalf("a's claim = %+v, %v", c, err)
		}
		if err := a.PutAnalysis(store.Analysis{Service: "reputation", Target: u, TaskID: "T9"}); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t)
		if c, err := b.ClaimAnalysis("reputation", u); err != nil || c.Mine || !c.Existed || c.Analysis.TaskID != "T9" {
			t.Fatalf("b's claim while a lives = %+v, %v; want a's, task T9", c, err)
		}
		if c, err := a.ClaimAnalysis("reputation", u); err != nil || !c.Mine {
			t.Fatalf("a's own claim again = %+v, %v", c, err)
		}
		a.Crash()
		deadline := time.Now().Add(testLease)
		for {
			c, err := b.ClaimAnalysis("reputation", u)
			if err != nil {
				t.Fatal(err)
			}
			if c.Mine {
				if !c.Existed || c.Analysis.TaskID != "T9" {
					t.Fatalf("b took over %+v, want task T9", c)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("b did not take over the analysis of the crashed replica within the lease")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("AfterAnOutageNothingIsTakenUntilTheHeartbeatIsHealthyAgain", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		a := openReplica(t, schema, base, "a")
		b := openReplica(t, schema, base, "b")
		if _, err := a.RecordJobs([]*store.Job{{Kind: "message", EventID: "E1", Payload: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ClaimAnalysis("sandbox", "abc"); err != nil {
			t.Fatal(err)
		}
		a.Crash()
		time.Sleep(testLease) // a is dead by now
		b.Recovered()         // but b has just come back from an outage
		if got, _ := b.OrphanJobs(); len(got) != 0 {
			t.Fatalf("b took %d jobs right after its own outage", len(got))
		}
		if c, _ := b.ClaimAnalysis("sandbox", "abc"); c.Mine {
			t.Fatal("b took an analysis right after its own outage")
		}
		waitHealthy(t)
		if got, _ := b.OrphanJobs(); len(got) != 1 {
			t.Fatalf("b took %d jobs once healthy, want 1", len(got))
		}
		if c, _ := b.ClaimAnalysis("sandbox", "abc"); !c.Mine {
			t.Fatal("b did not take the analysis once healthy")
		}
	})
}

// TestRemovalsAcrossReplicas: two replicas claiming a flip's removals at
// once take each exactly once; an approval pressed on both replicas
// releases the batch once; a removal a replica held when it died is taken
// over within the lease, by one replica.
func TestRemovalsAcrossReplicas(t *testing.T) {
	base := pgtest.URL(t)
	schema, _ := pgtest.Schema(t)
	a := openReplica(t, schema, base, "a")
	b := openReplica(t, schema, base, "b")
	now := time.Now()
	if err := a.PutRemovalBatch(store.RemovalBatch{ID: "flip", Count: 40, Created: now}); err != nil {
		t.Fatal(err)
	}
	var rs []store.Removal
	for i := range 40 {
		rs = append(rs, store.Removal{Card: card.Ref{Channel: "C1", SourceTS: fmt.Sprintf("1.%06d", i)},
			Batch: "flip", Held: true, Queued: now, NextAt: now})
	}
	if err := a.QueueRemovals(rs); err != nil {
		t.Fatal(err)
	}
	var approved [2]int
	var wg sync.WaitGroup
	for i, db := range []*pg.DB{a, b} {
		wg.Go(func() {
			_, n, _, err := db.ApproveBatch("flip", "U0ADMIN", now)
			if err != nil {
				t.Error(err)
			}
			approved[i] = n
		})
	}
	wg.Wait()
	if approved[0]+approved[1] != 40 || approved[0]*approved[1] != 0 {
		t.Fatalf("approvals released %v, want 40 once", approved)
	}
	var mu sync.Mutex
	claimed := map[card.Ref]string{}
	for _, db := range []*pg.DB{a, b} {
		wg.Go(func() {
			for {
				r, ok, err := db.ClaimRemoval(time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if other, dup := claimed[r.Card]; dup {
					t.Errorf("%v claimed by %s and %s", r.Card, other, db.Replica())
				}
				claimed[r.Card] = db.Replica()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != 40 {
		t.Fatalf("%d of 40 removals claimed", len(claimed))
	}

	// a holds one removal and dies; b takes it over within the lease.
	c := openReplica(t, schema, base, "c")
	late := store.Removal{Card: card.Ref{Channel: "C2", SourceTS: "2.000001"}, Queued: now, NextAt: now}
	if err := a.QueueRemovals([]store.Removal{late}); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := a.ClaimRemoval(time.Now()); err != nil || !ok || r.Card != late.Card {
		t.Fatalf("a's claim: %+v %v %v", r, ok, err)
	}
	waitHealthy(t)
	for _, db := range []*pg.DB{b, c} {
		if _, ok, _ := db.ClaimRemoval(time.Now()); ok {
			t.Fatalf("%s took a live replica's removal", db.Replica())
		}
	}
	a.Crash()
	died := time.Now()
	var takers []string
	for time.Since(died) < 3*testLease && len(takers) == 0 {
		for _, db := range []*pg.DB{b, c} {
			if r, ok, err := db.ClaimRemoval(time.Now()); err == nil && ok && r.Card == late.Card {
				takers = append(takers, db.Replica())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, db := range []*pg.DB{b, c} {
		if _, ok, _ := db.ClaimRemoval(time.Now()); ok {
			takers = append(takers, db.Replica())
		}
	}
	if len(takers) != 1 {
		t.Fatalf("the dead replica's removal was taken by %v, want one replica", takers)
	}
	t.Logf("taken over by %s %v after the death", takers[0], time.Since(died).Round(10*time.Millisecond))
}
