package pg

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// Several replicas share one database. Each registers in the table
// replicas under its id (Options.Replica) and renews its heartbeat every
// lease/5; a replica whose heartbeat is older than 3/5 of the lease is
// taken for dead. The jobs a replica records and the analyses it runs
// carry its id as owner; OrphanJobs and ClaimAnalysis move what a dead
// replica owned to the caller, so its work is taken over within the lease
// (a sweep every lease/5 sees a heartbeat stop at most 3/5 + 1/5 of the
// lease after the last beat). Ages are measured with the database's clock
// (now()), so the replicas' clocks do not matter.
//
// A replica that could not renew its own heartbeat (a database outage)
// takes nothing over until its heartbeat has been healthy again for 3/5 of
// the lease: every live replica has renewed its own by then, so a database
// restart does not make replicas take each other's live work.
//
// Why not a job engine (River): River rescues a running job by its age
// (RescueStuckJobsAfter), not by its client's heartbeat, so a 30 s
// takeover would cap every job at 30 s, and an analysis waits minutes on
// the sandbox. Owner columns plus one heartbeat row per replica keep the
// journal, the card lifecycle and the pipelines as they are, with one
// UPDATE per sweep.

// membership is this process's heartbeat.
type membership struct {
	id    string
	every time.Duration // heartbeat and sweep period (lease/5)
	dead  time.Duration // a heartbeat older than this is a dead replica

	live atomic.Int32 // live replicas at the last beat (≥ 1)

	mu           sync.Mutex
	healthySince time.Time // since when every beat succeeded (zero: the last failed)
	onChange     []func(n int)

	stop chan struct{}
	done chan struct{}
	left sync.Once
}

// Replica returns this process's replica id ("" when not a replica).
func (db *DB) Replica() string {
	if db.m == nil {
		return ""
	}
	return db.m.id
}

// join registers this process and starts its heartbeat.
func (db *DB) join(ctx context.Context, id string, lease time.Duration) error {
	m := &membership{id: id, every: lease / 5, dead: lease * 3 / 5, stop: make(chan struct{}), done: make(chan struct{})}
	m.live.Store(1)
	db.m = m
	if err := db.beat(ctx); err != nil {
		return err
	}
	go db.heartbeat()
	return nil
}

func (db *DB) heartbeat() {
	m := db.m
	defer close(m.done)
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), m.every)
			_ = db.beat(ctx)
			cancel()
		}
	}
}

