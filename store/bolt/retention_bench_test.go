package bolt_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// TestRetention30Days simulates 30 days of the bot at 5,000 links a day on
// the embedded store, with retention applied once a day, and reports the
// file size per day. It is slow (minutes), so it only runs with
// STORE_RETENTION_BENCH=1:
//
//	STORE_RETENTION_BENCH=1 go test -count=1 -v -run TestRetention30Days -timeout 30m ./store/bolt/
//
// Each day (storetest.SimulateDay, the workload store/pg's
// TestRetention30DaysPostgres writes too): 5,000 URLs (50–110 characters,
// as in BenchmarkDue100k) on cards of 1–3 URLs in 300 channels, each with
// its first scan and its four rechecks at the default ages (1h, 6h, 24h,
// 72h), 5 verdicts per URL; a feedback report on 1 % of the URLs; one
// processed event id per card.
// Two runs: a 7-day retention, which plateaus within the 30 days, and the
// default 90 days, which does not (nothing is old enough to prune before
// day 90: the file grows through the 30 days, as it would without
// retention).
func TestRetention30Days(t *testing.T) {
	if os.Getenv("STORE_RETENTION_BENCH") == "" {
		t.Skip("set STORE_RETENTION_BENCH=1 to run the 30-day simulation (minutes)")
	}
	for _, retention := range []time.Duration{7 * 24 * time.Hour, 90 * 24 * time.Hour} {
		t.Run(retention.String(), func(t *testing.T) {
			sizes, live := simulateDays(t, 30, 5000, retention)
			var b strings.Builder
			fmt.Fprintf(&b, "retention %s: day, file MB, live B+tree MB, tracked URLs, file bytes per tracked URL\n", retention)
			for d := range sizes {
				fmt.Fprintf(&b, "%d %.1f %.1f %d %.0f\n", d+1, float64(sizes[d].file)/1e6, float64(live[d])/1e6, sizes[d].targets, float64(sizes[d].file)/float64(sizes[d].targets))
			}
			t.Log(b.String())
			if retention < 30*24*time.Hour {
				first := int(retention/(24*time.Hour)) + 2 // retention applies from here on
				top := sizes[first-1].file
				for d := first; d < len(sizes); d++ {
					if sizes[d].file > top+top/5 {
						t.Errorf("day %d: file %d bytes, over day %d's %d by more than 20%%: no plateau", d+1, sizes[d].file, first, top)
					}
				}
			}
		})
	}
}

type daySize struct {
	file    int64
	targets int
}

// simulateDays writes perDay URLs a day for days days, pruning at the end
// of each day, and returns the file size and the B+tree bytes in use after
// each day's prune.
func simulateDays(tb testing.TB, days, perDay int, retention time.Duration) ([]daySize, []int64) {
	dir := tb.(*testing.T).TempDir()
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := start
	db, err := bolt.Open(dir, bolt.Options{NoSync: true, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rng := storetest.NewSimRand()
	var sizes []daySize
	var live []int64
	for day := range days {
		dayStart := start.Add(time.Duration(day) * 24 * time.Hour)
		storetest.SimulateDay(tb, db, func(t time.Time) { now = t }, rng, dayStart, perDay)
		now = dayStart.Add(24 * time.Hour)
		st, err := db.Prune(now.Add(-retention))
		if err != nil {
			tb.Fatal(err)
		}
		sizes = append(sizes, daySize{file: db.Size(), targets: db.Counts()[bolt.BucketTargets]})
		live = append(live, bolt.InUse(tb, db))
		tb.Logf("day %d: pruned %+v, file %.1f MB", day+1, st, float64(db.Size())/1e6)
	}
	return sizes, live
}
