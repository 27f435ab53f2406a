package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
)

// TestRetention30Days simulates 30 days of the bot at 5,000 links a day on
// the embedded store, with retention applied once a day, and reports the
// file size per day. It is slow (minutes), so it only runs with
// STORE_RETENTION_BENCH=1:
//
//	STORE_RETENTION_BENCH=1 go test -count=1 -v -run TestRetention30Days -timeout 30m ./store/
//
// Each day: 5,000 URLs (50–110 characters, as in BenchmarkDue100k) on
// cards of 1–3 URLs in 300 channels, each with its first scan and its four
// rechecks at the default ages (1h, 6h, 24h, 72h), 5 verdicts per URL; a
// feedback report on 1 % of the URLs; one processed event id per card.
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
	db, err := Open(dir, Options{NoSync: true, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(30, 5000))
	words := []string{"invoice", "login", "docs", "share", "download", "portal", "view", "track", "report", "news", "blog", "files", "account", "support", "cdn"}
	tlds := []string{"com", "net", "org", "io", "co.uk", "de", "fr", "info"}
	var sizes []daySize
	var live []int64
	for day := range days {
		dayStart := start.Add(time.Duration(day) * 24 * time.Hour)
		for i := 0; i < perDay; {
			lines := min(1+min(rng.IntN(5)/2, 2), perDay-i)
			now = dayStart.Add(time.Duration(int64(i) * int64(24*time.Hour) / int64(perDay)))
			channel := fmt.Sprintf("C0%08d", rng.IntN(300))
			srcTS := fmt.Sprintf("%d.%06d", now.Unix(), rng.IntN(1_000_000))
			ref := CardRef{Channel: channel, SourceTS: srcTS}
			c := card.Card{Channel: channel, ThreadTS: srcTS, SourceTS: srcTS, Poster: fmt.Sprintf("U0%08d", rng.IntN(5000)), Final: true, MaxLinks: 10}
			if _, err := db.SeenEvent(fmt.Sprintf("Ev%016x", rng.Uint64())); err != nil {
				tb.Fatal(err)
			}
			for range lines {
				host := fmt.Sprintf("%s%d.%s-%d.%s", words[rng.IntN(len(words))], rng.IntN(100), words[rng.IntN(len(words))], rng.IntN(200), tlds[rng.IntN(len(tlds))])
				url := fmt.Sprintf("https://%s/%s/%d/%s?id=%x", host, words[rng.IntN(len(words))], rng.IntN(1_000_000), words[rng.IntN(len(words))], rng.Uint64()>>rng.IntN(40))
				level, cat, scores := benchVerdict(rng)
				task := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
				v := Verdict{Target: url, Kind: "url", TaskID: task, Level: level, Category: cat, Scores: scores, At: now, Source: "scan"}
				if _, _, err := db.RecordVerdict(v, &ref, benchSchedule, false); err != nil {
					tb.Fatal(err)
				}
				// The four rechecks, written now with their own times (the
				// store orders history by the verdict's time).
				for _, age := range benchSchedule {
					v.At, v.Source = now.Add(age), "recheck"
					v.TaskID = fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
					if _, _, err := db.RecordVerdict(v, nil, benchSchedule, true); err != nil {
						tb.Fatal(err)
					}
				}
				if rng.IntN(100) == 0 {
					if err := db.RecordReport(Report{Target: url, TaskID: task, User: "U0REPORTER", Option: "fp", Category: cat, Card: ref}); err != nil {
						tb.Fatal(err)
					}
				}
				c.Lines = append(c.Lines, card.Line{Kind: card.KindURL, Target: url, Level: level, Category: cat, Scores: scores,
					Service: "reputation", TaskID: task, CheckedAt: now, Actions: true})
				i++
			}
			if c.Level().NeedsAttention() || rng.IntN(3) == 0 {
				c.CardTS = fmt.Sprintf("%d.%06d", now.Unix()+2, rng.IntN(1_000_000))
			}
			if err := db.PutCard(&CardRecord{Card: c, Mode: "quiet", Gen: 1}); err != nil {
				tb.Fatal(err)
			}
		}
		now = dayStart.Add(24 * time.Hour)
		st, err := db.Prune(now.Add(-retention))
		if err != nil {
			tb.Fatal(err)
		}
		inuse, _, _, _ := boltUsage(tb, db)
		sizes = append(sizes, daySize{file: db.Size(), targets: db.Counts()[bTargets]})
		live = append(live, inuse)
		tb.Logf("day %d: pruned %+v, file %.1f MB", day+1, st, float64(db.Size())/1e6)
	}
	return sizes, live
}
