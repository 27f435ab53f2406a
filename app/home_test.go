package app_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// The App Home, DMs to the bot and mentions, end to end: the bot's real
// wiring against the fake Slack and the simulator.

const privChannel = "G0PRIV"

// seedHome registers a public channel (alice, bob and the admin in it) and
// a private one only the admin is in.
func seedHome(f *slackfake.Server) {
	f.AddUser(slackfake.User{ID: alice, Name: "alice"})
	f.AddUser(slackfake.User{ID: bob, Name: "bob"})
	f.AddUser(slackfake.User{ID: adminUser, Name: "admin"})
	f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, adminUser}})
	f.AddChannel(slackfake.Channel{ID: privChannel, Name: "incident-42", Private: true, Members: []string{adminUser}})
}

// openHome delivers app_home_opened for user and returns the Home once it
// has been published n times in all.
func (h *harness) openHome(user string, n int) slackfake.HomeView {
	h.T.Helper()
	d, err := h.Slack.DeliverAppHomeOpened(user, "home")
	if err != nil {
		h.T.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		h.T.Fatal(err)
	}
	v, err := h.Slack.WaitHomeView(h.Ctx(10*time.Second), user, n)
	if err != nil {
		h.T.Fatalf("no Home published for %s: %v\nlogs:\n%s", user, err, h.Logs.String())
	}
	return v
}

