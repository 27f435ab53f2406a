package cardbook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/cardbook"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// setup returns a book over a fresh store holding one posted card (C1,
// source 1.0, card 2.0, task t1) and one never posted (C1, source 3.0).
func setup(t *testing.T) (*cardbook.Book, store.State) {
	t.Helper()
	db := bolt.Memory(bolt.Options{})
	t.Cleanup(func() { db.Close() })
	for _, c := range []card.Card{
		{Channel: "C1", SourceTS: "1.0", CardTS: "2.0", Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.example/", TaskID: "t1", Level: verdict.Malicious}}},
		{Channel: "C1", SourceTS: "3.0", Lines: []card.Line{{Kind: card.KindURL, Target: "https://b.example/", TaskID: "t2"}}},
	} {
		if _, err := db.UpsertCard(card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}, func(rec *store.CardRecord, _ bool) error {
			rec.Card = c
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The verdict of t1 links its target to the first card (the index
	// CardsOfTask reads).
	ref := card.Ref{Channel: "C1", SourceTS: "1.0"}
	if _, _, err := db.RecordVerdict(store.Verdict{Target: "https://a.example/", Kind: "url", TaskID: "t1", Level: verdict.Malicious,
		At: time.Now(), Source: "scan"}, &ref, store.Schedule{time.Hour}, false); err != nil {
		t.Fatal(err)
	}
	return &cardbook.Book{Store: db}, db
}

func TestGetReadsTheCardOfAMessage(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	if rec, ok := b.Get("C1", "1.0"); !ok || rec.Card.CardTS != "2.0" {
		t.Fatalf("Get(C1, 1.0) = %+v, %v", rec, ok)
	}
	if rec, ok := b.Get("C1", "9.0"); ok || rec != nil {
		t.Fatalf("Get of no card = %+v, %v; want nil, false", rec, ok)
	}
}

func TestEditsAreSavedAndAnUnknownCardIsNotFound(t *testing.T) {
	t.Parallel()
	b, db := setup(t)
	if err := edit(b, "C1", "2.0", func(c *card.Card) error { c.Notes = append(c.Notes, "by card ts"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := editBySource(b, "C1", "3.0", func(c *card.Card) error { c.Notes = append(c.Notes, "by source"); return nil }); err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]string{"1.0": "by card ts", "3.0": "by source"} {
		rec, err := db.Card(card.Ref{Channel: "C1", SourceTS: src})
		if err != nil || len(rec.Card.Notes) != 1 || rec.Card.Notes[0] != want {
			t.Errorf("card %s after the edit: %+v, %v; want the note %q", src, rec, err, want)
		}
	}
	if err := edit(b, "C1", "9.0", func(*card.Card) error { t.Error("fn called for no card"); return nil }); !errors.Is(err, card.ErrNotFound) {
		t.Errorf("Edit of no card: %v, want card.ErrNotFound", err)
	}
	if err := editBySource(b, "C2", "1.0", func(*card.Card) error { t.Error("fn called for no card"); return nil }); !errors.Is(err, card.ErrNotFound) {
		t.Errorf("EditBySource of no card: %v, want card.ErrNotFound", err)
	}
}

func TestAnEditThatFailsSavesNothing(t *testing.T) {
	t.Parallel()
	b, db := setup(t)
	stop := errors.New("line changed")
	err := editBySource(b, "C1", "1.0", func(c *card.Card) error { c.Notes = append(c.Notes, "half done"); return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("EditBySource: %v, want fn's error", err)
	}
	if rec, _ := db.Card(card.Ref{Channel: "C1", SourceTS: "1.0"}); len(rec.Card.Notes) != 0 {
		t.Errorf("a failed edit was saved: %q", rec.Card.Notes)
	}
}

func TestTaskCardsListsTheCardsOfATask(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	cs, err := b.TaskCards("t1")
	if err != nil || len(cs) != 1 || cs[0].SourceTS != "1.0" {
		t.Fatalf("TaskCards(t1) = %+v, %v; want the card of 1.0", cs, err)
	}
	if cs, err := b.TaskCards("t9"); err != nil || len(cs) != 0 {
		t.Fatalf("TaskCards(t9) = %+v, %v; want none", cs, err)
	}
}

// TestTaskCardsListsACardThatMovedToANewerTask: a card whose message was
// edited and scanned again shows its URL's newer analysis, and keeps the
// report made on the older one: it is listed for the older task (its
// report must count), and for the newer one; a card of the URL without a
// report on the task is not.
func TestTaskCardsListsACardThatMovedToANewerTask(t *testing.T) {
	t.Parallel()
	b, db := setup(t)
	const url = "https://a.example/"
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	for _, c := range []card.Card{
		// Reported on t1, then scanned again: the line shows t3.
		{Channel: "C2", SourceTS: "5.0", CardTS: "6.0", Lines: []card.Line{{Kind: card.KindURL, Target: url, TaskID: "t3", Level: verdict.Malicious,
			Reports: []card.Report{{User: "U1", Option: "fp", Category: verdict.CatPhishing, At: at, TaskID: "t1"}}}}},
		// Scanned again, no report.
		{Channel: "C3", SourceTS: "7.0", CardTS: "8.0", Lines: []card.Line{{Kind: card.KindURL, Target: url, TaskID: "t3", Level: verdict.Malicious}}},
	} {
		if _, err := db.UpsertCard(card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}, func(rec *store.CardRecord, _ bool) error {
			rec.Card = c
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddCard(url, card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := b.TaskCards("t1")
	if err != nil || len(cs) != 2 || cs[0].SourceTS != "1.0" || cs[1].SourceTS != "5.0" {
		t.Fatalf("TaskCards(t1) = %+v, %v; want the cards of 1.0 (showing it) and 5.0 (its report)", cs, err)
	}
	// t3 is not indexed (no verdict recorded for it here): none.
	if cs, err := b.TaskCards("t3"); err != nil || len(cs) != 0 {
		t.Fatalf("TaskCards(t3) = %+v, %v", cs, err)
	}
}

// TestAnEditsEventIsQueuedInItsWrite: the event an edit returns is queued
// in the edit's own write (the outbox) and returned with its sequence; an
// edit that fails queues nothing; an unknown card is not found.
func TestAnEditsEventIsQueuedInItsWrite(t *testing.T) {
	t.Parallel()
	b, db := setup(t)
	ev := func(what string) *store.Outgoing {
		return &store.Outgoing{Build: func(seq uint64) ([]byte, error) { return []byte(what), nil }}
	}
	out, err := b.EditEmit("C1", "2.0", func(c *card.Card) (*store.Outgoing, error) {
		c.Notes = append(c.Notes, "reported")
		return ev("report"), nil
	})
	if err != nil || out == nil || out.Seq != 1 || string(out.Body) != "report" {
		t.Fatalf("EditEmit = %+v, %v", out, err)
	}
	if _, err := b.EditBySourceEmit("C1", "3.0", func(c *card.Card) (*store.Outgoing, error) {
		c.Notes = append(c.Notes, "never")
		return ev("lost"), errors.New("refused")
	}); err == nil {
		t.Fatal("a failing edit returned no error")
	}
	if _, err := b.EditEmit("C1", "9.9", func(*card.Card) (*store.Outgoing, error) { return ev("x"), nil }); !errors.Is(err, card.ErrNotFound) {
		t.Fatalf("unknown card: %v", err)
	}
	q, err := db.QueuedEvents(0, 10)
	if err != nil || len(q) != 1 || string(q[0].Body) != "report" {
		t.Fatalf("queued %+v %v; want the report's event only", q, err)
	}
	if rec, _ := b.Get("C1", "3.0"); len(rec.Card.Notes) != 0 {
		t.Fatalf("a failed edit was saved: %q", rec.Card.Notes)
	}
}

// edit and editBySource are EditEmit and EditBySourceEmit with no event.
func edit(b *cardbook.Book, channel, cardTS string, fn func(c *card.Card) error) error {
	_, err := b.EditEmit(channel, cardTS, func(c *card.Card) (*store.Outgoing, error) { return nil, fn(c) })
	return err
}

func editBySource(b *cardbook.Book, channel, sourceTS string, fn func(c *card.Card) error) error {
	_, err := b.EditBySourceEmit(channel, sourceTS, func(c *card.Card) (*store.Outgoing, error) { return nil, fn(c) })
	return err
}

// sharedTwice is a store whose shared card writes run their function
// twice, the first run thrown away, as the embedded store's do when
// another write of their commit fails; it counts them.
type sharedTwice struct {
	store.State
	shared int
}

func (s *sharedTwice) UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	s.shared++
	first := true
	return s.State.UpdateCard(ref, func(rec *store.CardRecord) error {
		if first {
			first = false
			thrown := *rec
			thrown.Card = rec.Card.Clone()
			thrown.Outbox = nil
			_ = fn(&thrown)
		}
		return fn(rec)
	})
}

// TestASharedBooksEditsShareTheirCommits: a Shared book (quarantine's)
// edits through the store's shared writes, and an edit run twice keeps
// what its last run did: one note, one event, the event returned the one
// queued; a book that is not shared does not use them.
func TestASharedBooksEditsShareTheirCommits(t *testing.T) {
	t.Parallel()
	_, db := setup(t)
	st := &sharedTwice{State: db}
	runs := 0
	out, err := (&cardbook.Book{Store: st, Shared: true}).EditBySourceEmit("C1", "1.0", func(c *card.Card) (*store.Outgoing, error) {
		runs++
		c.Notes = append(c.Notes, "removed")
		if runs > 1 {
			return nil, nil // the run kept queues nothing
		}
		return &store.Outgoing{Build: func(uint64) ([]byte, error) { return []byte("thrown"), nil }}, nil
	})
	if err != nil || runs != 2 || st.shared != 1 {
		t.Fatalf("shared edit: %v, %d runs, %d shared writes; want 2 runs in 1 shared write", err, runs, st.shared)
	}
	if out != nil {
		t.Fatalf("the edit returned the thrown-away run's event %+v", out)
	}
	if q, err := db.QueuedEvents(0, 10); err != nil || len(q) != 0 {
		t.Fatalf("queued %+v, %v; want nothing", q, err)
	}
	if rec, _ := (&cardbook.Book{Store: db}).Get("C1", "1.0"); len(rec.Card.Notes) != 1 {
		t.Fatalf("notes %q, want one", rec.Card.Notes)
	}
	if err := editBySource(&cardbook.Book{Store: st}, "C1", "1.0", func(*card.Card) error { return nil }); err != nil || st.shared != 1 {
		t.Fatalf("a book not shared: %v, %d shared writes; want 1 (the one before)", err, st.shared)
	}
}
