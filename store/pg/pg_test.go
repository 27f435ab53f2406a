package pg_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	t.Run("MigrationsRunOnceUnderTheLock", migrationsRunOnce)
	t.Run("NewerSchemaIsRefused", newerSchemaIsRefused)
	t.Run("PasswordNeverInErrors", passwordNeverInErrors)
	t.Run("AllowanceIsSharedByReplicas", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		clock := &storetest.Clock{}
		clock.Set(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		allowanceShared(t, open(t, schema, base, clock.Now), open(t, schema, base, clock.Now), clock)
	})
	t.Run("OneReplicaLeadsAPeriodicJob", func(t *testing.T) {
		schema, _ := pgtest.Schema(t)
		another, _ := pgtest.Schema(t)
		oneReplicaLeads(t, schema, open(t, schema, base, nil), open(t, schema, base, nil), open(t, another, base, nil))
	})
}

// oneReplicaLeads: of two replicas on one schema one leads a job at a time,
// each job on its own; the lead passes on at release, and when the
// leader's connections close (a replica that died); another schema (an
// unrelated install on the same database) is not held up.
func oneReplicaLeads(t *testing.T, schema string, a, b, other *pg.DB) {
	ctx := context.Background()
	relA, ok, err := a.Lead(ctx, "recheck")
	if err != nil || !ok {
		t.Fatalf("the first replica does not lead: %v %v", ok, err)
	}
	if _, ok, err := b.Lead(ctx, "recheck"); err != nil || ok {
		t.Fatalf("two replicas lead the recheck at once (%v, %v)", ok, err)
	}
	relR, ok, err := b.Lead(ctx, "retention")
	if err != nil || !ok {
		t.Fatalf("another job is held up by the recheck's lead: %v %v", ok, err)
	}
	relR()
	relO, ok, err := other.Lead(ctx, "recheck")
	if err != nil || !ok {
		t.Fatalf("another schema is held up: %v %v", ok, err)
	}
	relO()
	relA()
	relB, ok, err := b.Lead(ctx, "recheck")
	if err != nil || !ok {
		t.Fatalf("the lead did not pass on at release: %v %v", ok, err)
	}
	// The leader dies: its session ends (terminated here, as when the
	// replica's process or node goes) and the lock with it.
	key := pg.LeadKey(schema, "recheck")
	var killed int
	err = a.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
		  AND ((classid::bigint << 32) | objid::bigint) = $1`, key).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminating the leader's session: %d, %v", killed, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rel, ok, err := a.Lead(ctx, "recheck")
		if err == nil && ok {
			rel()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lead did not pass on when the leader's session ended: %v %v", ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	relB() // the dead session's release must not fail or hang
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
// an unreachable host, a malformed URL.
func passwordNeverInErrors(t *testing.T) {
	const secret = "s3cr3t-Pa55word"
	base := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, u := range map[string]string{
		"unknown role":     strings.Replace(base, "postgres://postgres@", "postgres://nosuchrole:"+secret+"@", 1),
		"unknown database": strings.Replace(strings.Replace(base, "/test?", "/nosuchdb?", 1), "postgres://postgres@", "postgres://postgres:"+secret+"@", 1),
		"unreachable host": "postgres://postgres:" + secret + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=2",
		"bad port":         "postgres://postgres:" + secret + "@127.0.0.1:notaport/test",
		"bad option":       "postgres://postgres:" + secret + "@127.0.0.1:5432/test?sslmode=bogus",
		"keyword form":     "host=127.0.0.1 port=1 user=postgres password=" + secret + " dbname=test connect_timeout=2",
	} {
		_, err := pg.Open(ctx, u, pg.Options{Timeout: 5 * time.Second})
		if err == nil {
			t.Errorf("%s: no error", name)
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
