// Package pg is the PostgreSQL backend of the state layer (store.State):
// the state of several verdictbot replicas in one database, set with
// VERDICTBOT_DATABASE_URL. It implements the contract of package store and
// knows nothing of the embedded backend (store/bolt); what replicas share
// besides the records (membership and the takeover of a stopped replica's
// work, the leads of the periodic jobs, the allowance counts) lives here.
//
// Every domain record has its own table (migrations/*.sql); the card record
// is a JSONB document, the card model as the embedded file stores it. Each
// method is one transaction with the atomicity of the file store, which
// also makes it safe between replicas: read-modify-writes lock their row
// (SELECT … FOR UPDATE), event ids are deduplicated by their primary key
// (INSERT … ON CONFLICT DO NOTHING) in the transaction that records the
// jobs, and the creation of a card is serialised by a transaction-scoped
// advisory lock on its key.
//
// The schema is migrated at Open under a PostgreSQL advisory lock (goose's
// session locker), so replicas starting together do not race, and a
// database migrated by a newer verdictbot is refused.
//
// No error or log line carries the connection string's password.
package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Options tune Open.
type Options struct {
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Schema, if set, is the schema the tables live in (the connections'
	// search_path); it must exist. Unset: the URL's search_path, if any,
	// or the server's default (public).
	Schema string
	// Timeout bounds each operation (default 30s).
	Timeout time.Duration
	// MaxConns is the pool's size (default: pgxpool's, max(4, CPUs)).
	MaxConns int32
	// PruneBatch is how many rows one Prune statement deletes at most
	// (default 2000); tests make it small to cross batch boundaries.
	PruneBatch int
	// Replica, if set, makes this process one of the replicas sharing the
	// database under that id (replicas.go): it heartbeats, owns the jobs
	// and analyses it records, and takes over those of replicas that
	// stopped. Unset (verdictbot migrate, one-process tools): it owns
	// nothing and every job and analysis is its own.
	Replica string
	// Lease is how soon a stopped replica's work is taken over, and how
	// long a term of a periodic job's lead holds unrenewed (lead.go)
	// (VERDICTBOT_LEASE, default 30s).
	Lease time.Duration
}

// DB is the state layer on PostgreSQL. It implements store.State.
type DB struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	timeout time.Duration
	secret  string // the URL's password, scrubbed from errors

	pruneBatch int // rows per Prune statement

	m *membership // nil unless Options.Replica is set
	// token owns this process's removal claims when it is not a replica
	// (see claimer).
	token string

	lead *leaders // the terms of periodic jobs this process leads
}

var _ store.State = (*DB)(nil)

// Open connects to the database at rawURL, migrates its schema (under the
// migration lock) and returns the store. A database whose schema is newer
// than this binary's is refused.
func Open(ctx context.Context, rawURL string, opt Options) (*DB, error) {
	db, err := connect(ctx, rawURL, opt)
	if err != nil {
		return nil, err
	}
	if _, err := db.migrate(ctx); err != nil {
		db.pool.Close()
		return nil, err
	}
	if opt.Replica != "" {
		if err := db.join(ctx, opt.Replica, leaseOf(opt)); err != nil {
			db.pool.Close()
			return nil, err
		}
	}
	return db, nil
}

// Migrate brings the database's schema up to date (under the migration
// lock) and returns its version. It is `verdictbot migrate`.
func Migrate(ctx context.Context, rawURL string, opt Options) (int64, error) {
	db, err := connect(ctx, rawURL, opt)
	if err != nil {
		return 0, err
	}
	defer db.pool.Close()
	return db.migrate(ctx)
}

func connect(ctx context.Context, rawURL string, opt Options) (*DB, error) {
	secret := password(rawURL)
	db := &DB{now: opt.Now, timeout: opt.Timeout, secret: secret, pruneBatch: opt.PruneBatch, token: "process-" + store.NewBatchID()}
	if db.pruneBatch <= 0 {
		db.pruneBatch = defaultPruneBatch
	}
	if db.now == nil {
		db.now = time.Now
	}
	if db.timeout <= 0 {
		db.timeout = 30 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, db.wrap("VERDICTBOT_DATABASE_URL", err)
	}
	if opt.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opt.Schema
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "verdictbot"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.wrap("postgres", err)
	}
	pctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, db.wrap(fmt.Sprintf("postgres %s", Describe(rawURL)), err)
	}
	db.pool = pool
	db.lead = newLeaders(db, opt.Replica, leaseOf(opt))
	return db, nil
}

