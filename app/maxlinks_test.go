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

// Issue 21, item 2: no message is clean while any of its links is
// unchecked. Every distinct link up to VERDICTBOT_MAX_LINKS (default 50)
// is checked; past it the message is "could not check", with a card even
// in a quiet channel, and never the clean reaction.

// fastBudgets lets the tests submit many links at once: they are about
// which links are checked, not about the vendor's pace.
var fastBudgets = map[string]string{"VERDICTBOT_REPUTATION_RUN_RATE": "200", "VERDICTBOT_REPUTATION_REPORT_RATE": "1000"}

func withEnv(base map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// noReaction fails if the message at ts got the clean reaction.
func (h *harness) noReaction(ts string) {
	h.T.Helper()
	if m, _ := h.Slack.Message(secChannel, ts); len(m.Reactions["white_check_mark"]) != 0 {
		h.T.Errorf("the message got the clean reaction")
	}
}

// TestTheEleventhLinkIsChecked: ten harmless links and then a phishing
// one, in a quiet channel with the default limit: every link is submitted,
// the message gets a malicious card, not ✅.
func TestTheEleventhLinkIsChecked(t *testing.T) {
	t.Parallel()
	h := startBot(t, withEnv(fastBudgets, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}), sim.Config{})
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "<https://example.com/docs/%d> ", i)
	}
	b.WriteString("and <https://login.phish.test/eleventh>")
	d := h.Post(b.String())
	card := h.WaitCard(d.TS, func(s string) bool { return strings.Contains(s, "Malicious") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "login[.]phish[.]test/eleventh", "11 links: 1 malicious · 10 clean")
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 11 {
		t.Errorf("%d submissions, want 11", n)
	}
	h.noReaction(d.TS)
}

// TestLinksPastTheLimitMakeACardInAQuietChannel: one distinct link more
// than VERDICTBOT_MAX_LINKS, all the checked ones clean: a quiet channel
// gets a card saying the message could not be checked in full and how many
// links were not, no ✅, and the metric counts the link left out.
func TestLinksPastTheLimitMakeACardInAQuietChannel(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_MAX_LINKS": "3"}, sim.Config{})
	d := h.Post("<https://example.com/1> <https://example.com/2> <https://example.com/3> <https://example.com/4>")
	card := h.WaitCard(d.TS, func(s string) bool { return strings.Contains(s, "Could not check") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "1 more link was not checked (limit 3 per message), so this message cannot be called clean",
		"4 links: 3 clean · 1 not checked")
	if strings.Contains(apptest.BlocksText(card.Blocks), "Left in place") {
		t.Error("a channel without quarantine says quarantine left the message")
	}
	if card.Text != "verdictbot: could not check 1 link in this message" {
		t.Errorf("notification text %q", card.Text)
	}
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 3 {
		t.Errorf("%d submissions, want 3", n)
	}
	h.noReaction(d.TS)
	if got := h.Metric(`verdictbot_unchecked_targets_total{kind="url"}`); got != "1" {
		t.Errorf(`verdictbot_unchecked_targets_total{kind="url"} = %q, want 1`, got)
	}
}

// TestQuarantineLeavesAMessageWithUncheckedLinks: in a channel that
// quarantines malicious messages, a phishing link pushed past the limit is
// not checked: the message is "could not check", which is below every
// quarantine level, so it stays — and its card says what was not checked.
func TestQuarantineLeavesAMessageWithUncheckedLinks(t *testing.T) {
	t.Parallel()
	h := startQuarantineWith(t, map[string]string{"VERDICTBOT_MAX_LINKS": "2"}, sim.Profile{})
	d := h.Post("<https://example.com/a> <https://example.com/b> <https://login.phish.test/pushed-out>")
	card := h.WaitCard(d.TS, func(s string) bool { return strings.Contains(s, "Could not check") })
	b := apptest.BlocksText(card.Blocks)
	apptest.MustContain(t, b, "1 more link was not checked (limit 2 per message), so this message cannot be called clean",
		"Left in place ", "not everything in it could be checked, and quarantine removes only what is found suspicious or malicious")
	if strings.Contains(b, "Quarantined:") || strings.Contains(b, notify.ActionQuarantineRelease) {
		t.Errorf("a message that could not be checked was quarantined:\n%s", b)
	}
	if m, _ := h.Slack.Message(secChannel, d.TS); m.Deleted || len(h.Slack.Calls("chat.delete")) != 0 {
		t.Error("the message was removed")
	}
	h.noReaction(d.TS)
	if n := len(h.Sim.URLTasks("https://login.phish.test/pushed-out")); n != 0 {
		t.Errorf("the link past the limit was submitted %d times", n)
	}
}

// TestPaddingDoesNotPushALinkOut: a message padded with repeats of one
// link (other spellings, fragments), allowlisted Slack links and, with
// VERDICTBOT_URL_QUERY=strip, query variants of one link (one link as
// sent) does not push the phishing link at its end past the limit.
func TestPaddingDoesNotPushALinkOut(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_MAX_LINKS": "3", "VERDICTBOT_URL_QUERY": "strip"}, sim.Config{})
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "<https://example.com/c?id=%d> <HTTPS://EXAMPLE.COM:443/a#%d> <https://files.slack.com/files-pri/T0/F%d> ", i, i, i)
	}
	b.WriteString("<https://login.phish.test/padded>")
	d := h.Post(b.String())
	card := h.WaitCard(d.TS, func(s string) bool { return strings.Contains(s, "Malicious") })
	bt := apptest.BlocksText(card.Blocks)
	if strings.Contains(bt, "not checked (limit") {
		t.Errorf("padding pushed links out:\n%s", bt)
	}
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 3 {
		t.Errorf("%d submissions, want 3 (the query variants are one link as sent, the repeats one, the phishing link)", n)
	}
	if n := len(h.Sim.URLTasks("https://login.phish.test/padded")); n != 1 {
		t.Errorf("the phishing link was submitted %d times", n)
	}
}

