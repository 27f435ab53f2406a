package storetest

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases, testCase{"StaleCardsAreKeptUntilDone", staleCards})
	pruneCases = append(pruneCases, testCase{"PruneTakesAStaleCardsMarkWithIt", pruneStaleCard})
}

func staleRefs(t *testing.T, db store.State, limit int) []store.StaleCard {
	t.Helper()
	got, err := db.StaleCards(limit)
	must(t, err)
	return got
}

// staleCards: a final card Slack refused is marked with when; a second mark
// keeps the first time; the list is oldest first and bounded; a card not
// stored is not marked; done forgets the mark, twice without an error.
func staleCards(t *testing.T, db store.State, c *Clock) {
	a := card.Ref{Channel: "C1", SourceTS: "1764300000.000100"}
	b := card.Ref{Channel: "C2", SourceTS: "1764300000.000200"}
	for _, ref := range []card.Ref{a, b} {
		must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: ref.Channel, SourceTS: ref.SourceTS, ThreadTS: ref.SourceTS, CardTS: "1764300001.000001", Final: true}, Gen: 1}))
	}
	if got := staleRefs(t, db, 10); len(got) != 0 {
		t.Fatalf("stale cards of a new store: %+v", got)
	}
	t0 := c.Now()
	must(t, db.MarkCardStale(b, t0))
	must(t, db.MarkCardStale(a, t0.Add(time.Minute)))
	must(t, db.MarkCardStale(b, t0.Add(2*time.Minute))) // marked: keeps t0
	must(t, db.MarkCardStale(card.Ref{Channel: "C9", SourceTS: "1.1"}, t0))
	got := staleRefs(t, db, 10)
	if len(got) != 2 || got[0].Ref != b || !got[0].Since.Equal(t0) || got[1].Ref != a || !got[1].Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stale cards: %+v, want %v since %v, then %v a minute later (a card not stored is not marked)", got, b, t0, a)
	}
	if got := staleRefs(t, db, 1); len(got) != 1 || got[0].Ref != b {
		t.Fatalf("the oldest stale card: %+v", got)
	}
	must(t, db.StaleCardDone(b))
	must(t, db.StaleCardDone(b))
	if got := staleRefs(t, db, 10); len(got) != 1 || got[0].Ref != a {
		t.Fatalf("stale cards after one was shown: %+v", got)
	}
}

// pruneStaleCard: a final card that retention removes takes its stale
// mark with it.
func pruneStaleCard(t *testing.T, db store.State, c *Clock) {
	start := c.Now()
	old := card.Ref{Channel: "C1", SourceTS: slackTS(start, 1)}
	mustPut(t, db, &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: old.SourceTS, ThreadTS: old.SourceTS, CardTS: slackTS(start, 2), Final: true}, Gen: 1, Updated: start})
	must(t, db.MarkCardStale(old, start))
	c.Add(40 * 24 * time.Hour)
	if _, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Card(old); err == nil {
		t.Fatal("the old card was not pruned")
	}
	if got := staleRefs(t, db, 10); len(got) != 0 {
		t.Fatalf("stale marks of pruned cards: %+v", got)
	}
}
