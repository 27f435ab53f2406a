package cards

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// writeHook is a card store that runs before, once, just before the first
// write that may begin a card (UpsertCard, UpsertCardShared), and after,
// once, just after the first such write committed and before it returns:
// the moments another request's handler may run in full.
type writeHook struct {
	CardStore
	before, after func()
	// ranB, ranA: the hook ran (or is running: the other request's own
	// writes, made from within it, run no hook).
	ranB, ranA atomic.Bool
}

func (h *writeHook) around(write func() (*store.CardRecord, error)) (*store.CardRecord, error) {
	if h.before != nil && h.ranB.CompareAndSwap(false, true) {
		h.before()
	}
	rec, err := write()
	if err == nil && h.after != nil && h.ranA.CompareAndSwap(false, true) {
		h.after()
	}
	return rec, err
}

func (h *writeHook) UpsertCard(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	return h.around(func() (*store.CardRecord, error) { return h.CardStore.UpsertCard(ref, fn) })
}

func (h *writeHook) UpsertCardShared(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	return h.around(func() (*store.CardRecord, error) { return h.CardStore.UpsertCardShared(ref, fn) })
}

// TestRequestsRacingOnAMessageBeginOneCard: two clicks of "Scan this
// message" on a message with no card (an off channel), the second handled
// while the first one's card is written but its answer not yet given (the
// card is in the store before this process records that it tracks it).
// One request begins the card; the other is told it is being checked, and
// does not take the card for one a stopped process left scanning.
func TestRequestsRacingOnAMessageBeginOneCard(t *testing.T) {
	const u = "https://docs.example.org/hammered"
	gate := make(chan struct{})
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Clean}, gates: map[string]chan struct{}{u: gate}}, ModeOff)
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "see <" + u + ">"})
	var second string
	hook := &writeHook{CardStore: e.db}
	hook.after = func() { second = e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0BOB") }
	e.messages.Cards = NewCards(hook)

	first := e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0BOB")
	if !strings.Contains(first, "Checking that message") {
		t.Errorf("first answer %q, want the check started", first)
	}
	if strings.Contains(second, "Checking that message") || !strings.Contains(second, "is being checked now") {
		t.Errorf("second answer %q, want the check in progress and nothing started again", second)
	}
	if rec := e.card(t, d.TS); rec.Gen != 1 {
		t.Errorf("gen %d, want 1 (one card begun)", rec.Gen)
	}
	close(gate)
	e.messages.Wait()
	if rec := e.card(t, d.TS); !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Clean {
		t.Errorf("card %+v", rec.Card)
	}
	if n := len(e.botReplies(d.TS)); n != 1 {
		t.Errorf("%d cards in the thread, want 1", n)
	}
}

// TestRequestsRacingOnAnOrphanedCardBeginItOnce: a request's card left
// scanning by a process that stopped long ago is asked about on two
// replicas at once; the second replica begins it again between the first
// one finding it orphaned and writing. The first one's write finds the
// card no longer the one it saw and begins nothing: one check, the other
// request is told it is being checked.
func TestRequestsRacingOnAnOrphanedCardBeginItOnce(t *testing.T) {
	const u = "https://docs.example.org/stuck"
	gate := make(chan struct{})
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Clean}, gates: map[string]chan struct{}{u: gate}}, ModeOff)
	var now atomic.Int64
	now.Store(time.Now().Add(-time.Hour).UnixNano())
	db := bolt.Memory(bolt.Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	e.db = db
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "see <" + u + ">"})
	// The previous life, an hour ago: a request's card, never finished.
	if err := db.PutCard(&store.CardRecord{Gen: 1, Mode: ModeVerbose, Card: card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS,
		RequestedBy: "U0BOB", Lines: []card.Line{{Kind: card.KindURL, Target: u, Level: verdict.Pending}}}}); err != nil {
		t.Fatal(err)
	}
	now.Store(time.Now().UnixNano())

	other := &Messages{Self: e.messages.Self, Links: e.messages.Links, URLs: e.messages.URLs, Poster: e.poster, Cards: NewCards(db),
		Finder: e.messages.Finder, Mode: e.messages.Mode, PostGrace: -1, PeerPostWait: 5 * time.Second}
	var second string
	hook := &writeHook{CardStore: db}
	hook.before = func() { second = other.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0CAROL") }
	e.messages.Cards = NewCards(hook)
	e.messages.PeerPostWait = 5 * time.Second

	first := e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0BOB")
	if !strings.Contains(second, "Checking that message") {
		t.Errorf("the other replica's answer %q, want the check started again", second)
	}
	if strings.Contains(first, "Checking that message") || !strings.Contains(first, "is being checked now") {
		t.Errorf("answer %q, want the check in progress and nothing started again", first)
	}
	if rec := e.card(t, d.TS); rec.Gen != 2 {
		t.Errorf("gen %d, want 2 (begun again once)", rec.Gen)
	}
	close(gate)
	e.messages.Wait()
	other.Wait()
	if rec := e.card(t, d.TS); !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Clean {
		t.Errorf("card %+v", rec.Card)
	}
	if n := len(e.botReplies(d.TS)); n != 1 {
		t.Errorf("%d cards in the thread, want 1", n)
	}
}
