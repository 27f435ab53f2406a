package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// firstVerdictAnalysis is how long each analysis of the benchmark takes at
// the service (a d20s.test host: pending then processing, 20 s in all).
const firstVerdictAnalysis = 20 * time.Second

// firstVerdict is what one link of BenchmarkFirstVerdictThroughTheBinary
// measured.
type firstVerdict struct {
	lag   time.Duration // service completion -> the card call that showed the verdict
	polls int           // status calls for its task
	edits int           // chat.update calls of its card before the verdict
}

// BenchmarkFirstVerdictThroughTheBinary (issue 23 item 3): the real
// program, a fresh store (nothing learned), against slackfake enforcing
// Slack's tier limits and the simulator; links whose first analysis
// takes 20 s are posted in a verbose and in a quiet deployment at once.
// For each link: the time from the service's completion (the task's
// creation + 20 s) to the Slack call that put the verdict on its card
// (chat.update in verbose, the card's chat.postMessage in quiet), and the
// status calls made for its task. Targets: lag <= 1.5 s, <= 15 calls.
//
//	go test -run '^$' -bench FirstVerdictThroughTheBinary -benchtime 1x -count 3 ./cmd/verdictbot/
func BenchmarkFirstVerdictThroughTheBinary(b *testing.B) {
	const perMode = 3
	for b.Loop() {
		var mu sync.Mutex
		got := map[string][]firstVerdict{}
		var wg sync.WaitGroup
		for _, mode := range []string{"verbose", "quiet"} {
			wg.Go(func() {
				fv := firstVerdictRun(b, mode, perMode)
				mu.Lock()
				got[mode] = fv
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, mode := range []string{"verbose", "quiet"} {
			var lags []time.Duration
			polls, edits := 0, 0
			for _, f := range got[mode] {
				lags = append(lags, f.lag)
				polls += f.polls
				edits += f.edits
			}
			slices.Sort(lags)
			if len(lags) == 0 {
				b.Fatalf("%s: nothing measured", mode)
			}
			b.ReportMetric(lags[len(lags)-1].Seconds(), mode+"-lag-max-s")
			b.ReportMetric(lags[len(lags)/2].Seconds(), mode+"-lag-median-s")
			b.ReportMetric(float64(polls)/float64(len(lags)), mode+"-status-calls/analysis")
			b.ReportMetric(float64(edits)/float64(len(lags)), mode+"-progress-edits/card")
			b.Logf("%s: lags %v, %d status calls and %d progress edits for %d links", mode, lags, polls, edits, len(lags))
		}
	}
}

// firstVerdictRun starts one process in mode, posts n phishing links whose
// analyses take firstVerdictAnalysis, and measures each.
func firstVerdictRun(b *testing.B, mode string, n int) []firstVerdict {
	fake := slackfaketest.Start(b, slackfake.WithRateLimits(slackfake.RateLimits{}))
	srv, base := simtest.Start(b, sim.Config{})
	p := startProcess(b, map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_DATA_DIR": b.TempDir(),
		"VERDICTBOT_CHANNEL_MODE": mode, "VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		b.Fatalf("%s: not connected: %v\n%s", mode, err, p.logs.String())
	}
	type posted struct{ ts, url string }
	var links []posted
	for i := range n {
		u := fmt.Sprintf("https://secure-login-phish.d%ds.test/verify/%s/%d/%d", int(firstVerdictAnalysis.Seconds()), mode, time.Now().UnixNano(), i)
		d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "please check <" + u + ">"})
		if err != nil {
			b.Fatal(err)
		}
		links = append(links, posted{d.TS, u})
	}
	final := func(m slackfake.Message) bool { return m.Bot && strings.Contains(string(m.Blocks), "Malicious") }
	if err := fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, l := range links {
			if !slices.ContainsFunc(st.Messages(secChannel, l.ts), final) {
				return false
			}
		}
		return true
	}); err != nil {
		b.Fatalf("%s: not every card shows its verdict: %v\n%s", mode, err, p.logs.String())
	}
	var out []firstVerdict
	calls := append(fake.Calls("chat.postMessage"), fake.Calls("chat.update")...)
	slices.SortFunc(calls, func(a, b slackfake.Call) int { return a.Time.Compare(b.Time) })
	reqs := srv.Requests()
	for _, l := range links {
		ids := srv.URLTasks(l.url)
		if len(ids) != 1 {
			b.Fatalf("%s: %d tasks for %s", mode, len(ids), l.url)
		}
		task, _ := srv.URLTask(ids[0])
		done := task.Created.Add(firstVerdictAnalysis)
		var cardTS string
		for _, m := range fake.Messages(secChannel, l.ts) {
			if final(m) {
				cardTS = m.TS
			}
		}
		f := firstVerdict{lag: -1}
		for _, c := range calls {
			if c.Status != 200 || c.Error != "" {
				continue
			}
			ours := c.Method == "chat.update" && c.Params.Get("ts") == cardTS ||
				c.Method == "chat.postMessage" && c.Params.Get("thread_ts") == l.ts
			if !ours {
				continue
			}
			if strings.Contains(c.Params.Get("blocks"), "Malicious") {
				f.lag = c.Time.Sub(done)
				break
			}
			if c.Method == "chat.update" {
				f.edits++
			}
		}
		if f.lag < 0 {
			b.Fatalf("%s: no call put the verdict of %s on its card", mode, l.url)
		}
		for _, r := range reqs {
			if r.Service == sim.ServiceReputation && r.Op == sim.OpStatus && strings.Contains(r.Path, ids[0]) {
				f.polls++
			}
		}
		out = append(out, f)
	}
	stop(b, p)
	return out
}
