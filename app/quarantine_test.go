package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// The quarantine end-to-end tests: `verdictbot run`'s wiring against the
// fake Slack, whose chat.delete follows Slack's rules (a bot token deletes
// only its own posts, an admin's user token members' but not another
// organisation's), and the simulator.

// verdictTimes are the times of the bot's "verdict" log lines for url.
func (h *harness) verdictTime(defanged string) (time.Time, bool) {
	for _, line := range strings.Split(h.Logs.String(), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			URL  string    `json:"url"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "verdict" && rec.URL == defanged {
			return rec.Time, true
		}
	}
	return time.Time{}, false
}

// TestQuarantineRemovesAMaliciousMessageWithinTwoSeconds: in a channel
// quarantining malicious messages, a phishing link's message is deleted
// (with the admin token) within 2 s of its verdict, the card in its thread
// is the tombstone with the Release button, and the author is told
// privately. It measures verdict-to-removal over a few messages (each
// submitted at once: fastBudgets).
func TestQuarantineRemovesAMaliciousMessageWithinTwoSeconds(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, fastBudgets, adminUser)
	const runs = 5
	var took []time.Duration
	for i := range runs {
		url := fmt.Sprintf("https://secure-login.phish.test/verify/%d", i)
		d := h.Post("urgent: <" + url + ">")
		h.WaitDeleted(d.TS)
		card := h.WaitCard(d.TS, func(b string) bool {
			return strings.Contains(b, "Quarantined:") && strings.Contains(b, notify.ActionQuarantineRelease)
		})
		if !strings.Contains(apptest.BlocksText(card.Blocks), "found malicious") {
			t.Errorf("tombstone does not say why: %s", apptest.BlocksText(card.Blocks))
		}
		var del *slackfake.Call
		for _, c := range h.Slack.Calls("chat.delete") {
			if c.Params.Get("ts") == d.TS {
				del = &c
			}
		}
		if del == nil || del.Token != apptest.AdminToken || del.Error != "" {
			t.Fatalf("chat.delete of %s: %+v", d.TS, del)
		}
		vt, ok := h.verdictTime("hxxps://secure-login[.]phish[.]test/verify/" + fmt.Sprint(i))
		if !ok {
			t.Fatalf("no verdict log line for %s", url)
		}
		took = append(took, del.Time.Sub(vt))
	}
	slices.Sort(took)
	t.Logf("verdict to removal over %d messages: min %v, median %v, max %v", runs, took[0], took[runs/2], took[runs-1])
	if took[runs-1] > 2*time.Second {
		t.Errorf("a removal took %v after its verdict, want within 2s", took[runs-1])
	}
	eph, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, alice, runs)
	if err != nil {
		t.Fatalf("the author was not told: %v", err)
	}
	if !strings.Contains(eph[0].Text, "removed") || !strings.Contains(eph[0].Text, "hxxps://") || strings.Contains(eph[0].Text, "https://secure-login") {
		t.Errorf("ephemeral to the author: %q", eph[0].Text)
	}
	// The bot token never deletes a member's message.
	for _, c := range h.Slack.Calls("chat.delete") {
		if c.Token != apptest.AdminToken {
			t.Errorf("chat.delete with the wrong token kind %s", c.TokenKind)
		}
	}
	if os.Getenv("QUARANTINE_RENDER") != "" {
		t.Logf("channel after a quarantine:\n%s", renderChannel(h))
	}
}

// TestQuarantineReleaseByAnAdminOnly: an ordinary user's click on Release
// is refused and changes nothing; an admin's re-posts the original in its
// place as the bot (whose, who released it, unfurls off), the card says so,
// and one false positive reaches the service. The message pings everyone
// it can (every mention form, in its text and in the rich_text block the
// client made of it): the re-post, its header included, pings nobody and
// shows names instead.
func TestQuarantineReleaseByAnAdminOnly(t *testing.T) {
	t.Parallel()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	h := startQuarantine(t, map[string]string{"VERDICTBOT_EVENTS_FILE": eventsFile}, adminUser)
	h.Slack.AddUser(slackfake.User{ID: "U0BOB", Name: "bob", DisplayName: "Bob B"})
	h.Slack.AddUserGroup("S0SECTEAM", "secteam", alice)
	const url = "https://login.phish.test/account"
	d := h.Post("<!channel> <!here|here> <!everyone> <!subteam^S0SECTEAM> <!subteam^S0SECTEAM|@secteam> <@U0BOB> <@U0BOB|bob> &lt;!channel&gt; <!\u200beveryone> " +
		"please log in here <" + url + "> before friday")
	if m, _ := h.Slack.Message(secChannel, d.TS); len(m.Mentions()) < 5 {
		t.Fatalf("the original does not ping as intended: %v", m.Mentions())
	}
	h.WaitDeleted(d.TS)
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, notify.ActionQuarantineRelease) })
	removed := renderChannel(h)
	click := func(user string) {
		t.Helper()
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: secChannel, MessageTS: card.TS,
			ActionID: notify.ActionQuarantineRelease}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, alice, 1); err != nil {
		t.Fatalf("the author was not told: %v", err)
	}
	before := len(h.Slack.Ephemerals(secChannel, alice))
	click(alice)
	eph, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, alice, before+1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(eph[len(eph)-1].Text, "Only admins") {
		t.Fatalf("an ordinary user's release: %q", eph[len(eph)-1].Text)
	}
	if n := len(h.Slack.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts after a refused release, want the card only", n)
	}
	if c := h.WaitCard(d.TS, func(string) bool { return true }); !strings.Contains(apptest.BlocksText(c.Blocks), notify.ActionQuarantineRelease) {
		t.Fatal("a refused release changed the card")
	}

	click(adminUser)
	if _, err := h.Slack.WaitEphemerals(h.Ctx(5*time.Second), secChannel, adminUser, 1); err != nil {
		t.Fatal(err)
	}
	var repost slackfake.Message
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.Messages(secChannel, "") {
			if m.Bot && !m.Deleted && strings.Contains(m.Text, "Released from quarantine") {
				repost = m
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no re-post: %v\n%s", err, renderChannel(h))
	}
	if got := repost.Mentions(); len(got) > 0 {
		t.Errorf("the re-post pings %v:\ntext %s\nblocks %s", got, repost.Text, apptest.BlocksText(repost.Blocks))
	}
	for _, want := range []string{"by @secadmin", "from @alice", "@channel @here @everyone @secteam @secteam @Bob B @Bob B @channel @everyone please log in here"} {
		if !strings.Contains(repost.Text, want) {
			t.Errorf("the re-post lacks %q: %q", want, repost.Text)
		}
	}
	for _, want := range []string{"@secadmin", "@Bob B", "@secteam", "@channel"} {
		if !strings.Contains(apptest.BlocksText(repost.Blocks), want) {
			t.Errorf("the re-post's blocks lack %q: %s", want, apptest.BlocksText(repost.Blocks))
		}
	}
	if !strings.Contains(apptest.BlocksText(repost.Blocks), url) {
		t.Errorf("the re-post does not carry the original blocks: %s", apptest.BlocksText(repost.Blocks))
	}
	if repost.UnfurlLinks == nil || *repost.UnfurlLinks || repost.UnfurlMedia == nil || *repost.UnfurlMedia {
		t.Errorf("unfurls not off on the re-post: %v %v", repost.UnfurlLinks, repost.UnfurlMedia)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Released") && strings.Contains(b, "<@"+adminUser+">") && !strings.Contains(b, notify.ActionQuarantineRelease)
	})
	tasks := h.Sim.URLTasks(url)
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	err = h.Slack.WaitFor(h.Ctx(5*time.Second), func(*slackfake.State) bool {
		task, _ := h.Sim.URLTask(tasks[0])
		return len(task.Dispositions) > 0
	})
	task, _ := h.Sim.URLTask(tasks[0])
	if err != nil || len(task.Dispositions) != 1 || task.Dispositions[0].Option != "fp" {
		t.Fatalf("the release did not count as one false positive: %+v", task.Dispositions)
	}
	// The released card has no Release button left (checked above), so
	// there is no second release; the report stays one.
	time.Sleep(300 * time.Millisecond)
	task, _ = h.Sim.URLTask(tasks[0])
	if len(task.Dispositions) != 1 {
		t.Errorf("%d reports after a release", len(task.Dispositions))
	}
	if os.Getenv("QUARANTINE_RENDER") != "" {
		t.Logf("channel after a quarantine:\n%s\nchannel after the release:\n%s", removed, renderChannel(h))
	}
	// The removal and the release are findings in the SOC's tools, in
	// that order: the quarantine names the target, the release its admin.
	waitQuarantineEvents(t, eventsFile, func(u map[string]any) bool {
		q, _ := u["quarantine"].(map[string]any)
		return u["kind"] == "quarantine" && u["target"] == url && q["removed"] == true && q["level"] == "malicious"
	}, func(u map[string]any) bool {
		q, _ := u["quarantine"].(map[string]any)
		return u["kind"] == "release" && u["actor"] == adminUser && q["released_by"] == adminUser
	})
}

// waitQuarantineEvents waits until the events file holds a line matching
// each of want, in that order.
func waitQuarantineEvents(t *testing.T, file string, want ...func(unmapped map[string]any) bool) {
	t.Helper()
	var lines []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		lines = apptest.FileLines(file)
		next := 0
		for _, l := range lines {
			var ev struct {
				ClassUID int            `json:"class_uid"`
				Unmapped map[string]any `json:"unmapped"`
			}
			if json.Unmarshal([]byte(l), &ev) == nil && ev.ClassUID == 2004 && next < len(want) && want[next](ev.Unmapped) {
				next++
			}
		}
		if next == len(want) {
			return
		}
	}
	t.Fatalf("the events file lacks the quarantine events in order:\n%s", strings.Join(lines, "\n"))
}

// TestQuarantineRecheckFlipRemovesAnEarlierMessage: a message found clean
// is removed when a recheck finds its link malicious.
func TestQuarantineRecheckFlipRemovesAnEarlierMessage(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, map[string]string{
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "1s,1h",
	}, adminUser)
	d := h.Post("our new landing page <https://promo.flip.test/spring>")
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, d.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatalf("first verdict (clean) not shown: %v", err)
	}
	if m, _ := h.Slack.Message(secChannel, d.TS); m.Deleted {
		t.Fatal("a clean message was removed")
	}
	h.WaitDeleted(d.TS)
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Rechecked") && strings.Contains(b, "Quarantined:") && strings.Contains(b, notify.ActionQuarantineRelease)
	})
}

// TestQuarantineSlackConnectMessageIsNotRemovable: a message from another
// organisation in a shared channel cannot be deleted by this workspace's
// admin: the card says so, it is counted, and the message stays.
func TestQuarantineSlackConnectMessageIsNotRemovable(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, nil, adminUser)
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: "U0PARTNER1", Team: apptest.OtherOrg,
		Text: "from our partner: <https://secure-login.phish.test/partner>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Not quarantined:") && strings.Contains(b, "another organisation")
	})
	if m, _ := h.Slack.Message(secChannel, d.TS); m.Deleted {
		t.Fatal("another organisation's message was deleted")
	}
	if got := h.Metric(`verdictbot_quarantine_failures_total{reason="other_org"}`); got != "1" {
		t.Errorf("other_org failures = %q, want 1", got)
	}
}

// TestQuarantineWithoutAdminTokenSaysSo: with no admin token the card says
// the message could not be removed and why, and nothing is deleted.
func TestQuarantineWithoutAdminTokenSaysSo(t *testing.T) {
	t.Parallel()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	h := startQuarantine(t, map[string]string{"SLACK_ADMIN_USER_TOKEN": "", "VERDICTBOT_EVENTS_FILE": eventsFile}, adminUser)
	d := h.Post("<https://secure-login.phish.test/no-token>")
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Not quarantined:") && strings.Contains(b, "SLACK_ADMIN_USER_TOKEN")
	})
	if m, _ := h.Slack.Message(secChannel, d.TS); m.Deleted {
		t.Fatal("deleted without an admin token")
	}
	if n := len(h.Slack.Calls("chat.delete")); n != 0 {
		t.Errorf("%d chat.delete calls", n)
	}
	if got := h.Metric(`verdictbot_quarantine_failures_total{reason="no_token"}`); got != "1" {
		t.Errorf("no_token failures = %q, want 1", got)
	}
	waitQuarantineEvents(t, eventsFile, func(u map[string]any) bool {
		q, _ := u["quarantine"].(map[string]any)
		return u["kind"] == "quarantine" && q["removed"] == false && q["reason"] == "no_token"
	})
}

// TestQuarantineAdminTokenOfAMemberIsReportedAtStart: a token whose user is
// not an admin is reported in one log line and in /readyz's body, and the
// bot still starts and is ready; Slack's refusal then shows on the card.
func TestQuarantineAdminTokenOfAMemberIsReportedAtStart(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, nil, alice)
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, body = h.Get("/readyz"); code == http.StatusOK {
			break // ready once Socket Mode is connected
		}
	}
	if code != http.StatusOK || !strings.Contains(body, "ready") || !strings.Contains(body, "not a workspace admin or owner") {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if n := strings.Count(h.Logs.String(), "not a workspace admin or owner"); n != 1 {
		t.Errorf("the bad token was logged %d times, want once", n)
	}
	// Someone else's message: the token's user (alice) may delete only her own.
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: "U0BOB", Text: "<https://secure-login.phish.test/member-token>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Not quarantined:") && strings.Contains(b, "cant_delete_message")
	})
	if got := h.Metric(`verdictbot_quarantine_failures_total{reason="not_allowed"}`); got != "1" {
		t.Errorf("not_allowed failures = %q, want 1", got)
	}
}

// renderChannel draws the channel as its members see it: each message
// (removed ones marked), and its thread with the cards' text.
func renderChannel(h *harness) string {
	var b strings.Builder
	for _, m := range h.Slack.Messages(secChannel, "") {
		writeMessage(&b, "", m)
		for _, r := range h.Slack.Messages(secChannel, m.TS) {
			writeMessage(&b, "    ", r)
		}
	}
	return b.String()
}

func writeMessage(b *strings.Builder, indent string, m slackfake.Message) {
	who := "@" + m.User
	if m.Bot {
		who = "verdictbot (app)"
	}
	if m.Deleted {
		fmt.Fprintf(b, "%s[%s] %s: (this message was deleted)\n", indent, m.TS, who)
		return
	}
	text := m.Text
	if m.Bot && len(m.Blocks) > 0 {
		text = strings.Join(blockTexts(m.Blocks), "\n")
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	fmt.Fprintf(b, "%s[%s] %s: %s\n", indent, m.TS, who, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(b, "%s    %s\n", indent, l)
	}
}

// blockTexts lists the text of a message's blocks, buttons as [label].
func blockTexts(raw json.RawMessage) []string {
	var blocks []map[string]any
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "button" {
				if t, ok := x["text"].(map[string]any); ok {
					out = append(out, fmt.Sprintf("[%v]", t["text"]))
				}
				return
			}
			if x["type"] == "static_select" {
				return
			}
			if x["type"] == "rich_text_section" {
				var line strings.Builder
				for _, e := range x["elements"].([]any) {
					el, _ := e.(map[string]any)
					switch {
					case el["type"] == "link" && el["text"] != nil:
						fmt.Fprintf(&line, "<%v|%v>", el["url"], el["text"])
					case el["type"] == "link":
						fmt.Fprintf(&line, "<%v>", el["url"])
					case el["type"] == "user":
						fmt.Fprintf(&line, "<@%v>", el["user_id"])
					default:
						fmt.Fprint(&line, el["text"])
					}
				}
				out = append(out, line.String())
				return
			}
			if t, ok := x["text"].(string); ok && (x["type"] == "mrkdwn" || x["type"] == "plain_text" || x["type"] == "text") {
				out = append(out, t)
			}
			for _, k := range []string{"text", "elements"} {
				if v, ok := x[k]; ok {
					walk(v)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, blk := range blocks {
		walk(blk)
	}
	return out
}

// TestQuarantineRemovesAMaliciousFile: by default a file found malicious
// removes the message that shared it (chat.delete, the admin token); no
// file is deleted workspace-wide; the tombstone says the message was
// removed for the file, names it, and offers the release, which re-posts
// the text and says the file is not posted again.
func TestQuarantineRemovesAMaliciousFile(t *testing.T) {
	t.Parallel()
	h := startFileQuarantine(t, nil)
	_, ds := h.Share(secChannel, slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar)}, "please pay this")
	ts := ds[0].TS
	h.WaitDeleted(ts)
	card := h.WaitCardIn(secChannel, ts, func(b string) bool {
		return strings.Contains(b, "This message was removed by quarantine") && strings.Contains(b, "it shared `invoice.exe`") &&
			strings.Contains(b, "not deleted from Slack")
	})
	if !strings.Contains(apptest.BlocksText(card.Blocks), notify.ActionQuarantineRelease) {
		t.Error("a message removed for its file offers no release")
	}
	if calls := h.Slack.Calls("files.delete"); len(calls) != 0 {
		t.Fatalf("files.delete called by default: %+v", calls)
	}
	var del bool
	for _, c := range h.Slack.Calls("chat.delete") {
		if c.Params.Get("ts") == ts && c.Token == apptest.AdminToken && c.Error == "" {
			del = true
		}
	}
	if !del {
		t.Fatalf("chat.delete of %s not called with the admin token", ts)
	}
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: adminUser, Channel: secChannel, MessageTS: card.TS,
		ActionID: notify.ActionQuarantineRelease, Value: ts + "/files"}); err != nil {
		t.Fatal(err)
	}
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.Messages(secChannel, "") {
			if m.Bot && strings.Contains(m.Text, "please pay this") && strings.Contains(m.Text, "Not posted again: the file `invoice.exe`") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no re-post of the text: %v\n%s", err, renderChannel(h))
	}
}

// TestQuarantineFilesDeleteModeDeletesOnlyTheMaliciousFile: with
// VERDICTBOT_QUARANTINE_FILES=delete, of a message sharing a malicious and
// a clean file only the malicious one is deleted (files.delete, the admin
// token); the message and the clean file stay; the tombstone names the
// deleted file and offers no release.
func TestQuarantineFilesDeleteModeDeletesOnlyTheMaliciousFile(t *testing.T) {
	t.Parallel()
	h := startFileQuarantine(t, map[string]string{"VERDICTBOT_QUARANTINE_FILES": "delete"})
	ts, files := h.shareFiles("pay and read",
		slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar + " delete-mode")},
		slackfake.File{Name: "notes.pdf", Content: []byte("%PDF-1.4 notes")})
	card := h.WaitCardIn(secChannel, ts, func(b string) bool {
		return strings.Contains(b, "The file `invoice.exe` of this message was deleted from Slack") && strings.Contains(b, "sandbox keeps the sample")
	})
	if strings.Contains(apptest.BlocksText(card.Blocks), notify.ActionQuarantineRelease) {
		t.Error("a deleted file offers a release")
	}
	calls := h.Slack.Calls("files.delete")
	if len(calls) != 1 || calls[0].Params.Get("file") != files[0].ID || calls[0].Token != apptest.AdminToken || calls[0].Error != "" {
		t.Fatalf("files.delete calls: %+v", calls)
	}
	if m, _ := h.Slack.Message(secChannel, ts); m.Deleted {
		t.Error("the message itself was deleted; only its malicious file should be")
	}
	h.Slack.Inspect(func(st *slackfake.State) {
		if f, _ := st.File(files[1].ID); f.Deleted {
			t.Error("the clean file was deleted")
		}
	})
}

// TestQuarantineOfAMessageAlreadyDeletedSaysSo: a message its author
// deleted before the verdict is not "removed": the card says it was
// already gone, and it is counted.
func TestQuarantineOfAMessageAlreadyDeletedSaysSo(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, nil, adminUser)
	d := h.Post("<https://secure-login.phish.test/gone>")
	if _, err := h.Slack.DeleteMessage(secChannel, d.TS); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Not quarantined:") && strings.Contains(b, "already deleted")
	})
	if n := len(h.Slack.Calls("chat.delete")); n != 0 {
		t.Errorf("%d chat.delete calls for a message already gone", n)
	}
	if got := h.Metric(`verdictbot_quarantine_failures_total{reason="already_deleted"}`); got != "1" {
		t.Errorf("already_deleted failures = %q, want 1", got)
	}
}

// TestQuarantineLevelInSlashAndHome: /scan channel shows the level (the
// default, and that nothing can be removed without an admin token); only
// admins change it, with /scan channel quarantine or the Home's select,
// which shows each channel's level.
func TestQuarantineLevelInSlashAndHome(t *testing.T) {
	t.Parallel()
	h := startBotSeeded(t, map[string]string{"VERDICTBOT_QUARANTINE": "malicious"}, sim.Config{}, false, seedHome)
	apptest.MustContain(t, h.Slash(alice, "channel"), "Quarantine: *malicious* by default (VERDICTBOT_QUARANTINE)",
		"cannot be removed now: no admin token is set (SLACK_ADMIN_USER_TOKEN)")
	apptest.MustContain(t, h.Slash(alice, "channel quarantine suspicious"), "Only admins can change this channel's quarantine.")
	apptest.MustContain(t, h.Slash(alice, "channel quarantine"), "Quarantine: *malicious* by default")
	apptest.MustContain(t, h.Slash(adminUser, "channel quarantine suspicious"), "Changed. Quarantine: *suspicious*: messages found suspicious or malicious are removed")
	home := homeText(h.openHome(adminUser, 1).Blocks)
	apptest.MustContain(t, home, "<#"+secChannel+"> — mode *verbose* (default) · files *on* (default) · quarantine *suspicious*\n", "[Quarantine: quarantine suspicious ▾]")
	if _, err := h.Slack.DeliverHomeAction(slackfake.HomeAction{UserID: adminUser, BlockID: commands.HomeChannelBlock + secChannel,
		ActionID: commands.ActionHomeChannelQuarantine, Value: "off"}); err != nil {
		t.Fatal(err)
	}
	apptest.MustContain(t, homeText(h.openHomeAgain(adminUser, 2).Blocks), "quarantine *off*\n", "Changed. Quarantine: *off*.")
	apptest.MustContain(t, h.Logs.String(), `"setting":"quarantine"`, `"from":"suspicious"`, `"to":"off"`, `"via":"home"`)
}

// startFileQuarantine starts the bot with the sandbox, in a quiet channel
// quarantining malicious messages, with the admin token.
func startFileQuarantine(t *testing.T, env map[string]string) *harness {
	t.Helper()
	settings := map[string]string{"SANDBOX_API_KEY": e2eKey}
	maps.Copy(settings, env)
	return startBotSeeded(t, apptest.QuarantineSettings(settings), sim.Config{Profile: apptest.QuickSandbox()}, true, apptest.SeedQuarantine,
		apptest.WithAdminToken(adminUser))
}

// shareFiles shares files in one message (the file_share message event
// only, so one card holds them all) and returns the message's ts.
func (h *harness) shareFiles(text string, files ...slackfake.File) (string, []slackfake.File) {
	h.T.Helper()
	var ids []string
	for i, f := range files {
		files[i] = h.Slack.AddFile(f)
		ids = append(ids, files[i].ID)
	}
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: text, SubType: "file_share", Files: ids})
	if err != nil {
		h.T.Fatal(err)
	}
	return d.TS, files
}

// TestQuarantinedCardPostsNoScreenshots: a message shares a malicious file
// whose sandbox screenshots are ready at once and a slower clean one. The
// screenshots wait for the card to be final; quarantine then removes the
// message, so none is posted in its thread, and the card says they were
// withheld. A file card that is not quarantined still gets its
// screenshots (the quiet channel's quarantine is then turned off). Both
// files are submitted at once (the sandbox's run budget is not what this
// is about): the malicious one's report and screenshots are in after the
// bot's first status check (about 1 s), the clean one's 2 s analysis
// after its third (about 2.4 s).
func TestQuarantinedCardPostsNoScreenshots(t *testing.T) {
	t.Parallel()
	h := startFileQuarantine(t, map[string]string{"VERDICTBOT_SANDBOX_RUN_RATE": "50"})
	ts, _ := h.shareFiles("two files",
		slackfake.File{Name: "dropper.exe", Content: []byte(apptest.Eicar + " SIM:SHOTS=2")},
		slackfake.File{Name: "notes.pdf", Content: []byte("%PDF-1.4 notes SIM:DURATION=2s SIM:SHOTS=1")})
	h.WaitCardIn(secChannel, ts, func(b string) bool {
		return strings.Contains(b, "Quarantined:") && strings.Contains(b, "Screenshots withheld")
	})
	if ups := h.Slack.Uploads(secChannel, ts); len(ups) != 0 {
		t.Fatalf("%d screenshots posted in the thread of a quarantined message", len(ups))
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpScreenshotArchive) + h.Sim.Count(sim.ServiceSandbox, sim.OpScreenshot); n == 0 {
		t.Fatal("the screenshots were never fetched: the test proves nothing")
	}

	// Quarantine off: the same kind of message gets its screenshots.
	if got := h.Slash(adminUser, "channel quarantine off"); !strings.Contains(got, "Changed") {
		t.Fatalf("/scan channel quarantine off: %q", got)
	}
	ts2, _ := h.shareFiles("again", slackfake.File{Name: "dropper2.exe", Content: []byte(apptest.Eicar + " again SIM:SHOTS=2")})
	h.WaitCardIn(secChannel, ts2, func(b string) bool { return strings.Contains(b, "2 screenshots in this thread") })
	if ups := h.Slack.Uploads(secChannel, ts2); len(ups) != 2 {
		t.Fatalf("%d screenshots posted without quarantine, want 2", len(ups))
	}
}

// TestReSharingAQuarantinedFileIsRemovedAgain: quarantine removed the
// message that shared a malicious file (the default mode keeps the file
// in Slack), so its sender shares the same file again, in a new message
// of the same channel, and then once more in a thread. Each new message is
// a new share: it gets its card and is removed too. A file is announced
// twice per share (file_shared and the message's file_share), never once
// per channel.
func TestReSharingAQuarantinedFileIsRemovedAgain(t *testing.T) {
	t.Parallel()
	h := startFileQuarantine(t, nil)
	f, ds := h.Share(secChannel, slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar + " reshare")}, "please pay this")
	first := ds[0].TS
	h.WaitDeleted(first)
	again, err := h.Slack.ShareFile(secChannel, alice, f.ID, "did you get it? here it is again")
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDeleted(again[0].TS)
	h.WaitCardIn(secChannel, again[0].TS, func(b string) bool {
		return strings.Contains(b, "This message was removed by quarantine") && strings.Contains(b, "invoice.exe")
	})
	// In a thread, as a reply to someone else's message.
	root := h.Post("anyone seen the invoice?")
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, ThreadTS: root.TS,
		Text: "this one", SubType: "file_share", Files: []string{f.ID}})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDeleted(d.TS)
	if n := len(h.Slack.Calls("files.delete")); n != 0 {
		t.Errorf("files.delete called %d times in the default mode", n)
	}
}

// TestAFloodOfCardsDoesNotDelayARemoval: in a verbose channel every
// message gets a card, and Slack takes about one post a second in a
// channel, so one person's 12 harmless links queue 12 cards there. Another
// person's phishing message posted behind them is removed as soon as its
// verdict is in, not after the queue of cards: the removal never waits for
// the card's post (the tombstone is what is posted), even when its verdict
// comes after the grace period and its pending card waits in the queue.
func TestAFloodOfCardsDoesNotDelayARemoval(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "12 cards at Slack's pace of one post a second (about 12 s)")
	// An analysis takes 3 s, longer than the grace period (2 s): the
	// phishing message's pending card is posted at its end, and waits its
	// turn behind the flood's cards when the verdict comes in.
	slow := sim.Config{Profile: sim.Profile{Name: "past the grace", URLPending: time.Second, URLProcessing: 2 * time.Second}}
	h := startQuarantineSim(t, withEnv(fastBudgets, map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose"}), adminUser, slow)
	// The phishing message's verdict comes about 5.5 s after the flood's
	// (2 s of grace, then its 3 s analysis, polled every 0.5 s), while its
	// pending card waits behind the flood's, due at about flood seconds:
	// 12 leaves 6 s of margin, for a test that waits its tombstone out
	// (25 took 26 s).
	const flood = 12
	for i := range flood {
		if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice,
			Text: fmt.Sprintf("<https://example.com/flood/%d>", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The flood's cards are being posted, one a second.
	if err := h.Slack.WaitFor(h.Ctx(20*time.Second), func(st *slackfake.State) bool { return len(st.Calls("chat.postMessage")) >= 2 }); err != nil {
		t.Fatalf("the flood's cards are not being posted: %v", err)
	}
	const phish = "https://login.phish.test/behind-the-flood"
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: bob, Text: "<" + phish + ">"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDeleted(d.TS)
	// The removal is timed from its verdict (the service's answer with the
	// result), not from the post: the analysis before it (the submission
	// and the polls, each after the store's writes) has nothing to do with
	// the cards, and takes longer when the machine's disk is busy. The
	// flood's cards are counted up to the deletion: waiting for them would
	// have let them all out first.
	var del *slackfake.Call
	for _, c := range h.Slack.Calls("chat.delete") {
		if c.Params.Get("ts") == d.TS {
			del = &c
		}
	}
	tasks := h.Sim.URLTasks(phish)
	if del == nil || len(tasks) != 1 {
		t.Fatalf("chat.delete %+v, tasks %v", del, tasks)
	}
	var verdictIn time.Time
	for _, r := range h.Sim.Requests() {
		if r.Op == sim.OpResult && strings.Contains(r.Path, tasks[0]) {
			verdictIn = r.Time
			break
		}
	}
	if verdictIn.IsZero() {
		t.Fatalf("no result request for task %s", tasks[0])
	}
	cards := 0
	for _, c := range h.Slack.Calls("chat.postMessage") {
		if c.Params.Get("thread_ts") != d.TS && c.Params.Get("channel") == secChannel && c.Time.Before(del.Time) {
			cards++
		}
	}
	took := del.Time.Sub(verdictIn)
	t.Logf("removed %v after its verdict, once %d of the flood's %d cards were out", took, cards, flood)
	if took > 8*time.Second || cards >= flood {
		t.Fatalf("removed %v after its verdict, once %d of the flood's %d cards were out: the removal waited for the cards", took, cards, flood)
	}
	// Its tombstone is posted in turn.
	h.WaitCardWithin(60*time.Second, d.TS, func(b string) bool { return strings.Contains(b, "removed by quarantine") })
}
