package bolt

import (
	"bytes"
	"compress/flate"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// benchCard is a quiet-mode card with one link, as the throughput
// benchmark writes it.
func benchCard() *store.CardRecord {
	at := time.Date(2026, 11, 25, 12, 0, 0, 123456789, time.UTC)
	return &store.CardRecord{Card: card.Card{Channel: "C0123456789", ThreadTS: "1764070000.123456", SourceTS: "1764070000.123456",
		Poster: "U0123456789", Final: true, MaxLinks: 10,
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://t0-1234.example.com/page", Level: verdict.Clean, Category: verdict.Category("clean"),
			Service: "reputation", TaskID: "3f2a9c0d1e4b5a6f7e8d9c0b1a2f3e4d", CheckedAt: at, Actions: true}}},
		Mode: "quiet", Gen: 1, Updated: at}
}

// BenchmarkCardCodec is one card write and one read (encodeCard,
// decodeCard), as each card change makes.
//
//	go test -run '^$' -bench CardCodec -benchmem ./store/bolt/
func BenchmarkCardCodec(b *testing.B) {
	rec := benchCard()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		v := encodeCard(rec)
		n = len(v)
		if _, err := decodeCard(v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "bytes")
}

// TestCardRecordCodec: a card record written with the pooled writer reads
// back whole, concurrently (the pools are shared); records deflated by
// compress/flate (as before klauspost's writer) and plain JSON (schema 2)
// still read; a damaged record is an error.
func TestCardRecordCodec(t *testing.T) {
	t.Parallel()
	want := benchCard()
	want.Card.Lines = append(want.Card.Lines, card.Line{Kind: card.KindFile, Target: "report.pdf", Level: verdict.Malicious,
		File:    &card.FileInfo{Name: "report.pdf", Size: 12345, SHA256: strings.Repeat("ab", 32), Family: "emotet"},
		Reports: []card.Report{{User: "U1", Option: "fp", At: want.Updated}}})
	want.Card.Notes = []string{"a note"}
	js := enc(want)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := decodeCard(encodeCard(want))
				if err != nil || !bytes.Equal(enc(got), js) {
					t.Errorf("round trip: %v\n%s\n%s", err, enc(got), js)
					return
				}
			}
		})
	}
	wg.Wait()

	var old bytes.Buffer
	old.WriteByte(cardMagic)
	w, err := flate.NewWriterDict(&old, flate.BestCompression, cardDict)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(js)
	w.Close()
	for name, v := range map[string][]byte{"compress/flate": old.Bytes(), "plain JSON": js} {
		got, err := decodeCard(v)
		if err != nil || !bytes.Equal(enc(got), js) {
			t.Errorf("%s: %v", name, err)
		}
	}
	v := encodeCard(want)
	if _, err := decodeCard(v[:len(v)/2]); err == nil {
		t.Error("a truncated record decoded")
	}
	if n := len(encodeCard(benchCard())); n > 170 {
		t.Errorf("a one-link card takes %d bytes (compress/flate's best: 162)", n)
	}
}
