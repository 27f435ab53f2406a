package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// The end-to-end tests below run `verdictbot run`'s real wiring (apptest.Serve)
// against the fake Slack (Web API + Socket Mode over real sockets) and the
// simulator of both services (real HTTP). Each builds its settings as a
// map and loads them with package config, as `run` loads the environment.

func TestLinkGetsACardInTheThread(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("please check <https://secure-login.phish.test/verify?a=1&amp;b=2|our bank> thanks")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if card.ThreadTS != d.TS {
		t.Fatalf("card not in the message's thread: %q", card.ThreadTS)
	}
	blocks := apptest.BlocksText(card.Blocks)
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
	if tasks := h.Sim.URLTasks("https://secure-login.phish.test/verify?a=1&b=2"); len(tasks) != 1 {
		t.Fatalf("tasks for the URL: %v (requests %v)", tasks, h.Sim.Requests())
	}
	// Verbose: one card, posted at once and updated in place.
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d bot messages in the thread, want 1", n)
	}
}

func TestReplyInAThreadAnswersInThatThread(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	root := h.Post("root message")
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, ThreadTS: root.TS, Text: "<https://evil.test/x>"})
	if err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(root.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if card.ThreadTS != root.TS || d.TS == root.TS {
		t.Fatalf("card thread %q, want root %q", card.ThreadTS, root.TS)
	}
}

func TestQuietChannelReactsToCleanAndCardsTheRest(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	clean := h.Post("docs at <https://example.com/guide>")
	bad := h.Post("free money <http://casino-bonus.test/>")
	h.WaitCard(bad.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, clean.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatalf("clean message got no reaction: %v", err)
	}
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, clean.TS))); n != 0 {
		t.Fatalf("quiet channel: %d bot messages for a clean link", n)
	}
	// Nothing was posted before the verdict: exactly one bot message for the bad link.
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, bad.TS))); n != 1 {
		t.Fatalf("%d bot messages for the bad link, want 1", n)
	}
}

func TestRedeliveredEnvelopeMakesOneCard(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("<https://evil-downloads.test/payload.exe>")
	if _, err := h.Slack.Redeliver(d.EventID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.Redeliver(d.EventID); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if err := h.Slack.WaitAcked(h.Ctx(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a second card, if any, would be posted by now
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards for one message delivered three times", n)
	}
	if n := len(h.Sim.URLTasks("https://evil-downloads.test/payload.exe")); n != 1 {
		t.Fatalf("%d submissions", n)
	}
	for _, e := range h.Slack.EventEnvelopes(d.EventID) {
		if !e.Acked() {
			t.Errorf("envelope %s (retry %d) not acked", e.ID, e.RetryAttempt)
		}
	}
}

func TestDisconnectReconnectsAndCarriesOn(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	h.Slack.Disconnect("refresh_requested")
	if err := h.Slack.WaitConnected(h.Ctx(15*time.Second), 2); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	d := h.Post("<https://evil.test/after-reconnect>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	h.Slack.DropConnection()
	if err := h.Slack.WaitConnected(h.Ctx(15*time.Second), 3); err != nil {
		t.Fatalf("no reconnect after a dropped socket: %v", err)
	}
	d = h.Post("<https://evil.test/after-drop>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
}

func TestOwnMessagesAreIgnored(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: h.Slack.BotUserID(), BotID: h.Slack.BotID(),
		AppID: h.Slack.AppID(), Text: "my own card mentions <https://evil.test/own>"}); err != nil {
		t.Fatal(err)
	}
	// Another integration's bot message is scanned.
	other, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, SubType: "bot_message", BotID: "B0MAILGW", Username: "mail-gateway",
		Text: "reported: <https://evil.test/from-mail>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCard(other.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if tasks := h.Sim.URLTasks("https://evil.test/own"); len(tasks) != 0 {
		t.Fatal("the bot scanned its own message")
	}
}

func TestFeedbackButtonReportsAndShowsTheAuditLine(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("<https://login.phish.test/account>") // alice's: bob reports (a poster may not, TestOwnLinkFalsePositiveIsRefused)
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	click := func(user, action string) {
		t.Helper()
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: secChannel, MessageTS: card.TS, ActionID: action}); err != nil {
			t.Fatal(err)
		}
	}
	click(bob, notify.ActionFalsePositive)
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+bob+">") && strings.Contains(b, "false positive")
	})
	tasks := h.Sim.URLTasks("https://login.phish.test/account")
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	task, _ := h.Sim.URLTask(tasks[0])
	if len(task.Dispositions) != 1 || task.Dispositions[0].Option != "fp" || task.Dispositions[0].VerdictType != "phishing" {
		t.Fatalf("the report did not reach the service: %+v", task.Dispositions)
	}
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, bob, 1); err != nil {
		t.Fatalf("no confirmation: %v", err)
	}
	// The same report again is not sent twice.
	click(bob, notify.ActionFalsePositive)
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, bob, 2); err != nil {
		t.Fatal(err)
	}
	eph := h.Slack.Ephemerals(secChannel, bob)
	if !strings.Contains(eph[len(eph)-1].Text, "already reported") {
		t.Fatalf("second click: %q", eph[len(eph)-1].Text)
	}
	task, _ = h.Sim.URLTask(tasks[0])
	if len(task.Dispositions) != 1 {
		t.Fatalf("reported %d times", len(task.Dispositions))
	}
	// Restore is for admins only.
	click(bob, notify.ActionRestore)
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, bob, 3); err != nil {
		t.Fatal(err)
	}
	eph = h.Slack.Ephemerals(secChannel, bob)
	if !strings.Contains(eph[len(eph)-1].Text, "Only admins") {
		t.Fatalf("restore by a non-admin: %q", eph[len(eph)-1].Text)
	}
	click(adminUser, notify.ActionRestore)
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, adminUser, 1); err != nil {
		t.Fatal(err)
	}
	task, _ = h.Sim.URLTask(tasks[0])
	if len(task.Dispositions) != 2 || task.Dispositions[1].Option != "restore" {
		t.Fatalf("dispositions %+v", task.Dispositions)
	}
}