// leaseOf is Options.Lease or its default.
func leaseOf(opt Options) time.Duration {
	if opt.Lease <= 0 {
		return 30 * time.Second
	}
	return opt.Lease
}

// Close releases the leads it holds (another replica leads at once),
// leaves the replicas (what this one still owns is taken over at the
// others' next sweep) and closes the pool.
func (db *DB) Close() error {
	db.lead.close()
	if db.m != nil {
		db.leave()
	}
	db.pool.Close()
	return nil
}

// Ping checks that the database answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	return db.wrap("postgres", db.pool.Ping(ctx))
}

// Size is -1: the state has no file of its own (see store.State.Size).
func (db *DB) Size() int64 { return -1 }

// Describe returns the URL without its password and query, for messages:
// postgres://user@host:port/db.
func Describe(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(the database)"
	}
	out := u.Scheme + "://"
	if u.User != nil && u.User.Username() != "" {
		out += u.User.Username() + "@"
	}
	return out + u.Host + u.Path
}

// password returns the password in a postgres URL or key=value string ("" if none).
func password(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
	}
	for _, f := range strings.Fields(raw) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// redactedError is an error whose text had the password scrubbed; it
// unwraps to the original for errors.Is / errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// wrap prefixes err and scrubs the password from its text.
func (db *DB) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	msg := what + ": " + err.Error()
	if db.secret != "" {
		msg = strings.ReplaceAll(msg, db.secret, "xxxxx")
		if esc := url.QueryEscape(db.secret); esc != db.secret {
			msg = strings.ReplaceAll(msg, esc, "xxxxx")
		}
	}
	return &redactedError{msg: msg, err: err}
}

// ---- plumbing ----

func (db *DB) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), db.timeout)
}

// errCallback marks an error returned by a caller's function inside a
// transaction: it is returned as is, not wrapped.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

// tx runs fn in one transaction (READ COMMITTED; the read-modify-writes
// lock their rows).
func (db *DB) tx(fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := db.ctx()
	defer cancel()
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(ctx, tx) })
	return db.result(err)
}

// result passes ErrNotFound and callers' errors through and wraps the rest.
func (db *DB) result(err error) error {
	var cb errCallback
	switch {
	case err == nil:
		return nil
	case errors.As(err, &cb):
		return cb.err
	case errors.Is(err, store.ErrNotFound):
		return store.ErrNotFound
	case errors.Is(err, pgx.ErrNoRows):
		return store.ErrNotFound
	}
	return db.wrap("postgres", err)
}

// micro is t as PostgreSQL keeps it (microseconds).
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = micro(t)
	return &t
}

// ---- jobs and events ----

// recordJob stores one job unless its event id ($2, when not empty) was
// seen before: one statement, so a batch of them is one round trip.
const recordJob = `WITH seen AS (
	INSERT INTO events (event_id, seen_at) SELECT $2, $4 WHERE $2 <> '' ON CONFLICT DO NOTHING RETURNING 1
)
INSERT INTO jobs (kind, event_id, payload, received, owner)
SELECT $1, $2, $3, $5, $6 WHERE $2 = '' OR EXISTS (SELECT 1 FROM seen)
RETURNING id`

// RecordJobs stores jobs in one transaction; a job whose EventID was seen
// before (in an earlier call, by any replica, or earlier in this batch) is
// a redelivery: it is not stored and its entry in the result is false.
// The statements go in one pipelined batch (acks wait for it).
func (db *DB) RecordJobs(jobs []*store.Job) ([]bool, error) {
	fresh := make([]bool, len(jobs))
	if len(jobs) == 0 {
		return fresh, nil
	}
	now := micro(db.now())
	ids := make([]uint64, len(jobs))
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		clear(fresh)
		b := &pgx.Batch{}
		for _, j := range jobs {
			received := j.Received
			if received.IsZero() {
				received = now
			}
			b.Queue(recordJob, j.Kind, j.EventID, []byte(j.Payload), now, micro(received), db.owner())
		}
		res := tx.SendBatch(ctx, b)
		for i := range jobs {
			var id int64
			err := res.QueryRow().Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // seen before
			}
			if err != nil {
				res.Close()
				return err
			}
			ids[i] = uint64(id)
			fresh[i] = true
		}
		return res.Close()
	})
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if fresh[i] {
			j.ID = ids[i]
			if j.Received.IsZero() {
				j.Received = now
			}
		}
	}
	return fresh, nil
}

