package apptest

import (
	"context"
	"errors"
	"log/slog"
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

// The settings, channel and people of the bot a harness starts.
const (
	// Key is the API key the tests give the services.
	Key = "sim-key-e2e-9f3a"
	// Channel is the channel the tests post in.
	Channel = "C0SEC"
	// Alice is a channel member who posts (Post).
	Alice = "U0ALICE"
	// Admin is the bot's admin (VERDICTBOT_ADMINS).
	Admin = "U0ADMIN"
	// Bob is a channel member who is not an admin.
	Bob = "U0BOB"
)

// QuickProfile finishes a URL analysis in 300 ms, so the bot's first
// status check (after about a second) finds it done. It is the
// simulator's profile when a test gives none.
func QuickProfile() sim.Profile {
	return sim.Profile{Name: "e2e", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond}
}

// QuickSandbox finishes a sandbox task in 0.45 s, so the bot's first
// status check (after about a second) finds it reported.
func QuickSandbox() sim.Profile {
	return sim.Profile{Name: "e2e-files", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
		SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
		SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}
}

// LoadConfig is the settings of env checked as `verdictbot run` checks
// them (needSlack) or `verdictbot migrate` (not): config.Load,
// config.Unknown and Validate, every problem in one error.
func LoadConfig(env map[string]string, needSlack bool) (config.Config, error) {
	cfg, err := config.Load(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return cfg, config.Join(err, config.Unknown(environ), cfg.Validate(needSlack))
}

// MustConfig is LoadConfig for `verdictbot run`; a problem fails the
// test.
func MustConfig(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	cfg, err := LoadConfig(env, true)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Serve is what `verdictbot run` does: app.New with the logger log and
// the options o, attach (when set) given the wired app before it runs,
// Run until ctx ends, Close.
func Serve(ctx context.Context, cfg config.Config, o app.Options, log *slog.Logger, attach func(*app.App)) error {
	o.Logger = log
	a, err := app.New(cfg, o)
	if err != nil {
		return err
	}
	defer a.Close()
	if attach != nil {
		attach(a)
	}
	return a.Run(ctx)
}

// Harness is a bot started by StartBot (or a variant) with what it runs
// against. The bot stops when the test ends; the test then fails if it
// did not stop cleanly or if a secret appears in its logs.
type Harness struct {
	// T is the test the bot was started for; the helpers fail it.
	T testing.TB
	// Slack is the fake Slack the bot is connected to.
	Slack *slackfake.Server
	// Sim is the simulator of the analysis services.
	Sim *sim.Server
	// SimURL is the simulator's base URL.
	SimURL string
	// Logs is the bot's log (JSON lines, debug level).
	Logs *testutil.SyncBuffer
	// Env is the bot's environment: the settings it was started with,
	// for a command run beside it.
	Env  map[string]string
	stop func() error
}

// Seed, when set, prepares the fake Slack before the bot starts.
type Seed func(*slackfake.Server)

// StartBot starts the bot with the settings env over the harness's own
// (a fake Slack, the simulator with simCfg, a data directory of its own,
// a verbose channel, Admin as admin) and waits for it to connect.
func StartBot(t testing.TB, env map[string]string, simCfg sim.Config, opts ...slackfake.Option) *Harness {
	t.Helper()
	return StartBotWith(t, env, simCfg, false, opts...)
}

// StartBotWith is StartBot, optionally with the sandbox service (on the
// same simulator) configured.
func StartBotWith(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, opts ...slackfake.Option) *Harness {
	t.Helper()
	return StartBotSeeded(t, env, simCfg, withSandbox, nil, opts...)
}

// StartBotSeeded is StartBotWith with the fake Slack seeded first.
func StartBotSeeded(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed Seed, opts ...slackfake.Option) *Harness {
	t.Helper()
	return StartBotFull(t, env, simCfg, withSandbox, seed, Options(), opts...)
}

// StartBotOptions is StartBot with the wiring's options (the tests'
// hooks: start from Options()).
func StartBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o app.Options, opts ...slackfake.Option) *Harness {
	t.Helper()
	return StartBotFull(t, env, simCfg, false, nil, o, opts...)
}

// StartBotFull starts Serve with the settings env over the harness's (a
// fake Slack, the simulator, a data directory of its own) and the
// options o.
func StartBotFull(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed Seed, o app.Options, opts ...slackfake.Option) *Harness {
	t.Helper()
	fake := slackfaketest.Start(t, opts...)
	if seed != nil {
		seed(fake)
	}
	if simCfg.Profile == (sim.Profile{}) {
		simCfg.Profile = QuickProfile()
	}
	srv, base := simtest.Start(t, simCfg)
	settings := map[string]string{
		"SLACK_BOT_TOKEN":         fake.BotToken(),
		"SLACK_APP_TOKEN":         fake.AppToken(),
		"SLACK_API_URL":           fake.APIURL(),
		"REPUTATION_URL":          base,
		"REPUTATION_API_KEY":      Key,
		"VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_ADMINS":       Admin,
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
	return serveOn(t, fake, srv, base, settings, o)
}

// Restart stops the bot (as a shutdown does) and starts another process's
// worth of it with the same settings, data directory, fake Slack and
// simulator, and the options o: the returned Harness is the new bot's.
func (h *Harness) Restart(o app.Options) *Harness {
	h.T.Helper()
	if err := h.Stop(); err != nil {
		h.T.Fatalf("stopping the bot: %v", err)
	}
	_, before := h.Slack.Connections()
	return serveOn(h.T, h.Slack, h.Sim, h.SimURL, h.Env, o, before+1)
}

// serveOn starts Serve with settings against fake and the simulator srv at
// base, and waits until it has connected (the fake's connections reach
// conns, by default 1).
func serveOn(t testing.TB, fake *slackfake.Server, srv *sim.Server, base string, settings map[string]string, o app.Options, conns ...int) *Harness {
	t.Helper()
	cfg := MustConfig(t, settings)
	logs := &testutil.SyncBuffer{}
	log := app.NewLogger(logs, "json", "debug", cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, o, log, nil) }()
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
		for _, secret := range []string{fake.BotToken(), fake.AppToken(), Key} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("a secret appears in the logs")
			}
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	want := 1
	if len(conns) > 0 {
		want = conns[0]
	}
	if err := fake.WaitConnected(wctx, want); err != nil {
		t.Fatalf("bot did not connect: %v\nlogs:\n%s", err, logs.String())
	}
	return &Harness{T: t, Slack: fake, Sim: srv, SimURL: base, Logs: logs, stop: stop, Env: settings}
}

// Stop stops the bot (once; later calls return the first result) and
// returns Serve's error.
func (h *Harness) Stop() error { return h.stop() }

// Ctx is a context that ends after d or when the test ends.
func (h *Harness) Ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	h.T.Cleanup(cancel)
	return ctx
}

