package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/triage"
)

const secOps = "C0SECOPS"

// triageCard waits for the triage card in the report channel whose text
// satisfies ok, and returns it rendered.
func (h *harness) triageCard(ok func(string) bool) (slackfake.Message, string) {
	h.T.Helper()
	var found slackfake.Message
	err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(secOps, "") {
			if strings.Contains(apptest.BlocksText(m.Blocks), "reported to security") && ok(apptest.BlocksText(m.Blocks)) {
				found = m
				return true
			}
		}
		return false
	})
	if err != nil {
		var seen []string
		h.Slack.Inspect(func(st *slackfake.State) {
			for _, m := range st.BotMessages(secOps, "") {
				seen = append(seen, apptest.BlocksText(m.Blocks))
			}
		})
		h.T.Fatalf("no matching triage card: %v\ncards: %q\nlogs:\n%s", err, seen, h.Logs.String())
	}
	return found, apptest.BlocksText(found.Blocks)
}

// TestReportToSecurity: members report a message the services call clean
// (issue 25, item 2): each is thanked privately; their reports gather on
// one triage card in the report channel, which names the message, its
// author and its link with the verdict, but not its text; a second report
// by the same person is refused kindly; only an admin triages; the
// admin's "Confirm malicious" reports a false negative, removes the
// message (quarantine is on) and tells both reporters in their DM with
// the bot; the reports are OCSF events.
func TestReportToSecurity(t *testing.T) {
	t.Parallel()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	seed := func(f *slackfake.Server) {
		apptest.SeedQuarantine(f)
		f.AddUser(slackfake.User{ID: bob, Name: "bob"})
		f.AddUser(slackfake.User{ID: "U0MALLORY", Name: "mallory"})
		f.AddChannel(slackfake.Channel{ID: secOps, Name: "secops"})
	}
	h := &harness{apptest.StartBotFull(t, apptest.QuarantineSettings(map[string]string{
		"VERDICTBOT_REPORT_CHANNEL": secOps, "VERDICTBOT_EVENTS_FILE": eventsFile}),
		sim.Config{}, false, seed, apptest.QuickPolling(), apptest.WithAdminToken(adminUser))}
	const text = "hi team, the new expense portal: <https://expenses.example.com/login> (log in before friday)"
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: "U0MALLORY", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	report := func(user string) {
		t.Helper()
		if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: triage.ShortcutReport, UserID: user,
			Channel: secChannel, MessageTS: d.TS}); err != nil {
			t.Fatal(err)
		}
	}
	report(alice)
	thanks := h.Answers(alice, 1)
	if got := thanks[0].Text; !strings.Contains(got, "reported to the security team") || !strings.Contains(got, "<#"+secOps+">") {
		t.Errorf("Alice was told %q", got)
	}
	card, rendered := h.triageCard(func(b string) bool { return strings.Contains(b, "clean") })
	t.Logf("triage card after one report:\n%s", rendered)
	for _, want := range []string{"<@U0MALLORY>", "<@" + alice + ">", "1 report", "hxxps://expenses[.]example[.]com/login", "Confirm malicious", "Not a threat", "Assign to me"} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the triage card lacks %q:\n%s", want, rendered)
		}
	}
	if strings.Contains(rendered, "expense portal") {
		t.Errorf("the triage card copies the message's text:\n%s", rendered)
	}
	// The same person again; then Bob: one card, two reports.
	report(alice)
	if got := h.Answers(alice, 2)[1].Text; !strings.Contains(got, "already reported") {
		t.Errorf("Alice's second report was answered %q", got)
	}
	report(bob)
	// Bob is thanked (and, the message having a card by now, shown it
	// privately, as the scan shortcut does).
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, e := range st.Ephemerals(secChannel, bob) {
			if strings.Contains(e.Text, "reported to the security team") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Errorf("Bob was not thanked: %v", err)
	}
	card, _ = h.triageCard(func(b string) bool { return strings.Contains(b, "2 reports") })
	var cards int
	h.Slack.Inspect(func(st *slackfake.State) { cards = len(st.BotMessages(secOps, "")) })
	if cards != 1 {
		t.Errorf("%d triage cards for one message, want 1", cards)
	}
	// Bob is not an admin.
	click := func(user, action string) {
		t.Helper()
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: secOps, MessageTS: card.TS, ActionID: action}); err != nil {
			t.Fatal(err)
		}
	}
	click(bob, triage.ActionConfirm)
	if eph, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), secOps, bob, 1); err != nil || !strings.Contains(eph[0].Text, "Only admins") {
		t.Fatalf("Bob's click: %v %v", eph, err)
	}
	// The admin confirms it.
	click(adminUser, triage.ActionConfirm)
	_, rendered = h.triageCard(func(b string) bool { return strings.Contains(b, "Confirmed malicious") })
	t.Logf("triage card after the admin's decision:\n%s", rendered)
	if strings.Contains(rendered, "Not a threat") {
		t.Errorf("the decided card still has the buttons:\n%s", rendered)
	}
	err = h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, d.TS)
		return ok && m.Deleted
	})
	if err != nil {
		t.Fatalf("the confirmed message was not removed: %v\nlogs:\n%s", err, h.Logs.String())
	}
	if n := h.Sim.Count("reputation", sim.OpVerdictReport); n < 1 {
		t.Errorf("%d reports to the URL service, want the false negative", n)
	}
	for _, user := range []string{alice, bob} {
		dm := h.Slack.IMWith(user)
		err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
			for _, m := range st.BotMessages(dm, "") {
				if strings.Contains(m.Text, "it is malicious") {
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Errorf("%s was not told the outcome in their DM: %v", user, err)
		}
	}
	var told string
	aliceDM := h.Slack.IMWith(alice)
	h.Slack.Inspect(func(st *slackfake.State) {
		if ms := st.BotMessages(aliceDM, ""); len(ms) > 0 {
			told = ms[0].Text
		}
	})
	t.Logf("Alice was told: %s", told)
	b, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"kind":"user_report"`); n != 3 {
		t.Errorf("%d user_report events, want 3 (two reports, one decision)", n)
	}
}

// TestReportByReactionAndDismissal: with VERDICTBOT_REPORT_EMOJI set, that
// reaction reports the message (any other reaction is acked and dropped
// unread); an admin takes it (Assign to me) and finds it not a threat;
// the reporter is told so, and sees the outcome in the App Home.
func TestReportByReactionAndDismissal(t *testing.T) {
	t.Parallel()
	seed := func(f *slackfake.Server) {
		apptest.SeedQuarantine(f)
		f.AddUser(slackfake.User{ID: "U0MALLORY", Name: "mallory"})
		f.AddChannel(slackfake.Channel{ID: secOps, Name: "secops"})
	}
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_REPORT_CHANNEL": secOps, "VERDICTBOT_REPORT_EMOJI": ":phish:"},
		sim.Config{}, false, seed, apptest.QuickPolling())}
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: "U0MALLORY", Text: "lunch menu: <https://example.com/menu>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	before := len(h.Slack.Calls("conversations.replies"))
	thumbs, err := h.Slack.DeliverReaction(slackfake.ReactionEvent{User: alice, Channel: secChannel, TS: d.TS, Reaction: "thumbsup"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), thumbs.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.DeliverReaction(slackfake.ReactionEvent{User: alice, Channel: secChannel, TS: d.TS, Reaction: "phish"}); err != nil {
		t.Fatal(err)
	}
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, e := range st.Ephemerals(secChannel, alice) {
			if strings.Contains(e.Text, "reported to the security team") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("Alice's reaction did not report the message: %v\nlogs:\n%s", err, h.Logs.String())
	}
	if n := len(h.Slack.Calls("conversations.replies")) - before; n != 1 {
		t.Errorf("%d conversations.replies for two reactions, want 1 (the thumbs-up is dropped unread)", n)
	}
	card, _ := h.triageCard(func(b string) bool { return strings.Contains(b, "<@"+alice+">") })
	for _, action := range []string{triage.ActionAssign, triage.ActionDismiss} {
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: adminUser, Channel: secOps, MessageTS: card.TS, ActionID: action}); err != nil {
			t.Fatal(err)
		}
		if action == triage.ActionAssign {
			h.triageCard(func(b string) bool { return strings.Contains(b, "assigned to <@"+adminUser+">") })
		}
	}
	_, rendered := h.triageCard(func(b string) bool {
		return strings.Contains(b, "Not a threat") && !strings.Contains(b, "report_confirm")
	})
	t.Logf("dismissed: %s", rendered)
	dm := h.Slack.IMWith(alice)
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(dm, "") {
			if strings.Contains(m.Text, "not a threat") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Errorf("Alice was not told the outcome: %v", err)
	}
	if m, _ := h.Slack.Message(secChannel, d.TS); m.Deleted {
		t.Error("a dismissed report removed the message")
	}
	home := homeText(h.openHome(alice, 1).Blocks)
	if !strings.Contains(home, "Messages you reported to security") || !strings.Contains(home, "not a threat") {
		t.Errorf("Alice's Home does not show her report's outcome:\n%s", home)
	}
}
