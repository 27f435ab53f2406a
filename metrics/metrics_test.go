package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/verdict"
)

func TestHooksFeedTheDocumentedSeries(t *testing.T) {
	m := New(func() int { return 7 }, func() int { return 3 }, func() bool { return true })
	m.Envelope("events_api", 2*time.Millisecond, nil)
	m.Envelope("events_api", time.Millisecond, errors.New("x"))
	m.Dropped("message", "duplicate")
	m.ReputationEvent(reputation.Event{Service: "reputation", Op: "scan", Budget: reputation.BudgetRun})
	m.ReputationEvent(reputation.Event{Service: "reputation", Op: "status", Budget: reputation.BudgetReport, Reason: reputation.ReasonServer})
	m.SandboxEvent(sandbox.Event{Service: "sandbox", Budget: sandbox.BudgetRun, IsWait: true, Wait: 1500 * time.Millisecond})
	m.URLDone(scan.URLVerdict{Level: verdict.Malicious, Polls: 4})
	m.URLDone(scan.URLVerdict{Level: verdict.Unknown, Err: errors.New("down")})
	m.FileDone(scan.FileVerdict{Level: verdict.Clean, Reused: true})
	m.SlackCall("chat.postMessage", "")
	m.SlackCall("chat.update", "ratelimited")
	m.RecheckRun(scan.RunStats{Checked: 5, Changed: 2, Took: time.Second})
	m.RecheckRun(scan.RunStats{Skipped: true})
	m.Unchecked("url", 38)
	m.Unchecked("url", 2)
	m.Unchecked("file", 1)

	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"acked", testutil.ToFloat64(m.envelopes.WithLabelValues("events_api", "acked")), 1},
		{"ack failed", testutil.ToFloat64(m.envelopes.WithLabelValues("events_api", "ack_failed")), 1},
		{"dropped", testutil.ToFloat64(m.dropped.WithLabelValues("message", "duplicate")), 1},
		{"requests", testutil.ToFloat64(m.requests.WithLabelValues("reputation", "scan", "run")), 1},
		{"errors", testutil.ToFloat64(m.serviceErrs.WithLabelValues("reputation", "status", "server")), 1},
		{"waits", testutil.ToFloat64(m.budgetWaits.WithLabelValues("sandbox", "run")), 1},
		{"waited", testutil.ToFloat64(m.budgetWaited.WithLabelValues("sandbox", "run")), 1.5},
		{"url ok", testutil.ToFloat64(m.scans.WithLabelValues("reputation", "ok")), 1},
		{"url failed", testutil.ToFloat64(m.scans.WithLabelValues("reputation", "failed")), 1},
		{"file reused", testutil.ToFloat64(m.scans.WithLabelValues("sandbox", "reused")), 1},
		{"malicious", testutil.ToFloat64(m.levels.WithLabelValues("url", "malicious")), 1},
		{"slack errors", testutil.ToFloat64(m.slackErrors.WithLabelValues("chat.update", "ratelimited")), 1},
		{"slack calls", testutil.ToFloat64(m.slackCalls.WithLabelValues("chat.postMessage")), 1},
		{"flips", testutil.ToFloat64(m.flips), 2},
		{"runs", testutil.ToFloat64(m.rechecks.WithLabelValues("ran")), 1},
		{"skipped runs", testutil.ToFloat64(m.rechecks.WithLabelValues("skipped")), 1},
		{"links left out", testutil.ToFloat64(m.unchecked.WithLabelValues("url")), 40},
		{"files not checked", testutil.ToFloat64(m.unchecked.WithLabelValues("file")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	n, err := testutil.GatherAndCount(m.Registry, "verdictbot_queue_depth", "verdictbot_analyses_in_flight", "verdictbot_ready")
	if err != nil || n != 3 {
		t.Fatalf("gauges: %d %v", n, err)
	}
	out, _ := testutil.CollectAndLint(m.envelopes)
	for _, p := range out {
		if !strings.Contains(p.Text, "counter metrics should have") {
			t.Errorf("lint: %s", p.Text)
		}
	}
}