// beat renews this replica's heartbeat, counts the live replicas and
// forgets replicas gone for a day (what they owned stays claimable: its
// owner is not live).
func (db *DB) beat(ctx context.Context) error {
	m := db.m
	var n int32
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO replicas (id, started, heartbeat) VALUES ($1, now(), now())
			ON CONFLICT (id) DO UPDATE SET heartbeat = now()`, m.id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replicas WHERE heartbeat < now() - interval '1 day'`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM replicas WHERE heartbeat > now() - make_interval(secs => $1)`,
			m.dead.Seconds()).Scan(&n)
	})
	m.mu.Lock()
	if err != nil {
		m.healthySince = time.Time{}
		m.mu.Unlock()
		return db.wrap("postgres: heartbeat", err)
	}
	if m.healthySince.IsZero() {
		m.healthySince = time.Now()
	}
	fns := m.onChange
	m.mu.Unlock()
	n = max(n, 1)
	if old := m.live.Swap(n); old != n {
		for _, fn := range fns {
			fn(int(n))
		}
	}
	return nil
}

// OnReplicas calls fn whenever the number of live replicas changes (and
// once now).
func (db *DB) OnReplicas(fn func(n int)) {
	if db.m == nil {
		fn(1)
		return
	}
	db.m.mu.Lock()
	db.m.onChange = append(db.m.onChange, fn)
	db.m.mu.Unlock()
	fn(int(db.m.live.Load()))
}

// Healthy reports whether this replica's last heartbeat succeeded.
func (db *DB) Healthy() bool {
	if db.m == nil {
		return true
	}
	db.m.mu.Lock()
	defer db.m.mu.Unlock()
	return !db.m.healthySince.IsZero()
}

// mayTakeOver reports whether this replica's heartbeat has been healthy
// for long enough to judge the others' (see the package comment).
func (db *DB) mayTakeOver() bool {
	m := db.m
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.healthySince.IsZero() && time.Since(m.healthySince) >= m.dead
}

// leave stops the heartbeat and removes this replica: what it still owns
// is taken over at the other replicas' next sweep.
func (db *DB) leave() {
	m := db.m
	m.left.Do(func() {
		close(m.stop)
		<-m.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = db.pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, m.id)
	})
}

// Replicas is how many replicas the last heartbeat saw alive (≥ 1).
func (db *DB) Replicas() int {
	if db.m == nil {
		return 1
	}
	return int(db.m.live.Load())
}

// SweepEvery is how often OrphanJobs should be called (lease/5; 0 when
// this process is not a replica).
func (db *DB) SweepEvery() time.Duration {
	if db.m == nil {
		return 0
	}
	return db.m.every
}

// owner is the owner this process writes ("" when not a replica).
func (db *DB) owner() string { return db.Replica() }

// liveSQL selects the ids of the live replicas; $2 is the dead age in
// seconds.
const liveSQL = `SELECT id FROM replicas WHERE heartbeat > now() - make_interval(secs => $2)`

// OrphanJobs claims the jobs of dead replicas (and jobs without an owner)
// for this one, and returns them oldest first, each with its former owner
// (Job.Owner). Rows another replica is claiming at the same moment are skipped
// (FOR UPDATE SKIP LOCKED), so each job is taken by one replica. It
// returns nothing while this replica's own heartbeat is not healthy for
// long enough to judge the others'.
func (db *DB) OrphanJobs() ([]store.Job, error) {
	if db.m == nil || !db.mayTakeOver() {
		return nil, nil
	}
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `WITH c AS (
			SELECT id, owner FROM jobs
			WHERE owner <> $1 AND owner NOT IN (`+liveSQL+`)
			ORDER BY id FOR UPDATE SKIP LOCKED)
		UPDATE jobs j SET owner = $1 FROM c WHERE j.id = c.id
		RETURNING j.id, j.kind, j.event_id, j.payload, j.received, c.owner`, db.m.id, db.m.dead.Seconds())
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, db.result(err)
	}
	slices.SortFunc(out, func(a, b store.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ClaimAnalysis: see store.State. An analysis whose owner is dead is taken
// over only while this replica may judge the others (as TakeOverJobs).
func (db *DB) ClaimAnalysis(service, target string) (store.Claim, error) {
	var c store.Claim
	me := db.owner()
	dead := 0.0
	takeOver := true
	if db.m != nil {
		dead = db.m.dead.Seconds()
		takeOver = db.mayTakeOver()
	}
	now := micro(db.now())
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		c = store.Claim{}
		tag, err := tx.Exec(ctx, `INSERT INTO analyses (service, target, task_id, submitted_at, owner) VALUES ($1, $2, '', $3, $4)
			ON CONFLICT DO NOTHING`, service, target, now, me)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			c.Mine = true
			return nil
		}
		a := store.Analysis{Service: service, Target: target}
		var owner string
		err = tx.QueryRow(ctx, `SELECT task_id, submitted_at, owner FROM analyses WHERE service = $1 AND target = $2 FOR UPDATE`,
			service, target).Scan(&a.TaskID, &a.SubmittedAt, &owner)
		if err == pgx.ErrNoRows {
			return nil // finished meanwhile: neither existed nor mine; ask again
		}
		if err != nil {
			return err
		}
		c.Analysis, c.Existed = a, true
		if owner == me {
			c.Mine = true
			return nil
		}
		if !takeOver {
			return nil
		}
		var alive bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replicas WHERE id = $1 AND heartbeat > now() - make_interval(secs => $2))`,
			owner, dead).Scan(&alive); err != nil {
			return err
		}
		if alive {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE analyses SET owner = $3 WHERE service = $1 AND target = $2`, service, target, me); err != nil {
			return err
		}
		c.Mine = true
		return nil
	})
	if err != nil {
		return store.Claim{}, err
	}
	return c, nil
}
