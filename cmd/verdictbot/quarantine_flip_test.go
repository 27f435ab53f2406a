package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/quarantine"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// The recheck flip tests: several messages carry a link the first scan
// finds clean (flip.test alternates: odd scans clean, even phishing) and
// the recheck, 2 s later, finds phishing, in channels quarantining
// malicious messages. Every card showing the link then calls for the
// removal of its message.

// flipEnv is the settings of a bot whose recheck flips flip.test links
// about 2 s after they are first seen.
func flipEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "quiet",
		"VERDICTBOT_QUARANTINE":       "malicious",
		"SLACK_ADMIN_USER_TOKEN":      apptest.AdminToken,
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "2s,1h",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// postFlips posts n messages carrying url, spread over channels, and
// waits until each shows its first verdict (clean: the reaction).
func postFlips(t *testing.T, fake *slackfake.Server, url string, channels []string, n int) (threads [][2]string) {
	t.Helper()
	for i := range n {
		ch := channels[i%len(channels)]
		d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: ch, User: alice, Text: fmt.Sprintf("look %d <%s>", i, url)})
		if err != nil {
			t.Fatal(err)
		}
		threads = append(threads, [2]string{ch, d.TS})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, th := range threads {
			m, ok := st.Message(th[0], th[1])
			if !ok || len(m.Reactions["white_check_mark"]) != 1 {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("first verdicts (clean) not all shown: %v", err)
	}
	return threads
}

// deletesByTS counts the chat.delete calls that deleted each message (a
// call Slack refused, 429, deleted nothing).
func deletesByTS(fake *slackfake.Server) map[string]int {
	out := map[string]int{}
	for _, c := range fake.Calls("chat.delete") {
		if c.Error == "" {
			out[c.Params.Get("ts")]++
		}
	}
	return out
}