// SeenEvent records an event id and reports whether it is new.
func (db *DB) SeenEvent(eventID string) (bool, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	tag, err := db.pool.Exec(ctx, `INSERT INTO events (event_id, seen_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, eventID, micro(db.now()))
	if err != nil {
		return false, db.result(err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishJob deletes a finished job.
func (db *DB) FinishJob(id uint64) error {
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, int64(id))
	return db.result(err)
}

// PendingJobs returns the unfinished jobs, oldest first. A replica
// (Options.Replica) gets only those it takes over from replicas that
// stopped (OrphanJobs): the others' jobs are running.
func (db *DB) PendingJobs() ([]store.Job, error) {
	if db.m != nil {
		return db.OrphanJobs()
	}
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT id, kind, event_id, payload, received, owner FROM jobs ORDER BY id`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	return out, db.result(err)
}

// scanJob reads a row of id, kind, event_id, payload, received, owner.
func scanJob(r pgx.CollectableRow) (store.Job, error) {
	var j store.Job
	var id int64
	var payload []byte
	err := r.Scan(&id, &j.Kind, &j.EventID, &payload, &j.Received, &j.Owner)
	j.ID, j.Payload = uint64(id), payload
	return j, err
}

// PruneEvents forgets up to limit event ids seen before cutoff, the oldest
// first, and returns how many.
func (db *DB) PruneEvents(cutoff time.Time, limit int) (int, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	tag, err := db.pool.Exec(ctx, `DELETE FROM events WHERE event_id IN
		(SELECT event_id FROM events WHERE seen_at < $1 ORDER BY seen_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, db.result(err)
	}
	return int(tag.RowsAffected()), nil
}

// ---- cards ----

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func putCard(ctx context.Context, q querier, rec *store.CardRecord) error {
	doc, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO cards (channel, source_ts, card_ts, unfinished, record, updated)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (channel, source_ts) DO UPDATE SET card_ts = excluded.card_ts, unfinished = excluded.unfinished,
			record = excluded.record, updated = excluded.updated`,
		rec.Card.Channel, rec.Card.SourceTS, rec.Card.CardTS, !rec.Card.Final || rec.PostStarted, string(doc), rec.Updated)
	if err != nil {
		return err
	}
	// The outbox: q is the card write's transaction (PutCard opens one
	// when there is an outbox).
	return enqueueAll(ctx, q, rec.Outbox)
}

func decodeCard(doc []byte) (*store.CardRecord, error) {
	var rec store.CardRecord
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, fmt.Errorf("corrupt card record: %w", err)
	}
	return &rec, nil
}

func getCard(ctx context.Context, q querier, ref card.Ref, lock bool) (*store.CardRecord, error) {
	sql := `SELECT record FROM cards WHERE channel = $1 AND source_ts = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	var doc []byte
	if err := q.QueryRow(ctx, sql, ref.Channel, ref.SourceTS).Scan(&doc); err != nil {
		return nil, err
	}
	return decodeCard(doc)
}

func collectCards(rows pgx.Rows) ([]*store.CardRecord, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.CardRecord, error) {
		var doc []byte
		if err := r.Scan(&doc); err != nil {
			return nil, err
		}
		return decodeCard(doc)
	})
}

// PutCard saves a card (and indexes it by its ts once posted).
func (db *DB) PutCard(rec *store.CardRecord) error {
	rec.Updated = db.now()
	if len(rec.Outbox) > 0 {
		return db.tx(func(ctx context.Context, tx pgx.Tx) error { return putCard(ctx, tx, rec) })
	}
	ctx, cancel := db.ctx()
	defer cancel()
	return db.result(putCard(ctx, db.pool, rec))
}

// Card returns the card answering ref, or store.ErrNotFound.
func (db *DB) Card(ref card.Ref) (*store.CardRecord, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rec, err := getCard(ctx, db.pool, ref, false)
	return rec, db.result(err)
}

// CardByTS returns the card posted at (channel, cardTS), or store.ErrNotFound.
func (db *DB) CardByTS(channel, cardTS string) (*store.CardRecord, error) {
	if cardTS == "" {
		return nil, store.ErrNotFound
	}
	ctx, cancel := db.ctx()
	defer cancel()
	var doc []byte
	err := db.pool.QueryRow(ctx, `SELECT record FROM cards WHERE channel = $1 AND card_ts = $2 ORDER BY updated DESC LIMIT 1`,
		channel, cardTS).Scan(&doc)
	if err != nil {
		return nil, db.result(err)
	}
	rec, err := decodeCard(doc)
	return rec, db.result(err)
}

// UpdateCard applies fn to the stored card with its row locked and saves
// it; fn's error aborts without saving.
func (db *DB) UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		rec, err := getCard(ctx, tx, ref, true)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return errCallback{err}
		}
		rec.Updated = db.now()
		out = rec
		return putCard(ctx, tx, rec)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateCardShared is UpdateCard: each write commits on its own here (see
// store.State.UpdateCardShared).
func (db *DB) UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return db.UpdateCard(ref, fn)
}

// UpsertCardShared is UpsertCard: each write commits on its own here (see
// store.State.UpsertCardShared).
func (db *DB) UpsertCardShared(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	return db.UpsertCard(ref, fn)
}

// SettleCard is UpdateCard that also links target, when recorded, to the
// card in the same transaction (see store.State.SettleCard): one transaction
// instead of UpdateCard's and AddCard's.
func (db *DB) SettleCard(ref card.Ref, target string, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		out = nil
		rec, err := getCard(ctx, tx, ref, true)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return errCallback{err}
		}
		rec.Updated = db.now()
		if err := putCard(ctx, tx, rec); err != nil {
			return err
		}
		if target != "" {
			// Only a recorded target is linked (AddCard's row lock keeps
			// it from racing a verdict of the same target).
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM targets WHERE target = $1 FOR UPDATE`, target).Scan(&one)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return err
			default:
				if err := addTargetCard(ctx, tx, target, ref); err != nil {
					return err
				}
			}
		}
		out = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpsertCard applies fn to the card answering ref, or to a new empty
