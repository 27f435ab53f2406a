package app_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
)

func TestSlashScanPostsACardInTheChannel(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	got := h.Slash(alice, "https://example.com/clean-page <https://login.phish.test/verify|login.phish.test/verify>")
	apptest.MustContain(t, got, "Checking 2 link(s)")
	// Quiet mode is bypassed: the card is posted even though one link is clean.
	card := h.WaitCard("", func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "example[.]com") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "<@"+alice+">")
	if card.ThreadTS != "" {
		t.Fatalf("a /scan card belongs in the channel, got thread %q", card.ThreadTS)
	}
}

func TestSlashBadInputGetsASpecificAnswerAndNoServiceCall(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	for _, tc := range []struct{ text, want string }{
		{"http://10.0.0.7/admin", "private"},
		{"https://exa mple", "never sent to the service"},
		{"ftp://example.com/file", "not a link I can check"},
		{"status not-a-task", "is not a task id"},
		{"hash 1234", "is not a hash"},
		{"hash zz" + strings.Repeat("0", 30), "is not a hash"},
		{"report " + strings.Repeat("a", 32) + " spam fp", "is not a category"},
		{"report " + strings.Repeat("a", 32) + " phishing maybe", "is not a report"},
		{"recent 500", "give a number from 1 to 20"},
		{"chanel off", "Did you mean `/scan channel`?"},
		// Escaped: Slack would show an unescaped <task_id> as a link.
		{"", "`/scan status &lt;task_id&gt;`"},
		{"help", "`/scan history &lt;url|task_id&gt;`"},
	} {
		got := h.Slash(alice, tc.text)
		if !strings.Contains(got, tc.want) {
			t.Errorf("/scan %s → %q, want %q", tc.text, got, tc.want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.Sim.Count(sim.ServiceReputation, ""); n != 0 {
		t.Fatalf("%d service calls for input that cannot be valid: %v", n, h.Sim.Requests())
	}
}

func TestSlashStatusHashReportHistoryRecent(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	// bob reports alice's link below: he is in the channel too.
	h.Slack.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob}})
	d := h.Post("<https://login.phish.test/account>")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	tasks := h.Sim.URLTasks("https://login.phish.test/account")
	task := tasks[0]
	apptest.MustContain(t, h.Slash(alice, "status "+task), "URL task `"+task+"`: *completed*")
	// An admin's ids go to the service, whatever they are.
	apptest.MustContain(t, h.Slash(adminUser, "status "+strings.Repeat("ab", 16)), "has no task")
	apptest.MustContain(t, h.Slash(adminUser, "status 99999"), "has no task")
	// Anyone else is answered only about tasks on their conversations'
	// cards (TestScopedAnswersAreThoseOfAnUnknownTarget).
	apptest.MustContain(t, h.Slash(alice, "status 99999"), "I have no record of task `99999` in your conversations.")

	// A file the sandbox knows.
	sb, _ := sandbox.New(h.SimURL, e2eKey, sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}))
	sub, err := sb.CreateFile(t.Context(), "eicar.com", bytes.NewReader([]byte(apptest.Eicar)))
	if err != nil {
		t.Fatal(err)
	}
	sb.Wait(t.Context(), sub.TaskIDs[0], sandbox.WaitOptions{Backoff: sandbox.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}})
	apptest.MustContain(t, h.Slash(adminUser, "hash 44d88612fea8a8f36de82e1278abb02f"), "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", "malscore *10.0*/10", "EICAR")
	apptest.MustContain(t, h.Slash(adminUser, "hash "+strings.Repeat("0", 64)), "never seen")
	apptest.MustContain(t, h.Slash(adminUser, "status "+sub.TaskIDs[0]), "*reported*", "Added")
	// The file was never shared in Slack: to a non-admin it is unknown.
	apptest.MustContain(t, h.Slash(alice, "hash 44d88612fea8a8f36de82e1278abb02f"), "I have no record of a file with hash `44d88612fea8a8f36de82e1278abb02f` in your conversations.")

	// alice posted the link: bob reports it (TestOwnLinkFalsePositiveIsRefused).
	apptest.MustContain(t, h.Slash(bob, "report "+task+" phishing fp"), "A false positive (phishing) was reported")
	apptest.MustContain(t, h.Slash(alice, "report "+task+" phishing restore"), "Only admins can restore")
	apptest.MustContain(t, h.Slash(adminUser, "report "+task+" phishing restore"), "A restore of the original verdict (phishing) was reported")
	apptest.MustContain(t, h.Slash(adminUser, "report "+strings.Repeat("cd", 16)+" phishing fp"), "is not on any verdict card")
	apptest.MustContain(t, h.Slash(alice, "report "+strings.Repeat("cd", 16)+" phishing fp"), "has no card in this channel")
	if tk, _ := h.Sim.URLTask(task); len(tk.Dispositions) != 2 {
		t.Fatalf("dispositions %+v", tk.Dispositions)
	}
	hist := h.Slash(alice, "history https://login.phish.test/account")
	apptest.MustContain(t, hist, "*malicious* (scan, task `"+task+"`)", "<@"+bob+"> reported a false positive (phishing)", "<@"+adminUser+"> reported a restore")
	apptest.MustContain(t, h.Slash(alice, "history "+task), "History of")
	apptest.MustContain(t, h.Slash(alice, "recent"), "The last 1 verdict(s)", "login[.]phish[.]test")
	_ = card
}

