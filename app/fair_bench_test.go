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

// Settings of BenchmarkFloodThenPhish.
const (
	floodLinks     = 40 // the first user's throwaway links, one message each
	floodAnalysisS = 5  // how long the service takes for every link (d5s.test)
)

// BenchmarkFloodThenPhish is issue 21's fair-queue target: with the
// default budgets (VERDICTBOT_REPUTATION_RUN_RATE 1/s with a burst of 2,
// _REPORT_RATE 5/s), one user posts floodLinks unique links, one message
// each, and once the flood's first submission is made another user posts a
// phishing link in the same channel, which quarantines malicious messages.
// Target: the phishing link is submitted within 2 s of its post, and its
// message removed and its card posted within 5 s of the service's answer.
//
// Each iteration runs `verdictbot run`'s wiring in this process against the
// fake Slack and the simulator (real sockets, real HTTP), on the embedded
// store, with every analysis taking floodAnalysisS seconds of real time.
// Sub-benchmarks: alone (no flood) and behind-40-links.
//
// Metrics (means over the iterations; each iteration's are logged):
// submit-s, from the phishing message's delivery to the simulator creating
// its task; removed-s and card-s, from the service's answer (the task's
// end: creation + floodAnalysisS) to the chat.delete of the message and to
// the first post of its card; flood-submitted, how many flood links were
// submitted by the removal.
//
//	go test -run '^$' -bench FloodThenPhish -benchtime 3x ./cmd/verdictbot/
//
// About 15 s per iteration. Skipped with -short.
func BenchmarkFloodThenPhish(b *testing.B) {
	if testing.Short() {
		b.Skip("real-time runs of 15 s each")
	}
	for _, flood := range []int{0, floodLinks} {
		name := "alone"
		if flood > 0 {
			name = fmt.Sprintf("behind-%d-links", flood)
		}
		b.Run(name, func(b *testing.B) {
			var runs []floodRun
			for i := 0; i < b.N; i++ {
				runs = append(runs, runFloodThenPhish(b, flood, i))
			}
			mean := func(f func(floodRun) float64) float64 {
				s := 0.0
				for _, r := range runs {
					s += f(r)
				}
				return s / float64(len(runs))
			}
			b.ReportMetric(mean(func(r floodRun) float64 { return r.submit.Seconds() }), "submit-s")
			b.ReportMetric(mean(func(r floodRun) float64 { return r.removed.Seconds() }), "removed-s")
			b.ReportMetric(mean(func(r floodRun) float64 { return r.card.Seconds() }), "card-s")
			b.ReportMetric(mean(func(r floodRun) float64 { return float64(r.floodSubmitted) }), "flood-submitted")
			b.Logf("%s over %d runs: submit %s; removed %s; card %s (min/median/max, seconds)", name, len(runs),
				spread(runs, func(r floodRun) time.Duration { return r.submit }),
				spread(runs, func(r floodRun) time.Duration { return r.removed }),
				spread(runs, func(r floodRun) time.Duration { return r.card }))
		})
	}
}

type floodRun struct {
	submit, removed, card time.Duration
	floodSubmitted        int
}

// spread is "min/median/max" of one measure of runs, in seconds.
func spread(runs []floodRun, f func(floodRun) time.Duration) string {
	v := make([]time.Duration, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return fmt.Sprintf("%.2f/%.2f/%.2f", v[0].Seconds(), v[len(v)/2].Seconds(), v[len(v)-1].Seconds())
}

func runFloodThenPhish(b *testing.B, flood, iter int) floodRun {
	seed := func(f *slackfake.Server) {
		f.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
		f.AddUser(slackfake.User{ID: alice, Name: "alice"})
		f.AddUser(slackfake.User{ID: flooder, Name: "flooder"})
		f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security"})
	}
	h := startBotSeeded(b, map[string]string{
		"VERDICTBOT_CHANNEL_MODE": "quiet",
		"VERDICTBOT_QUARANTINE":   "malicious",
		"SLACK_ADMIN_USER_TOKEN":  apptest.AdminToken,
		"VERDICTBOT_LOG_LEVEL":    "info",
	}, sim.Config{}, false, seed,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))
	defer func() {
		if err := h.Stop(); err != nil {
			b.Errorf("serve: %v", err)
		}
	}()
	var floodURLs []string
	for i := range flood {
		url := fmt.Sprintf("https://throwaway-%d-%d.d%ds.test/x", iter, i, floodAnalysisS)
		floodURLs = append(floodURLs, url)
		if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: flooder, Text: "look <" + url + ">"}); err != nil {
			b.Fatal(err)
		}
	}
	if flood > 0 {
		err := h.Slack.WaitFor(h.Ctx(30*time.Second), func(*slackfake.State) bool { return h.Sim.Count(sim.ServiceReputation, sim.OpScan) >= 1 })
		if err != nil {
			b.Fatal("the flood was never submitted")
		}
	}
	phish := fmt.Sprintf("https://secure-phish-%d.d%ds.test/verify", iter, floodAnalysisS)
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "urgent, please log in: <" + phish + ">"})
	if err != nil {
		b.Fatal(err)
	}
	posted := time.Now()
	var del, post time.Time
	err = h.Slack.WaitFor(h.Ctx(90*time.Second), func(st *slackfake.State) bool {
		for _, c := range st.Calls("chat.delete") {
			if c.Params.Get("ts") == d.TS && c.Error == "" {
				del = c.Time
			}
		}
		for _, c := range st.Calls("chat.postMessage") {
			if c.Params.Get("thread_ts") == d.TS && c.Error == "" && post.IsZero() {
				post = c.Time
			}
		}
		return !del.IsZero() && !post.IsZero()
	})
	if err != nil {
		b.Fatalf("the phishing message was not removed and carded within 90 s (delete %v, card %v)\nlogs:\n%s", del, post, lastLines(h.Logs.String(), 40))
	}
	ids := h.Sim.URLTasks(phish)
	if len(ids) != 1 {
		b.Fatalf("the phishing link was submitted %d times", len(ids))
	}
	task, _ := h.Sim.URLTask(ids[0])
	answer := task.Created.Add(floodAnalysisS * time.Second)
	r := floodRun{submit: task.Created.Sub(posted), removed: del.Sub(answer), card: post.Sub(answer),
		floodSubmitted: createdBefore(h.Sim, floodURLs, del)}
	b.Logf("run %d, %d flood links: submitted %.2fs after its post; removed %.2fs and carded %.2fs after the service's answer (%.2fs after the post); %d flood links submitted by then",
		iter, flood, r.submit.Seconds(), r.removed.Seconds(), r.card.Seconds(), del.Sub(posted).Seconds(), r.floodSubmitted)
	return r
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
