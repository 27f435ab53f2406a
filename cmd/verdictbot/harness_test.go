package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// The harness of the tests that stay here because they run the program
// (a CLI command beside a running bot, a killed process, a cluster of
// processes, the shell) but also start a bot in this process. It is a
// copy of the end-to-end harness of package app (app/run_test.go and its
// helpers), for the few tests that need both.

// bob is a channel member who is not an admin.
const bob = "U0BOB"

// serve is what `run` does: app.New with the logger log and the hooks o,
// attach (when set) given the wired app before it runs, Run until ctx
// ends, Close.
func serve(ctx context.Context, cfg config.Config, o Options, log *slog.Logger, attach func(*app.App)) error {
	ao := o.Options
	ao.Logger, ao.Version = log, version
	a, err := app.New(cfg, ao)
	if err != nil {
		return err
	}
	defer a.Close()
	if attach != nil {
		attach(a)
	}
	return a.Run(ctx)
}

const (
	e2eKey     = "sim-key-e2e-9f3a"
	secChannel = "C0SEC"
	alice      = "U0ALICE"
	adminUser  = "U0ADMIN"
)

type harness struct {
	t      testing.TB
	slack  *slackfake.Server
	sim    *sim.Server
	simURL string
	logs   *testutil.SyncBuffer
	stop   func() error
	// env is the bot's environment: the settings it was started with,
	// for a command run beside it (runMain(h.env, …)).
	env map[string]string
}

// quickProfile finishes a URL analysis in 300 ms, so the bot's first
// status check (after about a second) finds it done.
var quickProfile = sim.Profile{Name: "e2e", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond}

func startBot(t testing.TB, env map[string]string, simCfg sim.Config, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotWith(t, env, simCfg, false, opts...)
}

// seedSlack, when set, prepares the fake Slack before the bot starts.
type seedSlack func(*slackfake.Server)

// startBotWith is startBot, optionally with the sandbox service (on the
// same simulator) configured.
func startBotWith(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotSeeded(t, env, simCfg, withSandbox, nil, opts...)
}

func startBotSeeded(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed seedSlack, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotFull(t, env, simCfg, withSandbox, seed, testOptions(), opts...)
}

// startBotOptions is startBot with the wiring's options (the tests' hooks:
// start from testOptions()).
func startBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o Options, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotFull(t, env, simCfg, false, nil, o, opts...)
}

// startBotFull starts serve with the settings env over the harness's
// (a fake Slack, the simulator, a data directory of its own) and the
// options o.
func startBotFull(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed seedSlack, o Options, opts ...slackfake.Option) *harness {
	t.Helper()
	fake := slackfaketest.Start(t, opts...)
	if seed != nil {
		seed(fake)
	}
	if simCfg.Profile == (sim.Profile{}) {
		simCfg.Profile = quickProfile
	}
	srv, base := simtest.Start(t, simCfg)
	settings := map[string]string{
		"SLACK_BOT_TOKEN":         fake.BotToken(),
		"SLACK_APP_TOKEN":         fake.AppToken(),
		"SLACK_API_URL":           fake.APIURL(),
		"REPUTATION_URL":          base,
		"REPUTATION_API_KEY":      e2eKey,
		"VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_ADMINS":       adminUser,
		"VERDICTBOT_DATA_DIR":     t.TempDir(),
		"VERDICTBOT_LOG_LEVEL":    "debug",
		"VERDICTBOT_HTTP_ADDR":    "127.0.0.1:0",
	}
	if withSandbox {
		settings["SANDBOX_URL"] = base
	}
	for k, v := range env {
		settings[k] = v
	}
	cfg := mustConfig(t, settings)
	logs := &testutil.SyncBuffer{}
	log := app.NewLogger(logs, "json", "debug", cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, o, log, nil) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(20 * time.Second):
				result = errors.New("serve did not return within 20s of cancel")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		for _, secret := range []string{fake.BotToken(), fake.AppToken(), e2eKey} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("a secret appears in the logs")
			}
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatalf("bot did not connect: %v\nlogs:\n%s", err, logs.String())
	}
	return &harness{t: t, slack: fake, sim: srv, simURL: base, logs: logs, stop: stop, env: settings}
}

