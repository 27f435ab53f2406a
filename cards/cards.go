package cards

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/store"
)

// CardStore is the part of the state layer that keeps cards (store.State,
// both backends, implements it).
type CardStore interface {
	Card(ref card.Ref) (*store.CardRecord, error)
	CardByTS(channel, cardTS string) (*store.CardRecord, error)
	UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
	UpsertCard(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error)
	CardSettler
	// UpdateCardShared and UpsertCardShared are for the writes every link
	// makes (Begin, Settle): concurrent ones may share one commit (the
	// embedded file), so their fn may run more than once, with the record
	// read afresh each time, and the functions passed to them change
	// nothing but the record (store.State.UpdateCardShared).
	UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
	UpsertCardShared(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error)
	// UpdateCardQueue is UpdateCard whose fn may also queue a removal of
	// the card's message in the same write (ChangeQueue).
	UpdateCardQueue(ref card.Ref, fn func(rec *store.CardRecord) (*store.Removal, error)) (*store.CardRecord, error)
	// RecentCards returns up to n cards of channel, newest message first.
	RecentCards(channel string, n int) ([]*store.CardRecord, error)
	// The final cards Slack refused past retryFinal, kept for RunStale
	// across restarts (store.State.MarkCardStale).
	MarkCardStale(ref card.Ref, at time.Time) error
	StaleCards(limit int) ([]store.StaleCard, error)
	StaleCardDone(ref card.Ref) error
}

// CardSettler is the write that shows a verdict on a card (store.State,
// both backends, implements it). The card and its targets' records are in
// the same state layer, so the verdict's target remembers the card in that
// same transaction: a recheck that finds the verdict finds the card too,
// and a link's verdict costs one commit, not two.
type CardSettler interface {
	// SettleCard is UpdateCard that also links target, when it is
	// recorded, to the card (store.State.AddCard) in the same
	// transaction; a target not recorded (an analysis that failed) is
	// left out without an error, and "" links nothing. Concurrent calls
	// may share one commit: fn may run more than once, each time with
	// the record read afresh, and must change nothing but rec.
	SettleCard(ref card.Ref, target string, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
}

var _ CardStore = store.State(nil)

// Cards keeps the cards in the store, keyed by the message they answer and
// by their own ts. Each card has a generation: a rescan of an edited message
// starts a new one, and updates from the older analysis are then ignored.
// Every change is one store transaction, so concurrent changes to a card
// never interleave.
type Cards struct {
	st CardStore
	// StoreRetry bounds how long Settle retries a store that fails
	// (default 2 minutes: a database restart, a disk freed).
	StoreRetry time.Duration
	// TeamOf, if set, names the workspace a channel was reached through
	// (Enterprise Grid): a card begun records it (CardRecord.TeamID), so
	// that the findings of its later changes name the workspace after a
	// restart too.
	TeamOf func(channel string) string

	mu sync.Mutex
	// scanning holds the cards this process started and has not seen
	// final yet, with when their current generation began (Scanning).
	scanning map[card.Ref]time.Time
	// beginning counts, per card, the writes of this process that may
	// begin a generation and have not returned yet: such a write's card is
	// in the store before track records it, and Tracking must say so
	// already (a request would take the card for one a stopped process
	// left scanning, and begin it a second time).
	beginning map[card.Ref]int
}

// NewCards returns the card registry over st.
func NewCards(st CardStore) *Cards {
	return &Cards{st: st, StoreRetry: store.RetryWindow, scanning: map[card.Ref]time.Time{}}
}

// Scanning returns how many cards this process started are still waiting
// for a verdict, and the age of the oldest (0 when none): a card older than
// the analysis deadlines is stuck (the metrics export both). A card leaves
// the count when a write makes it final or marks its message deleted; a
// new generation (an edited message) starts its age again.
func (cs *Cards) Scanning(now time.Time) (n int, oldest time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, since := range cs.scanning {
		n++
		oldest = max(oldest, now.Sub(since))
	}
	return n, oldest
}

// Tracking reports whether this process began the card answering
// (channel, sourceTS) and has not seen it final yet, or is writing a
// begin of it: its tracker runs here, or is about to.
func (cs *Cards) Tracking(channel, sourceTS string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ref := card.Ref{Channel: channel, SourceTS: sourceTS}
	_, ok := cs.scanning[ref]
	return ok || cs.beginning[ref] > 0
}

// beginWrite counts a write that may begin ref's new generation as
// Tracking until the returned function is called, after track.
func (cs *Cards) beginWrite(ref card.Ref) (done func()) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.beginning == nil {
		cs.beginning = map[card.Ref]int{}
	}
	cs.beginning[ref]++
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.beginning[ref]--; cs.beginning[ref] == 0 {
			delete(cs.beginning, ref)
		}
	}
}

