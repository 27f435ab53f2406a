package cards

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestAFinalCardSlackRefusesLongerIsShownOnceSlackAnswers: Slack answers
// every chat.update with a 5xx page for longer than retryFinal tries a
// final card (an outage past finalRetryFor, shortened here). The card's job
// ends, and the card in the thread must not say "Scanning…" for good:
// RunStale shows the verdict once Slack answers again, and forgets it.
func TestAFinalCardSlackRefusesLongerIsShownOnceSlackAnswers(t *testing.T) {
	e, src, _ := refusedFinalCard(t, "https://login.example.net/stale")
	e.fake.ClearFaults()
	waitUntil(t, "the card shows the verdict", func() bool {
		r := e.botReplies(src)
		return len(r) == 1 && strings.Contains(blocksOf(r[0]), "Malicious") && !strings.Contains(blocksOf(r[0]), "Scanning")
	})
	waitUntil(t, "the card is forgotten once shown", func() bool { return !e.stale(src) })
}

// TestAFinalCardSlackNeverTakesIsGivenUp: a card Slack refuses for
// staleKeepFor (shortened here) is no longer tried.
func TestAFinalCardSlackNeverTakesIsGivenUp(t *testing.T) {
	saved := staleKeepFor
	staleKeepFor = 400 * time.Millisecond
	t.Cleanup(func() { staleKeepFor = saved })
	e, src, _ := refusedFinalCard(t, "https://login.example.net/never")
	if !e.stale(src) {
		t.Fatal("the refused card is not waiting to be shown again")
	}
	waitUntil(t, "the card is given up", func() bool { return !e.stale(src) })
	if kept, err := e.db.StaleCards(10); err != nil || len(kept) != 0 {
		t.Fatalf("the store still keeps the card given up: %+v, %v", kept, err)
	}
	tries := len(e.fake.Calls("chat.update"))
	time.Sleep(300 * time.Millisecond)
	if n := len(e.fake.Calls("chat.update")); n != tries {
		t.Fatalf("%d more chat.update calls after the card was given up", n-tries)
	}
}

// TestAStaleCardOutlivesARestart: the process that held a stale card stops
// while Slack still refuses it (a deploy, a crash during a long outage).
// The process after it, over the same store, shows the verdict once Slack
// answers, and keeps the day from when the card became stale, not from
// its own start.
func TestAStaleCardOutlivesARestart(t *testing.T) {
	e, src, stop := refusedFinalCard(t, "https://login.example.net/restart")
	ref := card.Ref{Channel: "C1", SourceTS: src}
	kept, err := e.db.StaleCards(10)
	if err != nil || len(kept) != 1 || kept[0].Ref != ref {
		t.Fatalf("the store keeps %+v (%v), want the refused card", kept, err)
	}
	stop() // the first process is gone

	started := time.Now()
	after := &Messages{Self: e.messages.Self, Links: e.messages.Links, URLs: e.messages.URLs, Poster: e.poster, Cards: NewCards(e.db),
		Finder: e.messages.Finder, Mode: e.messages.Mode}
	ctx, cancel := context.WithCancel(t.Context())
	var running sync.WaitGroup
	running.Go(func() { after.RunStale(ctx) })
	t.Cleanup(func() { cancel(); running.Wait() })
	waitUntil(t, "the next process takes the card up", func() bool {
		after.stale.mu.Lock()
		defer after.stale.mu.Unlock()
		sc := after.stale.m[ref]
		return sc != nil && sc.since.Equal(kept[0].Since) && sc.since.Before(started)
	})
	time.Sleep(200 * time.Millisecond) // tries while Slack still refuses
	if b := blocksOf(e.botReplies(src)[0]); strings.Contains(b, "Malicious") {
		t.Fatalf("the card changed while Slack refused every update: %s", b)
	}
	e.fake.ClearFaults()
	waitUntil(t, "the card shows the verdict", func() bool {
		r := e.botReplies(src)
		return len(r) == 1 && strings.Contains(blocksOf(r[0]), "Malicious") && !strings.Contains(blocksOf(r[0]), "Scanning")
	})
	waitUntil(t, "the store forgets the card once shown", func() bool {
		kept, err := e.db.StaleCards(10)
		return err == nil && len(kept) == 0
	})
}

// stale reports whether the card of (C1, src) waits to be shown again.
func (e *env) stale(src string) bool {
	e.messages.stale.mu.Lock()
	defer e.messages.stale.mu.Unlock()
	_, waiting := e.messages.stale.m[card.Ref{Channel: "C1", SourceTS: src}]
	return waiting
}

// refusedFinalCard posts a card for u (malicious), then has Slack refuse
// every chat.update with a 5xx page while its verdict comes, until the
// card's job has ended (retry times shortened), with RunStale running
// until stop; the card in Slack still shows what it showed before.
func refusedFinalCard(t *testing.T, u string) (e *env, src string, stop func()) {
	t.Helper()
	saved := []time.Duration{finalRetryMin, finalRetryMax, finalRetryFor, staleTick, staleRetryMin, staleRetryMax, staleReload}
	finalRetryMin, finalRetryMax, finalRetryFor = 10*time.Millisecond, 20*time.Millisecond, 100*time.Millisecond
	staleTick, staleRetryMin, staleRetryMax, staleReload = 20*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() {
		finalRetryMin, finalRetryMax, finalRetryFor = saved[0], saved[1], saved[2]
		staleTick, staleRetryMin, staleRetryMax, staleReload = saved[3], saved[4], saved[5], saved[6]
	})
	gate := make(chan struct{})
	e = newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Malicious}, gates: map[string]chan struct{}{u: gate}}, ModeVerbose)
	// A poster that does not retry a 5xx itself: retryFinal's tries are
	// the card layer's.
	e.poster = notify.NewPoster(e.api, notify.PosterOptions{MinUpdateInterval: 5 * time.Millisecond, PostInterval: 5 * time.Millisecond, MaxAttempts: 1})
	t.Cleanup(func() { _ = e.poster.Close(context.Background()) })
	e.messages.Poster = e.poster
	ctx, cancel := context.WithCancel(t.Context())
	var running sync.WaitGroup
	running.Go(func() { e.messages.RunStale(ctx) })
	stop = func() { cancel(); running.Wait() }
	t.Cleanup(stop)

	done := make(chan struct{})
	src = e.deliver(t, "see <"+u+">", func() { close(done) })
	waitUntil(t, "the card is posted, scanning", func() bool { return len(e.botReplies(src)) == 1 })
	e.fake.InjectFault(slackfake.Fault{Method: "chat.update", Status: http.StatusServiceUnavailable})
	close(gate)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not end while Slack refused its final card")
	}
	// Slack still down: the card shows what it showed.
	time.Sleep(300 * time.Millisecond)
	if b := blocksOf(e.botReplies(src)[0]); strings.Contains(b, "Malicious") {
		t.Fatalf("the card changed while Slack refused every update: %s", b)
	}
	return e, src, stop
}
