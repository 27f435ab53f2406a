package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// The links of someone past VERDICTBOT_USER_LINKS_PER_HOUR are not
// dropped: each is deferred to the recheck job, which checks it at low
// priority, and its verdict reaches the card (and quarantine) like a
// recheck's flip.

// spendCap posts n clean links as alice in channel and waits for their
// clean reactions: her allowance for the hour is then used up.
func spendCap(t *testing.T, fake *slackfake.Server, channel string, n int) {
	t.Helper()
	var ds []slackfake.Delivery
	for i := range n {
		d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: channel, User: alice, Text: fmt.Sprintf("docs <https://example.com/guide/%d>", i)})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, d := range ds {
			if m, ok := st.Message(channel, d.TS); !ok || len(m.Reactions["white_check_mark"]) != 1 {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("the links within the cap were not all found clean: %v", err)
	}
}

// cardWrites returns, in order, the blocks of every post and update of
// a card the bot made in channel's thread (the card's versions as Slack
// received them).
func cardWrites(fake *slackfake.Server, channel, thread string) (posts int, versions []string) {
	var cardTS []string
	for _, c := range fake.Calls("") { // every call, in order
		if c.Params.Get("channel") != channel || c.Params.Get("blocks") == "" || c.Error != "" {
			continue
		}
		switch c.Method {
		case "chat.postMessage":
			if c.Params.Get("thread_ts") != thread {
				continue
			}
			posts++
			var resp struct {
				TS string `json:"ts"`
			}
			if err := json.Unmarshal(c.Response, &resp); err == nil {
				cardTS = append(cardTS, resp.TS)
			}
		case "chat.update":
			if !slices.Contains(cardTS, c.Params.Get("ts")) {
				continue
			}
		default:
			continue
		}
		versions = append(versions, c.Params.Get("blocks"))
	}
	return posts, versions
}

// firstWith returns the index of the first version containing all of
// words (-1 if none).
func firstWith(versions []string, words ...string) int {
	for i, v := range versions {
		all := true
		for _, w := range words {
			all = all && strings.Contains(v, w)
		}
		if all {
			return i
		}
	}
	return -1
}

// deferredMetric reads verdictbot_recheck_deferred_checks_total{result}.
func deferredMetric(t *testing.T, addr, result string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^verdictbot_recheck_deferred_checks_total\{result="` + result + `"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// TestLinkPastTheCapIsCheckedLaterAndQuarantined: someone spends their
// cap (3) on harmless links, then posts a phishing link in a channel
// quarantining malicious messages. The link is not sent then: its card
// says it is not checked yet and will be checked at low priority. The
// next recheck run checks it (once, for nobody), the same card is
// updated in place to malicious, the message is removed through the
// flip's queue, a reply in the thread tells the poster, the alert channel
// gets the cap's line and the finding, and the metric counts the check.
func TestLinkPastTheCapIsCheckedLaterAndQuarantined(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a link past the cap, checked at the next recheck run (about 5 s)")
	const alerts = "C0ALERTS"
	h := apptest.StartQuarantine(t, map[string]string{
		"VERDICTBOT_USER_LINKS_PER_HOUR": "3",
		"VERDICTBOT_ALERT_CHANNEL":       alerts,
		"VERDICTBOT_RECHECK_SCHEDULE":    "@every 1s",
		"VERDICTBOT_HTTP_ADDR":           apptest.ListenAnywhere,
	}, adminUser)
	h.Slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	spendCap(t, h.Slack, secChannel, 3)

	const phish = "https://secure-login.phish.test/verify/deferred"
	d := h.Post("urgent, log in here: <" + phish + ">")
	h.WaitDeleted(d.TS)
	card := h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Quarantined:") && strings.Contains(b, "at low priority")
	})
	if b := apptest.BlocksText(card.Blocks); !strings.Contains(b, "found malicious") {
		t.Errorf("the tombstone does not say why:\n%s", b)
	}
	posts, versions := cardWrites(h.Slack, secChannel, d.TS)
	if posts != 1 {
		t.Errorf("%d cards posted in the thread, want one, updated in place", posts)
	}
	waiting, malicious := firstWith(versions, apptest.DeferredWords), firstWith(versions, "Malicious")
	if waiting < 0 || malicious < 0 || waiting > malicious {
		t.Fatalf("the card did not say the link was not checked yet (version %d) before it said malicious (version %d):\n%s",
			waiting, malicious, strings.Join(versions, "\n"))
	}
	if n := len(h.Sim.URLTasks(phish)); n != 1 {
		t.Errorf("the phishing link was submitted %d times, want once (the deferred check)", n)
	}
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		reply, alert := false, false
		for _, m := range st.Messages(secChannel, d.TS) {
			reply = reply || (m.Bot && strings.Contains(m.Text, "<@"+alice+">") && strings.Contains(m.Text, "checked at low priority") &&
				strings.Contains(m.Text, "malicious"))
		}
		for _, m := range st.Messages(alerts, "") {
			alert = alert || (m.Bot && strings.Contains(m.Text, "checked late") && strings.Contains(m.Text, "archives/"+secChannel))
		}
		return reply && alert
	})
	if err != nil {
		var seen []string
		for _, m := range append(h.Slack.Messages(secChannel, d.TS), h.Slack.Messages(alerts, "")...) {
			seen = append(seen, m.Text)
		}
		t.Fatalf("no reply to the poster or no finding in the alert channel: %v\n%q", err, seen)
	}
	for _, m := range append(h.Slack.Messages(secChannel, d.TS), h.Slack.Messages(alerts, "")...) {
		if m.Bot && strings.Contains(m.Text, "https://secure-login") {
			t.Errorf("a live link in %q", m.Text)
		}
	}
	// The run is counted once it is over, after its announcements: the
	// reply can come a moment before the count.
	addr := apptest.OpsAddr(t, h.Logs)
	got := ""
	for deadline := time.Now().Add(5 * time.Second); got != "1" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = deferredMetric(t, addr, "checked")
	}
	if got != "1" {
		t.Errorf("verdictbot_recheck_deferred_checks_total{result=\"checked\"} = %q, want 1", got)
	}
}

