package pg_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
	"github.com/verdictbot/verdictbot/store/storetest"
)

func open(t *testing.T, schema, base string, now func() time.Time) *pg.DB {
	t.Helper()
	db, err := pg.Open(context.Background(), base, pg.Options{Now: now, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPostgres holds every test of the backend, so that without
// VERDICTBOT_TEST_DATABASE_URL they skip with one line.
func TestPostgres(t *testing.T) {
	base := pgtest.URL(t)
	// The conformance suite, each case in a schema of its own.
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, now func() time.Time) store.State {
			schema, _ := pgtest.Schema(t)
			return open(t, schema, base, now)
		})
	})
	// The retention cases again with one row per Prune statement, so that
	// every step loops over batches.
	t.Run("PruneInSmallBatches", func(t *testing.T) {
		storetest.RunPrune(t, func(t *testing.T, now func() time.Time) store.State {
			schema, _ := pgtest.Schema(t)
			db, err := pg.Open(context.Background(), base, pg.Options{Now: now, Schema: schema, PruneBatch: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("NeutralValuesOfAProcessThatIsNotAReplica", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		notAReplica(t, open(t, schema, base, nil))
	})
	t.Run("MigrationsRunOnceUnderTheLock", migrationsRunOnce)
	t.Run("NewerSchemaIsRefused", newerSchemaIsRefused)
	t.Run("Schema11IsMigratedWithItsRecords", fromSchema11)
	t.Run("Schema12IsMigratedWithItsRecords", fromSchema12)
	t.Run("Schema13IsMigratedWithItsRecords", fromSchema13)
	t.Run("Schema14IsMigratedWithItsRecords", fromSchema14)
	t.Run("Schema15IsMigratedWithItsRecords", fromSchema15)
	t.Run("PasswordNeverInErrors", passwordNeverInErrors)
	t.Run("AllowanceIsSharedByReplicas", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		clock := &storetest.Clock{}
		clock.Set(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		allowanceShared(t, open(t, schema, base, clock.Now), open(t, schema, base, clock.Now), clock)
	})
	t.Run("DeferredChecksAreSharedClaimedOnceAndFenced", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		clock := &storetest.Clock{}
		clock.Set(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		deferredShared(t, schema, base, clock)
	})
	t.Run("OneReplicaLeadsAPeriodicJob", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		another, _ := pgtest.Schema(t)
		oneReplicaLeads(t, open(t, schema, base, nil), open(t, schema, base, nil), open(t, another, base, nil))
	})
	t.Run("KilledLeadSessionHandsOverWithinALease", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		killedLeadSession(t, schema, base)
	})
	t.Run("PausedLeaderIsFencedOut", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		pausedLeader(t, schema, base)
	})
	t.Run("RenewalsHaveTheirOwnSession", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		renewalsHaveTheirOwnSession(t, schema, base)
	})
}

// notAReplica: a process that is not one of the replicas (verdictbot
// migrate, the events command) pings the database, has no file, no
// orphans to sweep, and counts one replica, once.
func notAReplica(t *testing.T, db *pg.DB) {
	if err := db.Ping(context.Background()); err != nil {
		t.Errorf("Ping = %v", err)
	}
	if n := db.Size(); n != -1 {
		t.Errorf("Size = %d, want -1 (no file)", n)
	}
	if d := db.SweepEvery(); d != 0 {
		t.Errorf("SweepEvery = %v, want 0", d)
	}
	var calls []int
	db.OnReplicas(func(n int) { calls = append(calls, n) })
	if len(calls) != 1 || calls[0] != 1 {
		t.Errorf("OnReplicas called fn with %v, want [1]", calls)
	}
}

