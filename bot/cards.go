package bot

import (
	"sync"

	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/notify"
)

// Cards keeps the cards of this process in memory, keyed by the message
// they answer and by their own ts. Each card has a generation: a rescan of
// an edited message starts a new one, and updates from the older analysis
// are then ignored.
type Cards struct {
	mu       sync.Mutex
	bySource map[string]*cardEntry
	byCardTS map[string]*cardEntry
}

type cardEntry struct {
	mu   sync.Mutex
	card notify.Card
	gen  int
}

// NewCards returns an empty registry.
func NewCards() *Cards {
	return &Cards{bySource: map[string]*cardEntry{}, byCardTS: map[string]*cardEntry{}}
}

func key(channel, ts string) string { return channel + "/" + ts }

// Begin starts a new generation of the card answering (channel, sourceTS)
// with fresh's content; a card already posted keeps its ts (and so is
// updated in place). It returns the generation and a copy of the card.
func (cs *Cards) Begin(channel, sourceTS string, fresh notify.Card) (int, notify.Card) {
	cs.mu.Lock()
	e, ok := cs.bySource[key(channel, sourceTS)]
	if !ok {
		e = &cardEntry{}
		cs.bySource[key(channel, sourceTS)] = e
	}
	cs.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	fresh.CardTS = e.card.CardTS
	fresh.Notes = append(append([]string(nil), e.card.Notes...), fresh.Notes...)
	e.card = fresh
	e.gen++
	return e.gen, e.card.Clone()
}

// Get returns a copy of the card answering (channel, sourceTS).
func (cs *Cards) Get(channel, sourceTS string) (notify.Card, bool) {
	cs.mu.Lock()
	e, ok := cs.bySource[key(channel, sourceTS)]
	cs.mu.Unlock()
	if !ok {
		return notify.Card{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.card.Clone(), true
}

// Change applies fn to the card of generation gen and returns a copy; ok is
// false when a newer generation replaced it.
func (cs *Cards) Change(channel, sourceTS string, gen int, fn func(c *notify.Card)) (notify.Card, bool) {
	cs.mu.Lock()
	e, ok := cs.bySource[key(channel, sourceTS)]
	cs.mu.Unlock()
	if !ok {
		return notify.Card{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen != 0 && e.gen != gen {
		return notify.Card{}, false
	}
	fn(&e.card)
	return e.card.Clone(), true
}

// Posted records the ts of a card once posted.
func (cs *Cards) Posted(channel, sourceTS, cardTS string) {
	cs.mu.Lock()
	e, ok := cs.bySource[key(channel, sourceTS)]
	if ok {
		cs.byCardTS[key(channel, cardTS)] = e
	}
	cs.mu.Unlock()
	if ok {
		e.mu.Lock()
		e.card.CardTS = cardTS
		e.mu.Unlock()
	}
}

// Edit implements commands.CardBook.
func (cs *Cards) Edit(channel, cardTS string, fn func(c *notify.Card) error) error {
	cs.mu.Lock()
	e, ok := cs.byCardTS[key(channel, cardTS)]
	cs.mu.Unlock()
	if !ok {
		return commands.ErrCardNotFound
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return fn(&e.card)
}

var _ commands.CardBook = (*Cards)(nil)
