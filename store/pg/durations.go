package pg

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// recordDuration appends a duration to a service's list in one statement,
// keeping the latest $3: ON CONFLICT DO UPDATE locks the row, so
// concurrent writers, in any replica, append one after the other.
const recordDuration = `
INSERT INTO learned_durations AS l (service, durations) VALUES ($1, ARRAY[$2::bigint])
ON CONFLICT (service) DO UPDATE
	SET durations = (l.durations || $2::bigint)[greatest(cardinality(l.durations) + 2 - $3::int, 1):]`

// RecordDuration records that an analysis of service took d, keeping the
// latest keep (store.State). The list is shared by the replicas.
func (db *DB) RecordDuration(service string, d time.Duration, keep int) error {
	ctx, cancel := db.ctx()
	defer cancel()
	if _, err := db.pool.Exec(ctx, recordDuration, service, int64(d), max(keep, 1)); err != nil {
		return db.wrap("postgres: record a duration", err)
	}
	return nil
}

// Durations returns up to keep of service's latest durations, oldest first
// (store.State).
func (db *DB) Durations(service string, keep int) ([]time.Duration, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var ns []int64
	err := db.pool.QueryRow(ctx, `SELECT durations FROM learned_durations WHERE service = $1`, service).Scan(&ns)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, db.wrap("postgres: durations", err)
	}
	if keep >= 0 && len(ns) > keep {
		ns = ns[len(ns)-keep:]
	}
	ds := make([]time.Duration, len(ns))
	for i, n := range ns {
		ds[i] = time.Duration(n)
	}
	return ds, nil
}