// TestTwoHundredLinksMakeACardSlackAccepts: a message with
// VERDICTBOT_MAX_LINKS=200 distinct links and one more: every one of the
// 200 is checked, and the card — the two phishing links first, the clean
// ones summarised, the one left out said — is posted and updated as Slack
// accepts it (the fake checks Block Kit's limits), never as the minimal
// fallback.
func TestTwoHundredLinksMakeACardSlackAccepts(t *testing.T) {
	t.Parallel()
	h := startBot(t, withEnv(fastBudgets, map[string]string{"VERDICTBOT_MAX_LINKS": "200", "VERDICTBOT_CHANNEL_MODE": "quiet"}), sim.Config{})
	// bob presses the button on alice's link (its poster may not report it
	// as a false positive: TestOwnLinkFalsePositiveIsRefused).
	h.Slack.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob}})
	var b strings.Builder
	for i := range 201 {
		switch i {
		case 120, 199:
			fmt.Fprintf(&b, "<https://login.phish.test/n%d> ", i)
		default:
			fmt.Fprintf(&b, "<https://example.com/page/%d> ", i)
		}
	}
	d := h.Post(b.String())
	card := h.WaitCardWithin(60*time.Second, d.TS, func(s string) bool {
		return strings.Contains(s, "Malicious") && !strings.Contains(s, "scanning")
	})
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 200 {
		t.Errorf("%d submissions, want 200", n)
	}
	for _, method := range []string{"chat.postMessage", "chat.update"} {
		for _, c := range h.Slack.Calls(method) {
			if c.Error != "" {
				t.Errorf("%s refused: %s", method, c.Error)
			}
		}
	}
	if strings.Contains(h.Logs.String(), "posting the minimal card") {
		t.Error("Slack refused the card; the minimal one was posted")
	}
	var blocks []struct {
		BlockID string `json:"block_id"`
	}
	if err := json.Unmarshal(card.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	if len(blocks) > 50 || len(blocks) < 3 {
		t.Fatalf("%d blocks", len(blocks))
	}
	if blocks[1].BlockID != "line-120-verdict" || blocks[3].BlockID != "line-199-verdict" {
		t.Errorf("first lines drawn %q, %q: want the phishing links (120, 199) first", blocks[1].BlockID, blocks[3].BlockID)
	}
	bt := apptest.BlocksText(card.Blocks)
	apptest.MustContain(t, bt, "201 links: 2 malicious · 198 clean · 1 not checked", "more links not shown: ",
		"1 more link was not checked (limit 200 per message)")
	// A button on the first line drawn reports on that line.
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: secChannel, MessageTS: card.TS,
		ActionID: notify.ActionFalsePositive, BlockID: "line-199"}); err != nil {
		t.Fatal(err)
	}
	h.WaitCardWithin(15*time.Second, d.TS, func(s string) bool {
		return strings.Contains(s, `"block_id":"line-199-audit"`) && strings.Contains(s, "false positive")
	})
	tasks := h.Sim.URLTasks("https://login.phish.test/n199")
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	if task, _ := h.Sim.URLTask(tasks[0]); len(task.Dispositions) != 1 {
		t.Errorf("the report did not reach the right task: %+v", task.Dispositions)
	}
}

