package store

// PruneStats counts what one Prune removed, per kind of record.
type PruneStats struct {
	Cards    int // final cards (and their card-ts index entries)
	Verdicts int // verdict-history entries
	Reports  int // feedback reports (the audit trail)
	Targets  int // targets no card, history or recheck refers to any more
	Events   int // processed event ids
	// Jobs is finished jobs. The embedded file deletes a job as soon as
	// it finishes (FinishJob), so it is always 0 there; unfinished jobs
	// are never pruned.
	Jobs int
	// UserReports is user reports (Report to security) last updated
	// before the cutoff, with their reporters.
	UserReports int
	// Backfills is finished backfills (not running) last updated before
	// the cutoff.
	Backfills int
}

// Total is the number of records removed.
func (s PruneStats) Total() int {
	return s.Cards + s.Verdicts + s.Reports + s.Targets + s.Events + s.Jobs + s.UserReports + s.Backfills
}