// homeText renders a Home view's blocks as a person reads them: headers,
// sections and context lines as text (mrkdwn left as is), selects as
// [label: current ▾].
func homeText(raw json.RawMessage) string {
	var blocks []struct {
		Type     string          `json:"type"`
		Text     json.RawMessage `json:"text"`
		Elements []struct {
			Type          string          `json:"type"`
			Text          string          `json:"text"`
			Placeholder   json.RawMessage `json:"placeholder"`
			InitialOption *struct {
				Text struct{ Text string } `json:"text"`
			} `json:"initial_option"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(raw, &blocks)
	text := func(raw json.RawMessage) string {
		var t struct{ Text string }
		_ = json.Unmarshal(raw, &t)
		return t.Text
	}
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "header":
			fmt.Fprintf(&b, "\n== %s ==\n", text(bl.Text))
		case "section":
			b.WriteString(text(bl.Text) + "\n")
		case "divider":
			b.WriteString("────────\n")
		case "context":
			var parts []string
			for _, e := range bl.Elements {
				parts = append(parts, e.Text)
			}
			b.WriteString("  (" + strings.Join(parts, " ") + ")\n")
		case "actions":
			var parts []string
			for _, e := range bl.Elements {
				cur := "—"
				if e.InitialOption != nil {
					cur = e.InitialOption.Text.Text
				}
				parts = append(parts, fmt.Sprintf("[%s: %s ▾]", text(e.Placeholder), cur))
			}
			b.WriteString("    " + strings.Join(parts, " ") + "\n")
		}
	}
	return b.String()
}

// writeCapture saves a text capture for the report when
// HOME_CAPTURE_DIR is set.
func writeCapture(t *testing.T, name, text string) {
	if dir := os.Getenv("HOME_CAPTURE_DIR"); dir != "" {
		if err := os.WriteFile(dir+"/"+name, []byte(text), 0o644); err != nil {
			t.Log(err)
		}
	}
}

func TestHomeShowsVerdictsOnlyFromTheViewersChannels(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedHome)
	pub := h.Post("see <https://login.phish.test/verify|the login page>")
	h.WaitCard(pub.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	priv, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: privChannel, User: adminUser, Text: "IOC <https://secret-c2.phish.test/beacon>"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(privChannel, priv.TS) {
			if strings.Contains(string(m.Blocks), "Malicious") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no card in the private channel: %v", err)
	}

	admin := homeText(h.openHome(adminUser, 1).Blocks)
	t.Logf("the admin's Home:\n%s", admin)
	writeCapture(t, "home-admin.txt", admin)
	apptest.MustContain(t, admin, "login[.]phish[.]test", "secret-c2[.]phish[.]test", "<#"+privChannel+">",
		"[Mode: verbose ▾] [Files: files on ▾]", "*URL reputation*: :large_green_circle: answering", "*Sandbox*: not configured",
		"`/scan status &lt;task_id&gt;`", "== Reports awaiting an answer ==")

	member := homeText(h.openHome(alice, 1).Blocks)
	t.Logf("a member's Home:\n%s", member)
	writeCapture(t, "home-member.txt", member)
	apptest.MustContain(t, member, "login[.]phish[.]test", "<#"+secChannel+"> — mode *verbose* (default) · files *on* (default)")
	for _, leak := range []string{"secret-c2", privChannel, "▾"} {
		if strings.Contains(member, leak) {
			t.Errorf("a non-admin outside the private channel sees %q:\n%s", leak, member)
		}
	}
	// The membership came from Slack, bounded: one users.conversations per
	// open, one conversations.members per channel (then cached).
	if n := len(h.Slack.Calls("conversations.members")); n != 2 {
		t.Errorf("conversations.members called %d times for 2 channels and 2 opens, want 2 (cached)", n)
	}
	// What an open costs, for the record.
	pubs := h.Slack.Calls("views.publish")
	var opened []slackfake.Envelope
	for _, env := range h.Slack.Envelopes() {
		if env.InnerType == "app_home_opened" {
			opened = append(opened, env)
		}
	}
	for i := range min(len(pubs), len(opened)) {
		t.Logf("open %d: views.publish %v after app_home_opened was sent, ack after %v", i+1,
			pubs[i].Time.Sub(opened[i].Created).Round(time.Millisecond), opened[i].Acks[0].Latency.Round(time.Microsecond))
	}
	t.Logf("Slack calls for 2 opens: users.conversations %d, conversations.members %d, views.publish %d",
		len(h.Slack.Calls("users.conversations")), len(h.Slack.Calls("conversations.members")), len(pubs))
	// Every app_home_opened was acked before its views.publish.
	for _, env := range h.Slack.Envelopes() {
		if env.InnerType != "app_home_opened" || !env.Acked() {
			continue
		}
		for _, c := range h.Slack.Calls("views.publish") {
			if c.Time.Before(env.Acks[0].At) && c.Time.After(env.Created) {
				t.Errorf("views.publish at %v before the ack at %v", c.Time, env.Acks[0].At)
			}
		}
	}
}

func TestHomeChangesAChannelsModeForAdminsOnly(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedHome)
	h.openHome(adminUser, 1)
	d, err := h.Slack.DeliverHomeAction(slackfake.HomeAction{UserID: adminUser, BlockID: commands.HomeChannelBlock + secChannel,
		ActionID: commands.ActionHomeChannelMode, Value: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	after := homeText(h.openHomeAgain(adminUser, 2).Blocks)
	t.Logf("the admin's Home after the change:\n%s", after)
	writeCapture(t, "home-admin-changed.txt", after)
	apptest.MustContain(t, after, "<#"+secChannel+">: This channel's mode is now *quiet*.", "<#"+secChannel+"> — mode *quiet* · files *on* (default)")
	apptest.MustContain(t, h.Slash(alice, "channel"), "This channel's mode is *quiet*")
	apptest.MustContain(t, h.Logs.String(), `"msg":"channel setting changed"`, `"user":"`+adminUser+`"`, `"setting":"mode"`,
		`"from":"default"`, `"to":"quiet"`, `"via":"home"`)

	// The files select goes through /scan channel files.
	if _, err := h.Slack.DeliverHomeAction(slackfake.HomeAction{UserID: adminUser, BlockID: commands.HomeChannelBlock + secChannel,
		ActionID: commands.ActionHomeChannelFiles, Value: "off"}); err != nil {
		t.Fatal(err)
	}
	apptest.MustContain(t, homeText(h.openHomeAgain(adminUser, 3).Blocks), "<#"+secChannel+"> — mode *quiet* · files *off* · quarantine *off* (default)\n",
		"[Mode: quiet ▾] [Files: files off ▾]", "Files shared in this channel are now *not scanned*")

	// A non-admin has no select; a forged or stale action is refused by
	// /scan channel's own check, and the Home says so.
	h.openHome(alice, 1)
	forged := map[string]any{
		"type": "block_actions", "user": map[string]any{"id": alice, "username": "alice", "team_id": "T0FAKE"},
		"api_app_id": h.Slack.AppID(), "container": map[string]any{"type": "view", "view_id": "V0STALE"},
		"view": map[string]any{"id": "V0STALE", "type": "home", "blocks": []any{}},
		"actions": []any{map[string]any{"action_id": commands.ActionHomeChannelMode, "block_id": commands.HomeChannelBlock + secChannel,
			"type": "static_select", "selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "off"}, "value": "off"},
			"action_ts": "1.2"}},
	}
	fd, err := h.Slack.DeliverInteraction(forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), fd.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	refused := homeText(h.openHomeAgain(alice, 2).Blocks)
	apptest.MustContain(t, refused, "Only admins can change this channel's mode.", "mode *quiet*")
	apptest.MustContain(t, h.Slash(alice, "channel"), "This channel's mode is *quiet*")
	if strings.Count(h.Logs.String(), `"msg":"channel setting changed"`) != 2 {
		t.Errorf("want exactly two audit lines (the admin's two changes):\n%s", h.Logs.String())
	}
}

// openHomeAgain waits for user's Home to be published n times in all
// (after a change made from it) without opening it.
func (h *harness) openHomeAgain(user string, n int) slackfake.HomeView {
	h.T.Helper()
	v, err := h.Slack.WaitHomeView(h.Ctx(10*time.Second), user, n)
	if err != nil {
		h.T.Fatalf("the Home of %s was not published again: %v\nlogs:\n%s", user, err, h.Logs.String())
	}
	return v
}

func TestLinkSentToTheBotIsCheckedInTheDM(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedHome)
	dm := h.Slack.IMWith(alice)
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: dm, User: alice, Text: "is this ok? <https://login.phish.test/verify>"})
	if err != nil {
		t.Fatal(err)
	}
	var card slackfake.Message
	if err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(dm, d.TS) {
			if strings.Contains(string(m.Blocks), "Malicious") {
				card = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no card in the DM: %v\nlogs:\n%s", err, h.Logs.String())
	}
	if card.ThreadTS != d.TS {
		t.Errorf("the card is at thread %q, want the DM message's thread %q", card.ThreadTS, d.TS)
	}
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "<@"+alice+">")
	if n := len(h.Sim.URLTasks("https://login.phish.test/verify")); n != 1 {
		t.Errorf("%d URL tasks for the DM's link, want 1", n)
	}
}

func TestDMWithoutALinkIsNotReadNorAnswered(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedHome)
	dm := h.Slack.IMWith(alice)
	const secret = "my password is hunter2-zebra"
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: dm, User: alice, Text: secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	// A link sent afterwards is answered: by then the first was handled.
	d2, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: dm, User: alice, Text: "<https://example.com/clean-page>"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.WaitMessages(h.Ctx(15*time.Second), dm, d2.TS, 1); err != nil {
		t.Fatalf("the link sent afterwards got no card: %v", err)
	}
	if got := apptest.BotMessages(h.Slack.Messages(dm, d.TS)); len(got) != 0 {
		t.Errorf("the bot answered a DM without a link: %+v", got)
	}
	if len(h.Slack.Ephemerals(dm, alice)) != 0 {
		t.Error("the bot answered a DM without a link privately")
	}
	if strings.Contains(h.Logs.String(), "hunter2") {
		t.Error("the text of a DM without a link is in the logs")
	}
	// Not journalled either: no file of the data dir holds the text.
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(h.Env["VERDICTBOT_DATA_DIR"], func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(raw), "hunter2") {
			t.Errorf("the text of a DM without a link was written to %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGroupDMsAreNotScanned(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, nil, sim.Config{}, false, seedHome)
	h.Slack.AddChannel(slackfake.Channel{ID: "G0MPIM", Name: "mpdm-alice--bob", MPIM: true, Members: []string{alice, bob}})
	if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: "G0MPIM", User: alice, Text: "<https://evil.test/in-a-group-dm>"}); err != nil {
		t.Fatal(err)
	}
	root := h.Post("root")
	if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, ThreadTS: root.TS, SubType: "thread_broadcast", Text: "<https://evil.test/broadcast>"}); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(root.TS, func(s string) bool { return strings.Contains(s, "broadcast") })
	if n := len(h.Sim.URLTasks("https://evil.test/in-a-group-dm")); n != 0 {
		t.Fatal("a group DM was sent to the service")
	}
}

func TestMentionAnswersHelpAndScansTheThreadRoot(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{}, false, seedHome)
	mention := "<@" + h.Slack.BotUserID() + ">"

	// Help, privately, in the thread it was asked in.
	_, md, err := h.Slack.Mention(slackfake.MessageEvent{Channel: secChannel, User: bob, Text: mention + " what do you do?"})
	if err != nil {
		t.Fatal(err)
	}
	eph, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), secChannel, bob, 1)
	if err != nil {
		t.Fatalf("no help: %v\nlogs:\n%s", err, h.Logs.String())
	}
	apptest.MustContain(t, eph[0].Text, "`@verdictbot scan` in a thread", "`/scan &lt;url&gt;`")
	_ = md

	// In an off channel nothing is scanned by itself; "scan" in a reply
	// scans the root on bob's request, and the card goes in that thread.
	root := h.Post("found this in my inbox <https://login.phish.test/verify>")
	if _, _, err := h.Slack.Mention(slackfake.MessageEvent{Channel: secChannel, User: bob, ThreadTS: root.TS, Text: mention + " scan"}); err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(root.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "<@"+bob+">")
	if card.ThreadTS != root.TS {
		t.Errorf("card in thread %q, want %q", card.ThreadTS, root.TS)
	}
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, bob, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Slack.Calls("conversations.replies")); n == 0 {
		t.Error("the root was not read with conversations.replies")
	}
}

func TestFileSentToTheBotIsCheckedInTheDM(t *testing.T) {
	t.Parallel()
	// Files are off by default: the switch is for channels, and a file
	// someone sends the bot is checked on their request.
	h := startFileBot(t, map[string]string{"VERDICTBOT_SCAN_FILES": "false"})
	dm := h.Slack.IMWith(alice)
	_, ds := h.Share(dm, slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar)}, "")
	card := h.WaitCardIn(dm, ds[0].TS, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "invoice.exe") })
	if card.ThreadTS != ds[0].TS {
		t.Errorf("file card in thread %q, want %q", card.ThreadTS, ds[0].TS)
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Errorf("%d uploads to the sandbox, want 1 (file_shared and the message announce it once)", n)
	}
}
