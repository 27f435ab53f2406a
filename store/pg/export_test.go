package pg

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool is the store's pool, for the tests' own queries.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Crash stops the heartbeat and the pool without leaving: the replica's
// row stays, as after kill -9.
func (db *DB) Crash() {
	db.lead.crash()
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

// crash drops the lead session without releasing its terms, as a process
// that dies does: the rows expire on their own.
func (l *leaders) crash() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.endSession()
}

// LeadPID is the backend pid of the lead session (0: none open).
func (db *DB) LeadPID() uint32 {
	db.lead.mu.Lock()
	defer db.lead.mu.Unlock()
	if db.lead.conn == nil {
		return 0
	}
	return db.lead.conn.PgConn().PID()
}

// PauseRenewals stops renewing the terms, the session left open, as in a
// process that is paused.
func (db *DB) PauseRenewals() {
	db.lead.start.Do(func() { close(db.lead.done) })
	close(db.lead.stop)
	<-db.lead.done
	db.lead.stop = make(chan struct{})
	db.lead.done = make(chan struct{})
	db.lead.start = sync.Once{}
	db.lead.start.Do(func() { close(db.lead.done) })
}

// MigrateTo brings the database's schema up to version only (under the
// migration lock), with the embedded migrations: the schema a release
// whose last migration was version leaves.
func MigrateTo(ctx context.Context, rawURL string, opt Options, version int64) error {
	db, err := connect(ctx, rawURL, opt)
	if err != nil {
		return err
	}
	defer db.pool.Close()
	return db.migrateUpTo(ctx, version)
}
