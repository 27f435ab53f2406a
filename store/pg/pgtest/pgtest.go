// Package pgtest gives each test a schema of its own in the PostgreSQL
// database of VERDICTBOT_TEST_DATABASE_URL (tests only). Any database
// works, whatever its name: the tests create their tables only in the
// schemas Schema creates (and drops at the test's cleanup), never in the
// database's public schema.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the test database's URL, one of the test suite's own
// inputs (see package internal/testutil), never a setting of the bot.
const EnvVar = "VERDICTBOT_TEST_DATABASE_URL"

// SkipMessage is the one line printed when it is unset.
const SkipMessage = EnvVar + " unset: PostgreSQL conformance suite skipped"

// schemaComment marks the schemas Schema creates, followed by the time of
// creation (RFC 3339): the sweep drops only schemas that carry it.
const schemaComment = "verdictbot test schema, created "

// staleAfter is how old a marked schema must be for the sweep to drop it:
// its test was killed before its cleanup ran (go test's -timeout panics,
// kill -9). The longest test holding a schema is the chaos soak, which
// bounds itself at SOAK + 10 min (40 min with make soak's default); a day
// leaves any run that is still going alone.
const staleAfter = 24 * time.Hour

var sweepOnce sync.Once

// URL returns the test database's URL, or skips t when it is unset. The
// URL must be in URL form (postgres://user@host:port/any_name?…), not
// PostgreSQL's keyword form: the tests parse it to set search_path.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		t.Skip(SkipMessage)
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		t.Fatalf("%s: want a postgres:// URL (postgres://user@host:5432/dbname?sslmode=disable), not %q", EnvVar, redact(u))
	}
	return u
}

// Schema creates an empty schema t_<random> for t, drops it at t's
// cleanup, and returns its name and the test database's URL with
// search_path set to it (skips t when the variable is unset). The first
// call of the process also drops the marked schemas older than a day
// that killed test runs left behind.
func Schema(t testing.TB) (schema, schemaURL string) {
	t.Helper()
	base := URL(t)
	var b [6]byte
	rand.Read(b[:])
	schema = "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	sweepOnce.Do(func() { sweep(ctx, t, conn) })
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	if _, err := conn.Exec(ctx, "COMMENT ON SCHEMA "+schema+" IS '"+schemaComment+time.Now().UTC().Format(time.RFC3339)+"'"); err != nil {
		t.Fatalf("comment on schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return schema, u.String()
}

// sweep drops the schemas Schema created more than staleAfter ago (by
// their comment); a failure is logged, not fatal.
func sweep(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace
		WHERE nspname LIKE 't\_%' AND obj_description(oid, 'pg_namespace') LIKE $1`, schemaComment+"%")
	if err != nil {
		t.Logf("pgtest: listing stale test schemas: %v", err)
		return
	}
	var stale []string
	for rows.Next() {
		var name, comment string
		if err := rows.Scan(&name, &comment); err != nil {
			t.Logf("pgtest: listing stale test schemas: %v", err)
			rows.Close()
			return
		}
		at, err := time.Parse(time.RFC3339, strings.TrimPrefix(comment, schemaComment))
		if err == nil && time.Since(at) > staleAfter {
			stale = append(stale, name)
		}
	}
	rows.Close()
	for _, name := range stale {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("pgtest: dropping stale test schema %s: %v", name, err)
		}
	}
}

// redact hides the password of a URL for an error message.
func redact(raw string) string {
	if p, err := url.Parse(raw); err == nil && p.User != nil {
		if _, ok := p.User.Password(); ok {
			p.User = url.UserPassword(p.User.Username(), "xxxxx")
		}
		return p.String()
	}
	if strings.Contains(raw, "password") {
		return "(a connection string with a password)"
	}
	return raw
}

// CheckNoSharedTables runs the tests (run is testing.M's Run) and returns
// their exit code, or 1 when a table appeared during them outside the
// schemas Schema creates: in the test database's public schema (a test
// that opened the database without a schema of its own) or any other
// shared one. It does nothing more than run when EnvVar is unset or the
// database is unreachable (the tests report that themselves). Call it from
// the TestMain of each package whose tests use PostgreSQL.
func CheckNoSharedTables(run func() int) int {
	base := os.Getenv(EnvVar)
	before, err := sharedTables(base)
	if base == "" || err != nil {
		return run()
	}
	code := run()
	after, err := sharedTables(base)
	if err != nil {
		return code
	}
	var added []string
	for _, name := range after {
		if !slices.Contains(before, name) {
			added = append(added, name)
		}
	}
	if len(added) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests created tables outside their own schemas in the database of %s: %s\n",
			EnvVar, strings.Join(added, ", "))
		return 1
	}
	return code
}

// sharedTables lists the tables (schema.table) of the database at base
// outside the t_ schemas and PostgreSQL's own.
func sharedTables(base string) ([]string, error) {
	if base == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT schemaname || '.' || tablename FROM pg_tables
		WHERE schemaname NOT LIKE 't\_%' AND schemaname NOT LIKE 'pg\_%' AND schemaname <> 'information_schema'`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
