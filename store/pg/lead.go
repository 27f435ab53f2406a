package pg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// The lead of a periodic job (the event sender, the recheck, retention) is
// a lease in the table leaders, as River elects its leader (a row with an
// expiry, taken over only once expired), with a fencing token that grows
// at every new term:
//
//   - Lead takes the job's row when its term has expired or was released,
//     with token + 1 and expires = now() + lease (VERDICTBOT_LEASE);
//   - the holder renews every term it holds every lease/5, on a session of
//     its own (not the pool's, so a busy pool never delays a renewal): the
//     renewal also checks the token and that the row names this session
//     (pid), so a term dies with its session. A renewal that fails (no
//     row, an error, a broken session) ends the terms at once;
//   - Remaining is the time left on the local clock since the last
//     renewal was sent (the row's expiry is later), less lease/5: an
//     action (an HTTP request) must end within it, leaving a fifth of the
//     lease for the fenced write that follows it;
//   - every fenced write (fence, below) checks in its own transaction that
//     its term is the live one (FOR SHARE: a takeover waits for it).
//
// So another replica leads only once the term has expired by the
// database's clock, by which time the old leader's actions have ended by
// its own, and its late writes are refused: a replica whose session was
// killed, or that was paused, sends no event twice, none out of order, and
// rechecks nothing twice. Killing the lead session (pg_terminate_backend,
// pid in leaders) makes the holder step down at its next renewal; another
// replica leads within one lease.
type leaders struct {
	db     *DB
	holder string        // the replica id (or a random one)
	lease  time.Duration // how long a term holds unrenewed
	every  time.Duration // renewal period and Remaining's margin: lease/5

	mu    sync.Mutex // guards conn, terms and closed; held for each statement on conn
	conn  *pgx.Conn  // the lead session (nil: none open)
	terms map[string]*term
	// closed is set by close: no new term.
	closed bool

	start     sync.Once
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLeaders(db *DB, holder string, lease time.Duration) *leaders {
	if holder == "" {
		var b [4]byte
		rand.Read(b[:])
		holder = "process-" + hex.EncodeToString(b[:])
	}
	return &leaders{db: db, holder: holder, lease: lease, every: lease / 5, terms: map[string]*term{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// campaign takes the job's row when its term is over: a new term, token + 1.
const campaign = `INSERT INTO leaders AS l (job, holder, token, pid, elected, expires)
	VALUES ($1, $2, 1, pg_backend_pid(), now(), now() + make_interval(secs => $3))
	ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, token = l.token + 1, pid = excluded.pid,
		elected = excluded.elected, expires = excluded.expires
	WHERE l.expires <= now()
	RETURNING token`

// renew extends the terms ($1 jobs, $2 tokens) this session still holds.
const renew = `UPDATE leaders SET expires = now() + make_interval(secs => $4)
	WHERE (job, token) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))
	  AND holder = $3 AND pid = pg_backend_pid() AND expires > now()
	RETURNING job`

// Lead: see store.State. ok is false while another process's term of the
// job is live, or this process already holds one.
func (db *DB) Lead(ctx context.Context, job string) (store.Lease, bool, error) {
	l := db.lead
	l.start.Do(func() { go l.run() })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, nil
	}
	if t, ok := l.terms[job]; ok && !t.ended() {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.every)
	defer cancel()
	if l.conn == nil {
		cfg := db.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = "verdictbot-lead"
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, false, db.wrap("lead "+job+": postgres", err)
		}
		l.conn = conn
	}
	sent := time.Now()
	var token int64
	err := l.conn.QueryRow(ctx, campaign, job, l.holder, l.lease.Seconds()).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		l.endSession()
		return nil, false, db.wrap("lead "+job, err)
	}
	t := &term{l: l, job: job, token: uint64(token), until: sent.Add(l.lease), done: make(chan struct{})}
	t.mu.Lock()
	t.timer = time.AfterFunc(time.Until(t.until), t.end)
	t.mu.Unlock()
	l.terms[job] = t
	return t, true, nil
}

// run renews the terms every lease/5 until close.
func (l *leaders) run() {
	defer close(l.done)
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			l.renewAll()
		}
	}
}

