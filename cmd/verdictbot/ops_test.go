package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestHealthReadinessMetricsAndShutdown runs the real process: /healthz is
// up, /readyz follows the Socket Mode connection, /metrics exposes the
// documented series, and SIGTERM with work in flight exits cleanly within
// 10 s, the work resuming at the next start.
func TestHealthReadinessMetricsAndShutdown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real process")
	}
	fake := slackfaketest.Start(t)
	// Analyses take 30 s: they are in flight when SIGTERM arrives.
	srv, base := simtest.Start(t, sim.Config{Profile: sim.Profile{Name: "slow", URLPending: 10 * time.Second, URLProcessing: 20 * time.Second}})
	env := map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_DATA_DIR": t.TempDir(),
		"VERDICTBOT_HTTP_ADDR": apptest.ListenAnywhere, "VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_LOG_FORMAT": "json",
	}
	p := startProcess(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("not connected: %v\n%s", err, p.logs.String())
	}
	addr := apptest.OpsAddr(t, p.logs)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	apptest.WaitFor(t, func() bool { code, _ := get("/readyz"); return code == 200 })
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "<https://evil.test/slow>"})
	if err != nil {
		t.Fatal(err)
	}
	fake.WaitAcked(ctx, d.EnvelopeID)
	apptest.WaitFor(t, func() bool { return srv.Count(sim.ServiceReputation, sim.OpScan) == 1 })
	// The simulator counts the scan when its handler returns; the bot's
	// client counts it once it has read the answer, a moment later. So
	// /metrics is read until every series is there, within the bound.
	want := []string{
		`verdictbot_envelopes_total{result="acked",type="events_api"}`,
		"verdictbot_ack_latency_seconds_bucket", "verdictbot_queue_depth", "verdictbot_analyses_in_flight 1",
		`verdictbot_service_requests_total{budget="run",op="scan",service="reputation"} 1`,
		"verdictbot_ready 1", "process_resident_memory_bytes",
	}
	var m string
	var missing []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, m = get("/metrics")
		missing = missing[:0]
		for _, name := range want {
			if !strings.Contains(m, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, name := range missing {
		t.Errorf("/metrics lacks %s", name)
	}
	// The verbose card is posted once its grace period (cards.DefaultPostGrace)
	// has passed without a verdict: then Slack calls are counted.
	apptest.WaitFor(t, func() bool {
		_, m = get("/metrics")
		return strings.Contains(m, "verdictbot_slack_api_calls_total")
	})
	if strings.Contains(m, e2eKey) || strings.Contains(m, fake.BotToken()) {
		t.Fatal("a secret in /metrics")
	}
	// The healthcheck subcommand agrees.
	hc := exec.Command(os.Args[0], "healthcheck", addr)
	hc.Env = []string{"GO_TEST_AS_VERDICTBOT=1"}
	if out, err := hc.CombinedOutput(); err != nil || !strings.Contains(string(out), "healthy") {
		t.Fatalf("healthcheck: %v %s", err, out)
	}
	// SIGTERM with the analysis in flight: a clean exit within 10 s.
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, p.logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped 10 s after SIGTERM")
	}
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	if code, _ := get("/healthz"); code != 0 {
		t.Fatal("still serving after exit")
	}
	// The next start resumes the analysis rather than submitting it again.
	p2 := startProcess(t, env)
	apptest.WaitFor(t, func() bool { return strings.Contains(p2.logs.String(), "resuming an analysis submitted earlier") })
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("%d submissions after the restart", n)
	}
}

func TestConfigErrorExitsNonZeroWithOneLine(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "run")
	cmd.Env = []string{"GO_TEST_AS_VERDICTBOT=1", "SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "REPUTATION_URL=https://x.example",
		"REPUTATION_API_KEY=k", "VERDICTBOT_HTTP_ADDR=nonsense"}
	out, err := cmd.CombinedOutput()
	if err == nil || strings.TrimSpace(string(out)) != `verdictbot run: VERDICTBOT_HTTP_ADDR="nonsense": want host:port (e.g. 127.0.0.1:8080), or off` {
		t.Fatalf("%v %q", err, out)
	}
}