// Post delivers Alice's message text in Channel.
func (h *Harness) Post(text string) slackfake.Delivery {
	h.T.Helper()
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: Channel, User: Alice, Text: text})
	if err != nil {
		h.T.Fatal(err)
	}
	return d
}

// WaitCard waits until the thread of threadTS in Channel holds a bot
// message whose blocks (BlocksText) satisfy ok, and returns it.
func (h *Harness) WaitCard(threadTS string, ok func(blocks string) bool) slackfake.Message {
	h.T.Helper()
	return h.WaitCardWithin(15*time.Second, threadTS, ok)
}

// WaitCardWithin is WaitCard with its own bound.
func (h *Harness) WaitCardWithin(within time.Duration, threadTS string, ok func(blocks string) bool) slackfake.Message {
	h.T.Helper()
	return h.waitCard(within, Channel, threadTS, "thread "+threadTS, ok)
}

// WaitCardIn is WaitCard in channel, waiting up to 20 s.
func (h *Harness) WaitCardIn(channel, threadTS string, ok func(string) bool) slackfake.Message {
	h.T.Helper()
	return h.waitCard(20*time.Second, channel, threadTS, channel+"/"+threadTS, ok)
}

// waitCard waits up to within for a bot message in the thread of threadTS
// in channel whose blocks satisfy ok; where names the thread in the
// failure.
func (h *Harness) waitCard(within time.Duration, channel, threadTS, where string, ok func(string) bool) slackfake.Message {
	h.T.Helper()
	var found slackfake.Message
	err := h.Slack.WaitFor(h.Ctx(within), func(st *slackfake.State) bool {
		for _, m := range st.Messages(channel, threadTS) {
			if m.Bot && ok(BlocksText(m.Blocks)) {
				found = m
				return true
			}
		}
		return false
	})
	if err != nil {
		var seen []string
		for _, m := range h.Slack.Messages(channel, threadTS) {
			seen = append(seen, BlocksText(m.Blocks))
		}
		h.T.Fatalf("no matching card in %s: %v\ncards: %q\nlogs:\n%s", where, err, seen, h.Logs.String())
	}
	return found
}

// WaitDeleted waits until the message at ts in Channel is deleted.
func (h *Harness) WaitDeleted(ts string) {
	h.T.Helper()
	err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(Channel, ts)
		return ok && m.Deleted
	})
	if err != nil {
		h.T.Fatalf("message %s not removed: %v\nlogs:\n%s", ts, err, h.Logs.String())
	}
}
