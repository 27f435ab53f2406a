package pg

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// claimReport takes a report's claim in one statement: a new key gets its
// row; a known one is taken over only when its claim has lapsed or is the
// caller's. ON CONFLICT DO UPDATE locks the row and evaluates its WHERE on
// the row's latest version, so concurrent claimants, in any replica, are
// served one after the other. No row returned: another holds it.
const claimReport = `
INSERT INTO report_claims AS c (key, holder, held_until) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE
	SET holder = $2, held_until = $3
	WHERE c.held_until <= $4 OR c.holder = $2
RETURNING 1`

// reportClaimCalls counts ClaimReport calls, to sweep lapsed claims now
// and then (one DELETE every reportClaimSweep calls).
var reportClaimCalls atomic.Uint64

const reportClaimSweep = 256

// ClaimReport makes holder the one that sends the report key, while no
// other holder's claim on it is live (store.State). The claims are in the
// database: every replica sharing it sees the same ones.
func (db *DB) ClaimReport(key, holder string, hold time.Duration) (bool, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	now := micro(db.now())
	var one int
	err := db.pool.QueryRow(ctx, claimReport, key, holder, now.Add(hold), now).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.wrap("postgres: report claim", err)
	}
	if reportClaimCalls.Add(1)%reportClaimSweep == 0 {
		// The claim is taken; a failed sweep runs again later.
		_, _ = db.pool.Exec(ctx, `DELETE FROM report_claims WHERE held_until <= $1`, now)
	}
	return true, nil
}

// ReleaseReport ends holder's claim on key (store.State).
func (db *DB) ReleaseReport(key, holder string) error {
	ctx, cancel := db.ctx()
	defer cancel()
	if _, err := db.pool.Exec(ctx, `DELETE FROM report_claims WHERE key = $1 AND holder = $2`, key, holder); err != nil {
		return db.wrap("postgres: report claim release", err)
	}
	return nil
}
