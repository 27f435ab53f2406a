package app_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// Issue 21, item 4: one person's burst of links does not delay anyone
// else's verdict, and what one person can send to the services is capped.

const flooder = "U0FLOOD"

// createdBefore counts the tasks of urls the simulator created before t.
func createdBefore(s *sim.Server, urls []string, t time.Time) int {
	n := 0
	for _, u := range urls {
		for _, id := range s.URLTasks(u) {
			if task, ok := s.URLTask(id); ok && task.Created.Before(t) {
				n++
			}
		}
	}
	return n
}

// TestAFloodDoesNotDelayAnotherUsersRemoval: with the default budgets (one
// submission a second), a user posts 40 throwaway links, one message
// each, and then alice posts a phishing link in the quarantine channel.
// Alice's link is submitted after at most two more of the flood's (not
// behind all 40: 40 s), and her message is removed while most of the flood
// still waits.
func TestAFloodDoesNotDelayAnotherUsersRemoval(t *testing.T) {
	t.Parallel()
	h := startQuarantine(t, nil, adminUser)
	var flood []string
	for i := range 40 {
		url := fmt.Sprintf("https://throwaway-%d.example.net/x", i)
		flood = append(flood, url)
		if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: flooder, Text: "look <" + url + ">"}); err != nil {
			t.Fatal(err)
		}
	}
	// The flood is under way: its first submissions (the burst) are made.
	apptest.WaitFor(t, func() bool { return h.Sim.Count(sim.ServiceReputation, sim.OpScan) >= 2 })
	posted := time.Now()
	const phish = "https://secure-login.phish.test/verify/urgent"
	d := h.Post("urgent, please log in: <" + phish + ">")
	h.WaitDeleted(d.TS)
	removed := time.Since(posted)

	ids := h.Sim.URLTasks(phish)
	if len(ids) != 1 {
		t.Fatalf("the phishing link was submitted %d times", len(ids))
	}
	task, _ := h.Sim.URLTask(ids[0])
	ahead := createdBefore(h.Sim, flood, task.Created) - createdBefore(h.Sim, flood, posted)
	if ahead > 2 {
		t.Errorf("%d of the flood's links were submitted between alice's post and her link; want at most 2 (one submission slot, and the one in progress)", ahead)
	}
	if n := createdBefore(h.Sim, flood, time.Now()); n >= 20 {
		t.Errorf("%d of the 40 flood links were submitted before alice's message was removed: it waited behind the flood", n)
	}
	t.Logf("alice's link submitted %v after her post with %d flood links ahead; removed after %v, with %d of 40 flood links submitted",
		task.Created.Sub(posted).Round(time.Millisecond), ahead, removed.Round(time.Millisecond), createdBefore(h.Sim, flood, time.Now()))
}

