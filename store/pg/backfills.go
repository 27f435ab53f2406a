package pg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// backfillColumns are a backfill's columns, in scanBackfill's and
// writeBackfill's order.
const backfillColumns = `channel, since_at, until_at, started_by, state, next_cursor, thread_ts, thread_cursor,
	pages, messages, links, files, found, progress_ts, owner, owned_until, problem, created, updated`

func scanBackfill(row pgx.Row) (store.Backfill, error) {
	var b store.Backfill
	var owned *time.Time
	if err := row.Scan(&b.Channel, &b.Since, &b.Until, &b.StartedBy, &b.State, &b.Cursor, &b.Thread, &b.ThreadCursor,
		&b.Pages, &b.Messages, &b.Links, &b.Files, &b.Found, &b.ProgressTS, &b.Owner, &owned, &b.Problem, &b.Created, &b.Updated); err != nil {
		return store.Backfill{}, err
	}
	if owned != nil {
		b.OwnedUntil = owned.UTC()
	}
	b.Since, b.Until, b.Created, b.Updated = b.Since.UTC(), b.Until.UTC(), b.Created.UTC(), b.Updated.UTC()
	return b, nil
}

// backfillArgs are b's values in backfillColumns' order.
func backfillArgs(b *store.Backfill) []any {
	return []any{b.Channel, micro(b.Since), micro(b.Until), b.StartedBy, b.State, b.Cursor, b.Thread, b.ThreadCursor,
		b.Pages, b.Messages, b.Links, b.Files, b.Found, b.ProgressTS, b.Owner, nullTime(b.OwnedUntil), b.Problem, micro(b.Created), micro(b.Updated)}
}

const (
	insertBackfill = `INSERT INTO backfills (` + backfillColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
	ON CONFLICT (channel) DO NOTHING RETURNING ` + backfillColumns
	// saveBackfill writes every column but channel: created too, as
	// StartBackfill replaces a finished backfill with a new one.
	saveBackfill = `UPDATE backfills SET since_at = $2, until_at = $3, started_by = $4, state = $5, next_cursor = $6,
	thread_ts = $7, thread_cursor = $8, pages = $9, messages = $10, links = $11, files = $12, found = $13,
	progress_ts = $14, owner = $15, owned_until = $16, problem = $17, created = $18, updated = $19
	WHERE channel = $1 RETURNING ` + backfillColumns
	lockBackfill = `SELECT ` + backfillColumns + ` FROM backfills WHERE channel = $1 FOR UPDATE`
)

// StartBackfill records a new backfill of b.Channel unless one is running
// there (store.State). The row is inserted if absent, or else locked
// (SELECT … FOR UPDATE) and replaced only when finished: of concurrent
// starters, in any replica, one inserts or replaces it, and the others,
// having waited for its lock, find it running.
func (db *DB) StartBackfill(b store.Backfill) (store.Backfill, bool, error) {
	if b.Channel == "" {
		return store.Backfill{}, false, store.ErrNoChannel
	}
	now := micro(db.now())
	b.State, b.Created, b.Updated = store.BackfillRunning, now, now
	var out store.Backfill
	var ok bool
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		// The row may be pruned between the two statements (a finished
		// backfill started again as retention runs): then it is inserted.
		for attempt := 0; ; attempt++ {
			cur, err := scanBackfill(tx.QueryRow(ctx, insertBackfill, backfillArgs(&b)...))
			if err == nil {
				out, ok = cur, true
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			cur, err = scanBackfill(tx.QueryRow(ctx, lockBackfill, b.Channel))
			if errors.Is(err, pgx.ErrNoRows) && attempt < 2 {
				continue
			}
			if err != nil {
				return err
			}
			if cur.Running() {
				out, ok = cur, false
				return nil
			}
			out, err = scanBackfill(tx.QueryRow(ctx, saveBackfill, backfillArgs(&b)...))
			ok = err == nil
			return err
		}
	})
	if err != nil {
		return store.Backfill{}, false, err
	}
	return out, ok, nil
}

// UpdateBackfill applies fn to channel's backfill, its row locked, and
// saves it in one transaction (store.State).
func (db *DB) UpdateBackfill(channel string, fn func(b *store.Backfill) error) (store.Backfill, error) {
	var out store.Backfill
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		b, err := scanBackfill(tx.QueryRow(ctx, lockBackfill, channel))
		if err != nil {
			return err
		}
		old := b
		if err := fn(&b); err != nil {
			return errCallback{err}
		}
		b.Channel, b.Created, b.Updated = old.Channel, old.Created, micro(db.now())
		out, err = scanBackfill(tx.QueryRow(ctx, saveBackfill, backfillArgs(&b)...))
		return err
	})
	if err != nil {
		return store.Backfill{}, err
	}
	return out, nil
}

// Backfill returns channel's backfill, or store.ErrNotFound.
func (db *DB) Backfill(channel string) (store.Backfill, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	b, err := scanBackfill(db.pool.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills WHERE channel = $1`, channel))
	if err != nil {
		return store.Backfill{}, db.result(err)
	}
	return b, nil
}

// ClaimBackfill makes owner the runner of channel's running backfill,
// until until, if its claim is free, expired or owner's (store.State). The
// row is locked (SELECT … FOR UPDATE) before the claim is looked at: of
// concurrent claimants, in any replica, the first takes it and the others,
// having waited for the lock, see its claim.
func (db *DB) ClaimBackfill(channel, owner string, now, until time.Time) (store.Backfill, bool, error) {
	var out store.Backfill
	var ok bool
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		b, err := scanBackfill(tx.QueryRow(ctx, lockBackfill, channel))
		if err != nil {
			return err
		}
		if !b.Claimable(owner, now) {
			out, ok = b, false
			return nil
		}
		b.Owner, b.OwnedUntil, b.Updated = owner, until, micro(db.now())
		out, err = scanBackfill(tx.QueryRow(ctx, saveBackfill, backfillArgs(&b)...))
		ok = err == nil
		return err
	})
	if err != nil {
		return store.Backfill{}, false, err
	}
	return out, ok, nil
}

// RunningBackfills lists the running backfills, by channel (store.State).
func (db *DB) RunningBackfills() ([]store.Backfill, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT `+backfillColumns+` FROM backfills WHERE state = 'running' ORDER BY channel COLLATE "C"`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Backfill, error) { return scanBackfill(r) })
	if err != nil {
		return nil, db.result(err)
	}
	return out, nil
}
