package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestShortcutInAForeignDMSendsNothing: Slack offers the "Scan this
// message" shortcut in any conversation, someone else's DMs and group DMs
// included, message and all. In a DM, a group DM or a channel the bot is
// not in, the shortcut answers the user privately (through its
// response_url: the bot cannot post there) and sends nothing to the
// services; in the user's own DM with the bot it scans as before.
func TestShortcutInAForeignDMSendsNothing(t *testing.T) {
	t.Parallel()
	const (
		foreignDM        = "D0ALICEBOB"
		groupDM          = "G0MPDM"
		privateElsewhere = "G0HR"
		publicElsewhere  = "C0RANDOM"
	)
	h := startBotSeeded(t, nil, sim.Config{}, false, func(f *slackfake.Server) {
		seedReporters(f)
		f.AddChannel(slackfake.Channel{ID: foreignDM, IM: true, IMUser: bob, NotMember: true, Members: []string{alice, bob}})
		f.AddChannel(slackfake.Channel{ID: groupDM, Name: "mpdm-alice--bob--carol-1", MPIM: true, NotMember: true, Members: []string{alice, bob, carol}})
		f.AddChannel(slackfake.Channel{ID: privateElsewhere, Name: "hr-private", Private: true, NotMember: true, Members: []string{alice, bob}})
		f.AddChannel(slackfake.Channel{ID: publicElsewhere, Name: "random", NotMember: true, Members: []string{alice, bob}})
	})
	shortcut := func(channel, ts string) string {
		t.Helper()
		d, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: commands.ShortcutScanMessage, UserID: alice, Channel: channel, MessageTS: ts})
		if err != nil {
			t.Fatal(err)
		}
		var answer string
		err = h.Slack.WaitFor(h.Ctx(8*time.Second), func(st *slackfake.State) bool {
			for _, p := range st.ResponsePosts() {
				if p.EnvelopeID == d.EnvelopeID {
					answer = p.Text
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Errorf("no private answer to the shortcut in %s: %v", channel, err)
		}
		return answer
	}
	for _, tc := range []struct{ channel, user, url string }{
		{foreignDM, bob, "https://login.phish.test/dm-secret"},
		{groupDM, carol, "https://login.phish.test/group-secret"},
	} {
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: tc.channel, User: tc.user, Text: "between us <" + tc.url + ">"})
		if err != nil {
			t.Fatal(err)
		}
		answer := shortcut(tc.channel, d.TS)
		apptest.MustContain(t, answer, "not part of", "nothing was sent")
		if n := h.Sim.Count(sim.ServiceReputation, ""); n != 0 {
			t.Errorf("%s: %d requests reached the URL service: %v", tc.channel, n, h.Sim.Requests())
		}
		if strings.Contains(h.Logs.String(), "dm-secret") || strings.Contains(h.Logs.String(), "group-secret") {
			t.Errorf("%s: the message's link is in the logs", tc.channel)
		}
		for _, m := range h.Slack.Messages(tc.channel, "") {
			if m.Bot {
				t.Errorf("%s: the bot posted %q", tc.channel, m.Text)
			}
		}
	}
	// A private channel and a public one the bot was not invited to: the
	// same, with an invitation to invite it.
	for _, tc := range []struct{ channel, url string }{
		{privateElsewhere, "https://login.phish.test/private-secret"},
		{publicElsewhere, "https://login.phish.test/public-elsewhere"},
	} {
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: tc.channel, User: bob, Text: "look <" + tc.url + ">"})
		if err != nil {
			t.Fatal(err)
		}
		apptest.MustContain(t, shortcut(tc.channel, d.TS), "I am not in this channel", "nothing was sent", "/invite")
		if n := h.Sim.Count(sim.ServiceReputation, ""); n != 0 {
			t.Errorf("%s: %d requests reached the URL service", tc.channel, n)
		}
		for _, m := range h.Slack.Messages(tc.channel, "") {
			if m.Bot {
				t.Errorf("%s: the bot posted %q", tc.channel, m.Text)
			}
		}
	}
	for _, c := range append(h.Slack.Calls("chat.postEphemeral"), h.Slack.Calls("chat.postMessage")...) {
		if ch := c.Params.Get("channel"); ch == foreignDM || ch == groupDM || ch == privateElsewhere || ch == publicElsewhere {
			t.Errorf("%s into %s", c.Method, ch)
		}
	}

	// Alice's own DM with the bot: the shortcut scans.
	own := h.Slack.IMWith(alice)
	const ownURL = "https://login.phish.test/own-dm"
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: own, User: alice, Text: "<" + ownURL + ">"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.WaitMessages(h.Ctx(15*time.Second), own, d.TS, 1); err != nil {
		t.Fatalf("no card in the bot's own DM: %v", err)
	}
	before := len(h.Slack.Ephemerals(own, alice))
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: commands.ShortcutScanMessage, UserID: alice, Channel: own, MessageTS: d.TS}); err != nil {
		t.Fatal(err)
	}
	eph, err := h.Slack.WaitEphemerals(h.Ctx(8*time.Second), own, alice, before+1)
	if err != nil {
		t.Fatalf("no answer in the own DM: %v", err)
	}
	// The message has its card already: the answer says what it shows
	// (TestShortcutBeforeTheVerdictLeavesTheCardAndQuarantineActs).
	apptest.MustContain(t, eph[len(eph)-1].Text, "That message")
	if n := len(h.Sim.URLTasks(ownURL)); n != 1 {
		t.Errorf("the own DM's link was analysed %d times, want 1", n)
	}
}
