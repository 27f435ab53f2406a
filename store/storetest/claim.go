package storetest

import (
	"sync"
	"testing"

	"github.com/verdictbot/verdictbot/store"
)

// claimAnalysis: one process (the embedded file, or PostgreSQL without a
// replica id) claims a new target once with an intent, then resumes what is
// recorded; concurrent claims of a new target make exactly one intent.
func claimAnalysis(t *testing.T, db store.State, c *Clock) {
	const u = "https://claim.test/a"
	got, err := db.ClaimAnalysis("reputation", u)
	must(t, err)
	if !got.Mine || got.Existed {
		t.Fatalf("first claim = %+v, want mine and new", got)
	}
	a, err := db.Analysis("reputation", u)
	must(t, err)
	if a.TaskID != "" || !a.SubmittedAt.Equal(c.Now()) {
		t.Fatalf("intent = %+v", a)
	}
	got, err = db.ClaimAnalysis("reputation", u)
	must(t, err)
	if !got.Mine || !got.Existed || got.Analysis.TaskID != "" {
		t.Fatalf("claim of an intent = %+v, want mine, existed, no task", got)
	}
	must(t, db.PutAnalysis(store.Analysis{Service: "reputation", Target: u, TaskID: "T1"}))
	got, err = db.ClaimAnalysis("reputation", u)
	must(t, err)
	if !got.Mine || !got.Existed || got.Analysis.TaskID != "T1" {
		t.Fatalf("claim of a submission = %+v, want mine with task T1", got)
	}
	// Another service's analysis of the same target is its own.
	got, err = db.ClaimAnalysis("sandbox", u)
	must(t, err)
	if !got.Mine || got.Existed {
		t.Fatalf("sandbox claim = %+v", got)
	}
	must(t, db.DeleteAnalysis("reputation", u))
	got, err = db.ClaimAnalysis("reputation", u)
	must(t, err)
	if !got.Mine || got.Existed {
		t.Fatalf("claim after the analysis ended = %+v", got)
	}

	// Concurrent claims of a new target: one records the intent.
	const v = "https://claim.test/b"
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 8 {
		wg.Go(func() {
			got, err := db.ClaimAnalysis("reputation", v)
			if err != nil {
				t.Error(err)
				return
			}
			if !got.Existed {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fresh != 1 {
		t.Fatalf("%d concurrent claims made an intent, want 1", fresh)
	}
	if n := db.Replicas(); n != 1 {
		t.Fatalf("Replicas() = %d for one process", n)
	}
	if jobs, err := db.OrphanJobs(); err != nil || len(jobs) != 0 {
		t.Fatalf("OrphanJobs of one process = %v, %v", jobs, err)
	}
}
