package app_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
)

// slash runs /scan text as user and returns what the user was told: the
// ack's payload text and every response_url post for it, joined.
func (h *harness) slash(user, text string) string {
	h.t.Helper()
	return h.slashIn(secChannel, user, text)
}

// slashIn is slash, run in channel.
func (h *harness) slashIn(channel, user, text string) string {
	h.t.Helper()
	d, err := h.slack.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: text, UserID: user, ChannelID: channel})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.slack.WaitAcked(h.ctx(5*time.Second), d.EnvelopeID); err != nil {
		h.t.Fatal(err)
	}
	var ackText string
	for _, a := range h.slack.Acks() {
		if a.EnvelopeID == d.EnvelopeID && a.Payload != nil {
			var p struct{ Text string }
			json.Unmarshal(a.Payload, &p)
			ackText = p.Text
			if len(a.Payload) > 20_000 {
				h.t.Fatalf("ack payload of %d bytes", len(a.Payload))
			}
		}
	}
	// The rest of the answer, if any, comes through the response_url.
	deadline := time.Now().Add(8 * time.Second)
	var posts []string
	for time.Now().Before(deadline) {
		posts = nil
		for _, p := range h.slack.ResponsePosts() {
			if p.EnvelopeID == d.EnvelopeID {
				posts = append(posts, p.Text)
			}
		}
		if len(posts) > 0 || (ackText != "" && !strings.HasPrefix(ackText, "Checking")) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.TrimSpace(ackText + "\n" + strings.Join(posts, "\n"))
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("answer lacks %q:\n%s", w, got)
		}
	}
}

func TestSlashScanPostsACardInTheChannel(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	got := h.slash(alice, "https://example.com/clean-page <https://login.phish.test/verify|login.phish.test/verify>")
	mustContain(t, got, "Checking 2 link(s)")
	// Quiet mode is bypassed: the card is posted even though one link is clean.
	card := h.waitCard("", func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "example[.]com") })
	mustContain(t, blocksText(card.Blocks), "<@"+alice+">")
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
		got := h.slash(alice, tc.text)
		if !strings.Contains(got, tc.want) {
			t.Errorf("/scan %s → %q, want %q", tc.text, got, tc.want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.sim.Count(sim.ServiceReputation, ""); n != 0 {
		t.Fatalf("%d service calls for input that cannot be valid: %v", n, h.sim.Requests())
	}
}

func TestSlashStatusHashReportHistoryRecent(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	// bob reports alice's link below: he is in the channel too.
	h.slack.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob}})
	d := h.post("<https://login.phish.test/account>")
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	tasks := h.sim.URLTasks("https://login.phish.test/account")
	task := tasks[0]
	mustContain(t, h.slash(alice, "status "+task), "URL task `"+task+"`: *completed*")
	// An admin's ids go to the service, whatever they are.
	mustContain(t, h.slash(adminUser, "status "+strings.Repeat("ab", 16)), "has no task")
	mustContain(t, h.slash(adminUser, "status 99999"), "has no task")
	// Anyone else is answered only about tasks on their conversations'
	// cards (TestScopedAnswersAreThoseOfAnUnknownTarget).
	mustContain(t, h.slash(alice, "status 99999"), "I have no record of task `99999` in your conversations.")

	// A file the sandbox knows.
	sb, _ := sandbox.New(h.simURL, e2eKey, sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}))
	sub, err := sb.CreateFile(t.Context(), "eicar.com", bytes.NewReader([]byte(eicar)))
	if err != nil {
		t.Fatal(err)
	}
	sb.Wait(t.Context(), sub.TaskIDs[0], sandbox.WaitOptions{Backoff: sandbox.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}})
	mustContain(t, h.slash(adminUser, "hash 44d88612fea8a8f36de82e1278abb02f"), "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", "malscore *10.0*/10", "EICAR")
	mustContain(t, h.slash(adminUser, "hash "+strings.Repeat("0", 64)), "never seen")
	mustContain(t, h.slash(adminUser, "status "+sub.TaskIDs[0]), "*reported*", "Added")
	// The file was never shared in Slack: to a non-admin it is unknown.
	mustContain(t, h.slash(alice, "hash 44d88612fea8a8f36de82e1278abb02f"), "I have no record of a file with hash `44d88612fea8a8f36de82e1278abb02f` in your conversations.")

	// alice posted the link: bob reports it (TestOwnLinkFalsePositiveIsRefused).
	mustContain(t, h.slash(bob, "report "+task+" phishing fp"), "A false positive (phishing) was reported")
	mustContain(t, h.slash(alice, "report "+task+" phishing restore"), "Only admins can restore")
	mustContain(t, h.slash(adminUser, "report "+task+" phishing restore"), "A restore of the original verdict (phishing) was reported")
	mustContain(t, h.slash(adminUser, "report "+strings.Repeat("cd", 16)+" phishing fp"), "is not on any verdict card")
	mustContain(t, h.slash(alice, "report "+strings.Repeat("cd", 16)+" phishing fp"), "has no card in this channel")
	if tk, _ := h.sim.URLTask(task); len(tk.Dispositions) != 2 {
		t.Fatalf("dispositions %+v", tk.Dispositions)
	}
	hist := h.slash(alice, "history https://login.phish.test/account")
	mustContain(t, hist, "*malicious* (scan, task `"+task+"`)", "<@"+bob+"> reported a false positive (phishing)", "<@"+adminUser+"> reported a restore")
	mustContain(t, h.slash(alice, "history "+task), "History of")
	mustContain(t, h.slash(alice, "recent"), "The last 1 verdict(s)", "login[.]phish[.]test")
	_ = card
}

