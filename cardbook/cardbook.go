// Package cardbook reads and edits the cards kept in the store for the
// packages that change a card they did not make: quarantine (the
// tombstone, the release) and feedback (a report's line on the card).
// Each edit is one store transaction (store.State.UpdateCard), so it never
// interleaves with the card lifecycle's own writes (package cards). Book
// satisfies quarantine.CardBook and commands.CardBook, which those packages
// declare, so neither reaches into the card lifecycle to edit a card.
package cardbook

import (
	"errors"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// Store is the part of the state layer that keeps cards (store.State, both
// backends, implements it).
type Store interface {
	Card(ref card.Ref) (*store.CardRecord, error)
	CardByTS(channel, cardTS string) (*store.CardRecord, error)
	UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
	UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error)
	CardsOfTask(taskID string) ([]*store.CardRecord, error)
	TargetOfTask(taskID string) (string, error)
	Target(target string) (store.Target, error)
}

var _ Store = store.State(nil)

// Book reads and edits cards in Store.
type Book struct {
	Store Store
	// Shared makes each edit a shared write (store.State.UpdateCardShared):
	// on the embedded store it may share its commit with the writes of
	// the links under way, and the functions given to the edits may then
	// run more than once, each time with the card read afresh, so they
	// must change nothing but the card and variables they set on every
	// run. Quarantine's Book is shared (a removal's two card edits rode a
	// commit of their own each).
	Shared bool
}

// Get returns the card answering (channel, sourceTS); ok is false when
// there is none or the store cannot be read.
func (b *Book) Get(channel, sourceTS string) (rec *store.CardRecord, ok bool) {
	rec, err := b.Store.Card(card.Ref{Channel: channel, SourceTS: sourceTS})
	if err != nil {
		return nil, false
	}
	return rec, true
}

// EditEmit calls fn with the card posted at (channel, cardTS) while no
// one else changes it, and saves what fn did (nothing when fn returns an
// error, which EditEmit returns), with the event fn returns (nil: none)
// queued in the same write (the outbox, store.CardRecord.Outbox): the
// card's change and its event are kept or lost together. It returns the
// event as queued (its sequence set), or card.ErrNotFound when there is
// no such card.
func (b *Book) EditEmit(channel, cardTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	rec, err := b.Store.CardByTS(channel, cardTS)
	if errors.Is(err, store.ErrNotFound) {
		return nil, card.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return b.editEmit(rec.Ref(), fn)
}

// EditBySourceEmit is EditEmit for the card answering the message at
// (channel, sourceTS), posted or not.
func (b *Book) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	return b.editEmit(card.Ref{Channel: channel, SourceTS: sourceTS}, fn)
}

func (b *Book) editEmit(ref card.Ref, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	var out *store.Outgoing
	update := b.Store.UpdateCard
	if b.Shared {
		update = b.Store.UpdateCardShared
	}
	_, err := update(ref, func(r *store.CardRecord) error {
		o, err := fn(&r.Card)
		if err != nil {
			return err
		}
		if out = o; o != nil {
			r.Outbox = append(r.Outbox, o)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, card.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TaskCards returns every card showing the analysis taskID, and every
// card of its URL that carries a report on it (feedback: a report already
// accepted through another card is not sent again). A card whose message
// was edited and scanned again shows the URL's newer analysis, and keeps
// the report on the older one: CardsOfTask no longer lists it.
func (b *Book) TaskCards(taskID string) ([]card.Card, error) {
	recs, err := b.Store.CardsOfTask(taskID)
	if err != nil {
		return nil, err
	}
	cards := make([]card.Card, 0, len(recs))
	listed := map[card.Ref]bool{}
	for _, r := range recs {
		cards = append(cards, r.Card)
		listed[r.Ref()] = true
	}
	target, err := b.Store.TargetOfTask(taskID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && target == "") {
		return cards, nil
	}
	if err != nil {
		return nil, err
	}
	tg, err := b.Store.Target(target)
	if errors.Is(err, store.ErrNotFound) {
		return cards, nil
	}
	if err != nil {
		return nil, err
	}
	for _, ref := range tg.Cards {
		if listed[ref] {
			continue
		}
		rec, err := b.Store.Card(ref)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		if card.ReportsOn(&rec.Card, taskID) {
			cards = append(cards, rec.Card)
		}
	}
	return cards, nil
}
