package cards

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
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