// track follows rec after a write: begun says the write started a new
// generation.
func (cs *Cards) track(rec *store.CardRecord, begun bool) {
	ref := rec.Ref()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.scanning == nil {
		cs.scanning = map[card.Ref]time.Time{}
	}
	switch {
	case rec.Card.Final || rec.Deleted:
		delete(cs.scanning, ref)
	case begun:
		cs.scanning[ref] = time.Now()
	}
}

var errStaleGen = errors.New("card generation changed")

// Begin starts a new generation of the card answering (channel, sourceTS)
// with fresh's content; a card already posted keeps its ts and notes (and
// so is updated in place). It returns the generation and a copy.
func (cs *Cards) Begin(channel, sourceTS string, fresh card.Card, mode string) (int, card.Card, error) {
	ref := card.Ref{Channel: channel, SourceTS: sourceTS}
	defer cs.beginWrite(ref)()
	// One write per new card: shared with other cards' when the store can
	// (the function may run again, so it works on its own copy of fresh).
	rec, err := cs.st.UpsertCardShared(ref, func(rec *store.CardRecord, exists bool) error {
		renew(rec, fresh, mode)
		cs.setTeam(rec, channel)
		return nil
	})
	if err != nil {
		return 0, card.Card{}, err
	}
	cs.track(rec, true)
	return rec.Gen, rec.Card.Clone(), nil
}

// setTeam records the card's workspace when it has none yet.
func (cs *Cards) setTeam(rec *store.CardRecord, channel string) {
	if rec.TeamID == "" && cs.TeamOf != nil {
		rec.TeamID = cs.TeamOf(channel)
	}
}

// renew makes rec the next generation of its card, with fresh's content
// (Begin).
func renew(rec *store.CardRecord, fresh card.Card, mode string) {
	c := fresh.Clone()
	c.CardTS = rec.Card.CardTS
	c.Notes = append(append([]string(nil), rec.Card.Notes...), fresh.Notes...)
	// Reports made on the previous generation stay on the same lines.
	for i := range c.Lines {
		for _, old := range rec.Card.Lines {
			if old.Target == c.Lines[i].Target && len(old.Reports) > 0 {
				c.Lines[i].Reports = old.Reports
			}
		}
	}
	rec.Card = c
	rec.Mode = mode
	rec.Gen++
}

// errCardExists aborts BeginIfAt's write when the card is not the one seen.
var errCardExists = errors.New("the message has a card")

// BeginIfAbsent is Begin for a message that has no card yet: when one
// exists (any generation, any state: scanning, final, quarantined,
// deleted) nothing is written and existing is that card. The check and
// the write are one store transaction, so requests repeated or racing (on
// any replica) and the automatic scan begin one card between them, and a
// card already there keeps its generation, quarantine state and buttons.
func (cs *Cards) BeginIfAbsent(channel, sourceTS string, fresh card.Card, mode string) (gen int, snap card.Card, existing *store.CardRecord, err error) {
	return cs.BeginIfAt(channel, sourceTS, 0, fresh, mode)
}

// BeginIfAt is BeginIfAbsent for a card seen at generation seen (0: no
// card): a request that found the card orphaned begins its next
// generation (as Begin) only while the card is still that one; when
// another request or replica began one since, nothing is written and
// existing is the card. A card that is gone is begun anew.
func (cs *Cards) BeginIfAt(channel, sourceTS string, seen int, fresh card.Card, mode string) (gen int, snap card.Card, existing *store.CardRecord, err error) {
	ref := card.Ref{Channel: channel, SourceTS: sourceTS}
	defer cs.beginWrite(ref)()
	rec, err := cs.st.UpsertCard(ref, func(rec *store.CardRecord, exists bool) error {
		switch {
		case exists && (seen == 0 || rec.Gen != seen):
			existing = rec
			return errCardExists
		case exists:
			renew(rec, fresh, mode)
			return nil
		}
		rec.Card = fresh.Clone()
		rec.Mode = mode
		rec.Gen = 1
		cs.setTeam(rec, channel)
		return nil
	})
	if errors.Is(err, errCardExists) && existing != nil {
		return 0, card.Card{}, existing, nil
	}
	if err != nil {
		return 0, card.Card{}, nil, err
	}
	cs.track(rec, true)
	return rec.Gen, rec.Card.Clone(), nil, nil
}

