package cards

import (
	"errors"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/store"
)

// CardStore is the part of the store that keeps cards (*store.DB).
type CardStore interface {
	Card(ref store.CardRef) (*store.CardRecord, error)
	CardByTS(channel, cardTS string) (*store.CardRecord, error)
	UpdateCard(ref store.CardRef, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
	UpsertCard(ref store.CardRef, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error)
}

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
}

// NewCards returns the card registry over st.
func NewCards(st CardStore) *Cards { return &Cards{st: st, StoreRetry: 2 * time.Minute} }

var errStaleGen = errors.New("card generation changed")

// Begin starts a new generation of the card answering (channel, sourceTS)
// with fresh's content; a card already posted keeps its ts and notes (and
// so is updated in place). It returns the generation and a copy.
func (cs *Cards) Begin(channel, sourceTS string, fresh card.Card, mode string) (int, card.Card, error) {
	rec, err := cs.st.UpsertCard(store.CardRef{Channel: channel, SourceTS: sourceTS}, func(rec *store.CardRecord, exists bool) error {
		fresh.CardTS = rec.Card.CardTS
		fresh.Notes = append(append([]string(nil), rec.Card.Notes...), fresh.Notes...)
		// Reports made on the previous generation stay on the same lines.
		for i := range fresh.Lines {
			for _, old := range rec.Card.Lines {
				if old.Target == fresh.Lines[i].Target && len(old.Reports) > 0 {
					fresh.Lines[i].Reports = old.Reports
				}
			}
		}
		rec.Card = fresh
		rec.Mode = mode
		rec.Gen++
		return nil
	})
	if err != nil {
		return 0, card.Card{}, err
	}
	return rec.Gen, rec.Card.Clone(), nil
}

// Get returns the card answering (channel, sourceTS).
func (cs *Cards) Get(channel, sourceTS string) (*store.CardRecord, bool) {
	rec, err := cs.st.Card(store.CardRef{Channel: channel, SourceTS: sourceTS})
	if err != nil {
		return nil, false
	}
	return rec, true
}

// Change applies fn to the card of generation gen (any generation when gen
// is 0) and returns a copy; ok is false when a newer generation replaced it
// or the card is gone, or the store failed.
func (cs *Cards) Change(channel, sourceTS string, gen int, fn func(rec *store.CardRecord)) (card.Card, bool) {
	c, err := cs.change(channel, sourceTS, gen, fn)
	return c, err == nil
}

// Settle is Change for what must not be lost (a verdict): a store that
// cannot be written (a database restart, a full disk) is retried with
// backoff for up to StoreRetry, so the card waits for it rather than the
// job being dropped unfinished.
func (cs *Cards) Settle(channel, sourceTS string, gen int, fn func(rec *store.CardRecord)) (card.Card, bool) {
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		c, err := cs.change(channel, sourceTS, gen, fn)
		if err == nil {
			return c, true
		}
		if errors.Is(err, errStaleGen) || errors.Is(err, store.ErrNotFound) || time.Since(start)+wait > cs.StoreRetry {
			return card.Card{}, false
		}
		time.Sleep(wait)
	}
}

func (cs *Cards) change(channel, sourceTS string, gen int, fn func(rec *store.CardRecord)) (card.Card, error) {
	rec, err := cs.st.UpdateCard(store.CardRef{Channel: channel, SourceTS: sourceTS}, func(rec *store.CardRecord) error {
		if gen != 0 && rec.Gen != gen {
			return errStaleGen
		}
		fn(rec)
		return nil
	})
	if err != nil {
		return card.Card{}, err
	}
	return rec.Card.Clone(), nil
}

// Edit calls fn with the card posted at (channel, cardTS) and saves what it
// did (commands.CardBook).
func (cs *Cards) Edit(channel, cardTS string, fn func(c *card.Card) error) error {
	rec, err := cs.st.CardByTS(channel, cardTS)
	if errors.Is(err, store.ErrNotFound) {
		return card.ErrNotFound
	}
	if err != nil {
		return err
	}
	_, err = cs.st.UpdateCard(rec.Ref(), func(r *store.CardRecord) error { return fn(&r.Card) })
	return err
}

// EditBySource is Edit for the card answering the message at (channel,
// sourceTS), posted or not (commands.CardBook).
func (cs *Cards) EditBySource(channel, sourceTS string, fn func(c *card.Card) error) error {
	_, err := cs.st.UpdateCard(store.CardRef{Channel: channel, SourceTS: sourceTS}, func(r *store.CardRecord) error { return fn(&r.Card) })
	if errors.Is(err, store.ErrNotFound) {
		return card.ErrNotFound
	}
	return err
}
