package cards

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// A final card Slack still refuses when retryFinal gives up (an outage of
// Slack longer than finalRetryFor) is stale: the store has the verdict, the
// thread shows the card as it was (often "Scanning…"). RunStale shows each
// again, one at a time, backing off from staleRetryMin to staleRetryMax,
// until Slack takes it, for up to staleKeepFor. The card's job is done
// meanwhile (it holds no goroutine and no tracked slot for the outage).
// The set is kept in the store too (State.MarkCardStale), with when each
// card became stale: RunStale reads it at its start and every staleReload,
// so a restart during the outage, or another replica after this one died,
// goes on with the cards and their day.
var (
	staleTick     = 5 * time.Second
	staleRetryMin = 30 * time.Second
	staleRetryMax = 5 * time.Minute
	staleKeepFor  = 24 * time.Hour
	staleReload   = 5 * time.Minute
	// staleMax bounds the set: past it, a refused card is logged and left.
	staleMax = 10_000
)

type staleCard struct {
	since, next time.Time
	wait        time.Duration
}

// staleCards is the set RunStale works through, by card.
type staleCards struct {
	mu sync.Mutex
	m  map[card.Ref]*staleCard
}

// markStale adds c to the cards RunStale shows again.
func (m *Messages) markStale(c *card.Card) {
	ref := card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}
	s := &m.stale
	s.mu.Lock()
	if s.m == nil {
		s.m = map[card.Ref]*staleCard{}
	}
	_, known := s.m[ref]
	full := !known && len(s.m) >= staleMax
	now := time.Now()
	if !known && !full {
		s.m[ref] = &staleCard{since: now, next: now.Add(staleRetryMin), wait: staleRetryMin}
	}
	s.mu.Unlock()
	if full {
		m.Log.Error("Slack did not take a final card, and too many are waiting to be shown again: this one is left as Slack shows it",
			"channel", c.Channel, "card_ts", c.CardTS, "waiting", staleMax)
		return
	}
	if err := m.Cards.st.MarkCardStale(ref, now); err != nil {
		m.Log.Warn("a stale card could not be kept in the store: a restart before Slack answers leaves it as Slack shows it",
			"channel", c.Channel, "card_ts", c.CardTS, "error", err)
	}
	m.Log.Warn("Slack did not take a final card; it is shown again once Slack answers", "channel", c.Channel, "card_ts", c.CardTS)
}

// staleLoad adds the stale cards the store keeps and this process does not
// know (its own before a restart, or a replica's that died), each due at
// once, with the time it became stale.
func (m *Messages) staleLoad(now time.Time) {
	kept, err := m.Cards.st.StaleCards(staleMax)
	if err != nil {
		m.Log.Warn("the stale cards kept in the store could not be read; tried again later", "error", err)
		return
	}
	s := &m.stale
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[card.Ref]*staleCard{}
	}
	for _, k := range kept {
		if _, known := s.m[k.Ref]; known || len(s.m) >= staleMax {
			continue
		}
		s.m[k.Ref] = &staleCard{since: k.Since, next: now, wait: staleRetryMin}
	}
}

// staleDue returns the cards due for another try at now.
func (m *Messages) staleDue(now time.Time) []card.Ref {
	s := &m.stale
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []card.Ref
	for ref, sc := range s.m {
		if !now.Before(sc.next) {
			due = append(due, ref)
		}
	}
	return due
}

// staleDone ends ref's tries (shown, gone, or given up), in the store
// first (a reload in between would take it up again).
func (m *Messages) staleDone(ref card.Ref) {
	if err := m.Cards.st.StaleCardDone(ref); err != nil {
		m.Log.Warn("a stale card's end could not be written: it may be shown once more", "channel", ref.Channel, "source_ts", ref.SourceTS, "error", err)
	}
	m.stale.mu.Lock()
	delete(m.stale.m, ref)
	m.stale.mu.Unlock()
}

// staleAgain plans ref's next try after err, or gives it up (logged) past
// staleKeepFor.
func (m *Messages) staleAgain(ref card.Ref, now time.Time, err error) {
	s := &m.stale
	s.mu.Lock()
	sc := s.m[ref]
	giveUp := sc != nil && now.Sub(sc.since) >= staleKeepFor
	if sc != nil && !giveUp {
		sc.wait = min(2*sc.wait, staleRetryMax)
		sc.next = now.Add(sc.wait)
	}
	s.mu.Unlock()
	if giveUp {
		m.staleDone(ref)
		m.Log.Error("a final card could not be shown again for a day; it is no longer tried", "channel", ref.Channel, "source_ts", ref.SourceTS, "error", err)
	}
}

// RunStale shows again the final cards Slack refused for longer than
// retryFinal tries (markStale, and those the store keeps: staleLoad), until
// ctx ends: each as the store has it then, once Slack takes it; a card
// gone, or begun again by a newer scan of its message (whose own job shows
// it), is dropped.
func (m *Messages) RunStale(ctx context.Context) {
	m.init()
	tick := time.NewTicker(staleTick)
	defer tick.Stop()
	var loaded time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if now := time.Now(); now.Sub(loaded) >= staleReload {
			m.staleLoad(now)
			loaded = now
		}
		for _, ref := range m.staleDue(time.Now()) {
			if ctx.Err() != nil {
				return
			}
			rec, err := m.Cards.st.Card(ref)
			switch {
			case errors.Is(err, store.ErrNotFound):
				m.staleDone(ref)
				continue
			case err != nil:
				m.staleAgain(ref, time.Now(), err)
				continue
			case !rec.Card.Final || rec.Card.CardTS == "":
				m.staleDone(ref)
				continue
			}
			c := rec.Card.Clone()
			switch err := m.showOnce(ctx, &c); {
			case ctx.Err() != nil:
				return // stopping: the card stays stale in the store, for the next process
			case err == nil:
				m.staleDone(ref)
				m.Log.Info("final card shown again once Slack took it", "channel", c.Channel, "card_ts", c.CardTS)
			case notShown(err):
				m.staleAgain(ref, time.Now(), err)
			default:
				m.staleDone(ref)
			}
		}
	}
}
