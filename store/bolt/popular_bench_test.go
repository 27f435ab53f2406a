package bolt

import (
	"fmt"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// BenchmarkAddCardPopularURL times a card joining a URL that already has
// n cards (a link posted n times within VERDICTBOT_RETENTION: a wiki's
// front page, or a member flooding one link), and the recheck's read of
// that URL (Target, which lists its cards). The bot's file store, synced
// (each add is a commit of its own, with its fsync). Each iteration adds
// one more card: a fixed count of them keeps n what it says.
//
//	go test -run '^$' -bench AddCardPopularURL -benchtime 300x ./store/bolt/
func BenchmarkAddCardPopularURL(b *testing.B) {
	const url = "https://wiki.example.com/"
	for _, n := range []int{10, 1000, 5000} {
		b.Run(fmt.Sprintf("cards=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			db, err := Open(dir, Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
			if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", Level: verdict.Clean, TaskID: "t1", At: at}, nil, nil, false); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := db.AddCard(url, card.Ref{Channel: fmt.Sprintf("C%03d", i%100), SourceTS: fmt.Sprintf("1764320000.%06d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
			if db, err = Open(dir, Options{}); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			var st store.Target
			start := time.Now()
			const reads = 20
			for range reads {
				if st, err = db.Target(url); err != nil {
					b.Fatal(err)
				}
			}
			if len(st.Cards) != n {
				b.Fatalf("%d cards listed, want %d", len(st.Cards), n)
			}
			read := time.Since(start) / reads
			for i := 0; b.Loop(); i++ {
				if err := db.AddCard(url, card.Ref{Channel: "C999", SourceTS: fmt.Sprintf("1764330000.%06d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(read.Microseconds()), "target-read-us")
		})
	}
}