// record, and saves it in one transaction. Upserts of one key are
// serialised (an advisory lock on the key for the transaction), so two
// replicas never both create it.
func (db *DB) UpsertCard(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockClassCard, ref.Key()); err != nil {
			return err
		}
		rec, err := getCard(ctx, tx, ref, true)
		exists := err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			rec, err = &store.CardRecord{}, nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, exists); err != nil {
			return errCallback{err}
		}
		rec.Updated = db.now()
		out = rec
		return putCard(ctx, tx, rec)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockClassCard is the first key of the advisory locks on card keys.
const lockClassCard int32 = 0x76626364 // "vbcd"

// UnfinishedCards returns the cards still being analysed or whose post was
// interrupted.
func (db *DB) UnfinishedCards() ([]*store.CardRecord, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT record FROM cards WHERE unfinished ORDER BY channel, source_ts`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := collectCards(rows)
	return out, db.result(err)
}

// RecentCards returns up to n cards of a channel that show something,
// newest message first.
func (db *DB) RecentCards(channel string, n int) ([]*store.CardRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT record FROM cards WHERE channel = $1
		AND (jsonb_typeof(record->'card'->'lines') = 'array' AND record->'card'->'lines' <> '[]'::jsonb
		  OR jsonb_typeof(record->'card'->'skipped') = 'array' AND record->'card'->'skipped' <> '[]'::jsonb)
		ORDER BY source_ts DESC LIMIT $2`, channel, n)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := collectCards(rows)
	return out, db.result(err)
}

// CardsOfTask returns the cards that show a line of taskID, in the order
// the task's target first appeared on them.
func (db *DB) CardsOfTask(taskID string) ([]*store.CardRecord, error) {
	taskID = strings.TrimSpace(taskID)
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT c.record FROM tasks t
		JOIN target_cards tc ON tc.target = t.target
		JOIN cards c ON c.channel = tc.channel AND c.source_ts = tc.source_ts
		WHERE t.task_id = $1 ORDER BY tc.pos`, taskID)
	if err != nil {
		return nil, db.result(err)
	}
	all, err := collectCards(rows)
	if err != nil {
		return nil, db.result(err)
	}
	var out []*store.CardRecord
	for _, rec := range all {
		if showsTask(&rec.Card, taskID) {
			out = append(out, rec)
		}
	}
	return out, nil
}

func showsTask(c *card.Card, taskID string) bool {
	for _, l := range c.Lines {
		if l.TaskID == taskID {
			return true
		}
	}
	return false
}

// ---- analyses ----

func indexTask(ctx context.Context, q querier, taskID, target string) error {
	if taskID == "" || target == "" {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO tasks (task_id, target) VALUES ($1, $2)
		ON CONFLICT (task_id) DO UPDATE SET target = excluded.target`, taskID, target)
	return err
}