// TestQuarantineChannelShowsAFileItCouldNotCheck: in a quiet channel with
// quarantine on, a file over the size limit is not "clean by silence": its
// message gets a card saying it could not be checked and why, no ✅, and
// the metric counts it. In a quiet channel without quarantine it stays a
// log line, as before.
func TestQuarantineChannelShowsAFileItCouldNotCheck(t *testing.T) {
	t.Parallel()
	seed := func(f *slackfake.Server) {
		f.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
	}
	h := startBotSeeded(t, map[string]string{
		"SANDBOX_API_KEY":           e2eKey,
		"VERDICTBOT_CHANNEL_MODE":   "quiet",
		"VERDICTBOT_QUARANTINE":     "malicious",
		"SLACK_ADMIN_USER_TOKEN":    apptest.AdminToken,
		"VERDICTBOT_MAX_FILE_BYTES": "64",
	}, sim.Config{Profile: apptest.QuickSandbox()}, true, seed,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))
	_, ds := h.Share(secChannel, slackfake.File{Name: "payload.zip", Content: []byte(strings.Repeat(apptest.Eicar, 4))}, "see attached")
	ts := ds[0].TS
	card := h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Could not check") })
	apptest.MustContain(t, apptest.BlocksText(card.Blocks), "payload.zip", "It is larger than the", "Left in place ")
	if strings.Contains(apptest.BlocksText(card.Blocks), "Quarantined:") {
		t.Error("a file that could not be checked was quarantined")
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 0 {
		t.Errorf("%d uploads of a file over the limit", n)
	}
	h.noReaction(ts)
	if got := h.Metric(`verdictbot_unchecked_targets_total{kind="file"}`); got != "1" {
		t.Errorf(`verdictbot_unchecked_targets_total{kind="file"} = %q, want 1`, got)
	}

	// Without quarantine (the channel's own level off) the file is only
	// listed as not checked, and a quiet channel shows nothing.
	apptest.MustContain(t, h.Slash(adminUser, "channel quarantine off"), "Changed.")
	_, ds = h.Share(secChannel, slackfake.File{Name: "other.zip", Content: []byte(strings.Repeat(apptest.Eicar, 4))}, "and this")
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), ds[0].EnvelopeID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(h.Logs.String(), `"msg":"files not checked"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second file was never handled")
		}
	}
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, ds[0].TS))); n != 0 {
		t.Errorf("%d cards without quarantine, want none", n)
	}
}
