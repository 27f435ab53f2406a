package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// Issue 21, item 1: asking for a scan (the "Scan this message" shortcut,
// `@verdictbot scan`) never weakens the automatic one. The requester gets a
// private answer; the message's own card, its quarantine state and its
// Release button stay as they are; quarantine and rechecks act on the
// message whoever asked.

// slowURL makes a URL analysis take about 3 s, so a request can arrive
// while the message's own card is still scanning. Its task is pending for
// 0.2 s only: on the production's learned schedule a task still pending
// at the first check (1 s) is checked next about 12 s after its
// submission, which is the schedule's business, not these tests'.
var slowURL = sim.Profile{Name: "e2e-slow", URLPending: 200 * time.Millisecond, URLProcessing: 2800 * time.Millisecond}

// startQuarantineWith is startQuarantine with the simulator's profile.
func startQuarantineWith(t *testing.T, env map[string]string, profile sim.Profile) *harness {
	t.Helper()
	seed := func(f *slackfake.Server) {
		f.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
		f.AddUser(slackfake.User{ID: alice, Name: "alice"})
		f.AddUser(slackfake.User{ID: bob, Name: "bob"})
		f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, adminUser}})
	}
	return &harness{apptest.StartQuarantineOptions(t, env, sim.Config{Profile: profile}, seed, adminUser, apptest.QuickPolling())}
}

// waitSubmitted waits until the URL service has a task for url: the
// message's own scan has begun (its card exists before it submits).
func (h *harness) waitSubmitted(url string) {
	h.T.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(h.Sim.URLTasks(url)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.T.Fatalf("%s was never submitted\nlogs:\n%s", url, h.Logs.String())
		}
	}
}

// TestShortcutBeforeTheVerdictStillQuarantines: in a quiet channel that
// quarantines malicious messages, bob uses "Scan this message" on alice's
// phishing message while its verdict is still being worked out. The
// message is removed all the same; its one card (not a second, not a
// "requested" one) becomes the tombstone with the Release button; bob is
// answered privately; the link is submitted once.
func TestShortcutBeforeTheVerdictStillQuarantines(t *testing.T) {
	t.Parallel()
	h := startQuarantineWith(t, nil, slowURL)
	const url = "https://secure-login.phish.test/verify/asked"
	d := h.Post("urgent: <" + url + ">")
	h.waitSubmitted(url)
	h.Shortcut(bob, d.TS)
	eph := h.Answers(bob, 1)
	apptest.MustContain(t, eph[0].Text, "is being checked now", "nothing was started again", "its card appears in the thread if anything needs attention")

	h.WaitDeleted(d.TS)
	card := h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Quarantined:") && strings.Contains(b, notify.ActionQuarantineRelease)
	})
	if b := apptest.BlocksText(card.Blocks); strings.Contains(b, "requested by") {
		t.Errorf("the message's card was replaced by a requested one:\n%s", b)
	}
	if cards := apptest.BotMessages(h.Slack.Messages(secChannel, d.TS)); len(cards) != 1 {
		t.Errorf("%d bot messages in the thread, want the one card", len(cards))
	}
	if n := len(h.Sim.URLTasks(url)); n != 1 {
		t.Errorf("%d submissions of the link, want 1", n)
	}
	// The author was told; the requester's answer leaks nothing live.
	h.Answers(alice, 1)
	if strings.Contains(eph[0].Text, "https://") {
		t.Errorf("the answer carries a live link: %q", eph[0].Text)
	}
}

// TestShortcutOnAMessageWithoutACardIsActedOn: a message that never had a
// card (posted while the channel was off) is checked on request, and its
// card is acted on like any other once the channel quarantines: the
// request's card is the message's card.
func TestShortcutOnAMessageWithoutACardIsActedOn(t *testing.T) {
	t.Parallel()
	h := startQuarantineWith(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Profile{})
	d := h.Post("from before: <https://secure-login.phish.test/verify/old>")
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	h.Shortcut(bob, d.TS)
	apptest.MustContain(t, h.Answers(bob, 1)[0].Text, "Checking that message")
	h.WaitDeleted(d.TS)
	card := h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Quarantined:") && strings.Contains(b, notify.ActionQuarantineRelease)
	})
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "requested by <@"+bob+">")
}