// PutAnalysis records a submission.
func (db *DB) PutAnalysis(a store.Analysis) error {
	if a.SubmittedAt.IsZero() {
		a.SubmittedAt = db.now()
	}
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := indexTask(ctx, tx, a.TaskID, a.Target); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO analyses (service, target, task_id, submitted_at, owner) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (service, target) DO UPDATE SET task_id = excluded.task_id, submitted_at = excluded.submitted_at, owner = excluded.owner`,
			a.Service, a.Target, a.TaskID, micro(a.SubmittedAt), db.owner())
		return err
	})
}

// Analysis returns the submission in flight for a target, or store.ErrNotFound.
func (db *DB) Analysis(service, target string) (store.Analysis, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	a := store.Analysis{Service: service, Target: target}
	err := db.pool.QueryRow(ctx, `SELECT task_id, submitted_at FROM analyses WHERE service = $1 AND target = $2`,
		service, target).Scan(&a.TaskID, &a.SubmittedAt)
	if err != nil {
		return store.Analysis{}, db.result(err)
	}
	return a, nil
}

// DeleteAnalysis forgets a finished submission.
func (db *DB) DeleteAnalysis(service, target string) error {
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `DELETE FROM analyses WHERE service = $1 AND target = $2`, service, target)
	return db.result(err)
}

// Analyses returns every submission in flight.
func (db *DB) Analyses() ([]store.Analysis, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT service, target, task_id, submitted_at FROM analyses ORDER BY service, target`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Analysis, error) {
		var a store.Analysis
		err := r.Scan(&a.Service, &a.Target, &a.TaskID, &a.SubmittedAt)
		return a, err
	})
	return out, db.result(err)
}

// ---- targets, verdicts, rechecks ----

const targetCols = `target, kind, first_seen, checked, level, category, task_id, rechecks, next_check, deferred`

func scanTarget(r pgx.Row) (store.Target, error) {
	var tg store.Target
	var level int
	var category string
	var next, deferred *time.Time
	if err := r.Scan(&tg.Target, &tg.Kind, &tg.FirstSeen, &tg.Checked, &level, &category, &tg.TaskID, &tg.Rechecks, &next, &deferred); err != nil {
		return tg, err
	}
	tg.Level, tg.Category = verdict.Level(level), verdict.Category(category)
	if next != nil {
		tg.NextCheck = *next
	}
	if deferred != nil {
		tg.Deferred = *deferred
	}
	return tg, nil
}

// cardsOf fills in the cards of the targets.
func cardsOf(ctx context.Context, q querier, tgs []store.Target) error {
	if len(tgs) == 0 {
		return nil
	}
	names := make([]string, len(tgs))
	at := map[string][]int{}
	for i, tg := range tgs {
		names[i] = tg.Target
		at[tg.Target] = append(at[tg.Target], i)
	}
	rows, err := q.Query(ctx, `SELECT target, channel, source_ts FROM target_cards WHERE target = ANY($1) ORDER BY pos`, names)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var target string
		var ref card.Ref
		if err := rows.Scan(&target, &ref.Channel, &ref.SourceTS); err != nil {
			return err
		}
		for _, i := range at[target] {
			tgs[i].Cards = append(tgs[i].Cards, ref)
		}
	}
	return rows.Err()
}

func getTarget(ctx context.Context, q querier, target string, lock bool) (store.Target, error) {
	sql := `SELECT ` + targetCols + ` FROM targets WHERE target = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	tg, err := scanTarget(q.QueryRow(ctx, sql, target))
	if err != nil {
		return tg, err
	}
	one := []store.Target{tg}
	err = cardsOf(ctx, q, one)
	return one[0], err
}

func saveTarget(ctx context.Context, q querier, tg *store.Target) error {
	_, err := q.Exec(ctx, `UPDATE targets SET checked = $2, level = $3, category = $4, task_id = $5, rechecks = $6, next_check = $7
		WHERE target = $1`, tg.Target, micro(tg.Checked), int(tg.Level), string(tg.Category), tg.TaskID, tg.Rechecks, nullTime(tg.NextCheck))
	return err
}

func addTargetCard(ctx context.Context, q querier, target string, ref card.Ref) error {
	_, err := q.Exec(ctx, `INSERT INTO target_cards (target, channel, source_ts) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		target, ref.Channel, ref.SourceTS)
	return err
}

// RecordVerdict appends v to its target's history, updates the target and
// plans its next recheck (see store.State.RecordVerdict).
func (db *DB) RecordVerdict(v store.Verdict, ref *card.Ref, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	return db.recordVerdict("", v, ref, schedule, recheck)
}