func waitAllDeleted(t *testing.T, fake *slackfake.Server, threads [][2]string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, th := range threads {
			if m, ok := st.Message(th[0], th[1]); !ok || !m.Deleted {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("not every message was removed: %v (chat.delete by ts: %v)", err, deletesByTS(fake))
	}
}

// TestQuarantineFlipRemovalsArePacedAndSurviveAKill: a recheck flips a
// link that 8 messages in 4 channels carry (no more than VERDICTBOT_QUARANTINE_FLIP_MAX):
// their removals are paced (one chat.delete per 1.5 s at most; Slack's
// own Tier 3 limit, modelled by the fake, never answers 429), the process
// is killed (SIGKILL) after the second removal, and the next process
// removes the rest: each message gets exactly one chat.delete, and every
// card ends as the tombstone. (The kill lands between two removals: one
// whose call was on its way would be made again by the next process.)
func TestQuarantineFlipRemovalsArePacedAndSurviveAKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	fake := slackfaketest.Start(t,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}),
		// Slack's Tier 3 bucket on chat.delete (the others off, so the
		// announcement is quick and the kill comes amid the removals).
		slackfake.WithRateLimits(slackfake.RateLimits{PostInterval: -1, UpdatesPerMinute: -1, DeletesPerMinute: 50, DeleteBurst: 1}))
	fake.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: alice, Name: "alice"})
	_, base := simtest.Start(t, sim.Config{Profile: apptest.QuickProfile()})
	env := flipEnv(map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_ADMINS": adminUser,
		"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
	})
	first := startProcess(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("first process did not connect: %v\n%s", err, first.logs.String())
	}
	const n = 8
	threads := postFlips(t, fake, "https://promo.flip.test/kill", []string{secChannel, "C0FLIP2", "C0FLIP3", "C0FLIP4"}, n)
	removed := func() int {
		k := 0
		for _, th := range threads {
			if m, _ := fake.Message(th[0], th[1]); m.Deleted {
				k++
			}
		}
		return k
	}
	// Kill once two are removed and the flip's announcement is over (its
	// run is logged once every card is shown).
	announced := func() bool { return strings.Contains(first.logs.String(), `"changed":1`) }
	for removed() < 2 || !announced() {
		if ctx.Err() != nil {
			t.Fatalf("removed %d, announced %v before the deadline\n%s", removed(), announced(), first.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The kill comes right after a removal arrives, between two of them
	// (the next is 1.5 s away). A kill that came while a chat.delete was
	// on its way would let it arrive after the kill, and the next process,
	// which cannot know it did, would remove that message again (a 9th
	// call, answered message_not_found) and sooner than the pace.
	for k := removed(); removed() == k && k < n; {
		if ctx.Err() != nil {
			t.Fatalf("no removal after the %dth before the deadline\n%s", k, first.logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	first.kill9(t)
	atKill := removed()
	t.Logf("killed with %d of %d removed", atKill, n)
	if atKill == n {
		t.Fatalf("all %d were removed before the kill; the test proves nothing (not paced?)", n)
	}
	second := startProcess(t, env)
	waitAllDeleted(t, fake, threads, 60*time.Second)
	for _, th := range threads {
		ok := false
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(20 * time.Millisecond) {
			for _, m := range fake.Messages(th[0], th[1]) {
				if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Quarantined:") {
					ok = true
				}
			}
		}
		if !ok {
			t.Errorf("the card of %s is not the tombstone\n%s", th[1], second.logs.String())
		}
	}
	byTS := deletesByTS(fake)
	for _, th := range threads {
		if byTS[th[1]] != 1 {
			t.Errorf("%d chat.delete calls for %s, want exactly 1", byTS[th[1]], th[1])
		}
	}
	calls := fake.Calls("chat.delete")
	if len(calls) != n {
		t.Errorf("%d chat.delete calls for %d messages", len(calls), n)
	}
	var gaps []time.Duration
	for i := 1; i < len(calls); i++ {
		gaps = append(gaps, calls[i].Time.Sub(calls[i-1].Time))
	}
	t.Logf("gaps between removals: %v", gaps)
	// The bot spaces its calls 1.5 s apart (40 a minute); the fake sees
	// them when they arrive, each late by its own store write and transit
	// (up to a few hundred ms when the machine is busy). So no stretch of
	// k gaps may be shorter than k×1.5 s less one call's lateness: a
	// single gap may look short, a faster pace cannot hide over a run.
	const pace, late = 1500 * time.Millisecond, 500 * time.Millisecond
	for i := range calls {
		for j := i + 1; j < len(calls); j++ {
			if d, want := calls[j].Time.Sub(calls[i].Time), time.Duration(j-i)*pace-late; d < want {
				t.Errorf("removals %d to %d came %v apart, want at least %v: faster than 40 a minute", i+1, j+1, d, want)
			}
		}
	}
	if k := fake.RateLimited()["chat.delete"]; k != 0 {
		t.Errorf("Slack answered 429 to %d chat.delete calls", k)
	}
}

// TestQuarantineFlipAboveFlipMaxWaitsForRemoveAll: a recheck flips a link
// that 4 messages in two channels carry, above VERDICTBOT_QUARANTINE_FLIP_MAX=3:
// nothing is removed; the cards say the removal waits for an admin; the
// alert channel gets the request (the link defanged, the count, the
// channels by count, the button). A member's press is refused privately
// and logged; the admin's removes every message once, and so do a second
// press and another admin's.
func TestQuarantineFlipAboveFlipMaxWaitsForRemoveAll(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a recheck flip held for an admin, then pressed three times (about 15 s)")
	const alerts, other = "C0ALERTS", "C0OTHER"
	h := apptest.StartQuarantine(t, flipEnv(map[string]string{
		"VERDICTBOT_QUARANTINE_FLIP_MAX": "3",
		"VERDICTBOT_ALERT_CHANNEL":       alerts,
		"VERDICTBOT_ADMINS":              adminUser + ",U0ADMIN2",
	}), adminUser)
	h.Slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	h.Slack.AddUser(slackfake.User{ID: "U0ADMIN2", Name: "otheradmin", IsAdmin: true})
	threads := postFlips(t, h.Slack, "https://promo.flip.test/many", []string{secChannel, secChannel, other}, 4)
	var request slackfake.Message
	err := h.Slack.WaitFor(h.Ctx(20*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.Messages(alerts, "") {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), quarantine.ActionQuarantineRemoveAll) {
				request = m
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no Remove all request in the alert channel: %v\n%s", err, h.Logs.String())
	}
	req := apptest.BlocksText(request.Blocks)
	for _, want := range []string{"hxxps://promo[.]flip[.]test/many", "4 messages", "3 in <#" + secChannel + ">", "1 in <#" + other + ">", "FLIP_MAX=3"} {
		if !strings.Contains(req, want) {
			t.Errorf("the request lacks %q: %s", want, req)
		}
	}
	for _, th := range threads {
		h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
			for _, m := range st.Messages(th[0], th[1]) {
				if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "waits for an admin's approval") {
					return true
				}
			}
			return false
		})
	}
	if n := len(h.Slack.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d messages removed before an admin's Remove all", n)
	}
	press := func(user string) string {
		t.Helper()
		before := len(h.Slack.Ephemerals(alerts, user))
		// The request as first posted: a press after the approval comes
		// from a client that still shows the button.
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: alerts, MessageTS: request.TS,
			ActionID: quarantine.ActionQuarantineRemoveAll, Seen: request.Blocks}); err != nil {
			t.Fatal(err)
		}
		eph, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), alerts, user, before+1)
		if err != nil {
			t.Fatalf("no answer to %s's press: %v", user, err)
		}
		return eph[len(eph)-1].Text
	}
	if got := press(alice); !strings.Contains(got, "Only admins") {
		t.Fatalf("a member's Remove all: %q", got)
	}
	if !strings.Contains(h.Logs.String(), `"msg":"quarantine: Remove all refused: not an admin","component":"quarantine","audit":true,"user":"`+alice) {
		t.Error("the refused press is not in the audit log")
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(h.Slack.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d messages removed after a member's press", n)
	}
	if got := press(adminUser); !strings.Contains(got, "Approved: 4 messages") {
		t.Fatalf("the admin's Remove all: %q", got)
	}
	if got := press(adminUser); !strings.Contains(got, "approved these removals already") {
		t.Errorf("a second press: %q", got)
	}
	if got := press("U0ADMIN2"); !strings.Contains(got, "Already approved by @secadmin") {
		t.Errorf("another admin's press: %q", got)
	}
	waitAllDeleted(t, h.Slack, threads, 30*time.Second)
	time.Sleep(2 * time.Second) // anything more would come within the worker's poll
	byTS := deletesByTS(h.Slack)
	for _, th := range threads {
		if byTS[th[1]] != 1 {
			t.Errorf("%d chat.delete calls for %s, want 1", byTS[th[1]], th[1])
		}
	}
	if m, _ := h.Slack.Message(alerts, request.TS); !strings.Contains(m.Text, "Approved by @secadmin") {
		t.Errorf("the request was not updated: %q", m.Text)
	}
	if got := h.Metric(`verdictbot_quarantine_flip_removals_total{event="refused"}`); got != "1" {
		t.Errorf("refused presses = %q, want 1", got)
	}
}

