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
// meanwhile (it holds no goroutine and no tracked slot for the outage);
// the stale set is the process's, so a restart during the outage leaves
// the cards it held as they are shown.
var (
	staleTick     = 5 * time.Second
	staleRetryMin = 30 * time.Second
	staleRetryMax = 5 * time.Minute
	staleKeepFor  = 24 * time.Hour
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
	if !known && !full {
		now := time.Now()
		s.m[ref] = &staleCard{since: now, next: now.Add(staleRetryMin), wait: staleRetryMin}
	}
	s.mu.Unlock()
	if full {
		m.Log.Error("Slack did not take a final card, and too many are waiting to be shown again: this one is left as Slack shows it",
			"channel", c.Channel, "card_ts", c.CardTS, "waiting", staleMax)
		return
	}
	m.Log.Warn("Slack did not take a final card; it is shown again once Slack answers", "channel", c.Channel, "card_ts", c.CardTS)
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

// staleDone ends ref's tries (shown, gone, or given up).
func (m *Messages) staleDone(ref card.Ref) {
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
	switch {
	case giveUp:
		delete(s.m, ref)
	case sc != nil:
		sc.wait = min(2*sc.wait, staleRetryMax)
		sc.next = now.Add(sc.wait)
	}
	s.mu.Unlock()
	if giveUp {
		m.Log.Error("a final card could not be shown again for a day; it is no longer tried", "channel", ref.Channel, "source_ts", ref.SourceTS, "error", err)
	}
}

// RunStale shows again the final cards Slack refused for longer than
// retryFinal tries (markStale), until ctx ends: each as the store has it
// then, once Slack takes it; a card gone, or begun again by a newer scan
// of its message (whose own job shows it), is dropped.
func (m *Messages) RunStale(ctx context.Context) {
	m.init()
	tick := time.NewTicker(staleTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
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
			case err == nil:
				m.staleDone(ref)
				m.Log.Info("final card shown again once Slack took it", "channel", c.Channel, "card_ts", c.CardTS)
			case notShown(err) && ctx.Err() == nil:
				m.staleAgain(ref, time.Now(), err)
			default:
				m.staleDone(ref)
			}
		}
	}
}