func TestSlashChannelAndAllowAreForAdmins(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	apptest.MustContain(t, h.Slash(alice, "channel"), "default mode: *quiet*")
	apptest.MustContain(t, h.Slash(alice, "channel verbose"), "Only admins can change")
	apptest.MustContain(t, h.Slash(alice, "channel"), "default mode: *quiet*")
	apptest.MustContain(t, h.Slash(adminUser, "channel off"), "now *off*")
	d := h.Post("<https://evil.test/while-off>")
	h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID)
	time.Sleep(1500 * time.Millisecond)
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 0 {
		t.Fatal("an off channel was scanned")
	}
	apptest.MustContain(t, h.Slash(adminUser, "channel on"), "now *quiet*")

	apptest.MustContain(t, h.Slash(alice, "allow add corp.example.net"), "Only admins can change the allowlist")
	apptest.MustContain(t, h.Slash(adminUser, "allow add com"), "is not a domain I can allow")
	apptest.MustContain(t, h.Slash(adminUser, "allow add Corp.Example.NET"), "`corp.example.net` and its subdomains are no longer sent")
	apptest.MustContain(t, h.Slash(alice, "allow list"), "`corp.example.net` — added by <@"+adminUser+">")
	d = h.Post("<https://wiki.corp.example.net/page> <https://evil.test/x>")
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "wiki[.]corp[.]example[.]net") && strings.Contains(b, "Malicious")
	})
	if n := len(h.Sim.URLTasks("https://wiki.corp.example.net/page")); n != 0 {
		t.Fatal("an allowlisted link was sent to the service")
	}
	apptest.MustContain(t, h.Slash(adminUser, "allow remove corp.example.net"), "removed")
	apptest.MustContain(t, h.Slash(adminUser, "allow remove corp.example.net"), "is not on the runtime allowlist")
}

func TestScanThisMessageShortcutWorksInOffChannels(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{})
	d := h.Post("can someone check <https://example.org/form>?")
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: alice, Channel: secChannel, MessageTS: d.TS}); err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "<@"+alice+">")
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, alice, 1); err != nil {
		t.Fatal("no private confirmation")
	}
	_ = reputation.StatusCompleted
}

func TestAdminGroupMembersAreAdmins(t *testing.T) {
	t.Parallel()
	const bob = "U0BOB"
	h := startBotSeeded(t, map[string]string{"VERDICTBOT_ADMIN_GROUP": "S0SECOPS"}, sim.Config{}, false,
		func(f *slackfake.Server) { f.AddUserGroup("S0SECOPS", "secops", bob) })
	apptest.MustContain(t, h.Slash(bob, "channel verbose"), "now *verbose*")
	apptest.MustContain(t, h.Slash(alice, "channel quiet"), "Only admins can change")
}

