package cards

import (
	"context"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
)

// TestScanningCountsCardsUntilFinal follows what the "cards stuck
// scanning" metric reads: a card waiting for its verdicts counts, with its
// age, until a write makes it final or its message is deleted; a card with
// nothing to analyse never counts; an edit's new generation starts its age
// again.
func TestScanningCountsCardsUntilFinal(t *testing.T) {
	cs := NewCards(bolt.Memory(bolt.Options{}))
	ctx := context.Background()
	pending := func(ch, ts string) card.Card {
		return card.Card{Channel: ch, SourceTS: ts, Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.test/"}}}
	}
	count := func() int { n, _ := cs.Scanning(time.Now()); return n }

	genA, _, err := cs.Begin("C1", "1.1", pending("C1", "1.1"), "quiet")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cs.Begin("C1", "1.2", pending("C1", "1.2"), "quiet"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cs.Begin("C1", "1.3", card.Card{Channel: "C1", SourceTS: "1.3", Final: true}, "quiet"); err != nil {
		t.Fatal(err)
	}
	if n, oldest := cs.Scanning(time.Now().Add(time.Hour)); n != 2 || oldest < time.Hour {
		t.Fatalf("Scanning = %d, %v; want the 2 cards waiting, the oldest over an hour old an hour later", n, oldest)
	}

	// A partial result keeps it counted; the last one settles it.
	if _, ok := cs.Settle(ctx, "C1", "1.1", genA, func(rec *store.CardRecord) {}); !ok {
		t.Fatal("settle failed")
	}
	if count() != 2 {
		t.Fatalf("a non-final write removed the card: %d", count())
	}
	if _, ok := cs.Settle(ctx, "C1", "1.1", genA, func(rec *store.CardRecord) { rec.Card.Final = true }); !ok {
		t.Fatal("settle failed")
	}
	if count() != 1 {
		t.Fatalf("Scanning = %d after the verdict; want 1", count())
	}

	// An edit's new generation restarts the age.
	time.Sleep(20 * time.Millisecond)
	if _, _, err := cs.Begin("C1", "1.2", pending("C1", "1.2"), "quiet"); err != nil {
		t.Fatal(err)
	}
	if _, oldest := cs.Scanning(time.Now()); oldest >= 20*time.Millisecond {
		t.Fatalf("the new generation kept the old age: %v", oldest)
	}

	// A deleted message's card no longer waits.
	if _, ok := cs.Change("C1", "1.2", 0, func(rec *store.CardRecord) { rec.Deleted = true }); !ok {
		t.Fatal("change failed")
	}
	if n, oldest := cs.Scanning(time.Now()); n != 0 || oldest != 0 {
		t.Fatalf("Scanning = %d, %v with nothing waiting", n, oldest)
	}
}
