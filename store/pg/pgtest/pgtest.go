// Package pgtest gives each test a schema of its own in the PostgreSQL
// database of VERDICTBOT_TEST_DATABASE_URL (tests only).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the test database's URL.
const EnvVar = "VERDICTBOT_TEST_DATABASE_URL"

// SkipMessage is the one line printed when it is unset.
const SkipMessage = EnvVar + " unset: PostgreSQL conformance suite skipped"

// URL returns the test database's URL, or skips t when it is unset.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		t.Skip(SkipMessage)
	}
	return u
}

// Schema creates an empty schema t_<random> for t, drops it at t's
// cleanup, and returns its name and the test database's URL with
// search_path set to it (skips t when the variable is unset).
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
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
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
