package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// The end-to-end tests below run `verdictbot run`'s real wiring (serve)
// against the fake Slack (Web API + Socket Mode over real sockets) and the
// simulator of both services (real HTTP). Each builds its settings as a
// map and loads them with package config, as `run` loads the environment.

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
func startBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o app.Options, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotFull(t, env, simCfg, false, nil, o, opts...)
}

// startBotFull starts serve with the settings env over the harness's
// (a fake Slack, the simulator, a data directory of its own) and the
// options o.
func startBotFull(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed seedSlack, o app.Options, opts ...slackfake.Option) *harness {
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

func TestLinkGetsACardInTheThread(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.post("please check <https://secure-login.phish.test/verify?a=1&amp;b=2|our bank> thanks")
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if card.ThreadTS != d.TS {
		t.Fatalf("card not in the message's thread: %q", card.ThreadTS)
	}
	blocks := blocksText(card.Blocks)
	for _, want := range []string{"hxxps://secure-login[.]phish[.]test/verify", notify.ActionFalsePositive, notify.ActionFalseNegative, notify.ActionRestore, "97"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("card lacks %q:\n%s", want, blocks)
		}
	}
	if strings.Contains(blocks, "https://secure-login.phish.test") || strings.Contains(card.Text, "https://") {
		t.Error("card carries a live link")
	}
	if card.UnfurlLinks == nil || *card.UnfurlLinks || card.UnfurlMedia == nil || *card.UnfurlMedia {
		t.Errorf("unfurls not turned off: %v %v", card.UnfurlLinks, card.UnfurlMedia)
	}
	// The simulator saw exactly one submission of the normalised URL.
	if tasks := h.sim.URLTasks("https://secure-login.phish.test/verify?a=1&b=2"); len(tasks) != 1 {
		t.Fatalf("tasks for the URL: %v (requests %v)", tasks, h.sim.Requests())
	}
	// Verbose: one card, posted at once and updated in place.
	if n := len(botMessages(h.slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d bot messages in the thread, want 1", n)
	}
}

func TestReplyInAThreadAnswersInThatThread(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	root := h.post("root message")
	d, err := h.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, ThreadTS: root.TS, Text: "<https://evil.test/x>"})
	if err != nil {
		t.Fatal(err)
	}
	card := h.waitCard(root.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if card.ThreadTS != root.TS || d.TS == root.TS {
		t.Fatalf("card thread %q, want root %q", card.ThreadTS, root.TS)
	}
}

func TestQuietChannelReactsToCleanAndCardsTheRest(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	clean := h.post("docs at <https://example.com/guide>")
	bad := h.post("free money <http://casino-bonus.test/>")
	h.waitCard(bad.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	err := h.slack.WaitFor(h.ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, clean.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatalf("clean message got no reaction: %v", err)
	}
	if n := len(botMessages(h.slack.Messages(secChannel, clean.TS))); n != 0 {
		t.Fatalf("quiet channel: %d bot messages for a clean link", n)
	}
	// Nothing was posted before the verdict: exactly one bot message for the bad link.
	if n := len(botMessages(h.slack.Messages(secChannel, bad.TS))); n != 1 {
		t.Fatalf("%d bot messages for the bad link, want 1", n)
	}
}

func TestRedeliveredEnvelopeMakesOneCard(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.post("<https://evil-downloads.test/payload.exe>")
	if _, err := h.slack.Redeliver(d.EventID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.slack.Redeliver(d.EventID); err != nil {
		t.Fatal(err)
	}
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if err := h.slack.WaitAcked(h.ctx(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a second card, if any, would be posted by now
	if n := len(botMessages(h.slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards for one message delivered three times", n)
	}
	if n := len(h.sim.URLTasks("https://evil-downloads.test/payload.exe")); n != 1 {
		t.Fatalf("%d submissions", n)
	}
	for _, e := range h.slack.EventEnvelopes(d.EventID) {
		if !e.Acked() {
			t.Errorf("envelope %s (retry %d) not acked", e.ID, e.RetryAttempt)
		}
	}
}

func TestDisconnectReconnectsAndCarriesOn(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	h.slack.Disconnect("refresh_requested")
	if err := h.slack.WaitConnected(h.ctx(15*time.Second), 2); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	d := h.post("<https://evil.test/after-reconnect>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	h.slack.DropConnection()
	if err := h.slack.WaitConnected(h.ctx(15*time.Second), 3); err != nil {
		t.Fatalf("no reconnect after a dropped socket: %v", err)
	}
	d = h.post("<https://evil.test/after-drop>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
}

func TestOwnMessagesAreIgnored(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	if _, err := h.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: h.slack.BotUserID(), BotID: h.slack.BotID(),
		AppID: h.slack.AppID(), Text: "my own card mentions <https://evil.test/own>"}); err != nil {
		t.Fatal(err)
	}
	// Another integration's bot message is scanned.
	other, err := h.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, SubType: "bot_message", BotID: "B0MAILGW", Username: "mail-gateway",
		Text: "reported: <https://evil.test/from-mail>"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitCard(other.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if tasks := h.sim.URLTasks("https://evil.test/own"); len(tasks) != 0 {
		t.Fatal("the bot scanned its own message")
	}
}

func TestFeedbackButtonReportsAndShowsTheAuditLine(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.post("<https://login.phish.test/account>") // alice's: bob reports (a poster may not, TestOwnLinkFalsePositiveIsRefused)
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	click := func(user, action string) {
		t.Helper()
		if _, err := h.slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: secChannel, MessageTS: card.TS, ActionID: action}); err != nil {
			t.Fatal(err)
		}
	}
	click(bob, notify.ActionFalsePositive)
	h.waitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+bob+">") && strings.Contains(b, "false positive")
	})
	tasks := h.sim.URLTasks("https://login.phish.test/account")
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	task, _ := h.sim.URLTask(tasks[0])
	if len(task.Dispositions) != 1 || task.Dispositions[0].Option != "fp" || task.Dispositions[0].VerdictType != "phishing" {
		t.Fatalf("the report did not reach the service: %+v", task.Dispositions)
	}
	if _, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, bob, 1); err != nil {
		t.Fatalf("no confirmation: %v", err)
	}
	// The same report again is not sent twice.
	click(bob, notify.ActionFalsePositive)
	if _, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, bob, 2); err != nil {
		t.Fatal(err)
	}
	eph := h.slack.Ephemerals(secChannel, bob)
	if !strings.Contains(eph[len(eph)-1].Text, "already reported") {
		t.Fatalf("second click: %q", eph[len(eph)-1].Text)
	}
	task, _ = h.sim.URLTask(tasks[0])
	if len(task.Dispositions) != 1 {
		t.Fatalf("reported %d times", len(task.Dispositions))
	}
	// Restore is for admins only.
	click(bob, notify.ActionRestore)
	if _, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, bob, 3); err != nil {
		t.Fatal(err)
	}
	eph = h.slack.Ephemerals(secChannel, bob)
	if !strings.Contains(eph[len(eph)-1].Text, "Only admins") {
		t.Fatalf("restore by a non-admin: %q", eph[len(eph)-1].Text)
	}
	click(adminUser, notify.ActionRestore)
	if _, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, adminUser, 1); err != nil {
		t.Fatal(err)
	}
	task, _ = h.sim.URLTask(tasks[0])
	if len(task.Dispositions) != 2 || task.Dispositions[1].Option != "restore" {
		t.Fatalf("dispositions %+v", task.Dispositions)
	}
}

