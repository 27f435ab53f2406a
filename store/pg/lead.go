package pg

import (
	"context"
	"hash/fnv"
	"time"
)

// Lead makes this process the one that runs the periodic job named job,
// with a session-level advisory lock held on a connection of its own
// (pg_try_advisory_lock): ok is false while another replica holds it.
// release unlocks and returns the connection. A replica that dies closes
// its session, and PostgreSQL frees the lock at once, so the next tick of
// another replica leads; what the dead leader had not done yet is still
// due. The lock key is per database and per schema (search_path), like
// the migration lock.
func (db *DB) Lead(ctx context.Context, job string) (release func(), ok bool, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, db.wrap("lead "+job, err)
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		conn.Release()
		return nil, false, db.wrap("lead "+job, err)
	}
	key := leadKey(schema, job)
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, db.wrap("lead "+job, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// The session may hold the lock still: drop the connection
			// rather than return it to the pool locked.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, true, nil
}

// leadKey is the advisory lock key of job's lead in schema.
func leadKey(schema, job string) int64 {
	h := fnv.New64a()
	h.Write([]byte("verdictbot:lead:" + schema + ":" + job))
	return int64(h.Sum64())
}