func TestSlashChannelAndAllowAreForAdmins(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	mustContain(t, h.slash(alice, "channel"), "default mode: *quiet*")
	mustContain(t, h.slash(alice, "channel verbose"), "Only admins can change")
	mustContain(t, h.slash(alice, "channel"), "default mode: *quiet*")
	mustContain(t, h.slash(adminUser, "channel off"), "now *off*")
	d := h.post("<https://evil.test/while-off>")
	h.slack.WaitAcked(h.ctx(5*time.Second), d.EnvelopeID)
	time.Sleep(1500 * time.Millisecond)
	if n := h.sim.Count(sim.ServiceReputation, sim.OpScan); n != 0 {
		t.Fatal("an off channel was scanned")
	}
	mustContain(t, h.slash(adminUser, "channel on"), "now *quiet*")

	mustContain(t, h.slash(alice, "allow add corp.example.net"), "Only admins can change the allowlist")
	mustContain(t, h.slash(adminUser, "allow add com"), "is not a domain I can allow")
	mustContain(t, h.slash(adminUser, "allow add Corp.Example.NET"), "`corp.example.net` and its subdomains are no longer sent")
	mustContain(t, h.slash(alice, "allow list"), "`corp.example.net` — added by <@"+adminUser+">")
	d = h.post("<https://wiki.corp.example.net/page> <https://evil.test/x>")
	h.waitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "wiki[.]corp[.]example[.]net") && strings.Contains(b, "Malicious")
	})
	if n := len(h.sim.URLTasks("https://wiki.corp.example.net/page")); n != 0 {
		t.Fatal("an allowlisted link was sent to the service")
	}
	mustContain(t, h.slash(adminUser, "allow remove corp.example.net"), "removed")
	mustContain(t, h.slash(adminUser, "allow remove corp.example.net"), "is not on the runtime allowlist")
}

func TestScanThisMessageShortcutWorksInOffChannels(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{})
	d := h.post("can someone check <https://example.org/form>?")
	if _, err := h.slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: alice, Channel: secChannel, MessageTS: d.TS}); err != nil {
		t.Fatal(err)
	}
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	mustContain(t, blocksText(card.Blocks), "<@"+alice+">")
	if _, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, alice, 1); err != nil {
		t.Fatal("no private confirmation")
	}
	_ = reputation.StatusCompleted
}

func TestAdminGroupMembersAreAdmins(t *testing.T) {
	t.Parallel()
	const bob = "U0BOB"
	h := startBotSeeded(t, map[string]string{"VERDICTBOT_ADMIN_GROUP": "S0SECOPS"}, sim.Config{}, false,
		func(f *slackfake.Server) { f.AddUserGroup("S0SECOPS", "secops", bob) })
	mustContain(t, h.slash(bob, "channel verbose"), "now *verbose*")
	mustContain(t, h.slash(alice, "channel quiet"), "Only admins can change")
}

