package pg_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// TestRetention30DaysPostgres is store's TestRetention30Days on
// PostgreSQL: 30 simulated days of the same workload
// (storetest.SimulateDay: 5,000 links a day, 5 verdicts per URL, a report
// on 1 %, an event id per card), Prune at the end of each day with a
// 7-day retention, and the schema's size per day: pg_total_relation_size
// (heap, indexes, TOAST) summed over its tables.
//
// PostgreSQL reuses the space of deleted rows once VACUUM has marked it
// free. In production autovacuum does that, many times a day; here a day
// lasts seconds (and the test server runs with autovacuum off), so after
// each day's prune the test runs a plain VACUUM of the schema's tables,
// what autovacuum would have run meanwhile (not VACUUM FULL: nothing is
// given back to the file system, it is reused).
//
// It is slow, so it only runs with STORE_RETENTION_BENCH=1 and
// VERDICTBOT_TEST_DATABASE_URL set:
//
//	STORE_RETENTION_BENCH=1 VERDICTBOT_TEST_DATABASE_URL=postgres://… \
//	  go test -count=1 -v -run TestRetention30DaysPostgres -timeout 60m ./store/pg/
//
// STORE_RETENTION_BENCH_LINKS sets the links per day (default 5000). The
// connections use synchronous_commit=off, as the embedded run uses
// Options.NoSync: the figures are sizes, not commit latencies.
func TestRetention30DaysPostgres(t *testing.T) {
	if os.Getenv("STORE_RETENTION_BENCH") == "" {
		t.Skip("set STORE_RETENTION_BENCH=1 to run the 30-day simulation (minutes)")
	}
	perDay := 5000
	if v := os.Getenv("STORE_RETENTION_BENCH_LINKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("STORE_RETENTION_BENCH_LINKS=%q", v)
		}
		perDay = n
	}
	const days, retention = 30, 7 * 24 * time.Hour
	schema, _ := pgtest.Schema(t)
	base := pgtest.URL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	c := &storetest.Clock{}
	c.Set(start)
	db, err := pg.Open(context.Background(), base+sep+"synchronous_commit=off", pg.Options{Now: c.Now, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	size := func() (total int64, per string, targets int64) {
		ctx := context.Background()
		rows, err := db.Pool().Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 2 DESC`, schema)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for rows.Next() {
			var name string
			var n int64
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			total += n
			parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(n)/1e6))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM targets`).Scan(&targets); err != nil {
			t.Fatal(err)
		}
		return total, strings.Join(parts, ", "), targets
	}
	rng := storetest.NewSimRand()
	type daySize struct {
		bytes, targets int64
		took           time.Duration
	}
	var sizes []daySize
	for day := range days {
		began := time.Now()
		dayStart := start.Add(time.Duration(day) * 24 * time.Hour)
		storetest.SimulateDay(t, db, c.Set, rng, dayStart, perDay)
		c.Set(dayStart.Add(24 * time.Hour))
		pruneStart := time.Now()
		st, err := db.Prune(c.Now().Add(-retention))
		if err != nil {
			t.Fatal(err)
		}
		pruneTook := time.Since(pruneStart)
		vacuum(t, db, schema)
		total, per, targets := size()
		sizes = append(sizes, daySize{total, targets, time.Since(began)})
		t.Logf("day %d: pruned %+v in %s; %.1f MB (%s); %d targets; day took %s", day+1, st, pruneTook.Round(time.Millisecond),
			float64(total)/1e6, per, targets, time.Since(began).Round(time.Second))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "retention %s, %d links a day: day, schema MB, tracked URLs, bytes per tracked URL\n", retention, perDay)
	for d, s := range sizes {
		fmt.Fprintf(&b, "%d %.1f %d %.0f\n", d+1, float64(s.bytes)/1e6, s.targets, float64(s.bytes)/float64(max(s.targets, 1)))
	}
	t.Log(b.String())
	first := int(retention/(24*time.Hour)) + 2 // retention applies from here on
	top := sizes[first-1].bytes
	for d := first; d < len(sizes); d++ {
		if sizes[d].bytes > top+top/5 {
			t.Errorf("day %d: %d bytes, over day %d's %d by more than 20%%: no plateau", d+1, sizes[d].bytes, first, top)
		}
	}
}

// vacuum runs a plain VACUUM on each table of schema.
func vacuum(t *testing.T, db *pg.DB, schema string) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if _, err := db.Pool().Exec(ctx, "VACUUM "+pgx.Identifier{schema, tb}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
}
