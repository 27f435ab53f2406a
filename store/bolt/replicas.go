package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// ClaimAnalysis records an intent to submit target when nothing is in
// flight, and otherwise returns what is: this process is the only one that
// opens the file, so every analysis in it is its own to resume.
func (db *DB) ClaimAnalysis(service, target string) (store.Claim, error) {
	var c store.Claim
	now := db.now()
	err := db.be.batch(func(t txn) error {
		c = store.Claim{}
		key := analysisKey(service, target)
		if v := t.get(bAnalyses, key); v != nil {
			c.Existed, c.Mine = true, true
			return dec(v, &c.Analysis)
		}
		c.Mine = true
		return t.put(bAnalyses, key, enc(store.Analysis{Service: service, Target: target, SubmittedAt: now}))
	})
	if err != nil {
		return store.Claim{}, err
	}
	return c, nil
}

// OrphanJobs has nothing to return: the file has one process, whose
// unfinished jobs from before a restart PendingJobs returns.
func (db *DB) OrphanJobs() ([]store.Job, error) { return nil, nil }

// Replicas is 1: one process opens the file.
func (db *DB) Replicas() int { return 1 }

// OnReplicas never calls fn: the count is 1 for good (see
// store.State.OnReplicas).
func (db *DB) OnReplicas(func(n int)) {}

// SweepEvery is 0: the file has no orphans to sweep (see
// store.State.SweepEvery).
func (db *DB) SweepEvery() time.Duration { return 0 }
