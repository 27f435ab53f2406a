package pg

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// takeAllowance takes a use of a key's allowance in one statement: a new
// key gets its row; a known one gets the use appended to the uses within
// the window (the older ones dropped), only if fewer than the limit are
// left. ON CONFLICT DO UPDATE locks the row and evaluates its WHERE on the
// row's latest version, so concurrent callers, in any replica, are counted
// one after the other. No row returned: the use was refused.
const takeAllowance = `
INSERT INTO allowance_uses AS a (key, uses, last) VALUES ($1, ARRAY[$2::timestamptz], $2)
ON CONFLICT (key) DO UPDATE
	SET uses = ARRAY(SELECT t FROM unnest(a.uses) AS t WHERE t > $3 ORDER BY t) || $2::timestamptz,
	    last = $2
	WHERE (SELECT count(*) FROM unnest(a.uses) AS t WHERE t > $3) < $4
RETURNING 1`

// allowanceCalls counts TakeAllowance calls, to forget idle keys now and
// then (one DELETE every allowanceSweep calls).
var allowanceCalls atomic.Uint64

const allowanceSweep = 1024

// TakeAllowance records one use of key's allowance, limit uses per sliding
// window, if one is left (store.State). The counts are in the database:
// every replica sharing it sees the same ones.
func (db *DB) TakeAllowance(key string, limit int, window time.Duration) (bool, error) {
	if limit < 1 || window <= 0 {
		return false, store.ErrBadAllowance
	}
	ctx, cancel := db.ctx()
	defer cancel()
	now := micro(db.now())
	cutoff := now.Add(-window)
	var one int
	err := db.pool.QueryRow(ctx, takeAllowance, key, now, cutoff, limit).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.wrap("postgres: allowance", err)
	}
	if allowanceCalls.Add(1)%allowanceSweep == 0 {
		// Keys idle for a window count nothing: forget them, so the table
		// holds the keys used within the last window or so.
		if _, err := db.pool.Exec(ctx, `DELETE FROM allowance_uses WHERE last <= $1`, cutoff); err != nil {
			return true, nil // the use is recorded; the sweep runs again later
		}
	}
	return true, nil
}
