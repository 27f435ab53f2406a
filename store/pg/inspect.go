package pg

import (
	"context"
	"time"
)

// Inspection is what Inspect reads of a database: `verdictbot doctor`'s
// view, taken without changing anything.
type Inspection struct {
	// Version is the schema version applied (0: none yet; the first
	// replica to start creates it). It may be above SchemaVersion: a
	// newer verdictbot migrated it.
	Version int64
	// Replicas are the replicas registered in the database (from schema
	// 3), the most recent heartbeat first. A replica that stopped
	// cleanly has left; one killed stays a day (see beat).
	Replicas []ReplicaInfo
}

// ReplicaInfo is one registered replica.
type ReplicaInfo struct {
	ID      string
	Started time.Time
	// Age is how long ago its last heartbeat was, by the database's clock.
	Age time.Duration
	// Live is whether the heartbeat is younger than 3/5 of the lease
	// (Options.Lease), the age past which the others take its work over.
	Live bool
}

// Inspect connects to the database at rawURL and reads its schema version
// and its replicas, without migrating, registering or writing anything.
// Its errors never carry the URL's password.
func Inspect(ctx context.Context, rawURL string, opt Options) (Inspection, error) {
	db, err := connect(ctx, rawURL, opt)
	if err != nil {
		return Inspection{}, err
	}
	defer db.pool.Close()
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	var in Inspection
	if in.Version, err = db.dbVersion(ctx); err != nil {
		return in, db.wrap("postgres: reading the schema version", err)
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('replicas') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return in, db.wrap("postgres: looking for the replicas", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT id, started, EXTRACT(EPOCH FROM now() - heartbeat)::float8 FROM replicas ORDER BY heartbeat DESC, id`)
	if err != nil {
		return in, db.wrap("postgres: reading the replicas", err)
	}
	defer rows.Close()
	dead := leaseOf(opt) * 3 / 5
	for rows.Next() {
		var r ReplicaInfo
		var age float64
		if err := rows.Scan(&r.ID, &r.Started, &age); err != nil {
			return in, db.wrap("postgres: reading the replicas", err)
		}
		r.Age = max(time.Duration(age*float64(time.Second)), 0)
		r.Live = r.Age < dead
		in.Replicas = append(in.Replicas, r)
	}
	return in, db.wrap("postgres: reading the replicas", rows.Err())
}
