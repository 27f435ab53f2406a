package cards

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// callsFor counts the chat.postMessage calls answering the message at ts
// (posted in its thread) and the chat.update calls on the card cardTS.
func callsFor(e *env, ts, cardTS string) (posts, updates int) {
	for _, c := range e.fake.Calls("chat.postMessage") {
		if c.Params.Get("thread_ts") == ts {
			posts++
		}
	}
	for _, c := range e.fake.Calls("chat.update") {
		if cardTS != "" && c.Params.Get("ts") == cardTS {
			updates++
		}
	}
	return posts, updates
}

// A verbose card whose verdict is in within the grace period is posted
// once, final: one chat.postMessage, no chat.update.
func TestFastVerdictIsPostedOnceFinal(t *testing.T) {
	const u = "https://docs.example.org/"
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Clean}}, ModeVerbose)
	e.messages.PostGrace = 2 * time.Second
	ts := e.deliver(t, "see <"+u+">", func() {})
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec := e.card(t, ts)
	if !rec.Card.Final || rec.Card.CardTS == "" {
		t.Fatalf("card: %+v", rec.Card)
	}
	posts, updates := callsFor(e, ts, rec.Card.CardTS)
	if posts != 1 || updates != 0 {
		t.Fatalf("%d chat.postMessage and %d chat.update for a fast verdict, want 1 and 0", posts, updates)
	}
	replies := e.botReplies(ts)
	if len(replies) != 1 || strings.Contains(blocksOf(replies[0]), "Scanning") {
		t.Fatalf("want one final card in the thread, got %d: %s", len(replies), blocksOf(replies[0]))
	}
}

// A verbose card still waiting when the grace period ends is posted then,
// as it stands, and updated in place once its verdict is in.
func TestSlowVerdictIsPostedAtTheGraceDeadlineThenUpdated(t *testing.T) {
	const u = "https://docs.example.org/"
	gate := make(chan struct{})
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Clean}, gates: map[string]chan struct{}{u: gate}}, ModeVerbose)
	e.messages.PostGrace = 300 * time.Millisecond
	start := time.Now()
	ts := e.deliver(t, "see <"+u+">", func() {})
	waitUntil(t, "the pending card is posted", func() bool { return e.card(t, ts).Card.CardTS != "" })
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("the card was posted %v after the message, before the grace period ended", d)
	}
	replies := e.botReplies(ts)
	if len(replies) != 1 || !strings.Contains(blocksOf(replies[0]), "Scanning") {
		t.Fatalf("want the pending card in the thread, got %d messages", len(replies))
	}
	close(gate)
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec := e.card(t, ts)
	posts, updates := callsFor(e, ts, rec.Card.CardTS)
	if posts != 1 || updates < 1 || !rec.Card.Final {
		t.Fatalf("%d posts, %d updates, final %v; want 1 post, then updates to the final card", posts, updates, rec.Card.Final)
	}
	if b := blocksOf(e.botReplies(ts)[0]); strings.Contains(b, "Scanning") {
		t.Fatalf("the card in the thread is not final: %s", b)
	}
}

// Under Slack's rate limits (the fake answering 429 with Retry-After, the
// poster giving up after one attempt) every card still reaches its thread
// once, and final.
func TestNoCardIsLostTo429s(t *testing.T) {
	const n = 4
	levels := map[string]verdict.Level{}
	for i := range n {
		levels[fmt.Sprintf("https://docs.example.org/%d", i)] = verdict.Clean
	}
	e := newEnv(t, &urlChecker{levels: levels}, ModeVerbose, slackfake.WithRateLimits(slackfake.RateLimits{
		PostInterval: 300 * time.Millisecond, PostBurst: 1, UpdatesPerMinute: 200, UpdateBurst: 1}))
	// A poster that bursts past the fake's limits and never retries a 429
	// itself: the card layer must.
	e.poster = notify.NewPoster(e.api, notify.PosterOptions{MinUpdateInterval: 5 * time.Millisecond, PostInterval: 5 * time.Millisecond,
		PostBurst: 10, UpdatesPerMinute: 6000, UpdateBurst: 10, MaxAttempts: 1})
	t.Cleanup(func() { _ = e.poster.Close(context.Background()) })
	e.messages.Poster = e.poster
	var sources []string
	for i := range n {
		sources = append(sources, e.deliver(t, fmt.Sprintf("see <https://docs.example.org/%d>", i), func() {}))
	}
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.RateLimited(); got["chat.postMessage"]+got["chat.update"] == 0 {
		t.Fatal("Slack never answered 429: the test did not test anything")
	}
	for _, src := range sources {
		replies := e.botReplies(src)
		if len(replies) != 1 {
			t.Fatalf("%d cards in the thread of %s, want 1", len(replies), src)
		}
		if rec := e.card(t, src); !rec.Card.Final || rec.Card.CardTS != replies[0].TS || strings.Contains(blocksOf(replies[0]), "Scanning") {
			t.Fatalf("the card of %s is not final in Slack: %s", src, blocksOf(replies[0]))
		}
	}
}

