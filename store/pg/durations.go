package pg

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// recordDurations appends durations to a service's list in one statement,
// keeping the latest $3: ON CONFLICT DO UPDATE locks the row, so
// concurrent writers, in any replica, append one after the other.
const recordDurations = `
INSERT INTO learned_durations AS l (service, durations)
	VALUES ($1, ($2::bigint[])[greatest(cardinality($2::bigint[]) + 1 - $3::int, 1):])
ON CONFLICT (service) DO UPDATE
	SET durations = (l.durations || $2::bigint[])[greatest(cardinality(l.durations) + cardinality($2::bigint[]) + 1 - $3::int, 1):]`

// RecordDurations records that analyses of service took ds, keeping the
// latest keep (store.State). The list is shared by the replicas.
func (db *DB) RecordDurations(service string, ds []time.Duration, keep int) error {
	if len(ds) == 0 {
		return nil
	}
	ns := make([]int64, len(ds))
	for i, d := range ds {
		ns[i] = int64(d)
	}
	ctx, cancel := db.ctx()
	defer cancel()
	if _, err := db.pool.Exec(ctx, recordDurations, service, ns, max(keep, 1)); err != nil {
		return db.wrap("postgres: record durations", err)
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
