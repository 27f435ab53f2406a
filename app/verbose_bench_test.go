package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// BenchmarkVerboseChannels is the load check for issue 14's verbose-channel
// item: a burst of messages with one link each lands in verbose channels
// (one channel, then ten) of a fake Slack that enforces Slack's limits
// (slackfake.DefaultRateLimits: chat.postMessage one per second per
// channel with bursts of 2, chat.update Tier 3, 50 a minute across the
// workspace with bursts of 10; 429 with Retry-After beyond them). The real
// bot wiring scans against the simulator; "fast" verdicts complete at the
// service 300 ms after submission, "slow" ones after 6 s.
//
// Reported: links per second per channel (each channel's links over the
// time until its last card was final, averaged over channels) and for the
// workspace (all links over the time until the last card was final), Slack
// calls per link (chat.postMessage, chat.update, and the 429s among them),
// and the time from a message to its final card (median and max). Every
// card must end final and be posted once, or the benchmark fails.
//
//	go test -run '^$' -bench VerboseChannels -benchtime 1x ./cmd/verdictbot/
func BenchmarkVerboseChannels(b *testing.B) {
	if testing.Short() {
		b.Skip("load run of about a minute")
	}
	fast := sim.Profile{Name: "fast-verdicts", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond}
	slow := sim.Profile{Name: "slow-verdicts", URLPending: time.Second, URLProcessing: 5 * time.Second}
	for _, tc := range []struct {
		name              string
		channels, perChan int
		profile           sim.Profile
	}{
		{"channels=1/fast", 1, 20, fast},
		{"channels=10/fast", 10, 5, fast},
		{"channels=1/slow", 1, 10, slow},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				runVerboseLoad(b, tc.channels, tc.perChan, tc.profile)
			}
		})
	}
}

func runVerboseLoad(b *testing.B, channels, perChan int, profile sim.Profile) {
	// Budgets raised so the analysis service is not what limits: Slack is.
	h := startBot(b, map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose", "VERDICTBOT_LOG_LEVEL": "warn",
		"VERDICTBOT_REPUTATION_RUN_RATE": "100", "VERDICTBOT_REPUTATION_REPORT_RATE": "100"},
		sim.Config{Profile: profile}, slackfake.WithRateLimits(slackfake.RateLimits{}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type source struct {
		channel, ts string
		at          time.Time
	}
	var sources []source
	chans := make([]string, channels)
	for c := range chans {
		chans[c] = fmt.Sprintf("CVERBOSE%02d", c)
	}
	start := time.Now()
	// Messages arrive round-robin over the channels, as fast as the fake
	// delivers them: a burst the bot drains at Slack's pace.
	for i := range perChan {
		for _, ch := range chans {
			d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: ch, User: alice,
				Text: fmt.Sprintf("have a look at <https://docs.example.com/%s/%d|the page>", ch, i)})
			if err != nil {
				b.Fatal(err)
			}
			sources = append(sources, source{ch, d.TS, time.Now()})
		}
	}
	finalAt := make([]time.Time, len(sources))
	for left := len(sources); left > 0; {
		h.Slack.Inspect(func(st *slackfake.State) {
			for i, s := range sources {
				if !finalAt[i].IsZero() {
					continue
				}
				for _, m := range st.Messages(s.channel, s.ts) {
					if m.Bot && m.IsReply() && !strings.Contains(apptest.BlocksText(m.Blocks), "Scanning") {
						finalAt[i] = time.Now()
						left--
					}
				}
			}
		})
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d cards not final after 2 min", left, len(sources))
		case <-time.After(20 * time.Millisecond):
		}
	}
	end := slices.MaxFunc(finalAt, func(x, y time.Time) int { return x.Compare(y) })
	b.StopTimer()
	cards := 0
	for _, s := range sources {
		for _, m := range h.Slack.Messages(s.channel, s.ts) {
			if m.Bot && m.IsReply() {
				cards++
			}
		}
	}
	if cards != len(sources) {
		b.Fatalf("%d cards for %d messages, want one each", cards, len(sources))
	}
	var perChannel float64
	for _, ch := range chans {
		var last time.Time
		n := 0
		for i, s := range sources {
			if s.channel == ch {
				n++
				if finalAt[i].After(last) {
					last = finalAt[i]
				}
			}
		}
		perChannel += float64(n) / last.Sub(start).Seconds()
	}
	lat := make([]time.Duration, len(sources))
	for i, s := range sources {
		lat[i] = finalAt[i].Sub(s.at)
	}
	slices.Sort(lat)
	n := float64(len(sources))
	count := func(method string) (calls, limited int) {
		for _, c := range h.Slack.Calls(method) {
			calls++
			if c.Status == 429 {
				limited++
			}
		}
		return calls, limited
	}
	posts, posts429 := count("chat.postMessage")
	updates, updates429 := count("chat.update")
	b.ReportMetric(n, "links")
	b.ReportMetric(perChannel/float64(channels), "links/s/channel")
	b.ReportMetric(n/end.Sub(start).Seconds(), "links/s/workspace")
	b.ReportMetric(float64(posts)/n, "posts/link")
	b.ReportMetric(float64(updates)/n, "updates/link")
	b.ReportMetric(float64(posts429+updates429)/n, "429s/link")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-card-s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "max-card-s")
	b.StartTimer()
}
