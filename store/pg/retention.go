package pg

import (
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// defaultPruneBatch is how many rows one Prune statement deletes at most:
// each statement is its own short transaction, so the rows it locks are
// held for milliseconds while the replicas keep writing.
const defaultPruneBatch = 2000

// Prune removes what is older than cutoff (now minus
// VERDICTBOT_RETENTION), with the rules of store.State.Prune:
//
//   - final cards last updated before cutoff, with the target_cards rows
//     that point at them (a card still being analysed, or whose post was
//     interrupted, stays whatever its age);
//   - verdicts and reports recorded before cutoff; with a pruned verdict
//     its task index entry, unless the task is its target's current one
//     or an analysis in flight's;
//   - targets last checked before cutoff that have no recheck or deferred
//     check planned, no analysis in flight, no verdict left and no card left, with their task
//     index entry;
//   - task index entries whose target is gone and has no analysis in
//     flight (an analysis that failed);
//   - processed event ids seen before cutoff (PruneEvents);
//   - user reports last updated before cutoff; their reporters go by the
//     foreign key's cascade;
//   - backfills finished (not running) and last updated before cutoff.
//
// PruneStats.Jobs is always 0: FinishJob deletes a job as it finishes, and
// unfinished jobs are never pruned.
//
// Every step deletes at most the batch size of rows per statement, each
// statement a transaction of its own, until a statement deletes fewer; a
// failure leaves what was pruned so far pruned. Several replicas may prune
// at once: a row another prune has locked is skipped, not waited for.
func (db *DB) Prune(cutoff time.Time) (store.PruneStats, error) {
	var st store.PruneStats
	var err error
	steps := []struct {
		n     *int
		sql   string
		byAge bool // parameters: $1 cutoff, $2 batch size; else $1 batch size
	}{
		// Cards, and the target_cards rows of the pruned cards.
		{&st.Cards, `WITH gone AS (
			DELETE FROM cards WHERE ctid IN (
				SELECT ctid FROM cards WHERE NOT unfinished AND updated < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
			AND NOT unfinished AND updated < $1
			RETURNING channel, source_ts),
		refs AS (DELETE FROM target_cards tc USING gone g WHERE tc.channel = g.channel AND tc.source_ts = g.source_ts)
		SELECT count(*) FROM gone`, true},
		// Verdicts, and their task index entries unless still in use.
		{&st.Verdicts, `WITH gone AS (
			DELETE FROM verdicts WHERE id IN (
				SELECT id FROM verdicts WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
			AND at < $1
			RETURNING target, task_id),
		tasks AS (DELETE FROM tasks k USING gone g
			WHERE g.task_id <> '' AND k.task_id = g.task_id AND k.target = g.target
			AND NOT EXISTS (SELECT 1 FROM targets t WHERE t.target = g.target AND t.task_id = g.task_id)
			AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.task_id = g.task_id))
		SELECT count(*) FROM gone`, true},
		{&st.Reports, `WITH gone AS (
			DELETE FROM reports WHERE id IN (
				SELECT id FROM reports WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
			AND at < $1
			RETURNING 1)
		SELECT count(*) FROM gone`, true},
		// User reports, and their reporters by the foreign key's cascade.
		{&st.UserReports, `WITH gone AS (
			DELETE FROM user_reports WHERE (channel, ts) IN (
				SELECT channel, ts FROM user_reports WHERE updated < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
			AND updated < $1
			RETURNING 1)
		SELECT count(*) FROM gone`, true},
		// Finished backfills.
		{&st.Backfills, `WITH gone AS (
			DELETE FROM backfills WHERE channel IN (
				SELECT channel FROM backfills WHERE state <> 'running' AND updated < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
			AND state <> 'running' AND updated < $1
			RETURNING 1)
		SELECT count(*) FROM gone`, true},
		// Targets nothing keeps; their target_cards rows go by the foreign
		// key's cascade.
		{&st.Targets, `WITH gone AS (
			DELETE FROM targets WHERE target IN (
				SELECT t.target FROM targets t WHERE t.next_check IS NULL AND t.deferred IS NULL AND t.checked < $1
				AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.target = t.target)
				AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.target = t.target)
				AND NOT EXISTS (SELECT 1 FROM target_cards tc JOIN cards c ON c.channel = tc.channel AND c.source_ts = tc.source_ts
					WHERE tc.target = t.target)
				LIMIT $2 FOR UPDATE OF t SKIP LOCKED)
			AND next_check IS NULL AND deferred IS NULL AND checked < $1
			RETURNING target, task_id),
		tasks AS (DELETE FROM tasks k USING gone g WHERE k.task_id = g.task_id AND k.target = g.target)
		SELECT count(*) FROM gone`, true},
		// Task index entries whose target is gone.
		{nil, `WITH gone AS (
			DELETE FROM tasks WHERE task_id IN (
				SELECT k.task_id FROM tasks k
				WHERE NOT EXISTS (SELECT 1 FROM targets t WHERE t.target = k.target)
				AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.target = k.target)
				LIMIT $1 FOR UPDATE OF k SKIP LOCKED)
			RETURNING 1)
		SELECT count(*) FROM gone`, false},
	}
	for _, s := range steps {
		var orphans int
		n := s.n
		if n == nil {
			n = &orphans
		}
		args := []any{db.pruneBatch}
		if s.byAge {
			args = []any{cutoff, db.pruneBatch}
		}
		if err = db.pruneLoop(s.sql, n, args...); err != nil {
			return st, err
		}
	}
	for {
		n, err := db.PruneEvents(cutoff, db.pruneBatch)
		st.Events += n
		if err != nil {
			return st, err
		}
		if n < db.pruneBatch {
			return st, nil
		}
	}
}

// pruneLoop runs a batch statement (its result: the rows it deleted)
// until it deletes less than a batch, adding what it deleted to *n.
func (db *DB) pruneLoop(sql string, n *int, args ...any) error {
	for {
		ctx, cancel := db.ctx()
		var k int
		err := db.pool.QueryRow(ctx, sql, args...).Scan(&k)
		cancel()
		if err != nil {
			return db.result(err)
		}
		*n += k
		if k < db.pruneBatch {
			return nil
		}
	}
}
