package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// The person who brought a link may not report it as a false positive: a
// false positive clears it for everyone (issue 21, item 9). These tests
// run the real wiring: buttons and /scan report through the fake Slack,
// reports counted at the simulator.

// clickOn delivers user's click on the action of the card at cardTS in
// channel and returns the private answer it got.
func (h *harness) clickOn(channel, cardTS, user, action string) string {
	h.T.Helper()
	before := len(h.Slack.Ephemerals(channel, user))
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: channel, MessageTS: cardTS, ActionID: action}); err != nil {
		h.T.Fatal(err)
	}
	eph, err := h.Slack.WaitEphemerals(h.Ctx(8*time.Second), channel, user, before+1)
	if err != nil {
		h.T.Fatalf("no answer to %s's click: %v", user, err)
	}
	return eph[len(eph)-1].Text
}

// dispositions returns the reports the URL service received for url's
// tasks, as "option/category" strings.
func dispositions(h *harness, url string) []string {
	var out []string
	for _, id := range h.Sim.URLTasks(url) {
		tk, _ := h.Sim.URLTask(id)
		for _, d := range tk.Dispositions {
			out = append(out, d.Option+"/"+d.VerdictType)
		}
	}
	return out
}

func seedReporters(f *slackfake.Server) {
	for _, u := range []slackfake.User{{ID: alice, Name: "alice"}, {ID: bob, Name: "bob"}, {ID: carol, Name: "carol"}, {ID: adminUser, Name: "secadmin"}} {
		f.AddUser(u)
	}
	f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, carol, adminUser}})
}

// TestOwnLinkFalsePositiveIsRefused: the author of a phishing link cannot
// report it as a false positive, by the card's button or by /scan report;
// nothing reaches the service and the card gains no audit line. Their
// false negative is taken; anyone else's false positive is; an admin
// who posted a link may report it.
func TestOwnLinkFalsePositiveIsRefused(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedReporters)
	const url = "https://login.phish.test/own"
	d := h.Post("<" + url + ">") // alice's message
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	task := h.Sim.URLTasks(url)[0]

	if got := h.clickOn(secChannel, card.TS, alice, notify.ActionFalsePositive); got != commands.OwnLinkAnswer {
		t.Errorf("the poster's fp button: %q", got)
	}
	apptest.MustContain(t, h.Slash(alice, "report "+task+" phishing fp"), "You shared this link", "Nothing was sent")
	// Another category picked in the line's menu is the same refusal.
	apptest.MustContain(t, h.Slash(alice, "report "+task+" malicious fp"), "You shared this link")
	if got := dispositions(h, url); len(got) != 0 {
		t.Fatalf("the poster's false positive reached the service: %v", got)
	}
	for _, m := range apptest.BotMessages(h.Slack.Messages(secChannel, d.TS)) {
		if b := apptest.BlocksText(m.Blocks); strings.Contains(b, "reported a false positive") {
			t.Errorf("the refused report is on the card: %s", b)
		}
	}
	if !strings.Contains(h.Logs.String(), "false positive refused: the reporter brought the link") {
		t.Error("no audit line for the refused report")
	}

	// The poster's false negative can only make it worse: taken.
	apptest.MustContain(t, h.clickOn(secChannel, card.TS, alice, notify.ActionFalseNegative), "Thanks")
	// Someone else's false positive is taken, once.
	apptest.MustContain(t, h.clickOn(secChannel, card.TS, carol, notify.ActionFalsePositive), "Thanks")
	if got := dispositions(h, url); strings.Join(got, ",") != "fn/phishing,fp/phishing" {
		t.Fatalf("dispositions %v, want the poster's fn then carol's fp", got)
	}

	// An admin who posted a link may report it.
	const adminURL = "https://admin-login.phish.test/x"
	da, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: adminUser, Text: "<" + adminURL + ">"})
	if err != nil {
		t.Fatal(err)
	}
	ac := h.WaitCard(da.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	apptest.MustContain(t, h.clickOn(secChannel, ac.TS, adminUser, notify.ActionFalsePositive), "Thanks")
	if got := dispositions(h, adminURL); len(got) != 1 {
		t.Errorf("the admin's report on their own link: %v", got)
	}
}