// TestMentionScanInAQuarantinedThreadLeavesTheTombstone: once quarantine
// removed a message, `@verdictbot scan` in its thread (Slack then returns
// a "This message was deleted." placeholder as the thread's first
// message) leaves the tombstone exactly as it is — same blocks, Release
// button still there and still working — posts nothing to the channel,
// sends nothing to the service, and answers privately without repeating
// the removed message or its link.
func TestMentionScanInAQuarantinedThreadLeavesTheTombstone(t *testing.T) {
	t.Parallel()
	h := startQuarantineWith(t, nil, sim.Profile{})
	const url = "https://login.phish.test/account/tombstone"
	d := h.Post("please log in here <" + url + "> before friday")
	h.WaitDeleted(d.TS)
	tomb := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionQuarantineRelease) })
	h.Answers(alice, 1) // the author's notice
	posts, updates, scans := len(h.Slack.Calls("chat.postMessage")), len(h.Slack.Calls("chat.update")), h.Sim.Count(sim.ServiceReputation, sim.OpScan)

	mention := "<@" + h.Slack.BotUserID() + ">"
	for _, who := range []string{bob, bob, alice} {
		if _, _, err := h.Slack.Mention(slackfake.MessageEvent{Channel: secChannel, User: who, ThreadTS: d.TS, Text: mention + " scan"}); err != nil {
			t.Fatal(err)
		}
	}
	ans := h.Answers(bob, 2)
	all := append(ans, h.Answers(alice, 2)[1])
	for _, e := range all {
		apptest.MustContain(t, e.Text, "removed by quarantine", "found *malicious*", "only an admin can release it")
		for _, leak := range []string{"login.phish", "login[.]phish", "log in here", "friday"} {
			if strings.Contains(e.Text, leak) {
				t.Errorf("the answer repeats the removed message (%q): %q", leak, e.Text)
			}
		}
		if e.ThreadTS != d.TS {
			t.Errorf("answer in thread %q, want %q", e.ThreadTS, d.TS)
		}
	}
	now, _ := h.Slack.Message(secChannel, tomb.TS)
	if string(now.Blocks) != string(tomb.Blocks) {
		t.Errorf("the tombstone changed:\nbefore %s\nafter  %s", apptest.BlocksText(tomb.Blocks), apptest.BlocksText(now.Blocks))
	}
	if p, u, s := len(h.Slack.Calls("chat.postMessage")), len(h.Slack.Calls("chat.update")), h.Sim.Count(sim.ServiceReputation, sim.OpScan); p != posts || u != updates || s != scans {
		t.Errorf("after the mentions: %d posts (was %d), %d updates (was %d), %d scans (was %d)", p, posts, u, updates, s, scans)
	}
	if m, _ := h.Slack.Message(secChannel, d.TS); !m.Deleted {
		t.Error("the removed message is back")
	}
	// The Release button still works.
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: adminUser, Channel: secChannel, MessageTS: tomb.TS,
		ActionID: notify.ActionQuarantineRelease}); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Released") && strings.Contains(b, "<@"+adminUser+">") })
}

// TestRecheckActsOnAMessageSomeoneAskedToScan: a clean message in a quiet
// quarantine channel (only ✅): bob asks about it and is shown its card
// privately (the channel stays quiet), and when a recheck flips the link
// to phishing the message is removed all the same.
func TestRecheckActsOnAMessageSomeoneAskedToScan(t *testing.T) {
	t.Parallel()
	h := startQuarantineWith(t, map[string]string{
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "2s,1h",
	}, sim.Profile{})
	d := h.Post("our new landing page <https://promo.flip.test/asked>")
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, d.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatalf("first verdict (clean) not shown: %v", err)
	}
	h.Shortcut(bob, d.TS)
	eph := h.Answers(bob, 2) // the card, privately, then the answer
	apptest.MustContain(t, apptest.BlocksText(eph[0].Blocks), "Clean", "promo[.]flip[.]test/asked")
	apptest.MustContain(t, eph[1].Text, "was checked already: *clean*", "shown to you alone")
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 0 {
		t.Errorf("%d cards posted in the quiet channel on request", n)
	}

	h.WaitDeleted(d.TS)
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Rechecked") && strings.Contains(b, "Quarantined:") && strings.Contains(b, notify.ActionQuarantineRelease)
	})
	if cards := apptest.BotMessages(h.Slack.Messages(secChannel, d.TS)); len(cards) < 1 || !strings.Contains(apptest.BlocksText(cards[0].Blocks), "Quarantined:") {
		t.Errorf("the first bot message in the thread is not the tombstone")
	}
}

