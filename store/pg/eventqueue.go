package pg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

var _ store.EventQueue = (*DB)(nil)

// EnqueueEvent: see store.EventQueue. The next sequence number comes from
// event_seq's single row, whose lock the transaction holds until it
// commits: enqueuers (of every replica) commit one after the other, in
// sequence order.
func (db *DB) EnqueueEvent(build func(seq uint64) ([]byte, error), max int) (uint64, int, error) {
	var seq uint64
	var dropped int
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, `UPDATE event_seq SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&last); err != nil {
			return err
		}
		seq = uint64(last)
		body, err := build(seq)
		if err != nil {
			return errCallback{err}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO event_queue (seq, body) VALUES ($1, $2)`, last, body); err != nil {
			return err
		}
		dropped = 0
		if max > 0 && last > int64(max) {
			tag, err := tx.Exec(ctx, `DELETE FROM event_queue WHERE seq <= $1`, last-int64(max))
			if err != nil {
				return err
			}
			dropped = int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return seq, dropped, nil
}

// QueuedEvents: see store.EventQueue.
func (db *DB) QueuedEvents(n int) ([]store.QueuedEvent, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT seq, body FROM event_queue ORDER BY seq LIMIT $1`, n)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.QueuedEvent, error) {
		var e store.QueuedEvent
		var seq int64
		err := row.Scan(&seq, &e.Body)
		e.Seq = uint64(seq)
		return e, err
	})
	return out, db.result(err)
}

// DeleteEvent: see store.EventQueue.
func (db *DB) DeleteEvent(seq uint64) error {
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `DELETE FROM event_queue WHERE seq = $1`, int64(seq))
	return db.result(err)
}

// EventsQueued: see store.EventQueue. The queue is contiguous (events
// leave from the front), so it is last - first + 1.
func (db *DB) EventsQueued() (int, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq) - MIN(seq) + 1, 0) FROM event_queue`).Scan(&n)
	return int(n), db.result(err)
}