// openLease opens a store whose leads last lease.
func openLease(t *testing.T, schema, base string, lease time.Duration) *pg.DB {
	t.Helper()
	db, err := pg.Open(context.Background(), base, pg.Options{Schema: schema, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustLead(t *testing.T, db *pg.DB, job string) store.Lease {
	t.Helper()
	l, ok, err := db.Lead(context.Background(), job)
	if err != nil || !ok {
		t.Fatalf("Lead(%s) = %v, %v; want the lead", job, ok, err)
	}
	return l
}

func mustNotLead(t *testing.T, db *pg.DB, job, why string) {
	t.Helper()
	if l, ok, err := db.Lead(context.Background(), job); err != nil || ok {
		if ok {
			l.Release()
		}
		t.Fatalf("%s: Lead(%s) = %v, %v; want another to lead", why, job, ok, err)
	}
}

// waitLead retries Lead until it leads or within runs out, and returns the
// term and how long it took.
func waitLead(t *testing.T, db *pg.DB, job string, within time.Duration) (store.Lease, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		l, ok, err := db.Lead(context.Background(), job)
		if err == nil && ok {
			return l, time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("no lead of %s within %v (%v, %v)", job, within, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fenced reports whether a fenced write under f is accepted.
func fenced(t *testing.T, db *pg.DB, f store.Fence) bool {
	t.Helper()
	err := db.DeleteEvents([]uint64{1}, f)
	if err != nil && !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("fenced write: %v", err)
	}
	return err == nil
}

// oneReplicaLeads: of two replicas on one schema one leads a job at a time,
// each job on its own; another schema (an unrelated install on the same
// database) is not held up. At release the lead passes on at once with a
// greater token, and the old term's fenced writes are refused.
func oneReplicaLeads(t *testing.T, a, b, other *pg.DB) {
	la := mustLead(t, a, "recheck")
	mustNotLead(t, b, "recheck", "two replicas at once")
	mustNotLead(t, a, "recheck", "the same process twice")
	lr := mustLead(t, b, "retention")
	lr.Release()
	lo := mustLead(t, other, "recheck")
	lo.Release()
	if !fenced(t, a, la.Fence()) {
		t.Fatal("the live term's write was refused")
	}
	la.Release()
	select {
	case <-la.Done():
	default:
		t.Fatal("Done open after Release")
	}
	lb := mustLead(t, b, "recheck")
	defer lb.Release()
	if lb.Fence().Token <= la.Fence().Token {
		t.Fatalf("token %d after %d: the fencing token must grow", lb.Fence().Token, la.Fence().Token)
	}
	if fenced(t, a, la.Fence()) {
		t.Fatal("a released term's write was accepted")
	}
	if !fenced(t, a, lb.Fence()) {
		t.Fatal("the new term's write was refused")
	}
}

// killedLeadSession: pg_terminate_backend on the leader's lead session
// (its pid is in leaders) makes it step down at its next renewal (lease/5);
// nobody leads until the term expires; another replica leads within one
// lease of the kill, with a greater token, and the old term's writes are
// refused.
func killedLeadSession(t *testing.T, schema, base string) {
	const lease = 2 * time.Second
	a, b := openLease(t, schema, base, lease), openLease(t, schema, base, lease)
	la := mustLead(t, a, "events")
	time.Sleep(lease / 2) // renewed at least once
	var pid int32
	var killed bool
	err := b.Pool().QueryRow(context.Background(), `SELECT pid, pg_terminate_backend(pid) FROM leaders WHERE job = 'events'`).Scan(&pid, &killed)
	if err != nil || !killed || uint32(pid) != a.LeadPID() {
		t.Fatalf("terminating the lead session %d (a's is %d): %v %v", pid, a.LeadPID(), killed, err)
	}
	kill := time.Now()
	select {
	case <-la.Done():
	case <-time.After(lease/5 + time.Second):
		t.Fatal("the leader did not step down after its session was killed")
	}
	stepped := time.Since(kill)
	if la.Remaining() != 0 {
		t.Fatalf("a lost term has %v left", la.Remaining())
	}
	lb, _ := waitLead(t, b, "events", 2*lease)
	defer lb.Release()
	took := time.Since(kill)
	if took > lease+lease/2 {
		t.Errorf("handover took %v, want within one lease (%v)", took, lease)
	}
	if lb.Fence().Token <= la.Fence().Token || fenced(t, b, la.Fence()) || !fenced(t, b, lb.Fence()) {
		t.Fatalf("tokens %d → %d; the old term's write must be refused, the new one's accepted", la.Fence().Token, lb.Fence().Token)
	}
	// The killed replica leads again later, on a new session.
	lb.Release()
	l2 := mustLead(t, a, "events")
	defer l2.Release()
	if a.LeadPID() == uint32(pid) {
		t.Fatal("the new term runs on the killed session")
	}
	t.Logf("lease %v: the killed leader stepped down after %v; the next leader led %v after the kill", lease, stepped.Round(time.Millisecond), took.Round(time.Millisecond))
}

// pausedLeader: a leader that stops renewing (a paused process, a frozen
// VM: its session stays open) has no time left once its term lapses, and
// its term ends; another replica leads once the term expired, and the
// paused one's fenced writes are refused.
func pausedLeader(t *testing.T, schema, base string) {
	const lease = 2 * time.Second
	a, b := openLease(t, schema, base, lease), openLease(t, schema, base, lease)
	la := mustLead(t, a, "recheck")
	a.PauseRenewals()
	mustNotLead(t, b, "recheck", "the term is not over")
	start := time.Now()
	lb, took := waitLead(t, b, "recheck", 2*lease)
	defer lb.Release()
	if took < lease-lease/5-200*time.Millisecond {
		t.Fatalf("another replica led %v after the last renewal, before the term (%v) expired", took, lease)
	}
	if la.Remaining() != 0 {
		t.Fatalf("the paused leader still has %v once another leads", la.Remaining())
	}
	select {
	case <-la.Done():
	case <-time.After(time.Second):
		t.Fatal("the paused leader's term did not end")
	}
	if fenced(t, a, la.Fence()) {
		t.Fatal("the paused leader's write was accepted after the takeover")
	}
	t.Logf("paused leader: the next one led %v after the pause", time.Since(start).Round(time.Millisecond))
}

// renewalsHaveTheirOwnSession: with every connection of the pool taken
// (a busy replica), the terms are still renewed: the lead session is not
// the pool's.
func renewalsHaveTheirOwnSession(t *testing.T, schema, base string) {
	// 2 s: a renewal every 400 ms; with 1 s one renewal held up 600 ms by
	// a busy machine ended the term (seen in a loop of full runs).
	const lease = 2 * time.Second
	db, err := pg.Open(context.Background(), base, pg.Options{Schema: schema, Lease: lease, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := mustLead(t, db, "events")
	defer l.Release()
	ctx := context.Background()
	var held []interface{ Release() }
	// Given back however the test ends: db.Close waits for them (a
	// failure left the test hanging until go test's timeout).
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range 2 {
		c, err := db.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(3 * lease)
	select {
	case <-l.Done():
		t.Fatal("the term ended while the pool was busy: its renewals wait for the pool")
	default:
	}
	if l.Remaining() <= 0 {
		t.Fatal("no time left while the pool was busy")
	}
}

func schemaVersion(t *testing.T, schemaURL string) (int64, int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int64
	var rows int
	if err := conn.QueryRow(ctx, `SELECT MAX(version_id), COUNT(*) FROM goose_db_version`).Scan(&v, &rows); err != nil {
		t.Fatal(err)
	}
	return v, rows
}

// Replicas that start together migrate once, under the lock; a second
// start finds the schema current.
func migrationsRunOnce(t *testing.T) {
	_, schemaURL := pgtest.Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := pg.Open(context.Background(), schemaURL, pg.Options{})
			if err == nil {
				db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	v, rows := schemaVersion(t, schemaURL)
	if v != pg.SchemaVersion || rows != 1+pg.SchemaVersion {
		t.Fatalf("version %d, %d rows in goose_db_version (a migration ran twice?)", v, rows)
	}
	got, err := pg.Migrate(context.Background(), schemaURL, pg.Options{})
	if err != nil || got != pg.SchemaVersion {
		t.Fatalf("Migrate = %d, %v", got, err)
	}
}

// A database migrated by a newer verdictbot is refused with one line.
func newerSchemaIsRefused(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	db := open(t, schema, pgtest.URL(t), nil)
	db.Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, pg.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = pg.Open(ctx, schemaURL, pg.Options{})
	want := fmt.Sprintf("database schema %d is newer than this verdictbot (%d); upgrade verdictbot", pg.SchemaVersion+1, pg.SchemaVersion)
	var newer *pg.NewerSchemaError
	if err == nil || err.Error() != want || !errors.As(err, &newer) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := pg.Migrate(ctx, schemaURL, pg.Options{}); err == nil || err.Error() != want {
		t.Fatalf("Migrate: %v", err)
	}
}

// The password of the URL never appears in an error: wrong credentials,
// an unreachable host, a malformed URL. The wrong-credential URLs are the
// test database's own, parsed (net/url) and changed in one part each, so
// any database name works; a role or database that does exist (it must
// not: the names are random) would still land its tables in the test's
// own schema, never in the database's public one.
func passwordNeverInErrors(t *testing.T) {
	const secret = "s3cr3t-Pa55word"
	schema, _ := pgtest.Schema(t)
	base, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	suffix := strings.TrimPrefix(schema, "t_")
	with := func(change func(u *url.URL)) string {
		u := *base
		change(&u)
		return u.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, u := range map[string]string{
		"unknown role": with(func(u *url.URL) { u.User = url.UserPassword("nosuchrole_"+suffix, secret) }),
		"unknown database": with(func(u *url.URL) {
			u.User = url.UserPassword(base.User.Username(), secret)
			u.Path = "/nosuchdb_" + suffix
		}),
		"unreachable host": "postgres://postgres:" + secret + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=2",
		"bad port":         "postgres://postgres:" + secret + "@127.0.0.1:notaport/test",
		"bad option":       "postgres://postgres:" + secret + "@127.0.0.1:5432/test?sslmode=bogus",
		"keyword form":     "host=127.0.0.1 port=1 user=postgres password=" + secret + " dbname=test connect_timeout=2",
	} {
		db, err := pg.Open(ctx, u, pg.Options{Timeout: 5 * time.Second, Schema: schema})
		if err == nil {
			db.Close()
			t.Errorf("%s: no error (%s)", name, pg.Describe(u))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the password is in the error: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestDescribe(t *testing.T) {
	if got := pg.Describe("postgres://bot:pw@db.internal:5432/verdictbot?sslmode=require"); got != "postgres://bot@db.internal:5432/verdictbot" {
		t.Fatal(got)
	}
}

// allowanceShared: two replicas on one schema count a key's uses together
// (VERDICTBOT_USER_LINKS_PER_HOUR holds across replicas), concurrently too.
func allowanceShared(t *testing.T, a, b *pg.DB, clock *storetest.Clock) {
	for i, db := range []*pg.DB{a, b, a} {
		if ok, err := db.TakeAllowance("U1", 3, time.Hour); err != nil || !ok {
			t.Fatalf("use %d: %v, %v", i+1, ok, err)
		}
	}
	for _, db := range []*pg.DB{b, a} {
		if ok, err := db.TakeAllowance("U1", 3, time.Hour); err != nil || ok {
			t.Fatalf("a fourth use granted on one of the replicas: %v, %v", ok, err)
		}
	}
	// Both replicas at once: 10 each for a limit of 7, exactly 7 granted.
	var granted atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Go(func() {
			ok, err := db.TakeAllowance("U2", 7, time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := granted.Load(); n != 7 {
		t.Fatalf("%d uses granted across two replicas, want 7", n)
	}
	clock.Add(time.Hour)
	if ok, err := b.TakeAllowance("U1", 3, time.Hour); err != nil || !ok {
		t.Fatalf("after the window: %v, %v", ok, err)
	}
}

// deferredShared: checks one replica deferred are due on another, after
// the first stopped; when two replicas run a recheck at once, each
// deferred check is claimed by one of them; a claim under a term of the
// lead that is over is refused.
func deferredShared(t *testing.T, schema, base string, clock *storetest.Clock) {
	first := open(t, schema, base, clock.Now)
	const n = 20
	for i := range n {
		if err := first.DeferCheck(fmt.Sprintf("https://deferred.test/%d", i), card.Ref{Channel: "C1", SourceTS: fmt.Sprint(i)}, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, schema, base, clock.Now), open(t, schema, base, clock.Now)
	due, err := b.DueDeferred(clock.Now(), 100)
	if err != nil || len(due) != n {
		t.Fatalf("another replica sees %d deferred checks due, want %d (%v)", len(due), n, err)
	}
	var claimed atomic.Int32
	var wg sync.WaitGroup
	for _, db := range []*pg.DB{a, b} {
		wg.Go(func() {
			for _, tg := range due {
				_, ok, err := db.ClaimDeferred(tg.Target, clock.Now(), time.Minute, store.Fence{})
				if err != nil {
					t.Error(err)
				}
				if ok {
					claimed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := claimed.Load(); got != n {
		t.Fatalf("%d claims granted to two replicas for %d deferred checks, want one each", got, n)
	}
	if err := a.DeferCheck("https://deferred.test/fenced", card.Ref{Channel: "C1", SourceTS: "f"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	lease := mustLead(t, a, "recheck")
	stale := lease.Fence()
	lease.Release()
	if _, ok, err := b.ClaimDeferred("https://deferred.test/fenced", clock.Now(), time.Minute, stale); !errors.Is(err, store.ErrNotLeader) || ok {
		t.Fatalf("a claim under a term that is over: %v, %v; want store.ErrNotLeader", ok, err)
	}
	live := mustLead(t, b, "recheck")
	defer live.Release()
	if _, ok, err := b.ClaimDeferred("https://deferred.test/fenced", clock.Now(), time.Minute, live.Fence()); err != nil || !ok {
		t.Fatalf("a claim under the live term: %v, %v", ok, err)
	}
}