// TestSlashReportIsScopedAndSingleLikeTheButtons: /scan report goes through
// the buttons' code path: a task whose card is in another channel is
// refused (admins excepted), a repeated report is refused, the card shows
// the audit line and the URL's cached verdict is forgotten.
func TestSlashReportIsScopedAndSingleLikeTheButtons(t *testing.T) {
	t.Parallel()
	const otherChannel = "C0OTHER"
	h := startBot(t, nil, sim.Config{})
	h.slack.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, carol}})
	// alice posts the link; bob, in the channel too, reports it (a poster
	// may not: TestOwnLinkFalsePositiveIsRefused).
	const url = "https://login.phish.test/account"
	d := h.post("<" + url + ">")
	h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	tasks := h.sim.URLTasks(url)
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	task := tasks[0]
	// reports counts the report calls the service received, and checks
	// each was recorded as a disposition.
	reports := func() int {
		t.Helper()
		n := h.sim.Count(sim.ServiceReputation, sim.OpVerdictReport)
		if tk, _ := h.sim.URLTask(task); len(tk.Dispositions) != n {
			t.Fatalf("%d report calls, %d dispositions", n, len(tk.Dispositions))
		}
		return n
	}

	// Another channel: refused, nothing sent.
	mustContain(t, h.slashIn(otherChannel, bob, "report "+task+" phishing fp"), "has no card in this channel")
	if n := reports(); n != 0 {
		t.Fatalf("a report from another channel reached the service (%d)", n)
	}

	// In the card's channel: sent once, the card shows it.
	mustContain(t, h.slash(bob, "report "+task+" phishing fp"), "A false positive (phishing) was reported", task)
	h.waitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+bob+">") && strings.Contains(b, "false positive")
	})
	// The same report again, by anyone, from the card's channel or (admin)
	// elsewhere: refused, not sent.
	mustContain(t, h.slash(carol, "report "+task+" phishing fp"), "already reported")
	mustContain(t, h.slashIn(otherChannel, adminUser, "report "+task+" phishing fp"), "already reported")
	if n := reports(); n != 1 {
		t.Fatalf("the report reached the service %d times, want 1", n)
	}
	// A button click for the same report is refused as well.
	card := h.waitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
	if _, err := h.slack.DeliverBlockAction(slackfake.BlockAction{UserID: carol, Channel: secChannel, MessageTS: card.TS, ActionID: notify.ActionFalsePositive}); err != nil {
		t.Fatal(err)
	}
	eph, err := h.slack.WaitEphemerals(h.ctx(5*time.Second), secChannel, carol, 1)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, eph[len(eph)-1].Text, "already reported")
	if n := reports(); n != 1 {
		t.Fatalf("the report reached the service %d times, want 1", n)
	}

	// An admin may report from any channel; the audit line lands on the card.
	mustContain(t, h.slashIn(otherChannel, adminUser, "report "+task+" phishing restore"), "A restore of the original verdict (phishing) was reported")
	h.waitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "<@"+adminUser+">") && strings.Contains(b, "restore")
	})
	if n := reports(); n != 2 {
		t.Fatalf("dispositions %d, want 2", n)
	}
	mustContain(t, h.slash(alice, "history "+url), "<@"+bob+"> reported a false positive (phishing)", "<@"+adminUser+"> reported a restore")

	// The verdict reported on is not served from the cache: the link is
	// submitted again.
	d2 := h.post("again <" + url + ">")
	h.waitCard(d2.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if n := len(h.sim.URLTasks(url)); n != 2 {
		t.Fatalf("the link was analysed %d times, want 2 (the reported verdict was served from the cache)", n)
	}
}

// A slash command whose envelope comes twice (its ack was lost and Slack
// sent it again, maybe to another replica's connection) is handled once:
// its envelope id is recorded like an event id.
func TestSlashEnvelopeDeliveredTwiceIsHandledOnce(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	h.slash(alice, "help") // the fake makes the channel on a command it delivers itself
	payload, _ := json.Marshal(map[string]any{"token": "x", "team_id": "T1", "channel_id": secChannel, "user_id": alice,
		"command": "/scan", "text": "https://login.phish.test/twice", "api_app_id": "A1", "trigger_id": "1.2.3",
		"is_enterprise_install": "false"})
	frame, _ := json.Marshal(map[string]any{"envelope_id": "e-dup-1", "type": "slash_commands",
		"accepts_response_payload": true, "payload": json.RawMessage(payload)})
	for range 2 {
		if _, err := h.slack.DeliverRaw(string(frame)); err != nil {
			t.Fatal(err)
		}
	}
	h.waitCard("", func(b string) bool { return strings.Contains(b, "login[.]phish[.]test/twice") })
	time.Sleep(500 * time.Millisecond) // a second card would be posted by now
	n := 0
	for _, m := range h.slack.Messages(secChannel, "") {
		if m.Bot && strings.Contains(blocksText(m.Blocks), "login[.]phish[.]test/twice") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d cards for one slash command delivered twice, want 1", n)
	}
}
