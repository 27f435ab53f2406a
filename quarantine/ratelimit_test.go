package quarantine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
)

// limitedUpdates is a Poster whose first limited updates answer Slack's
// rate limit, as the poster does once its own retries are spent.
type limitedUpdates struct {
	updates
	mu      sync.Mutex
	limited int
	calls   int
}

func (u *limitedUpdates) Update(ctx context.Context, c *card.Card) error {
	u.mu.Lock()
	u.calls++
	limited := u.calls <= u.limited
	u.mu.Unlock()
	if limited {
		return &slack.RateLimitedError{RetryAfter: 10 * time.Millisecond}
	}
	return u.updates.Update(ctx, c)
}

// TestTombstoneWaitsOutARateLimitStorm: a card update refused with 429
// after the poster's retries (a chat.* storm longer than its attempts) is
// tried again after the Retry-After (at least 1 s), not dropped: the card
// was saved final, so nothing else would write it, and Slack kept showing
// "Scanning…" under a removed message (found by the chaos soak, seed 2).
func TestTombstoneWaitsOutARateLimitStorm(t *testing.T) {
	t.Parallel()
	book := &oneCard{c: card.Card{Channel: "C0Q", SourceTS: "1.000001", ThreadTS: "1.000001", CardTS: "1.000002"}}
	up := &limitedUpdates{limited: 1}
	q := &Quarantine{Cards: book, Poster: up}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.show(ctx, "C0Q", "1.000001", func(c *card.Card) { c.Final = true })
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.calls != 2 || len(up.cards) != 1 || !up.cards[0].Final {
		t.Fatalf("%d chat.update calls, %d written (%+v): want the refused one, then the card written", up.calls, len(up.cards), up.cards)
	}
}
