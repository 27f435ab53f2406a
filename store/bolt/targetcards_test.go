package bolt

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestAPopularURLsRecordDoesNotGrowWithItsCards: a URL posted 2,000 times
// (each card joining through RecordVerdict, AddCard, SettleCard and
// DeferCheck, as the bot's paths do) keeps a target record of the same
// size as with one card (cards joining do not rewrite it); Target lists
// every card once, in the order they joined (not the keys' order), and a
// card joining again changes nothing.
// Before schema 4 the record held the list and grew by ~30 bytes a card.
func TestAPopularURLsRecordDoesNotGrowWithItsCards(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	db, err := Open(t.TempDir(), Options{NoSync: true, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const url = "https://wiki.example.com/"
	// Channels from C1999 down to C0000: the order of joining is the
	// reverse of the keys'.
	ref := func(i int) card.Ref {
		return card.Ref{Channel: fmt.Sprintf("C%04d", 1999-i), SourceTS: fmt.Sprintf("1764320000.%06d", i)}
	}
	first := ref(0)
	if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", Level: verdict.Clean, TaskID: "t1", At: at}, &first, nil, false); err != nil {
		t.Fatal(err)
	}
	size := func() int {
		var n int
		_ = db.be.view(func(t txn) error { n = len(t.get(bTargets, targetID(t, url))); return nil })
		return n
	}
	one := size()
	var want []card.Ref
	want = append(want, first)
	for i := 1; i < 2000; i++ {
		r := ref(i)
		want = append(want, r)
		switch i % 3 {
		case 0:
			err = db.AddCard(url, r)
		case 1:
			if err = db.PutCard(&store.CardRecord{Card: card.Card{Channel: r.Channel, SourceTS: r.SourceTS}}); err == nil {
				_, err = db.SettleCard(r, url, func(rec *store.CardRecord) error { rec.Card.Final = true; return nil })
			}
		case 2:
			err = db.DeferCheck(url, r, at.Add(time.Hour))
		}
		if err != nil {
			t.Fatalf("card %d: %v", i, err)
		}
	}
	// Joining again: no second entry, and the order stays.
	if err := db.AddCard(url, ref(5)); err != nil {
		t.Fatal(err)
	}
	if got := size(); got != one {
		t.Errorf("the target's record is %d bytes with 2,000 cards, %d with one: it grows with its cards", got, one)
	}
	if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", Level: verdict.Clean, TaskID: "t2", At: at.Add(time.Minute)}, &first, nil, false); err != nil {
		t.Fatal(err)
	}
	tg, err := db.Target(url)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tg.Cards, want) {
		t.Fatalf("Target lists %d cards, want %d in the order they joined; first %v", len(tg.Cards), len(want), tg.Cards[:min(3, len(tg.Cards))])
	}
	due, err := db.DueDeferred(at.Add(2*time.Hour), 10)
	if err != nil || len(due) != 1 || !reflect.DeepEqual(due[0].Cards, want) {
		t.Fatalf("DueDeferred: %d targets, %v", len(due), err)
	}
}

// TestMigrationV4MovesEachTargetsCardsInOrder: a schema 3 record (format
// 1, its cards inside it) migrated to schema 4 lists the same cards in the
// same order from target_cards, keeps every other field, and new cards
// join after them.
func TestMigrationV4MovesEachTargetsCardsInOrder(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	db := Memory(Options{Now: func() time.Time { return at }})
	const url = "https://evil.test/a"
	old := targetRecord{Target: store.Target{Target: url, Kind: "url", FirstSeen: at, Checked: at, Level: verdict.Malicious,
		Category: verdict.CatPhishing, TaskID: "t1", Rechecks: 2, NextCheck: at.Add(time.Hour),
		Cards: []card.Ref{{Channel: "C9", SourceTS: "3.3"}, {Channel: "C1", SourceTS: "2.2"}, {Channel: "C5", SourceTS: "1.1"}}},
		History: []store.Verdict{{Target: url, Kind: "url", TaskID: "t1", Level: verdict.Malicious, At: at, Source: "scan"}}}
	err := db.be.update(func(t txn) error {
		id, err := newTargetID(t, url)
		if err != nil {
			return err
		}
		if err := t.put(bTargets, id, encodeTargetFormat1(&old)); err != nil {
			return err
		}
		return migrateTargetCardsV4(t)
	})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := db.Target(url)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tg, old.Target) {
		t.Fatalf("after the migration:\n got %+v\nwant %+v", tg, old.Target)
	}
	if h, err := db.History(url); err != nil || !reflect.DeepEqual(h, old.History) {
		t.Fatalf("history: %+v, %v", h, err)
	}
	if err := db.AddCard(url, card.Ref{Channel: "C0", SourceTS: "0.1"}); err != nil {
		t.Fatal(err)
	}
	tg, _ = db.Target(url)
	if len(tg.Cards) != 4 || tg.Cards[3] != (card.Ref{Channel: "C0", SourceTS: "0.1"}) {
		t.Fatalf("a card joining after the migration: %v, want it last", tg.Cards)
	}
}

// encodeTargetFormat1 is the record format of schema 3 (format 1, its
// cards inside it), frozen: the migration's input.
func encodeTargetFormat1(rec *targetRecord) []byte {
	w := &wbuf{}
	tg := &rec.Target
	w.uvarint(1)
	w.str(tg.Target)
	w.enum(tg.Kind, kinds)
	w.time(tg.FirstSeen)
	if !tg.FirstSeen.IsZero() {
		w.base = tg.FirstSeen.UnixNano()
	}
	w.time(tg.Checked)
	w.uvarint(uint64(tg.Level))
	w.enum(string(tg.Category), categories)
	w.task(tg.TaskID)
	w.uvarint(uint64(tg.Rechecks))
	w.time(tg.NextCheck)
	w.uvarint(uint64(len(tg.Cards)))
	for _, c := range tg.Cards {
		w.str(c.Channel)
		w.str(c.SourceTS)
	}
	w.uvarint(uint64(len(rec.History)))
	for _, v := range rec.History {
		w.enum(v.Kind, kinds)
		w.task(v.TaskID)
		w.uvarint(uint64(v.Level))
		w.enum(string(v.Category), categories)
		w.scores(v.Scores)
		w.float(v.MalScore)
		w.str(v.Family)
		w.time(v.At)
		w.enum(v.Source, sources)
	}
	return w.b
}