// TestQuarantineFlipAboveFlipMaxWithoutAlertChannelWaitsAndSaysSo: with no
// alert channel nobody can be asked: the removals wait (nothing is
// removed), the card says why, the log says so once, and the held
// removals are counted.
func TestQuarantineFlipAboveFlipMaxWithoutAlertChannelWaitsAndSaysSo(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a recheck flip held with no alert channel (about 8 s)")
	h := apptest.StartQuarantine(t, flipEnv(map[string]string{"VERDICTBOT_QUARANTINE_FLIP_MAX": "0"}), adminUser)
	threads := postFlips(t, h.Slack, "https://promo.flip.test/none", []string{secChannel}, 1)
	h.WaitCard(threads[0][1], func(b string) bool {
		return strings.Contains(b, "waits for an admin's approval") && strings.Contains(b, "no alert channel is set (VERDICTBOT_ALERT_CHANNEL)")
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if h.Metric(`verdictbot_quarantine_queue{state="held"}`) == "1" && strings.Contains(h.Logs.String(), "VERDICTBOT_ALERT_CHANNEL is not set") {
			break
		}
	}
	if got := h.Metric(`verdictbot_quarantine_queue{state="held"}`); got != "1" {
		t.Errorf("held removals = %q, want 1", got)
	}
	if n := strings.Count(h.Logs.String(), "VERDICTBOT_ALERT_CHANNEL is not set, so nobody was asked"); n != 1 {
		t.Errorf("the missing alert channel was logged %d times, want once", n)
	}
	if n := len(h.Slack.Calls("chat.delete")); n != 0 || slices.ContainsFunc(h.Slack.Messages(secChannel, ""), func(m slackfake.Message) bool { return m.Deleted }) {
		t.Errorf("%d messages removed with nobody to approve", n)
	}
}

// TestQuarantineFlipOnTwoReplicasRemovesEachMessageOnce: two replicas on
// PostgreSQL, a recheck flip above VERDICTBOT_QUARANTINE_FLIP_MAX: the
// request is posted once; Remove all pressed on each replica (each press
// delivered to another's Socket Mode connection) approves once; both
// replicas' workers share the removals and each message is removed once.
func TestQuarantineFlipOnTwoReplicasRemovesEachMessageOnce(t *testing.T) {
	t.Parallel()
	const alerts = "C0ALERTS"
	c := startCluster(t, sim.Config{Profile: apptest.QuickProfile()}, flipEnv(map[string]string{
		"VERDICTBOT_QUARANTINE_FLIP_MAX": "2",
		"VERDICTBOT_ALERT_CHANNEL":       alerts,
	}), slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))
	c.slack.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
	c.slack.AddUser(slackfake.User{ID: alice, Name: "alice"})
	c.slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := []*replica{c.start(ctx), c.start(ctx)}
	// One message per channel: a flip's card and reply are posted at the
	// replicas' share of Slack's per-channel pace (a post per 2 s each),
	// and a removal goes once its card shows the flip; 3 messages in a
	// channel held the last removal 12 s.
	threads := postFlips(t, c.slack, "https://promo.flip.test/replicas", []string{secChannel, "C0FLIP2", "C0FLIP3", "C0FLIP4", "C0FLIP5", "C0FLIP6"}, 6)
	var request slackfake.Message
	err := c.slack.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, m := range st.Messages(alerts, "") {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), quarantine.ActionQuarantineRemoveAll) {
				request = m
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no request: %v\n%s\n%s", err, rs[0].tail(30), rs[1].tail(30))
	}
	for _, r := range rs {
		c.slack.SetDeliveryPolicy(slackfake.DeliverToConnection(r.conn))
		if _, err := c.slack.DeliverBlockAction(slackfake.BlockAction{UserID: adminUser, Channel: alerts, MessageTS: request.TS,
			ActionID: quarantine.ActionQuarantineRemoveAll, Seen: request.Blocks}); err != nil {
			t.Fatal(err)
		}
	}
	eph, err := c.slack.WaitEphemerals(ctx, alerts, adminUser, 2)
	if err != nil {
		t.Fatal(err)
	}
	approved := 0
	for _, e := range eph {
		if strings.Contains(e.Text, "Approved: 6 messages") {
			approved++
		}
	}
	if approved != 1 {
		t.Fatalf("answers to the two presses: %q %q, want one approval", eph[0].Text, eph[1].Text)
	}
	waitAllDeleted(t, c.slack, threads, time.Minute)
	time.Sleep(3 * time.Second) // a second removal would come within the workers' polls
	byTS := deletesByTS(c.slack)
	for _, th := range threads {
		if byTS[th[1]] != 1 {
			t.Errorf("%d chat.delete calls deleted %s, want 1", byTS[th[1]], th[1])
		}
	}
	var requests int
	for _, m := range c.slack.Messages(alerts, "") {
		if m.Bot && (strings.Contains(m.Text, "an admin's Remove all is needed") || strings.Contains(m.Text, "Approved by")) {
			requests++
		}
	}
	if requests != 1 {
		t.Errorf("%d requests in the alert channel, want 1", requests)
	}
	by := map[string]int{}
	for _, r := range rs {
		for _, l := range r.lines() {
			if l.str("msg") == "quarantined" {
				by[r.name]++
			}
		}
	}
	t.Logf("removals by replica: %v", by)
}