// TestSlashReportIsScopedAndSingleLikeTheButtons: /scan report goes through
// the buttons' code path: a task whose card is in another channel is
// refused (admins excepted), a repeated report is refused, the card shows
// the audit line and the URL's cached verdict is forgotten.
func TestSlashReportIsScopedAndSingleLikeTheButtons(t *testing.T) {
	t.Parallel()
	const otherChannel = "C0OTHER"
	h := startBot(t, nil, sim.Config{})
	h.Slack.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, carol}})
	// alice posts the link; bob, in the channel too, reports it (a poster
	// may not: TestOwnLinkFalsePositiveIsRefused).
	const url = "https://login.phish.test/account"
	d := h.Post("<" + url + ">")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	tasks := h.Sim.URLTasks(url)
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	task := tasks[0]
	// reports counts the report calls the service received, and checks
	// each was recorded as a disposition.
	reports := func() int {
		t.Helper()
		n := h.Sim.Count(sim.ServiceReputation, sim.OpVerdictReport)
		if tk, _ := h.Sim.URLTask(task); len(tk.Dispositions) != n {
			t.Fatalf("%d report calls, %d dispositions", n, len(tk.Dispositions))
		}
		return n
	}

	// Another channel: refused, nothing sent.
	apptest.MustContain(t, h.SlashIn(otherChannel, bob, "report "+task+" phishing fp"), "has no card in this channel")
	if n := reports(); n != 0 {
		t.Fatalf("a report from another channel reached the service (%d)", n)
	}

	// In the card's channel: sent once, the card shows it.
	apptest.MustContain(t, h.Slash(bob, "report "+task+" phishing fp"), "A false positive (phishing) was reported", task)
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+bob+">") && strings.Contains(b, "false positive")
	})
	// The same report again, by anyone, from the card's channel or (admin)
	// elsewhere: refused, not sent.
	apptest.MustContain(t, h.Slash(carol, "report "+task+" phishing fp"), "already reported")
	apptest.MustContain(t, h.SlashIn(otherChannel, adminUser, "report "+task+" phishing fp"), "already reported")
	if n := reports(); n != 1 {
		t.Fatalf("the report reached the service %d times, want 1", n)
	}
	// A button click for the same report is refused as well.
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: carol, Channel: secChannel, MessageTS: card.TS, ActionID: notify.ActionFalsePositive}); err != nil {
		t.Fatal(err)
	}
	eph, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, carol, 1)
	if err != nil {
		t.Fatal(err)
	}
	apptest.MustContain(t, eph[len(eph)-1].Text, "already reported")
	if n := reports(); n != 1 {
		t.Fatalf("the report reached the service %d times, want 1", n)
	}

	// An admin may report from any channel; the audit line lands on the card.
	apptest.MustContain(t, h.SlashIn(otherChannel, adminUser, "report "+task+" phishing restore"), "A restore of the original verdict (phishing) was reported")
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+adminUser+">") && strings.Contains(b, "restore")
	})
	if n := reports(); n != 2 {
		t.Fatalf("dispositions %d, want 2", n)
	}
	apptest.MustContain(t, h.Slash(alice, "history "+url), "<@"+bob+"> reported a false positive (phishing)", "<@"+adminUser+"> reported a restore")

	// The verdict reported on is not served from the cache: the link is
	// submitted again.
	d2 := h.Post("again <" + url + ">")
	h.WaitCard(d2.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if n := len(h.Sim.URLTasks(url)); n != 2 {
		t.Fatalf("the link was analysed %d times, want 2 (the reported verdict was served from the cache)", n)
	}
}

// A slash command whose envelope comes twice (its ack was lost and Slack
// sent it again, maybe to another replica's connection) is handled once:
// its envelope id is recorded like an event id.
func TestSlashEnvelopeDeliveredTwiceIsHandledOnce(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	h.Slash(alice, "help") // the fake makes the channel on a command it delivers itself
	payload, _ := json.Marshal(map[string]any{"token": "x", "team_id": "T1", "channel_id": secChannel, "user_id": alice,
		"command": "/scan", "text": "https://login.phish.test/twice", "api_app_id": "A1", "trigger_id": "1.2.3",
		"is_enterprise_install": "false"})
	frame, _ := json.Marshal(map[string]any{"envelope_id": "e-dup-1", "type": "slash_commands",
		"accepts_response_payload": true, "payload": json.RawMessage(payload)})
	for range 2 {
		if _, err := h.Slack.DeliverRaw(string(frame)); err != nil {
			t.Fatal(err)
		}
	}
	h.WaitCard("", func(b string) bool { return strings.Contains(b, "login[.]phish[.]test/twice") })
	time.Sleep(500 * time.Millisecond) // a second card would be posted by now
	n := 0
	for _, m := range h.Slack.Messages(secChannel, "") {
		if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "login[.]phish[.]test/twice") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d cards for one slash command delivered twice, want 1", n)
	}
}
