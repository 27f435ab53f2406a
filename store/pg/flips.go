package pg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// PendingFlips returns up to limit flips not announced, oldest first
// (store.State).
func (db *DB) PendingFlips(limit int) ([]store.PendingFlip, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT target, was, at FROM pending_flips ORDER BY at, target LIMIT $1`, max(limit, 1))
	if err != nil {
		return nil, db.result(err)
	}
	type row struct {
		target string
		was    int
		at     time.Time
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.target, &x.was, &x.at)
		return x, err
	})
	if err != nil {
		return nil, db.result(err)
	}
	var out []store.PendingFlip
	for _, r := range rs {
		tg, err := db.Target(r.target)
		if err != nil {
			continue // pruned since
		}
		out = append(out, store.PendingFlip{Target: tg, Was: verdict.Level(r.was), At: r.at.UTC()})
	}
	return out, nil
}

// FlipAnnounced forgets target's pending flip if the target is still at
// level (store.State).
func (db *DB) FlipAnnounced(target string, level verdict.Level) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM pending_flips f USING targets t
			WHERE f.target = $1 AND t.target = f.target AND t.level = $2`, target, int(level))
		return err
	})
}