// TestUserLinksPerHourCap: past VERDICTBOT_USER_LINKS_PER_HOUR, a user's
// new links are not sent: their cards say they will be checked later (in
// a quiet channel too), never with the clean reaction, whichever channel
// they post in; the alert channel gets one line per user; a metric counts
// each link. (The recheck that checks them later does not run here: see
// deferred_test.go.)
// A cached verdict is not counted; another user, an admin, and an
// integration (counted by its bot id) each have their own allowance or
// none.
func TestUserLinksPerHourCap(t *testing.T) {
	t.Parallel()
	const (
		alerts = "C0ALERTS"
		random = "C0RANDOM"
		bob    = "U0BOB"
		hook   = "B0HOOK"
	)
	h := startBot(t, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":        "quiet",
		"VERDICTBOT_USER_LINKS_PER_HOUR": "3",
		"VERDICTBOT_ALERT_CHANNEL":       alerts,
		"VERDICTBOT_HTTP_ADDR":           apptest.ListenAnywhere,
		"VERDICTBOT_RECHECK_SCHEDULE":    "@every 1h",
		// The budgets are not what this test is about.
		"VERDICTBOT_REPUTATION_RUN_RATE": "50",
	}, sim.Config{})
	h.Slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	h.Slack.AddChannel(slackfake.Channel{ID: random, Name: "random"})

	send := func(ev slackfake.MessageEvent) slackfake.Delivery {
		t.Helper()
		d, err := h.Slack.DeliverMessage(ev)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clean := func(channel string, d slackfake.Delivery) {
		t.Helper()
		err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
			m, ok := st.Message(channel, d.TS)
			return ok && len(m.Reactions["white_check_mark"]) == 1
		})
		if err != nil {
			t.Fatalf("message %s in %s got no clean reaction: %v\nlogs:\n%s", d.TS, channel, err, h.Logs.String())
		}
	}
	notChecked := func(channel string, d slackfake.Delivery) {
		t.Helper()
		card := h.WaitCardIn(channel, d.TS, func(b string) bool { return strings.Contains(b, apptest.DeferredWords) })
		if b := apptest.BlocksText(card.Blocks); !strings.Contains(b, "Could not check") {
			t.Errorf("the card does not say the link could not be checked:\n%s", b)
		}
		if m, _ := h.Slack.Message(channel, d.TS); len(m.Reactions["white_check_mark"]) != 0 {
			t.Errorf("a message past the cap got the clean reaction")
		}
	}

	// The links within an allowance are posted together and checked side
	// by side: the cap counts them whatever their order.
	var within []slackfake.Delivery
	for i := range 3 {
		within = append(within, h.Post(fmt.Sprintf("docs <https://example.com/guide/%d>", i)))
	}
	for _, d := range within {
		clean(secChannel, d)
	}
	// Past the cap, here and in another channel.
	over := send(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "and <https://example.com/guide/3>"})
	notChecked(secChannel, over)
	elsewhere := send(slackfake.MessageEvent{Channel: random, User: alice, Text: "also <https://example.com/guide/4>"})
	notChecked(random, elsewhere)
	for _, u := range []string{"https://example.com/guide/3", "https://example.com/guide/4"} {
		if n := len(h.Sim.URLTasks(u)); n != 0 {
			t.Errorf("%s was sent past the cap (%d tasks)", u, n)
		}
	}
	// A link checked before: its cached verdict costs nothing.
	checked := []slackfake.Delivery{h.Post("again <https://example.com/guide/0>")}
	// Someone else, and an admin past three links, are checked.
	checked = append(checked, send(slackfake.MessageEvent{Channel: secChannel, User: bob, Text: "<https://example.com/bob/1>"}))
	checked = append(checked, send(slackfake.MessageEvent{Channel: secChannel, User: adminUser,
		Text: "<https://example.com/a/1> <https://example.com/a/2> <https://example.com/a/3> <https://example.com/a/4>"}))
	// An integration is counted by its bot id.
	for i := range 3 {
		checked = append(checked, send(slackfake.MessageEvent{Channel: secChannel, SubType: "bot_message", BotID: hook, Username: "mail-gateway",
			Text: fmt.Sprintf("reported: <https://example.com/hook/%d>", i)}))
	}
	for _, d := range checked {
		clean(secChannel, d)
	}
	notChecked(secChannel, send(slackfake.MessageEvent{Channel: secChannel, SubType: "bot_message", BotID: hook, Username: "mail-gateway",
		Text: "reported: <https://example.com/hook/3>"}))

	// One alert line per requester, however many of their links were refused.
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool { return len(apptest.BotMessages(st.Messages(alerts, ""))) >= 2 })
	if err != nil {
		t.Fatalf("alerts: %v; %+v", err, h.Slack.Messages(alerts, ""))
	}
	alertsFor := func(who string) int {
		n := 0
		for _, m := range apptest.BotMessages(h.Slack.Messages(alerts, "")) {
			if strings.Contains(m.Text, who) && strings.Contains(m.Text, "VERDICTBOT_USER_LINKS_PER_HOUR") {
				n++
			}
		}
		return n
	}
	if a, b := alertsFor("<@"+alice+">"), alertsFor("`"+hook+"`"); a != 1 || b != 1 {
		t.Errorf("alerts: %d for alice, %d for the integration, want one each: %+v", a, b, h.Slack.Messages(alerts, ""))
	}
	if n := len(apptest.BotMessages(h.Slack.Messages(alerts, ""))); n != 2 {
		t.Errorf("%d alert lines, want 2", n)
	}

	resp, err := http.Get("http://" + apptest.OpsAddr(t, h.Logs) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^verdictbot_user_cap_refused_total\{service="reputation"\} (\d+)$`).FindSubmatch(body)
	if m == nil || string(m[1]) != "3" {
		t.Errorf("verdictbot_user_cap_refused_total{service=\"reputation\"}: %q, want 3 (two of alice's links, one of the integration's)", m)
	}
}
