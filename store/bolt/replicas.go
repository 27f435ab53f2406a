package store

// Claim is the answer of ClaimAnalysis.
type Claim struct {
	// Analysis is the analysis in flight when Existed (TaskID "" for an
	// intent: a submission that may or may not have reached the service).
	Analysis Analysis
	// Existed is true when an analysis of the target was already in flight.
	Existed bool
	// Mine is true when this process now submits or resumes it; false when
	// a live replica does (wait for its verdict).
	Mine bool
}

// ClaimAnalysis records an intent to submit target when nothing is in
// flight, and otherwise returns what is: this process is the only one that
// opens the file, so every analysis in it is its own to resume.
func (db *DB) ClaimAnalysis(service, target string) (Claim, error) {
	var c Claim
	now := db.now()
	err := db.be.batch(func(t txn) error {
		c = Claim{}
		key := analysisKey(service, target)
		if v := t.get(bAnalyses, key); v != nil {
			c.Existed, c.Mine = true, true
			return dec(v, &c.Analysis)
		}
		c.Mine = true
		return t.put(bAnalyses, key, enc(Analysis{Service: service, Target: target, SubmittedAt: now}))
	})
	if err != nil {
		return Claim{}, err
	}
	return c, nil
}

// OrphanJobs has nothing to return: the file has one process, whose
// unfinished jobs from before a restart PendingJobs returns.
func (db *DB) OrphanJobs() ([]Job, error) { return nil, nil }

// Replicas is 1: one process opens the file.
func (db *DB) Replicas() int { return 1 }
