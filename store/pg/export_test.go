package pg

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool is the store's pool, for the tests' own queries.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// LeadKey is the advisory lock key of a job's lead in a schema.
var LeadKey = leadKey

// Crash stops the heartbeat and the pool without leaving: the replica's
// row stays, as after kill -9.
func (db *DB) Crash() {
	close(db.m.stop)
	<-db.m.done
	db.m = nil
	db.pool.Close()
}

// Recovered makes the heartbeat healthy only from now, as after an outage.
func (db *DB) Recovered() {
	db.m.mu.Lock()
	db.m.healthySince = time.Now()
	db.m.mu.Unlock()
}