// FinishAnalysis records the verdict of a submission and forgets the
// submission in one transaction.
func (db *DB) FinishAnalysis(service string, v store.Verdict, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	return db.recordVerdict(service, v, nil, schedule, recheck)
}

func (db *DB) recordVerdict(finished string, v store.Verdict, cardRef *card.Ref, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	if v.At.IsZero() {
		v.At = db.now()
	}
	v.At = micro(v.At)
	var saved store.Target
	var prev verdict.Level
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if finished != "" {
			if _, err := tx.Exec(ctx, `DELETE FROM analyses WHERE service = $1 AND target = $2`, finished, v.Target); err != nil {
				return err
			}
		}
		// Create the target or lock it, in one statement: a Prune that
		// deletes it meanwhile makes the insert retry rather than leave
		// nothing to lock.
		var created bool
		if err := tx.QueryRow(ctx, `INSERT INTO targets (target, kind, first_seen, checked, level) VALUES ($1, $2, $3, $3, $4)
			ON CONFLICT (target) DO UPDATE SET kind = targets.kind RETURNING xmax = 0`,
			v.Target, v.Kind, v.At, int(verdict.Pending)).Scan(&created); err != nil {
			return err
		}
		tg, err := getTarget(ctx, tx, v.Target, true)
		if err != nil {
			return err
		}
		prev = tg.Level
		if created {
			prev = verdict.Pending
		}
		tg.Checked, tg.Level, tg.Category, tg.TaskID = v.At, v.Level, v.Category, v.TaskID
		if cardRef != nil && !containsRef(tg.Cards, *cardRef) {
			tg.Cards = append(tg.Cards, *cardRef)
			if err := addTargetCard(ctx, tx, tg.Target, *cardRef); err != nil {
				return err
			}
		}
		if recheck {
			tg.Rechecks++
			if !created && prev != verdict.Pending && prev != v.Level {
				// The flip, to announce (State.PendingFlips); one
				// already pending keeps the level its cards show.
				if _, err := tx.Exec(ctx, `INSERT INTO pending_flips (target, was, at) VALUES ($1, $2, $3) ON CONFLICT (target) DO NOTHING`,
					v.Target, int(prev), v.At); err != nil {
					return err
				}
			}
		}
		schedule.PlanNext(&tg, v.At)
		tg.NextCheck = micro(tg.NextCheck)
		if err := saveTarget(ctx, tx, &tg); err != nil {
			return err
		}
		if err := indexTask(ctx, tx, v.TaskID, v.Target); err != nil {
			return err
		}
		var scores *string
		if v.Scores != nil {
			b, err := json.Marshal(v.Scores)
			if err != nil {
				return err
			}
			s := string(b)
			scores = &s
		}
		if _, err := tx.Exec(ctx, `INSERT INTO verdicts (target, kind, task_id, level, category, scores, malscore, family, at, source)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			v.Target, v.Kind, v.TaskID, int(v.Level), string(v.Category), scores, v.MalScore, v.Family, v.At, v.Source); err != nil {
			return err
		}
		saved = tg
		return nil
	})
	return saved, prev, err
}

func containsRef(refs []card.Ref, r card.Ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// AddCard remembers that card shows target (without a new verdict).
func (db *DB) AddCard(target string, ref card.Ref) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM targets WHERE target = $1 FOR UPDATE`, target).Scan(&one); err != nil {
			return err
		}
		return addTargetCard(ctx, tx, target, ref)
	})
}

// Target returns what is known of a target, or store.ErrNotFound.
func (db *DB) Target(target string) (store.Target, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	tg, err := getTarget(ctx, db.pool, target, false)
	if err != nil {
		return store.Target{}, db.result(err)
	}
	return tg, nil
}

// History returns a target's verdicts, oldest first.
func (db *DB) History(target string) ([]store.Verdict, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT target, kind, task_id, level, category, scores, malscore, family, at, source
		FROM verdicts WHERE target = $1 ORDER BY at, id`, target)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Verdict, error) {
		var v store.Verdict
		var level int
		var category string
		var scores []byte
		if err := r.Scan(&v.Target, &v.Kind, &v.TaskID, &level, &category, &scores, &v.MalScore, &v.Family, &v.At, &v.Source); err != nil {
			return v, err
		}
		v.Level, v.Category = verdict.Level(level), verdict.Category(category)
		if scores != nil {
			if err := json.Unmarshal(scores, &v.Scores); err != nil {
				return v, fmt.Errorf("corrupt scores of %s: %w", v.Target, err)
			}
		}
		return v, nil
	})
	return out, db.result(err)
}

// Due returns up to limit targets whose recheck is due at now, the oldest
// due first (an index on the due time: the cost grows with limit).
func (db *DB) Due(now time.Time, limit int) ([]store.Target, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT `+targetCols+` FROM targets WHERE next_check IS NOT NULL AND next_check <= $1
		ORDER BY next_check, target LIMIT $2`, now, limit)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Target, error) { return scanTarget(r) })
	if err != nil {
		return nil, db.result(err)
	}
	return out, db.result(cardsOf(ctx, db.pool, out))
}