// TestOwnLinkFalsePositiveAcrossMessagesEditsAndDMs: the poster is per
// message, and a false positive is per task: whoever posted the link in
// any message showing the task is refused on every card of it; an edit
// keeps the poster; a card in someone's DM with the bot is theirs; a
// /scan card is its requester's, a shortcut's is the message author's.
// (Its links are submitted at once: fastBudgets.)
func TestOwnLinkFalsePositiveAcrossMessagesEditsAndDMs(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, fastBudgets, sim.Config{}, false, seedReporters)
	const url = "https://login.phish.test/twice"
	post := func(user, text string) (string, string) {
		t.Helper()
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: user, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		c := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
		return d.TS, c.TS
	}
	aliceMsg, aliceCard := post(alice, "first <"+url+">")
	_, bobCard := post(bob, "again <"+url+">")
	if n := len(h.Sim.URLTasks(url)); n != 1 {
		t.Fatalf("%d tasks, want one shared by both messages", n)
	}
	// Each poster is refused on the other's card too: one task, one verdict.
	for _, tc := range []struct{ user, cardTS string }{{alice, bobCard}, {bob, aliceCard}, {bob, bobCard}} {
		if got := h.clickOn(secChannel, tc.cardTS, tc.user, notify.ActionFalsePositive); got != commands.OwnLinkAnswer {
			t.Errorf("%s on card %s: %q", tc.user, tc.cardTS, got)
		}
	}

	// Alice edits her message (a link added, the phishing one kept): the
	// card is rescanned, and still hers.
	if _, err := h.Slack.EditMessage(secChannel, aliceMsg, "edited <"+url+"> <https://example.com/edit>"); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(aliceMsg, func(b string) bool {
		return strings.Contains(b, "example[.]com/edit") && strings.Contains(b, notify.ActionFalsePositive) && !strings.Contains(b, "Scanning")
	})
	if got := h.clickOn(secChannel, aliceCard, alice, notify.ActionFalsePositive); got != commands.OwnLinkAnswer {
		t.Errorf("after the edit: %q", got)
	}

	// A card in alice's DM with the bot: the link is hers.
	dm := h.Slack.IMWith(alice)
	const dmURL = "https://dm-login.phish.test/x"
	dd, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: dm, User: alice, Text: "is this ok? <" + dmURL + ">"})
	if err != nil {
		t.Fatal(err)
	}
	var dmCard slackfake.Message
	if err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.Messages(dm, dd.TS) {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), notify.ActionFalsePositive) {
				dmCard = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no card in the DM: %v", err)
	}
	if got := h.clickOn(dm, dmCard.TS, alice, notify.ActionFalsePositive); got != commands.OwnLinkAnswer {
		t.Errorf("in her DM: %q", got)
	}

	// /scan <url>: the card is the requester's.
	const scanURL = "https://scan-login.phish.test/x"
	apptest.MustContain(t, h.Slash(carol, scanURL), "Checking 1 link")
	sc := h.WaitCard("", func(b string) bool {
		return strings.Contains(b, "scan-login") && strings.Contains(b, notify.ActionFalsePositive)
	})
	if got := h.clickOn(secChannel, sc.TS, carol, notify.ActionFalsePositive); got != commands.OwnLinkAnswer {
		t.Errorf("the /scan requester: %q", got)
	}

	for _, u := range []string{url, dmURL, scanURL} {
		if got := dispositions(h, u); len(got) != 0 {
			t.Errorf("%s: a false positive from its poster reached the service: %v", u, got)
		}
	}
	// Someone who brought none of them may report: carol on the link
	// alice and bob posted, alice on carol's /scan card.
	apptest.MustContain(t, h.clickOn(secChannel, aliceCard, carol, notify.ActionFalsePositive), "Thanks")
	apptest.MustContain(t, h.clickOn(secChannel, sc.TS, alice, notify.ActionFalsePositive), "Thanks")
}