func (h *harness) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) post(text string) slackfake.Delivery {
	h.t.Helper()
	d, err := h.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: text})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// waitCard waits until the thread holds a bot message whose blocks satisfy
// ok, and returns it.
func (h *harness) waitCard(threadTS string, ok func(blocks string) bool) slackfake.Message {
	h.t.Helper()
	return h.waitCardWithin(15*time.Second, threadTS, ok)
}

// waitCardWithin is waitCard with its own bound.
func (h *harness) waitCardWithin(within time.Duration, threadTS string, ok func(blocks string) bool) slackfake.Message {
	h.t.Helper()
	var found slackfake.Message
	err := h.slack.WaitFor(h.ctx(within), func(st *slackfake.State) bool {
		for _, m := range st.Messages(secChannel, threadTS) {
			if m.Bot && ok(blocksText(m.Blocks)) {
				found = m
				return true
			}
		}
		return false
	})
	if err != nil {
		var seen []string
		for _, m := range h.slack.Messages(secChannel, threadTS) {
			seen = append(seen, blocksText(m.Blocks))
		}
		h.t.Fatalf("no matching card in thread %s: %v\ncards: %q\nlogs:\n%s", threadTS, err, seen, h.logs.String())
	}
	return found
}

// blocksText returns the blocks' JSON without HTML escaping, so a test can
// look for "<@U…>" as Slack receives it.
func blocksText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.String()
}

func botMessages(msgs []slackfake.Message) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range msgs {
		if m.Bot {
			out = append(out, m)
		}
	}
	return out
}

const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// quickSandbox finishes a sandbox task in 0.45 s, so the bot's first status
// check (after about a second) finds it reported.
var quickSandbox = sim.Profile{Name: "e2e-files", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
	SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
	SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}

const (
	e2eAdminToken = "xoxp-1000000001-4000000004-e2eadminusertoken"
	otherOrg      = "T0OTHERORG"
)

// startQuarantine starts the bot in a quiet channel quarantining malicious
// messages, with the admin token of adminUser (a workspace admin) unless
// env sets SLACK_ADMIN_USER_TOKEN otherwise ("" for none). tokenUser is
// the user the token belongs to.
func startQuarantine(t *testing.T, env map[string]string, tokenUser string) *harness {
	t.Helper()
	settings := map[string]string{
		"VERDICTBOT_CHANNEL_MODE": "quiet",
		"VERDICTBOT_QUARANTINE":   "malicious",
		"SLACK_ADMIN_USER_TOKEN":  e2eAdminToken,
	}
	for k, v := range env {
		settings[k] = v
	}
	seed := func(f *slackfake.Server) {
		f.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
		f.AddUser(slackfake.User{ID: alice, Name: "alice"})
		f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security"})
	}
	h := startBotSeeded(t, settings, sim.Config{}, false, seed,
		slackfake.WithUserToken(slackfake.UserToken{Token: e2eAdminToken, User: tokenUser, Scopes: []string{"chat:write", "files:write"}}))
	t.Cleanup(func() {
		if strings.Contains(h.logs.String(), e2eAdminToken) {
			t.Error("the admin token appears in the logs")
		}
	})
	return h
}

// get fetches a path of the bot's ops server.
func get(t *testing.T, h *harness, path string) (int, string) {
	t.Helper()
	m := opsAddrRE.FindStringSubmatch(h.logs.String())
	if m == nil {
		t.Fatalf("no ops address in the logs")
	}
	resp, err := http.Get("http://" + m[1] + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns a sample's value from /metrics ("" when absent).
func metric(t *testing.T, h *harness, sample string) string {
	t.Helper()
	_, body := get(t, h, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

var opsAddrRE = regexp.MustCompile(`"msg":"serving health and metrics","addr":"([^"]+)"`)

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("answer lacks %q:\n%s", w, got)
		}
	}
}

// waitDeleted waits until the message at ts is deleted.
func (h *harness) waitDeleted(ts string) {
	h.t.Helper()
	err := h.slack.WaitFor(h.ctx(15*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, ts)
		return ok && m.Deleted
	})
	if err != nil {
		h.t.Fatalf("message %s not removed: %v\nlogs:\n%s", ts, err, h.logs.String())
	}
}