// RecheckFailed advances a URL's recheck schedule after a recheck that
// could not complete, without touching its verdict.
func (db *DB) RecheckFailed(target string, schedule store.Schedule) error {
	now := db.now()
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		tg, err := scanTarget(tx.QueryRow(ctx, `SELECT `+targetCols+` FROM targets WHERE target = $1 FOR UPDATE`, target))
		if err != nil {
			return err
		}
		tg.Rechecks++
		schedule.PlanNext(&tg, now)
		return saveTarget(ctx, tx, &tg)
	})
}

// ClaimRecheck: see store.State. Under a fence, the claim commits only
// while the recheck's term is live (lead.go).
func (db *DB) ClaimRecheck(target string, dueBy time.Time, hold time.Duration, f store.Fence) (time.Time, bool, error) {
	until := db.now()
	if dueBy.After(until) {
		until = dueBy
	}
	until = micro(until.Add(hold))
	claimed := false
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		claimed = false
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE targets SET next_check = $3 WHERE target = $1 AND next_check IS NOT NULL AND next_check <= $2`,
			target, dueBy, until)
		claimed = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil || !claimed {
		return time.Time{}, false, err
	}
	return until, true, nil
}

// ReleaseRecheck: see store.State.
func (db *DB) ReleaseRecheck(target string, until, dueAt time.Time) error {
	if dueAt.IsZero() {
		return nil
	}
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `UPDATE targets SET next_check = $3 WHERE target = $1 AND next_check = $2`, target, micro(until), micro(dueAt))
	return db.result(err)
}

// ---- deferred checks (see store.State.DeferCheck) ----

// DeferCheck records that the check of the URL target was deferred for
// card: the target is created if new, card linked, and the deferred check
// due at the earlier of at and its pending due time (a claim's hold is
// later than at: a claimed check is due at at again).
func (db *DB) DeferCheck(target string, ref card.Ref, at time.Time) error {
	at = micro(at)
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO targets (target, kind, first_seen, checked, level, deferred) VALUES ($1, 'url', $2, $2, $3, $2)
			ON CONFLICT (target) DO UPDATE SET deferred = CASE
				WHEN targets.deferred IS NULL OR targets.deferred > EXCLUDED.deferred THEN EXCLUDED.deferred
				ELSE targets.deferred END`,
			target, at, int(verdict.Unknown)); err != nil {
			return err
		}
		return addTargetCard(ctx, tx, target, ref)
	})
}

// DueDeferred returns up to limit targets whose deferred check is due at
// now, the oldest due first (an index on the due time).
func (db *DB) DueDeferred(now time.Time, limit int) ([]store.Target, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT `+targetCols+` FROM targets WHERE deferred IS NOT NULL AND deferred <= $1
		ORDER BY deferred, target LIMIT $2`, now, limit)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Target, error) { return scanTarget(r) })
	if err != nil {
		return nil, db.result(err)
	}
	return out, db.result(cardsOf(ctx, db.pool, out))
}

// ClaimDeferred: see store.State. Under a fence, the claim commits only
// while the recheck's term is live (lead.go).
func (db *DB) ClaimDeferred(target string, dueBy time.Time, hold time.Duration, f store.Fence) (time.Time, bool, error) {
	until := db.now()
	if dueBy.After(until) {
		until = dueBy
	}
	until = micro(until.Add(hold))
	claimed := false
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		claimed = false
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE targets SET deferred = $3 WHERE target = $1 AND deferred IS NOT NULL AND deferred <= $2`,
			target, dueBy, until)
		claimed = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil || !claimed {
		return time.Time{}, false, err
	}
	return until, true, nil
}

// EndDeferred: see store.State.
func (db *DB) EndDeferred(target string, until, next time.Time) error {
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `UPDATE targets SET deferred = $3 WHERE target = $1 AND deferred = $2`,
		target, micro(until), nullTime(next))
	return db.result(err)
}