func TestSlack429IsRetried(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	h.Slack.RateLimit("chat.postMessage", 1, time.Second)
	d := h.Post("<https://evil.test/rate-limited>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	var limited, ok int
	for _, c := range h.Slack.Calls("chat.postMessage") {
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
	d := h.Post("<https://example.org/outage>")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(strings.ToLower(b), "could not check") })
	if strings.Contains(string(card.Blocks), e2eKey) {
		t.Fatal("key in card")
	}
}

func TestUndecodableEnvelopeIsAcked(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	frame := `{"envelope_id":"bad-env-1","type":"events_api","accepts_response_payload":false,"payload":{"type":"event_callback","event_id":"Ev0BAD","event":{"type":"message","channel":"C0SEC","blocks":[{"type":"section","text":17}]}}}`
	if _, err := h.Slack.DeliverRaw(frame); err != nil {
		t.Fatal(err)
	}
	err := h.Slack.WaitFor(h.Ctx(5*time.Second), func(st *slackfake.State) bool {
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
	d := h.Post("<https://evil.test/next>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
}

func TestSkippedLinksAreListedNotSent(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_INTERNAL_DOMAINS": "corp.example.net"}, sim.Config{})
	d := h.Post("<http://10.1.2.3/admin> <https://wiki.corp.example.net/x> <https://files.slack.com/f> <https://evil.test/y>")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	blocks := apptest.BlocksText(card.Blocks)
	for _, want := range []string{"10[.]1[.]2[.]3", "wiki[.]corp[.]example[.]net", "files[.]slack[.]com"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("skipped target %s not listed:\n%s", want, blocks)
		}
	}
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("%d scans, want 1 (only the public link)", n)
	}
}

func TestEditThatChangesLinksRescansUnfurlDoesNot(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("see <https://example.com/a>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	if _, err := h.Slack.UnfurlMessage(secChannel, d.TS, json.RawMessage(`[{"original_url":"https://example.com/a","title":"Example"}]`)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.EditMessage(secChannel, d.TS, "see <https://evil.test/edited>"); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "evil[.]test") && strings.Contains(b, "Malicious") })
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("%d scans, want 2 (the unfurl is not a change)", n)
	}
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards, want the one card updated in place", n)
	}
}

func TestOffChannelsAreNotScanned(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{})
	d := h.Post("<https://evil.test/off>")
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a scan would have been submitted by now
	if n := h.Sim.Count(sim.ServiceReputation, ""); n != 0 {
		t.Fatalf("%d requests to the service from an off channel", n)
	}
}

func TestDeletedMessageKeepsItsCardWithANote(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("<https://evil.test/to-be-deleted>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if _, err := h.Slack.DeleteMessage(secChannel, d.TS); err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "was deleted") })
	if !strings.Contains(apptest.BlocksText(card.Blocks), "Malicious") {
		t.Fatal("the verdict must stay on the card for the record")
	}
}