// renewAll renews the live terms; those not renewed end.
func (l *leaders) renewAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var jobs []string
	var tokens []int64
	for job, t := range l.terms {
		if t.ended() {
			delete(l.terms, job)
			continue
		}
		jobs = append(jobs, job)
		tokens = append(tokens, int64(t.token))
	}
	if len(jobs) == 0 || l.conn == nil {
		return
	}
	// Up to half the lease: a commit slowed by a busy disk must not end a
	// term that has most of its lease left (with lease/5, a renewal held
	// up 400 ms of a 2 s lease ended it). The term's own timer still ends
	// it when renewals stop coming, and Remaining counts from when this
	// one was sent.
	ctx, cancel := context.WithTimeout(context.Background(), l.lease/2)
	defer cancel()
	sent := time.Now()
	rows, err := l.conn.Query(ctx, renew, jobs, tokens, l.holder, l.lease.Seconds())
	var renewed []string
	if err == nil {
		renewed, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		// The session is gone or sick: the terms bound to it end now (the
		// rows expire on their own).
		l.endSession()
		return
	}
	for _, job := range jobs {
		t := l.terms[job]
		if containsString(renewed, job) {
			t.extend(sent.Add(l.lease))
			continue
		}
		t.end() // taken over, or expired meanwhile
		delete(l.terms, job)
	}
}

// endSession closes the lead session and ends every term bound to it.
// l.mu is held.
func (l *leaders) endSession() {
	for job, t := range l.terms {
		t.end()
		delete(l.terms, job)
	}
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
}

// close stops the renewals, releases the terms (another replica leads at
// once) and closes the session. It may be called again: nothing more.
func (l *leaders) close() { l.closeOnce.Do(l.shut) }

func (l *leaders) shut() {
	l.mu.Lock()
	l.closed = true
	terms := make([]*term, 0, len(l.terms))
	for _, t := range l.terms {
		terms = append(terms, t)
	}
	l.mu.Unlock()
	for _, t := range terms {
		t.Release()
	}
	l.start.Do(func() { close(l.done) }) // never started: nothing to wait for
	close(l.stop)
	<-l.done
	l.mu.Lock()
	l.endSession()
	l.mu.Unlock()
}

// term is one term of a job's lead held by this process (store.Lease).
type term struct {
	l     *leaders
	job   string
	token uint64

	mu    sync.Mutex  // guards until and timer
	until time.Time   // the term surely holds until then (local clock)
	timer *time.Timer // ends the term at until, should renewals stall
	once  sync.Once
	done  chan struct{}

	release sync.Once
}

var _ store.Lease = (*term)(nil)

// Fence: see store.Lease.
func (t *term) Fence() store.Fence { return store.Fence{Job: t.job, Token: t.token} }

// Remaining: see store.Lease.
func (t *term) Remaining() time.Duration {
	if t.ended() {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(0, time.Until(t.until)-t.l.every)
}

// Done: see store.Lease.
func (t *term) Done() <-chan struct{} { return t.done }

// Release: see store.Lease. The row's term ends now, so another replica
// may lead at its next try.
func (t *term) Release() {
	t.release.Do(func() {
		t.end()
		l := t.l
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.terms[t.job] == t {
			delete(l.terms, t.job)
		}
		if l.conn == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.every)
		defer cancel()
		if _, err := l.conn.Exec(ctx, `UPDATE leaders SET expires = now() WHERE job = $1 AND token = $2 AND expires > now()`,
			t.job, int64(t.token)); err != nil {
			l.endSession()
		}
	})
}

func (t *term) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *term) end() {
	t.once.Do(func() {
		t.mu.Lock()
		t.timer.Stop()
		t.mu.Unlock()
		close(t.done)
	})
}

// extend records a renewal: the term holds until until.
func (t *term) extend(until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.until = until
	t.timer.Reset(time.Until(until))
}

// fence checks, in tx, that f (when not zero) is its job's live term, and
// holds its row (FOR SHARE) until tx ends, so that no takeover commits
// meanwhile: store.ErrNotLeader otherwise.
func fence(ctx context.Context, tx pgx.Tx, f store.Fence) error {
	if f.Job == "" {
		return nil
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM leaders WHERE job = $1 AND token = $2 AND expires > now() FOR SHARE`,
		f.Job, int64(f.Token)).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return errCallback{store.ErrNotLeader}
	}
	return err
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