// TargetOfTask returns the target a task analysed, or store.ErrNotFound.
func (db *DB) TargetOfTask(taskID string) (string, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var target string
	err := db.pool.QueryRow(ctx, `SELECT target FROM tasks WHERE task_id = $1`, strings.TrimSpace(taskID)).Scan(&target)
	return target, db.result(err)
}

// ---- reports, channels, allowlist ----

// RecordReport appends a report to the target's audit trail.
func (db *DB) RecordReport(r store.Report) error {
	if r.At.IsZero() {
		r.At = db.now()
	}
	ctx, cancel := db.ctx()
	defer cancel()
	_, err := db.pool.Exec(ctx, `INSERT INTO reports (target, task_id, user_id, option, category, at, outcome, card_channel, card_source_ts)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		r.Target, r.TaskID, r.User, r.Option, string(r.Category), micro(r.At), r.Outcome, r.Card.Channel, r.Card.SourceTS)
	return db.result(err)
}

// Reports returns a target's reports, oldest first.
func (db *DB) Reports(target string) ([]store.Report, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT target, task_id, user_id, option, category, at, outcome, card_channel, card_source_ts
		FROM reports WHERE target = $1 ORDER BY at, id`, target)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Report, error) {
		var r store.Report
		var category string
		err := row.Scan(&r.Target, &r.TaskID, &r.User, &r.Option, &category, &r.At, &r.Outcome, &r.Card.Channel, &r.Card.SourceTS)
		r.Category = verdict.Category(category)
		return r, err
	})
	return out, db.result(err)
}

func (db *DB) channelSetting(column, channel string) (string, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var v string
	err := db.pool.QueryRow(ctx, `SELECT `+column+` FROM channels WHERE channel = $1`, channel).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return v, db.result(err)
}

func (db *DB) setChannelSetting(column, channel, v string, out []*store.Outgoing) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO channels (channel, `+column+`) VALUES ($1, $2)
			ON CONFLICT (channel) DO UPDATE SET `+column+` = excluded.`+column, channel, v); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM channels WHERE channel = $1 AND mode = '' AND files = '' AND quarantine = ''`, channel); err != nil {
			return err
		}
		return enqueueAll(ctx, tx, out)
	})
}

// ChannelMode returns a channel's mode ("" when not set).
func (db *DB) ChannelMode(channel string) (string, error) { return db.channelSetting("mode", channel) }

// SetChannelMode sets a channel's mode; "" removes the setting.
func (db *DB) SetChannelMode(channel, mode string, out ...*store.Outgoing) error {
	return db.setChannelSetting("mode", channel, mode, out)
}

// ChannelFiles returns a channel's file-scanning switch ("on", "off", or "").
func (db *DB) ChannelFiles(channel string) (string, error) {
	return db.channelSetting("files", channel)
}

// SetChannelFiles sets a channel's file-scanning switch; "" removes it.
func (db *DB) SetChannelFiles(channel, v string, out ...*store.Outgoing) error {
	return db.setChannelSetting("files", channel, v, out)
}

// Allow adds a domain to the runtime allowlist.
func (db *DB) Allow(domain, by string, out ...*store.Outgoing) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO allowlist (domain, added_by, added_at) VALUES ($1, $2, $3)
		ON CONFLICT (domain) DO UPDATE SET added_by = excluded.added_by, added_at = excluded.added_at`, domain, by, micro(db.now())); err != nil {
			return err
		}
		return enqueueAll(ctx, tx, out)
	})
}

// Disallow removes a domain; it reports whether it was there.
func (db *DB) Disallow(domain string, out ...*store.Outgoing) (bool, error) {
	found := false
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM allowlist WHERE domain = $1`, domain)
		if err != nil {
			return err
		}
		if found = tag.RowsAffected() > 0; !found {
			return nil // nothing changed: no event
		}
		return enqueueAll(ctx, tx, out)
	})
	return found, err
}

// AllowList returns the runtime allowlist, sorted by domain.
func (db *DB) AllowList() ([]store.AllowEntry, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT domain, added_by, added_at FROM allowlist ORDER BY domain`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AllowEntry, error) {
		var e store.AllowEntry
		err := r.Scan(&e.Domain, &e.By, &e.At)
		return e, err
	})
	return out, db.result(err)
}

// lockID is the migration lock's key: one per database and schema, so
// replicas of one deployment exclude each other and others do not wait.
func lockID(database, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("verdictbot migrations " + database + "." + schema))
	return int64(h.Sum64() >> 1)
}
