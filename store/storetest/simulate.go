package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// SimSchedule is the default VERDICTBOT_RECHECK_AFTER, the rechecks every
// simulated URL gets.
var SimSchedule = store.Schedule{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}

// NewSimRand returns the random source of the 30-day retention simulation:
// the same seed on every backend, so that they store the same records.
func NewSimRand() *rand.Rand { return rand.New(rand.NewPCG(30, 5000)) }

// SimulateDay writes one simulated day of the bot through db, the
// workload of the 30-day retention benchmarks (store and store/pg): perDay
// URLs (50–110 characters) on cards of 1–3 URLs in 300 channels, each with
// its first scan and its four rechecks at SimSchedule's ages (5 verdicts
// per URL, written at once with their own times), a feedback report on
// 1 % of them and one processed event id per card. set moves db's clock;
// each card is written at its time of the day.
func SimulateDay(tb testing.TB, db store.State, set func(time.Time), rng *rand.Rand, dayStart time.Time, perDay int) {
	words := []string{"invoice", "login", "docs", "share", "download", "portal", "view", "track", "report", "news", "blog", "files", "account", "support", "cdn"}
	tlds := []string{"com", "net", "org", "io", "co.uk", "de", "fr", "info"}
	for i := 0; i < perDay; {
		lines := min(1+min(rng.IntN(5)/2, 2), perDay-i)
		now := dayStart.Add(time.Duration(int64(i) * int64(24*time.Hour) / int64(perDay)))
		set(now)
		channel := fmt.Sprintf("C0%08d", rng.IntN(300))
		srcTS := fmt.Sprintf("%d.%06d", now.Unix(), rng.IntN(1_000_000))
		ref := card.Ref{Channel: channel, SourceTS: srcTS}
		c := card.Card{Channel: channel, ThreadTS: srcTS, SourceTS: srcTS, Poster: fmt.Sprintf("U0%08d", rng.IntN(5000)), Final: true, MaxLinks: 10}
		if _, err := db.SeenEvent(fmt.Sprintf("Ev%016x", rng.Uint64())); err != nil {
			tb.Fatal(err)
		}
		for range lines {
			host := fmt.Sprintf("%s%d.%s-%d.%s", words[rng.IntN(len(words))], rng.IntN(100), words[rng.IntN(len(words))], rng.IntN(200), tlds[rng.IntN(len(tlds))])
			url := fmt.Sprintf("https://%s/%s/%d/%s?id=%x", host, words[rng.IntN(len(words))], rng.IntN(1_000_000), words[rng.IntN(len(words))], rng.Uint64()>>rng.IntN(40))
			level, cat, scores := RandomVerdict(rng)
			task := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
			v := store.Verdict{Target: url, Kind: "url", TaskID: task, Level: level, Category: cat, Scores: scores, At: now, Source: "scan"}
			if _, _, err := db.RecordVerdict(v, &ref, SimSchedule, false); err != nil {
				tb.Fatal(err)
			}
			// The four rechecks, written now with their own times (the
			// store orders history by the verdict's time).
			for _, age := range SimSchedule {
				v.At, v.Source = now.Add(age), "recheck"
				v.TaskID = fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
				if _, _, err := db.RecordVerdict(v, nil, SimSchedule, true); err != nil {
					tb.Fatal(err)
				}
			}
			if rng.IntN(100) == 0 {
				if err := db.RecordReport(store.Report{Target: url, TaskID: task, User: "U0REPORTER", Option: "fp", Category: cat, Card: ref}); err != nil {
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
		if err := db.PutCard(&store.CardRecord{Card: c, Mode: "quiet", Gen: 1}); err != nil {
			tb.Fatal(err)
		}
	}
}

// RandomVerdict draws a level (90 % clean, 6 % suspicious, 4 % malicious)
// and matching scores, for the benchmarks that fill a store.
func RandomVerdict(rng *rand.Rand) (verdict.Level, verdict.Category, verdict.Scores) {
	s := verdict.Scores{}
	for _, c := range verdict.Categories {
		s[c] = float64(rng.IntN(200)) / 1000
	}
	cat := verdict.Categories[rng.IntN(len(verdict.Categories))]
	switch r := rng.IntN(100); {
	case r < 4:
		s[cat] = 0.8 + float64(rng.IntN(200))/1000
		return verdict.Malicious, cat, s
	case r < 10:
		s[cat] = 0.5 + float64(rng.IntN(300))/1000
		return verdict.Suspicious, cat, s
	}
	cat, _ = s.Top()
	return verdict.Clean, cat, s
}
