package pg

import "github.com/jackc/pgx/v5/pgxpool"

// Pool is the store's pool, for the tests' own queries.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// LeadKey is the advisory lock key of a job's lead in a schema.
var LeadKey = leadKey
