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
// decodeCard), as each card change makes: of the final card (deflated)
// and of a card in flight (plain JSON).
//
//	go test -run '^$' -bench CardCodec -benchmem ./store/bolt/
func BenchmarkCardCodec(b *testing.B) {
	for _, final := range []bool{true, false} {
		name := "final"
		if !final {
			name = "in-flight"
		}
		b.Run(name, func(b *testing.B) {
			rec := benchCard()
			rec.Card.Final = final
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
		})
	}
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

// TestACardIsDeflatedOnceFinal: the card records a scan rewrites within
// seconds (begun, posted, lines settling) are stored as plain JSON, and
// the final one, the record that stays, deflated (issue 23: deflating
// every version was a tenth of the CPU per link). Each reads back whole.
func TestACardIsDeflatedOnceFinal(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := benchCard()
	ref := want.Ref()
	stored := func() []byte {
		var v []byte
		_ = db.be.view(func(t txn) error { v = append([]byte(nil), t.get(bCards, ref.Key())...); return nil })
		return v
	}
	if _, err := db.UpsertCard(ref, func(rec *store.CardRecord, exists bool) error {
		*rec = *benchCard()
		rec.Card.Final = false
		rec.Card.Lines[0].Level = verdict.Unknown
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v := stored(); len(v) == 0 || v[0] != '{' {
		t.Fatalf("a card in flight is stored as %q, want plain JSON", v)
	}
	if _, err := db.SettleCard(ref, want.Card.Lines[0].Target, func(rec *store.CardRecord) error {
		rec.Card.Final = true
		rec.Card.Lines[0].Level = verdict.Clean
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Card(ref)
	if err != nil || !got.Card.Final || !bytes.Equal(enc(got.Card), enc(want.Card)) {
		t.Fatalf("final card read back: %v\n%s\nwant\n%s", err, enc(got.Card), enc(want.Card))
	}
	if v, js := stored(), enc(got); len(v) == 0 || v[0] != cardMagic || len(v) > len(js)/2 {
		t.Fatalf("the final card is stored as %d bytes starting %q, want deflated (cardMagic, under half its %d bytes of JSON)", len(v), v[:min(len(v), 8)], len(js))
	}
}
