package pg

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// The removals a recheck flip decided (see store.Removal). A removal is
// claimed by one replica (owner) with FOR UPDATE SKIP LOCKED, so two
// replicas never take the same one; a removal whose owner died is taken
// over as ClaimAnalysis takes over an analysis (after the lease, and only
// while this replica may judge the others).

// insertRemoval queues r unless its card has one. A removal held for a
// batch approved already is queued released; the batch's row is read FOR
// SHARE, so an approval under way (FOR UPDATE) is waited for.
func insertRemoval(ctx context.Context, q querier, r store.Removal) error {
	if r.Held && r.Batch != "" {
		var approved string
		err := q.QueryRow(ctx, `SELECT COALESCE(record->>'approved_by', '') FROM removal_batches WHERE id = $1 FOR SHARE`, r.Batch).Scan(&approved)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		r.Held = r.Held && approved == ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO removals (channel, source_ts, held, batch, next_at, owner, record)
		VALUES ($1, $2, $3, $4, $5, '', $6) ON CONFLICT DO NOTHING`,
		r.Card.Channel, r.Card.SourceTS, r.Held, r.Batch, micro(r.NextAt), b)
	return err
}

// UpdateCardQueue: see store.State.UpdateCardQueue.
func (db *DB) UpdateCardQueue(ref card.Ref, fn func(rec *store.CardRecord) (*store.Removal, error)) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		out = nil
		rec, err := getCard(ctx, tx, ref, true)
		if err != nil {
			return err
		}
		r, err := fn(rec)
		if err != nil {
			return errCallback{err}
		}
		rec.Updated = db.now()
		if err := putCard(ctx, tx, rec); err != nil {
			return err
		}
		if r != nil {
			q := *r
			q.Card = ref
			if err := insertRemoval(ctx, tx, q); err != nil {
				return err
			}
		}
		out = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueRemovals: see store.State.QueueRemovals.
func (db *DB) QueueRemovals(rs []store.Removal) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		for _, r := range rs {
			if err := insertRemoval(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClaimRemoval: see store.State.ClaimRemoval. A removal is free when it has
// no owner, or its owner is a replica that stopped (no heartbeat within
// the lease) and this replica may judge the others.
func (db *DB) ClaimRemoval(now time.Time) (store.Removal, bool, error) {
	me, dead, takeOver := db.claimer(), 0.0, false
	if db.m != nil {
		dead, takeOver = db.m.dead.Seconds(), db.mayTakeOver()
	}
	ctx, cancel := db.ctx()
	defer cancel()
	var b []byte
	var next time.Time
	err := db.pool.QueryRow(ctx, `WITH c AS (
			SELECT channel, source_ts FROM removals
			WHERE NOT held AND next_at <= $3 AND owner <> $1
			  AND (owner = '' OR ($4 AND owner NOT IN (`+liveSQL+`)))
			ORDER BY next_at, channel, source_ts LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE removals r SET owner = $1 FROM c WHERE r.channel = c.channel AND r.source_ts = c.source_ts
		RETURNING r.record, r.next_at`, me, dead, micro(now), takeOver).Scan(&b, &next)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Removal{}, false, nil
	}
	if err != nil {
		return store.Removal{}, false, db.result(err)
	}
	var r store.Removal
	if err := json.Unmarshal(b, &r); err != nil {
		return store.Removal{}, false, err
	}
	r.NextAt, r.Owner, r.Held = next, me, false
	return r, true, nil
}

// claimer is the owner this process writes on the removals it claims: its
// replica id, or (not a replica: one process, tests) a token of its own,
// so that what it holds is never claimed twice; such a token is never a
// live replica's, but only a replica takes over dead owners' removals.
func (db *DB) claimer() string {
	if me := db.owner(); me != "" {
		return me
	}
	return db.token
}

// FinishRemoval: see store.State.FinishRemoval.
func (db *DB) FinishRemoval(ref card.Ref) error {
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `DELETE FROM removals WHERE channel = $1 AND source_ts = $2`, ref.Channel, ref.SourceTS)
	return db.result(err)
}

// RetryRemoval: see store.State.RetryRemoval.
func (db *DB) RetryRemoval(ref card.Ref, next time.Time, failed bool) error {
	ctx, cancel := db.ctx()
	defer cancel()
	add := 0
	if failed {
		add = 1
	}
	tag, err := db.pool.Exec(ctx, `UPDATE removals SET owner = '', next_at = $3,
			record = jsonb_set(jsonb_set(record, '{attempts}', to_jsonb(COALESCE((record->>'attempts')::int, 0) + $5)), '{next_at}', to_jsonb($4::text))
		WHERE channel = $1 AND source_ts = $2`, ref.Channel, ref.SourceTS, micro(next), micro(next).Format(time.RFC3339Nano), add)
	if err != nil {
		return db.result(err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PutRemovalBatch: see store.State.PutRemovalBatch.
func (db *DB) PutRemovalBatch(b store.RemovalBatch) error {
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	ctx, cancel := db.ctx()
	defer cancel()
	_, err = db.pool.Exec(ctx, `INSERT INTO removal_batches (id, created, record) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET record = excluded.record`, b.ID, micro(b.Created), raw)
	return db.result(err)
}

func getBatch(ctx context.Context, q querier, id string, lock bool) (store.RemovalBatch, error) {
	var b store.RemovalBatch
	sql := `SELECT record FROM removal_batches WHERE id = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	var raw []byte
	if err := q.QueryRow(ctx, sql, id).Scan(&raw); err != nil {
		return b, err
	}
	return b, json.Unmarshal(raw, &b)
}

// RemovalBatch: see store.State.RemovalBatch.
func (db *DB) RemovalBatch(id string) (store.RemovalBatch, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	b, err := getBatch(ctx, db.pool, id, false)
	return b, db.result(err)
}

// SetBatchAlert: see store.State.SetBatchAlert.
func (db *DB) SetBatchAlert(id, channel, ts string) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		b, err := getBatch(ctx, tx, id, true)
		if err != nil {
			return err
		}
		b.AlertChannel, b.AlertTS = channel, ts
		raw, _ := json.Marshal(b)
		_, err = tx.Exec(ctx, `UPDATE removal_batches SET record = $2 WHERE id = $1`, id, raw)
		return err
	})
}

