package slackfake_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// fakeClock is a rate-limit clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1700000000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestTierLimitsOnHistoryAndReplies: with WithTierLimits(true) each of
// conversations.history and conversations.replies has its own Tier 3
// bucket (50 a minute, bursts of 10): the 11th call at once is answered
// 429 with Retry-After 2 (a token every 1.2 s), recorded and counted; once
// the clock has moved on by Retry-After the call goes through.
func TestTierLimitsOnHistoryAndReplies(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := slackfaketest.Start(t, slackfake.WithTierLimits(true), slackfake.WithRateLimitClock(clock.Now))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "x"}))
	history := func() error {
		_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: chanSec})
		return err
	}
	replies := func() error {
		_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: root.TS})
		return err
	}
	for i := range slackfake.Tier3Burst {
		if err := history(); err != nil {
			t.Fatalf("history call %d of the burst: %v", i+1, err)
		}
	}
	var rl *slack.RateLimitedError
	if err := history(); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("history past the burst: %v, want a 429 with Retry-After 2", err)
	}
	// conversations.replies has a bucket of its own.
	for i := range slackfake.Tier3Burst {
		if err := replies(); err != nil {
			t.Fatalf("replies call %d: %v", i+1, err)
		}
	}
	if err := replies(); !errors.As(err, &rl) {
		t.Fatalf("replies past the burst: %v", err)
	}
	// A token every 60/50 s.
	clock.Advance(time.Second)
	if err := history(); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Errorf("history 1 s later: %v, want a 429 with Retry-After 1", err)
	}
	clock.Advance(200 * time.Millisecond)
	if err := history(); err != nil {
		t.Errorf("history 1.2 s later: %v", err)
	}
	if got := f.RateLimited(); got["conversations.history"] != 2 || got["conversations.replies"] != 1 {
		t.Errorf("RateLimited() = %v", got)
	}
	refused := 0
	for _, c := range f.Calls("conversations.history") {
		if c.Status == 429 {
			refused++
			if c.Error != "ratelimited" {
				t.Errorf("a refused call recorded with error %q", c.Error)
			}
		}
	}
	if refused != 2 || len(f.Calls("conversations.history")) != slackfake.Tier3Burst+3 {
		t.Errorf("%d refused of %d recorded calls", refused, len(f.Calls("conversations.history")))
	}
	// Posting is not limited by WithTierLimits alone.
	for range 5 {
		if _, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("p", false)); err != nil {
			t.Fatalf("post: %v", err)
		}
	}
}

// TestNoTierLimitsByDefault: without WithTierLimits, neither a plain fake
// nor one with WithRateLimits(RateLimits{}) limits history reads.
func TestNoTierLimitsByDefault(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]slackfake.Option{
		"plain":            nil,
		"WithRateLimits":   {slackfake.WithRateLimits(slackfake.RateLimits{})},
		"WithTierLimits=0": {slackfake.WithTierLimits(false)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := slackfaketest.Start(t, opts...)
			f.AddChannel(slackfake.Channel{ID: chanSec})
			api := newAPI(f)
			for i := range 3 * slackfake.Tier3Burst {
				if _, err := api.GetConversationHistoryContext(testCtx(t), &slack.GetConversationHistoryParameters{ChannelID: chanSec}); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
		})
	}
}

// TestTierLimitsWithRateLimits: WithTierLimits adds to WithRateLimits'
// limits (in either order), and RateLimits' own history figures win.
func TestTierLimitsWithRateLimits(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := slackfaketest.Start(t,
		slackfake.WithTierLimits(true),
		slackfake.WithRateLimits(slackfake.RateLimits{PostInterval: 10 * time.Second, PostBurst: 1, HistoryPerMinute: 6, HistoryBurst: 2}),
		slackfake.WithRateLimitClock(clock.Now))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	var rl *slack.RateLimitedError
	for i := range 3 {
		_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: chanSec})
		if i < 2 && err != nil || i == 2 && (!errors.As(err, &rl) || rl.RetryAfter != 10*time.Second) {
			t.Errorf("history call %d: %v", i+1, err)
		}
	}
	for i := range 2 {
		_, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("p", false))
		if i == 0 && err != nil || i == 1 && !errors.As(err, &rl) {
			t.Errorf("post %d: %v", i+1, err)
		}
	}
}

// TestTierLimitsPerWorkspace: with an Org, each workspace has its own
// buckets: a channel of Sales is read when Eng's bucket is empty.
func TestTierLimitsPerWorkspace(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := startGrid(t, nil, slackfake.WithTierLimits(true), slackfake.WithRateLimitClock(clock.Now))
	api := newAPI(f)
	ctx := testCtx(t)
	read := func(ch string) error {
		_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: ch})
		return err
	}
	for range slackfake.Tier3Burst {
		if err := read(chanEng); err != nil {
			t.Fatal(err)
		}
	}
	var rl *slack.RateLimitedError
	if err := read(chanEng); !errors.As(err, &rl) {
		t.Errorf("Eng past the burst: %v", err)
	}
	if err := read(chanSales); err != nil {
		t.Errorf("Sales while Eng is limited: %v", err)
	}
}
