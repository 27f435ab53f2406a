package slackfake_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

func TestDeliverEventsAckedExactlyOnce(t *testing.T) {
	t.Parallel()
	// The ack timeout is out of the way: this checks bookkeeping, and a
	// burst under the race detector on two shared cores is slow.
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(time.Minute))
	b := runSocket(t, f)
	b.autoAck(t)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	ds, err := f.DeliverEvents(ctx, 300, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.EnvelopeID
	}
	if err := f.WaitAcked(ctx, ids...); err != nil {
		t.Fatal(err)
	}
	st := f.AckStats(ids...)
	if st.Envelopes != 300 || st.Acked != 300 || st.Redeliveries != 0 || !st.ExactlyOnce() || st.P50 <= 0 || st.P99 < st.P50 || st.Max < st.P99 {
		t.Errorf("stats = %+v", st)
	}
	t.Logf("ack latency p50 %v p99 %v max %v", st.P50, st.P99, st.Max)

	start := time.Now()
	if _, err := f.DeliverEvents(ctx, 21, 200, func(i int) any {
		return map[string]any{"type": "app_mention", "user": alice, "text": "hi", "channel": chanSec, "ts": "1.1", "event_ts": "1.1"}
	}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 95*time.Millisecond {
		t.Errorf("21 events at 200/s took %v, want about 100ms", el)
	}
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	if st := f.AckStats(); st.Envelopes != 321 || !st.ExactlyOnce() {
		t.Errorf("all stats = %+v", st)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	// Not parallel: it counts goroutines.
	before := runtime.NumGoroutine()

	f, err := slackfake.New(slackfake.WithPingInterval(50*time.Millisecond), slackfake.WithAckTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sm := socketmode.New(newAPI(f))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(ctx) }()
	go func() { // drain
		for {
			select {
			case <-sm.Events:
			case <-ctx.Done():
				return
			}
		}
	}()
	wctx := testCtx(t)
	if err := f.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "unacked"}); err != nil {
			t.Fatal(err)
		}
	}
	// A request stuck in a slow answer must not hold Close up.
	f.SlowDown("auth.test", 0, time.Hour)
	slow := make(chan error, 1)
	go func() {
		_, err := slack.New(f.BotToken(), slack.OptionAPIURL(f.APIURL())).AuthTestContext(context.Background())
		slow <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the request reach the fault

	start := time.Now()
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Close took %v", el)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "late"}); err == nil {
		t.Error("delivery after Close succeeded")
	}
	cancel()
	<-done
	<-slow

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