// Get returns the card answering (channel, sourceTS).
func (cs *Cards) Get(channel, sourceTS string) (*store.CardRecord, bool) {
	rec, err := cs.st.Card(card.Ref{Channel: channel, SourceTS: sourceTS})
	if err != nil {
		return nil, false
	}
	return rec, true
}

// newerGen reports whether the card's stored generation is past gen: a
// newer scan of the message took it over. A card that cannot be read is
// not.
func (cs *Cards) newerGen(channel, sourceTS string, gen int) bool {
	rec, ok := cs.Get(channel, sourceTS)
	return ok && rec.Gen > gen
}

// Change applies fn to the card of generation gen (any generation when gen
// is 0) and returns a copy; ok is false when a newer generation replaced it
// or the card is gone, or the store failed.
func (cs *Cards) Change(channel, sourceTS string, gen int, fn func(rec *store.CardRecord)) (card.Card, bool) {
	c, err := cs.change(channel, sourceTS, gen, "", fn, false)
	return c, err == nil
}

// Settle is Change for what must not be lost (a verdict): a store that
// cannot be written (a database restart, a full disk) is retried with
// backoff for up to StoreRetry, so the card waits for it rather than the
// job being dropped unfinished. It is the write every link's verdict
// makes, so it may share its commit with others' (UpdateCardShared): fn
// may run more than once and must change nothing but rec. The wait ends
// with ctx (a shutdown: the job stays in the journal and is resumed).
func (cs *Cards) Settle(ctx context.Context, channel, sourceTS string, gen int, fn func(rec *store.CardRecord)) (card.Card, bool) {
	return cs.settle(ctx, channel, sourceTS, gen, "", fn)
}

// settle is Settle; target, if not "", is linked to the card in the same
// write (CardSettler).
func (cs *Cards) settle(ctx context.Context, channel, sourceTS string, gen int, target string, fn func(rec *store.CardRecord)) (card.Card, bool) {
	var c card.Card
	err := store.Retry(ctx.Done(), cs.StoreRetry, func() (err error) {
		c, err = cs.change(channel, sourceTS, gen, target, fn, true)
		return err
	}, func(err error) bool { return errors.Is(err, errStaleGen) })
	return c, err == nil
}

// change applies fn to the card of generation gen; shared lets the write
// share its commit (UpdateCardShared), and target, if not "", is linked to
// the card in the same write (SettleCard).
func (cs *Cards) change(channel, sourceTS string, gen int, target string, fn func(rec *store.CardRecord), shared bool) (card.Card, error) {
	update := cs.st.UpdateCard
	switch {
	case target != "":
		update = func(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
			return cs.st.SettleCard(ref, target, fn)
		}
	case shared:
		update = cs.st.UpdateCardShared
	}
	rec, err := update(card.Ref{Channel: channel, SourceTS: sourceTS}, func(rec *store.CardRecord) error {
		if gen != 0 && rec.Gen != gen {
			return errStaleGen
		}
		fn(rec)
		return nil
	})
	if err != nil {
		return card.Card{}, err
	}
	cs.track(rec, false)
	return rec.Card.Clone(), nil
}

// ChangeQueue is Change (any generation) whose fn may also decide a
// removal of the card's message: the removal it returns (nil: none) is
// queued in the same store write, so the card never shows a decision that
// is not queued, nor the reverse.
func (cs *Cards) ChangeQueue(channel, sourceTS string, fn func(rec *store.CardRecord) *store.Removal) (card.Card, error) {
	rec, err := cs.st.UpdateCardQueue(card.Ref{Channel: channel, SourceTS: sourceTS}, func(rec *store.CardRecord) (*store.Removal, error) {
		return fn(rec), nil
	})
	if err != nil {
		return card.Card{}, err
	}
	cs.track(rec, false)
	return rec.Card.Clone(), nil
}