// TestDeferredLinksReachEveryCardAndStayQuietWhenClean: past the cap, the
// same phishing link posted in two channels and a harmless link are all
// deferred; both messages carrying the phishing link are removed, with
// one submission of it; the harmless link's card is updated to clean
// with no reply and its message stays. An edit that takes a deferred link
// out of its message leaves its new card alone.
func TestDeferredLinksReachEveryCardAndStayQuietWhenClean(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "links past the cap, checked at the next recheck run (about 8 s)")
	const other = "C0RANDOM"
	h := apptest.StartQuarantine(t, map[string]string{
		"VERDICTBOT_USER_LINKS_PER_HOUR": "3",
		"VERDICTBOT_RECHECK_SCHEDULE":    "@every 1s",
	}, adminUser)
	h.Slack.AddChannel(slackfake.Channel{ID: other, Name: "random"})
	spendCap(t, h.Slack, secChannel, 3)

	const phish = "https://account-verify.phish.test/login/shared"
	send := func(channel, text string) slackfake.Delivery {
		t.Helper()
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: channel, User: alice, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	here := send(secChannel, "see <"+phish+">")
	there := send(other, "also <"+phish+">")
	harmless := send(secChannel, "and the docs <https://example.com/after-the-cap>")
	h.WaitDeleted(here.TS)
	err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(other, there.TS)
		return ok && m.Deleted
	})
	if err != nil {
		t.Fatalf("the second message with the phishing link was not removed: %v\n%s", err, h.Logs.String())
	}
	if n := len(h.Sim.URLTasks(phish)); n != 1 {
		t.Errorf("the phishing link was submitted %d times, want once", n)
	}
	card := h.WaitCard(harmless.TS, func(b string) bool { return strings.Contains(b, "at low priority") && strings.Contains(b, "is clean") })
	if b := apptest.BlocksText(card.Blocks); strings.Contains(b, apptest.DeferredWords) {
		t.Errorf("the harmless link's card still says it is not checked:\n%s", b)
	}
	_, versions := cardWrites(h.Slack, secChannel, harmless.TS)
	if firstWith(versions, apptest.DeferredWords) < 0 {
		t.Errorf("the harmless link's card never said it was not checked yet:\n%s", strings.Join(versions, "\n"))
	}
	if m, _ := h.Slack.Message(secChannel, harmless.TS); m.Deleted {
		t.Error("the harmless link's message was removed")
	}
	for _, m := range h.Slack.Messages(secChannel, harmless.TS) {
		if m.Bot && strings.Contains(m.Text, "<@"+alice+">") {
			t.Errorf("a reply about a harmless deferred link: %q", m.Text)
		}
	}
}

// TestDeferredLinkSurvivesAKill: the process that deferred a phishing
// link (its recheck not due for an hour) is killed once the card says
// so; the next process on the same store checks it and removes the
// message.
func TestDeferredLinkSurvivesAKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	fake := slackfaketest.Start(t,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))
	fake.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: alice, Name: "alice"})
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickProfile()})
	env := map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_ADMINS": adminUser, "SLACK_ADMIN_USER_TOKEN": apptest.AdminToken,
		"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
		"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_QUARANTINE": "malicious", "VERDICTBOT_USER_LINKS_PER_HOUR": "3",
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1h",
	}
	first := startProcess(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("first process did not connect: %v\n%s", err, first.logs.String())
	}
	spendCap(t, fake, secChannel, 3)
	const phish = "https://secure-login.phish.test/verify/kill"
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "now <" + phish + ">"})
	if err != nil {
		t.Fatal(err)
	}
	err = fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, m := range st.Messages(secChannel, d.TS) {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), apptest.DeferredWords) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the card does not say the link will be checked: %v\n%s", err, first.logs.String())
	}
	first.kill9(t)
	if n := len(srv.URLTasks(phish)); n != 0 {
		t.Fatalf("the link past the cap was submitted %d times before the kill", n)
	}
	env["VERDICTBOT_RECHECK_SCHEDULE"] = "@every 1s"
	second := startProcess(t, env)
	err = fake.WaitFor(ctx, func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, d.TS)
		return ok && m.Deleted
	})
	if err != nil {
		t.Fatalf("the deferred link was not checked after the restart: %v\n%s", err, second.logs.String())
	}
	if n := len(srv.URLTasks(phish)); n != 1 {
		t.Errorf("the phishing link was submitted %d times, want once", n)
	}
}
