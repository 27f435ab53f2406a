package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// BenchmarkBackfill10k is issue 25's figure: a backfill of a channel of
// 10,000 messages with 2,000 links over 14 days (50 threads of 4 replies)
// in slackfake with Slack's Tier 3 limits enforced on conversations.history
// and conversations.replies (50 a minute each, bursts of 10), the URL
// service's budgets raised to 50 runs a second (at the default 1 a second,
// 2,000 distinct links take 33 minutes whatever Slack allows), and a live
// message with a link posted every 2 s meanwhile in another channel: how
// long its reaction took is the delay live traffic saw. Once:
//
//	go test -run '^$' -bench Backfill10k -benchtime 1x ./app/
func BenchmarkBackfill10k(b *testing.B) {
	const liveChannel = "C0LIVE"
	for range b.N {
		seed := func(f *slackfake.Server) { f.AddChannel(slackfake.Channel{ID: liveChannel, Name: "live"}) }
		h := &harness{apptest.StartBotFull(b, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet",
			"VERDICTBOT_REPUTATION_RUN_RATE": "50", "VERDICTBOT_REPUTATION_REPORT_RATE": "500", "VERDICTBOT_LOG_LEVEL": "info"},
			sim.Config{}, false, seed, apptest.QuickPolling(), slackfake.WithTierLimits(true))}
		now := time.Now()
		msgs := make([]slackfake.HistoryMessage, 0, 10000)
		for i := range 10000 {
			m := slackfake.HistoryMessage{User: alice, Text: fmt.Sprintf("message %d", i),
				At: now.Add(-14 * 24 * time.Hour).Add(time.Duration(i) * (14 * 24 * time.Hour / 10000)), ReplyTo: slackfake.TopLevel}
			if i%5 == 0 {
				m.Text = fmt.Sprintf("see <https://example.com/history/%d>", i)
			}
			if i%200 >= 196 && i%200 <= 199 { // 4 replies to message i-i%200+195
				m.ReplyTo = i - i%200 + 195
			}
			msgs = append(msgs, m)
		}
		h.Slack.SeedHistory(secChannel, msgs)
		// The live links' delay with no backfill, for comparison.
		liveLink := func(i int) (time.Duration, bool) {
			posted := time.Now()
			d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: liveChannel, User: bob, Text: fmt.Sprintf("live <https://example.org/live/%d>", i)})
			if err != nil {
				return 0, false
			}
			err = h.Slack.WaitFor(h.Ctx(2*time.Minute), func(st *slackfake.State) bool {
				m, _ := st.Message(liveChannel, d.TS)
				return len(m.Reactions) > 0
			})
			return time.Since(posted), err == nil
		}
		var quiet []time.Duration
		for i := range 7 {
			if d, ok := liveLink(-1 - i); ok {
				quiet = append(quiet, d)
			}
		}
		slices.Sort(quiet)
		b.ResetTimer()
		start := time.Now()
		if got := h.Slash(adminUser, "channel backfill 14d"); !strings.Contains(got, "Checking") {
			b.Fatalf("backfill: %q", got)
		}
		var live []time.Duration
		stopLive := make(chan struct{})
		liveDone := make(chan struct{})
		go func() {
			defer close(liveDone)
			for i := 0; ; i++ {
				select {
				case <-stopLive:
					return
				case <-time.After(2 * time.Second):
				}
				if d, ok := liveLink(i); ok {
					live = append(live, d)
				}
			}
		}()
		var summary string
		err := h.Slack.WaitFor(h.Ctx(20*time.Minute), func(st *slackfake.State) bool {
			for _, m := range st.BotMessages(secChannel, "") {
				if strings.Contains(m.Text, "Finished checking") {
					summary = m.Text
					return true
				}
			}
			return false
		})
		took := time.Since(start)
		close(stopLive)
		<-liveDone
		b.StopTimer()
		if err != nil {
			b.Fatalf("the backfill did not finish: %v", err)
		}
		hist, repl := len(h.Slack.Calls("conversations.history")), len(h.Slack.Calls("conversations.replies"))
		limited := 0
		for _, m := range []string{"conversations.history", "conversations.replies"} {
			for _, c := range h.Slack.Calls(m) {
				if c.Error == "ratelimited" {
					limited++
				}
			}
		}
		slices.Sort(live)
		worst := time.Duration(0)
		if len(live) > 0 {
			worst = live[len(live)-1]
		}
		b.Logf("%s in %v; conversations.history %d calls, conversations.replies %d calls (%d answered 429); live links: %d, reaction after %v (median), %v (longest); before the backfill: %v (median), %v (longest)",
			summary, took.Round(time.Millisecond), hist, repl, limited, len(live), live[len(live)/2].Round(time.Millisecond), worst.Round(time.Millisecond),
			quiet[len(quiet)/2].Round(time.Millisecond), quiet[len(quiet)-1].Round(time.Millisecond))
		b.ReportMetric(took.Seconds(), "wall-s")
		b.ReportMetric(float64(hist), "history-calls")
		b.ReportMetric(float64(repl), "replies-calls")
		b.ReportMetric(worst.Seconds()*1000, "live-worst-ms")
	}
}