// ApproveBatch: see store.State.ApproveBatch. The batch's row lock makes the
// first approval the only one, across replicas.
func (db *DB) ApproveBatch(id, by string, at time.Time) (b store.RemovalBatch, released int, first bool, err error) {
	n := 0
	err = db.tx(func(ctx context.Context, tx pgx.Tx) error {
		n, first = 0, false
		var err error
		if b, err = getBatch(ctx, tx, id, true); err != nil {
			return err
		}
		if b.ApprovedBy != "" {
			return nil
		}
		first = true
		b.ApprovedBy, b.ApprovedAt = by, micro(at)
		raw, _ := json.Marshal(b)
		if _, err := tx.Exec(ctx, `UPDATE removal_batches SET record = $2 WHERE id = $1`, id, raw); err != nil {
			return err
		}
		// Due as planned: once its card was shown (Plan, Shown).
		tag, err := tx.Exec(ctx, `UPDATE removals SET held = false, record = record - 'held' WHERE batch = $1 AND held`, id)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return store.RemovalBatch{}, 0, false, err
	}
	return b, n, first, nil
}

// RemovalCounts: see store.State.RemovalCounts.
func (db *DB) RemovalCounts() (queued, held int, err error) {
	ctx, cancel := db.ctx()
	defer cancel()
	err = db.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT held), count(*) FILTER (WHERE held)
		FROM removals WHERE COALESCE(record->>'kind', '') = ''`).Scan(&queued, &held)
	return queued, held, db.result(err)
}

// pruneRemovalBatches forgets the batches created before cutoff with
// their removals still held or asked for (see store.State.PruneQuarantined).
func pruneRemovalBatches(ctx context.Context, q querier, cutoff time.Time) error {
	if _, err := q.Exec(ctx, `DELETE FROM removals WHERE batch IN (SELECT id FROM removal_batches WHERE created < $1)
			AND (held OR record->>'kind' = 'ask')`, micro(cutoff)); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `DELETE FROM removal_batches WHERE created < $1`, micro(cutoff))
	return err
}