func TestSlack429IsRetried(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	h.slack.RateLimit("chat.postMessage", 1, time.Second)
	d := h.post("<https://evil.test/rate-limited>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	var limited, ok int
	for _, c := range h.slack.Calls("chat.postMessage") {
		if c.Status == 429 {
			limited++
		} else if c.Error == "" {
			ok++
		}
	}
	if limited != 1 || ok < 1 {
		t.Fatalf("postMessage: %d limited, %d ok", limited, ok)
	}
}

func TestServiceOutageSaysCouldNotCheck(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{Faults: sim.Faults{ErrorEvery: 1, ErrorStatus: 503}})
	d := h.post("<https://example.org/outage>")
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(strings.ToLower(b), "could not check") })
	if strings.Contains(string(card.Blocks), e2eKey) {
		t.Fatal("key in card")
	}
}

func TestUndecodableEnvelopeIsAcked(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	frame := `{"envelope_id":"bad-env-1","type":"events_api","accepts_response_payload":false,"payload":{"type":"event_callback","event_id":"Ev0BAD","event":{"type":"message","channel":"C0SEC","blocks":[{"type":"section","text":17}]}}}`
	if _, err := h.slack.DeliverRaw(frame); err != nil {
		t.Fatal(err)
	}
	err := h.slack.WaitFor(h.ctx(5*time.Second), func(st *slackfake.State) bool {
		for _, a := range st.Acks() {
			if a.EnvelopeID == "bad-env-1" {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("undecodable envelope not acked: %v", err)
	}
	// And the bot carries on.
	d := h.post("<https://evil.test/next>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
}

func TestSkippedLinksAreListedNotSent(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_INTERNAL_DOMAINS": "corp.example.net"}, sim.Config{})
	d := h.post("<http://10.1.2.3/admin> <https://wiki.corp.example.net/x> <https://files.slack.com/f> <https://evil.test/y>")
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	blocks := blocksText(card.Blocks)
	for _, want := range []string{"10[.]1[.]2[.]3", "wiki[.]corp[.]example[.]net", "files[.]slack[.]com"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("skipped target %s not listed:\n%s", want, blocks)
		}
	}
	if n := h.sim.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("%d scans, want 1 (only the public link)", n)
	}
}

func TestEditThatChangesLinksRescansUnfurlDoesNot(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.post("see <https://example.com/a>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	if _, err := h.slack.UnfurlMessage(secChannel, d.TS, json.RawMessage(`[{"original_url":"https://example.com/a","title":"Example"}]`)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.slack.EditMessage(secChannel, d.TS, "see <https://evil.test/edited>"); err != nil {
		t.Fatal(err)
	}
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "evil[.]test") && strings.Contains(b, "Malicious") })
	if n := h.sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("%d scans, want 2 (the unfurl is not a change)", n)
	}
	if n := len(botMessages(h.slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards, want the one card updated in place", n)
	}
}

func TestOffChannelsAreNotScanned(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{})
	d := h.post("<https://evil.test/off>")
	if err := h.slack.WaitAcked(h.ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a scan would have been submitted by now
	if n := h.sim.Count(sim.ServiceReputation, ""); n != 0 {
		t.Fatalf("%d requests to the service from an off channel", n)
	}
}

func TestDeletedMessageKeepsItsCardWithANote(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.post("<https://evil.test/to-be-deleted>")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if _, err := h.slack.DeleteMessage(secChannel, d.TS); err != nil {
		t.Fatal(err)
	}
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "was deleted") })
	if !strings.Contains(blocksText(card.Blocks), "Malicious") {
		t.Fatal("the verdict must stay on the card for the record")
	}
}