// blocksOf is a message's Block Kit JSON as text.
func blocksOf(m slackfake.Message) string { return string(m.Blocks) }

// heldPoster is a Poster whose posts wait until release is closed, as a
// card waits its turn behind a channel's queue of cards (Slack takes about
// one post a second per channel); blocked is closed when the first post
// starts waiting.
type heldPoster struct {
	Poster
	blocked, release chan struct{}
	once             sync.Once
}

func (p *heldPoster) Post(ctx context.Context, c *card.Card) error {
	p.once.Do(func() { close(p.blocked) })
	select {
	case <-p.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.Poster.Post(ctx, c)
}

// A verdict that comes after the grace period, while the pending card's
// post still waits its turn in the channel, goes to quarantine (Act) at
// once: a removal never waits behind the channel's queue of cards. The
// pending card and the final one are still one message, which ends up
// showing what quarantine did, whether quarantine returns before that post
// is done or after its ts is saved (then quarantine found no message to
// update, and the tracker must not take the ts for quarantine's update).
func TestAVerdictAfterTheGraceIsActedOnWhileThePendingCardWaitsToBePosted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// postDuringAct: Act lets the post through and returns once its
		// ts is saved.
		postDuringAct bool
	}{{"the post is done after quarantine", false}, {"the post is done while quarantine acts", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const u = "https://login.example.net/"
			gate := make(chan struct{})
			e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Malicious}, gates: map[string]chan struct{}{u: gate}}, ModeVerbose)
			e.messages.PostGrace = 50 * time.Millisecond
			held := &heldPoster{Poster: e.poster, blocked: make(chan struct{}), release: make(chan struct{})}
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(held.release) }) }
			t.Cleanup(release)
			e.messages.Poster = held
			acted := make(chan card.Card, 1)
			e.messages.Act = func(ctx context.Context, c card.Card) {
				// As quarantine.Act does: it records what it did on the
				// card, and updates the card only if it is posted.
				snap, ok := e.messages.Cards.Change(c.Channel, c.SourceTS, 0, func(r *store.CardRecord) {
					r.Card.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: c.Level(), At: time.Now()}
				})
				if ok && snap.CardTS != "" {
					if err := e.poster.Update(ctx, &snap); err != nil {
						t.Errorf("quarantine's card update: %v", err)
					}
				}
				acted <- c
				if tc.postDuringAct {
					release()
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
						if rec, ok := e.messages.Cards.Get(c.Channel, c.SourceTS); ok && rec.Card.CardTS != "" {
							break
						}
						if time.Now().After(deadline) {
							t.Error("the pending card's ts was never saved")
							break
						}
					}
				}
			}
			ts := e.deliver(t, "see <"+u+">", func() {})
			select {
			case <-held.blocked:
			case <-time.After(10 * time.Second):
				t.Fatal("the pending card was never posted at the end of the grace period")
			}
			close(gate) // the verdict comes in while the post waits
			select {
			case c := <-acted:
				if !c.Final || c.Level() != verdict.Malicious {
					t.Fatalf("quarantine was given %+v, want the final malicious card", c)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("quarantine was not given the verdict while the pending card's post waited its turn: the removal waits behind the channel's cards")
			}
			release()
			e.messages.Wait()
			if err := e.poster.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			rec := e.card(t, ts)
			if !rec.Card.Final || rec.Card.CardTS == "" || rec.PostStarted || rec.Card.Quarantine == nil {
				t.Fatalf("card: %+v (post started %v)", rec.Card, rec.PostStarted)
			}
			if posts, _ := callsFor(e, ts, rec.Card.CardTS); posts != 1 {
				t.Fatalf("%d cards posted for the message, want 1", posts)
			}
			replies := e.botReplies(ts)
			if len(replies) != 1 || replies[0].TS != rec.Card.CardTS {
				t.Fatalf("%d cards in the thread, want the one whose ts is saved", len(replies))
			}
			if b := blocksOf(replies[0]); !strings.Contains(b, "removed by quarantine") || strings.Contains(b, "Scanning") {
				t.Fatalf("the card in the thread does not show what quarantine did: %s", b)
			}
		})
	}
}
