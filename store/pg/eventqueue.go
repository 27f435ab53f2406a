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
	o := &store.Outgoing{Build: build, Max: max}
	if err := db.tx(func(ctx context.Context, tx pgx.Tx) error { return enqueue(ctx, tx, o) }); err != nil {
		return 0, 0, err
	}
	return o.Seq, o.Dropped, nil
}

// enqueueAll queues the events out in tx, in order (nil ones skipped).
func enqueueAll(ctx context.Context, tx querier, out []*store.Outgoing) error {
	for _, o := range out {
		if o == nil {
			continue
		}
		if err := enqueue(ctx, tx, o); err != nil {
			return err
		}
	}
	return nil
}

// enqueue queues o in the transaction tx under the next sequence number
// (EnqueueEvent, and the outbox of a card write), setting its Seq, Body
// and Dropped. The lock on event_seq's row is held until tx commits.
func enqueue(ctx context.Context, tx querier, o *store.Outgoing) error {
	o.Seq, o.Body, o.Dropped = 0, nil, 0
	var last int64
	if err := tx.QueryRow(ctx, `UPDATE event_seq SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&last); err != nil {
		return err
	}
	body, err := o.Build(uint64(last))
	if err != nil {
		return errCallback{err}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO event_queue (seq, body) VALUES ($1, $2)`, last, body); err != nil {
		return err
	}
	o.Seq, o.Body = uint64(last), body
	if o.Max > 0 && last > int64(o.Max) {
		tag, err := tx.Exec(ctx, `DELETE FROM event_queue WHERE seq <= $1`, last-int64(o.Max))
		if err != nil {
			return err
		}
		o.Dropped = int(tag.RowsAffected())
	}
	return nil
}

// QueuedEvents: see store.EventQueue.
func (db *DB) QueuedEvents(after uint64, n int) ([]store.QueuedEvent, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT seq, body FROM event_queue WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(after), n)
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

// DeleteEvents: see store.EventQueue. Under a fence, the transaction holds
// the term's row, so the events leave the queue before any new leader can
// read them, or stay.
func (db *DB) DeleteEvents(seqs []uint64, f store.Fence) error {
	if len(seqs) == 0 {
		return nil
	}
	ids := make([]int64, len(seqs))
	for i, seq := range seqs {
		ids[i] = int64(seq)
	}
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM event_queue WHERE seq = ANY($1)`, ids)
		return err
	})
}

// DeadLetterEvent: see store.EventQueue (fenced as DeleteEvents).
func (db *DB) DeadLetterEvent(seq uint64, why store.DeadLetter, f store.Fence) error {
	if why.At.IsZero() {
		why.At = db.now()
	}
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM event_queue WHERE seq = $1 RETURNING seq, body)
			INSERT INTO event_dead (seq, body, failures, status, error, dead_at)
			SELECT seq, body, $2, $3, $4, $5 FROM gone`, int64(seq), why.Failures, why.Status, why.Error, micro(why.At))
		return err
	})
}

// DeadEvents: see store.EventQueue.
func (db *DB) DeadEvents(n int) ([]store.DeadEvent, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT seq, body, failures, status, error, dead_at FROM event_dead ORDER BY seq LIMIT $1`, n)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.DeadEvent, error) {
		var e store.DeadEvent
		var seq int64
		err := row.Scan(&seq, &e.Body, &e.Failures, &e.Status, &e.Error, &e.At)
		e.Seq = uint64(seq)
		return e, err
	})
	return out, db.result(err)
}

// DeadEventsCount: see store.EventQueue.
func (db *DB) DeadEventsCount() (int, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM event_dead`).Scan(&n)
	return n, db.result(err)
}

// RequeueDeadEvents: see store.EventQueue. The new sequence numbers come
// from event_seq's row, locked until the transaction commits, as in
// EnqueueEvent.
func (db *DB) RequeueDeadEvents(seqs []uint64, rebuild func(body []byte, seq uint64) ([]byte, error), max int) ([]store.Requeued, int, error) {
	var moved []store.Requeued
	var dropped int
	want := make([]int64, len(seqs))
	for i, s := range seqs {
		want[i] = int64(s)
	}
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		moved, dropped = nil, 0
		rows, err := tx.Query(ctx, `SELECT seq, body FROM event_dead WHERE cardinality($1::bigint[]) = 0 OR seq = ANY($1)
			ORDER BY seq FOR UPDATE`, want)
		if err != nil {
			return err
		}
		type dead struct {
			seq  int64
			body []byte
		}
		list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dead, error) {
			var d dead
			err := row.Scan(&d.seq, &d.body)
			return d, err
		})
		if err != nil || len(list) == 0 {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `UPDATE event_seq SET last = last + $1 WHERE id = 1 RETURNING last`, len(list)).Scan(&last); err != nil {
			return err
		}
		next := last - int64(len(list))
		for _, d := range list {
			next++
			body, err := rebuild(d.body, uint64(next))
			if err != nil {
				return errCallback{err}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO event_queue (seq, body) VALUES ($1, $2)`, next, body); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM event_dead WHERE seq = $1`, d.seq); err != nil {
				return err
			}
			moved = append(moved, store.Requeued{From: uint64(d.seq), To: uint64(next)})
		}
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
		return nil, 0, err
	}
	return moved, dropped, nil
}

// EventsQueued: see store.EventQueue. The queue is contiguous (events
// leave from the front), so it is last - first + 1.
// LastEventSeq: see store.EventQueue.
func (db *DB) LastEventSeq() (uint64, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var last int64
	err := db.pool.QueryRow(ctx, `SELECT last FROM event_seq WHERE id = 1`).Scan(&last)
	return uint64(last), db.result(err)
}

// EventsQueued: see store.EventQueue.
func (db *DB) EventsQueued() (int, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq) - MIN(seq) + 1, 0) FROM event_queue`).Scan(&n)
	return int(n), db.result(err)
}