// TestRepeatedRequestsStartOneCheck: bob hammers the shortcut on a message
// with no card (an off channel): every click is answered, but one card is
// posted, one generation is begun, the link is submitted once, and the
// card is updated no more than a card asked for once. The two messages
// are checked side by side (the vendor's pace, fastBudgets, is not what
// this is about), on the same polling schedule.
func TestRepeatedRequestsStartOneCheck(t *testing.T) {
	t.Parallel()
	h := startBot(t, withEnv(fastBudgets, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}), sim.Config{Profile: slowURL})
	updatesOf := func(cardTS string) int {
		n := 0
		for _, c := range h.Slack.Calls("chat.update") {
			if c.Params.Get("ts") == cardTS {
				n++
			}
		}
		return n
	}
	// Asked once: the yardstick.
	once := h.Post("and <https://example.org/asked-once>?")
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), once.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	h.Shortcut(bob, once.TS)
	h.Answers(bob, 1)

	const url = "https://example.org/hammered"
	d := h.Post("can someone check <" + url + ">?")
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	const clicks = 20
	for range clicks {
		h.Shortcut(bob, d.TS)
	}
	eph := h.Answers(bob, 1+clicks)[1:]
	checking := 0
	var texts []string
	for _, e := range eph {
		texts = append(texts, e.Text)
		if strings.Contains(e.Text, "Checking that message") {
			checking++
		}
	}
	if checking != 1 {
		t.Errorf("%d answers started a check, want 1: %q", checking, texts)
	}
	onceCard := h.WaitCard(once.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	if n := len(h.Sim.URLTasks(url)); n != 1 {
		t.Errorf("%d submissions, want 1", n)
	}
	if cards := apptest.BotMessages(h.Slack.Messages(secChannel, d.TS)); len(cards) != 1 {
		t.Errorf("%d cards, want 1", len(cards))
	}
	if n := strings.Count(h.Logs.String(), `"msg":"scanning message"`); n != 2 {
		t.Errorf("%d card generations begun for two messages, want 2", n)
	}
	if got, yardstick := updatesOf(card.TS), updatesOf(onceCard.TS); got > yardstick+1 {
		t.Errorf("the hammered card was updated %d times, one asked about once %d", got, yardstick)
	}
}

// TestRequestAnswers: what a request on each kind of message answers, and
// that none of them begins a second card: the bot's own card, a message
// with nothing to check, a reply in a thread (its card goes in the
// thread), and a direct message with the bot (already answered there).
func TestRequestAnswers(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{}, false, seedHome)
	bad := h.Post("<https://evil.test/asked-about>")
	card := h.WaitCard(bad.TS, func(b string) bool { return strings.Contains(b, "Malicious") })

	h.Shortcut(bob, card.TS) // the bot's own card
	apptest.MustContain(t, h.Answers(bob, 1)[0].Text, "one of my own messages")
	h.Shortcut(bob, bad.TS) // a message with its card
	apptest.MustContain(t, h.Answers(bob, 2)[1].Text, "was checked already and found *malicious*", "see its card in the thread")
	plain := h.Post("no links here")
	h.Shortcut(bob, plain.TS)
	apptest.MustContain(t, h.Answers(bob, 3)[2].Text, "nothing in that message for me to check")

	// A reply in a thread, in a quiet channel: the clean reply had only
	// the reaction; asked about, its card is shown to the asker alone, in
	// the thread.
	reply, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, ThreadTS: bad.TS, Text: "mirror: <https://example.com/mirror>"})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, reply.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Shortcut(bob, reply.TS)
	eph := h.Answers(bob, 5) // the reply's card, privately, in the thread; then the answer
	apptest.MustContain(t, apptest.BlocksText(eph[3].Blocks), "example[.]com/mirror", "Clean")
	if eph[3].ThreadTS != bad.TS {
		t.Errorf("the private card is in thread %q, want %q", eph[3].ThreadTS, bad.TS)
	}
	apptest.MustContain(t, eph[4].Text, "was checked already: *clean*", "shown to you alone")
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Errorf("%d scans, want 2 (nothing scanned again on request)", n)
	}
	var sections []string
	for _, m := range apptest.BotMessages(h.Slack.Messages(secChannel, bad.TS)) {
		var blocks []struct {
			BlockID string `json:"block_id"`
		}
		_ = json.Unmarshal(m.Blocks, &blocks)
		if len(blocks) > 0 {
			sections = append(sections, blocks[0].BlockID)
		}
	}
	if want := []string{"summary:" + bad.TS}; fmt.Sprint(sections) != fmt.Sprint(want) {
		t.Errorf("cards in the thread %v, want the malicious message's only %v", sections, want)
	}

	// A DM with the bot: its card is in the DM already.
	dm := h.Slack.IMWith(alice)
	dd, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: dm, User: alice, Text: "<https://evil.test/in-my-dm>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCardIn(dm, dd.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: alice, Channel: dm, MessageTS: dd.TS}); err != nil {
		t.Fatal(err)
	}
	eph, err = h.Slack.WaitEphemerals(h.Ctx(10*time.Second), dm, alice, 1)
	if err != nil {
		t.Fatal(err)
	}
	apptest.MustContain(t, eph[0].Text, "was checked already and found *malicious*")
	if n := len(apptest.BotMessages(h.Slack.Messages(dm, dd.TS))); n != 1 {
		t.Errorf("%d cards in the DM thread, want 1", n)
	}
}
