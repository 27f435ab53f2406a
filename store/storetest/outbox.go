package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func init() {
	cases = append(cases, testCase{"CardWritesQueueTheirEventsInTheSameTransaction", outbox})
}

// out is an Outgoing whose body names what it reports.
func out(what string, max int) *store.Outgoing {
	return &store.Outgoing{Max: max, Build: func(seq uint64) ([]byte, error) {
		return fmt.Appendf(nil, `{"seq":%d,"what":%q}`, seq, what), nil
	}}
}

// outbox: the events a card write carries (CardRecord.Outbox) are queued
// in its transaction, in order, and the record returned says under which
// sequence numbers; a write that fails (its fn, or an event's body) keeps
// neither the card's change nor any event; every card write queues its
// outbox (UpdateCard, UpdateCardShared, SettleCard, UpsertCard,
// UpdateCardQueue, PutCard); the outbox is never stored with the card.
func outbox(t *testing.T, db store.State, _ *Clock) {
	ref := card.Ref{Channel: "C1", SourceTS: "1.1"}
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1.1", ThreadTS: "1.1",
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://evil.test/", Level: verdict.Pending}}}}))
	queued := func() []string {
		t.Helper()
		evs, err := db.QueuedEvents(0, 100)
		must(t, err)
		var s []string
		for _, e := range evs {
			s = append(s, string(e.Body))
		}
		return s
	}
	rec, err := db.SettleCard(ref, "", func(rec *store.CardRecord) error {
		rec.Card.Lines[0].Level, rec.Card.Final = verdict.Malicious, true
		rec.Outbox = append(rec.Outbox, out("verdict", 0), out("second", 0))
		return nil
	})
	must(t, err)
	if len(rec.Outbox) != 2 || rec.Outbox[0].Seq != 1 || rec.Outbox[1].Seq != 2 || string(rec.Outbox[1].Body) != `{"seq":2,"what":"second"}` {
		t.Fatalf("the record returned: outbox %+v", rec.Outbox)
	}
	if q := queued(); len(q) != 2 || q[0] != `{"seq":1,"what":"verdict"}` {
		t.Fatalf("queued %q", q)
	}
	if got, _ := db.Card(ref); got == nil || !got.Card.Final || len(got.Outbox) != 0 {
		t.Fatalf("stored card: %+v", got)
	}

	// A failing write keeps neither.
	boom := errors.New("boom")
	if _, err := db.UpdateCard(ref, func(rec *store.CardRecord) error {
		rec.Card.Notes = []string{"changed"}
		rec.Outbox = append(rec.Outbox, out("lost", 0))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failing fn: %v", err)
	}
	if _, err := db.UpdateCard(ref, func(rec *store.CardRecord) error {
		rec.Card.Notes = []string{"changed"}
		rec.Outbox = append(rec.Outbox, &store.Outgoing{Build: func(uint64) ([]byte, error) { return nil, boom }})
		return nil
	}); err == nil {
		t.Fatal("an event that cannot be built did not fail its write")
	}
	if got, _ := db.Card(ref); len(got.Card.Notes) != 0 {
		t.Fatalf("a failed write changed the card: %q", got.Card.Notes)
	}
	if q := queued(); len(q) != 2 {
		t.Fatalf("a failed write queued events: %q", q)
	}

	// Every card write queues its outbox; Max bounds the queue.
	writes := []func() (*store.CardRecord, error){
		func() (*store.CardRecord, error) {
			return db.UpdateCard(ref, func(rec *store.CardRecord) error { rec.Outbox = append(rec.Outbox, out("update", 0)); return nil })
		},
		func() (*store.CardRecord, error) {
			return db.UpdateCardShared(ref, func(rec *store.CardRecord) error { rec.Outbox = append(rec.Outbox, out("shared", 0)); return nil })
		},
		func() (*store.CardRecord, error) {
			return db.UpsertCard(card.Ref{Channel: "C1", SourceTS: "2.2"}, func(rec *store.CardRecord, _ bool) error {
				rec.Card = card.Card{Channel: "C1", SourceTS: "2.2"}
				rec.Outbox = append(rec.Outbox, out("upsert", 0))
				return nil
			})
		},
		func() (*store.CardRecord, error) {
			return db.UpdateCardQueue(ref, func(rec *store.CardRecord) (*store.Removal, error) {
				rec.Outbox = append(rec.Outbox, out("queue", 0))
				return nil, nil
			})
		},
		func() (*store.CardRecord, error) {
			rec := &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "3.3"}, Outbox: []*store.Outgoing{out("put", 0)}}
			return rec, db.PutCard(rec)
		},
	}
	for i, w := range writes {
		rec, err := w()
		must(t, err)
		if len(rec.Outbox) != 1 || rec.Outbox[0].Seq != uint64(3+i) {
			t.Fatalf("write %d: outbox %+v", i, rec.Outbox)
		}
	}
	if q := queued(); len(q) != 7 || q[6] != `{"seq":7,"what":"put"}` {
		t.Fatalf("queued %q", q)
	}
	rec, err = db.UpdateCard(ref, func(rec *store.CardRecord) error { rec.Outbox = append(rec.Outbox, out("bounded", 3)); return nil })
	must(t, err)
	if o := rec.Outbox[0]; o.Seq != 8 || o.Dropped != 5 {
		t.Fatalf("bounded: seq %d dropped %d, want 8 and 5", o.Seq, o.Dropped)
	}
	if q := queued(); len(q) != 3 || q[0] != `{"seq":6,"what":"queue"}` {
		t.Fatalf("after the bound: %q", q)
	}
}

func init() {
	cases = append(cases, testCase{"SettingWritesQueueTheirEventsInTheSameTransaction", settingsOutbox})
}

// settingsOutbox: a channel setting's write and an allowlist change queue
// the events they carry in their transaction; removing a domain that is
// not on the list changes nothing and queues nothing.
func settingsOutbox(t *testing.T, db store.State, _ *Clock) {
	writes := []struct {
		what  string
		write func(o *store.Outgoing) error
	}{
		{"mode", func(o *store.Outgoing) error { return db.SetChannelMode("C1", "verbose", o) }},
		{"files", func(o *store.Outgoing) error { return db.SetChannelFiles("C1", "off", o) }},
		{"quarantine", func(o *store.Outgoing) error { return db.SetChannelQuarantine("C1", "malicious", o) }},
		{"allow", func(o *store.Outgoing) error { return db.Allow("example.org", "U1", o) }},
		{"disallow", func(o *store.Outgoing) error {
			found, err := db.Disallow("example.org", o)
			if err == nil && !found {
				err = errors.New("not found")
			}
			return err
		}},
	}
	for i, w := range writes {
		o := out(w.what, 0)
		must(t, w.write(o))
		if o.Seq != uint64(i+1) {
			t.Fatalf("%s: seq %d, want %d", w.what, o.Seq, i+1)
		}
	}
	o := out("absent", 0)
	if found, err := db.Disallow("never.example", o); err != nil || found || o.Seq != 0 {
		t.Fatalf("removing an absent domain: found %v, err %v, seq %d; want nothing queued", found, err, o.Seq)
	}
	if m, _ := db.ChannelMode("C1"); m != "verbose" {
		t.Fatalf("mode %q", m)
	}
	evs, err := db.QueuedEvents(0, 10)
	must(t, err)
	if len(evs) != 5 || string(evs[4].Body) != `{"seq":5,"what":"disallow"}` {
		t.Fatalf("queued %d: %+v", len(evs), evs)
	}
}
