package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

func TestRecheckFlipUpdatesCardRepliesAndAlerts(t *testing.T) {
	t.Parallel()
	const alerts = "C0ALERTS"
	h := startBot(t, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "quiet",
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "1s,1h",
		"VERDICTBOT_ALERT_CHANNEL":    alerts,
	}, sim.Config{})
	h.Slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	// flip.test: the first scan is clean, the next phishing.
	d := h.Post("our new landing page <https://promo.flip.test/spring>")
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, ok := st.Message(secChannel, d.TS)
		return ok && len(m.Reactions["white_check_mark"]) == 1
	})
	if err != nil {
		t.Fatalf("first verdict (clean) not shown: %v", err)
	}
	// Quiet channel, clean: no card yet. The recheck finds it phishing.
	card := h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Malicious") && strings.Contains(b, "Rechecked")
	})
	if card.ThreadTS != d.TS {
		t.Fatalf("card thread %q", card.ThreadTS)
	}
	err = h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		reply, alert := false, false
		for _, m := range st.Messages(secChannel, d.TS) {
			if m.Bot && strings.Contains(m.Text, "<@"+alice+">") && strings.Contains(m.Text, "malicious") && strings.Contains(m.Text, "was clean") {
				reply = true
			}
		}
		for _, m := range st.Messages(alerts, "") {
			if m.Bot && strings.Contains(m.Text, "recheck changed 1 verdict") && strings.Contains(m.Text, "archives/"+secChannel+"/p"+strings.ReplaceAll(d.TS, ".", "")) {
				alert = true
			}
		}
		return reply && alert
	})
	if err != nil {
		var seen []string
		for _, m := range h.Slack.Messages(secChannel, d.TS) {
			seen = append(seen, m.Text)
		}
		t.Fatalf("reply/alert missing: %v\nthread: %q\nalerts: %+v", err, seen, h.Slack.Messages(alerts, ""))
	}
	// No link in the reply or alert is clickable.
	for _, m := range append(h.Slack.Messages(secChannel, d.TS), h.Slack.Messages(alerts, "")...) {
		if m.Bot && strings.Contains(m.Text, "https://promo") {
			t.Fatalf("live link in %q", m.Text)
		}
	}
	if n := len(h.Sim.URLTasks("https://promo.flip.test/spring")); n != 2 {
		t.Fatalf("%d scans, want the first and one recheck (the 1h age is not due)", n)
	}
}

// TestARecheckFlipSlackRefusedIsShownByTheNextRun: the recheck finds a
// link posted clean to be phishing while Slack answers every chat.update
// with a 5xx page. The store has the flip; the card in the thread must not
// keep saying "Clean" for good: a later run, once Slack takes updates
// again, shows it, without a second note, reply or alert for the one flip.
func TestARecheckFlipSlackRefusedIsShownByTheNextRun(t *testing.T) {
	t.Parallel()
	const alerts = "C0ALERTS"
	h := startBot(t, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "verbose",
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "3s,1h",
		"VERDICTBOT_ALERT_CHANNEL":    alerts,
	}, sim.Config{})
	h.Slack.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	d := h.Post("our new landing page <https://promo.flip.test/refused>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Clean") && !strings.Contains(b, "Scanning") })
	h.Slack.InjectFault(slackfake.Fault{Method: "chat.update", Status: http.StatusServiceUnavailable})
	waitRefusedUpdates(t, h, "Rechecked", 3)
	// Two more runs with Slack down: the flip is not dropped.
	time.Sleep(2500 * time.Millisecond)
	h.Slack.ClearFaults()
	h.WaitCardWithin(20*time.Second, d.TS, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "Rechecked") })
	// A few runs more: the flip is announced once, shown, and done.
	time.Sleep(3 * time.Second)
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Rechecked") })
	if n := strings.Count(apptest.BlocksText(card.Blocks), "Rechecked"); n != 1 {
		t.Errorf("the card says %d times that the recheck flipped it, want once:\n%s", n, apptest.BlocksText(card.Blocks))
	}
	replies, alerted := 0, 0
	for _, m := range h.Slack.Messages(secChannel, d.TS) {
		if m.Bot && strings.Contains(m.Text, "was clean") {
			replies++
		}
	}
	for _, m := range h.Slack.Messages(alerts, "") {
		if m.Bot && strings.Contains(m.Text, "recheck changed") {
			alerted++
		}
	}
	if replies != 1 || alerted != 1 {
		t.Errorf("%d replies and %d alerts for the one flip, want 1 and 1", replies, alerted)
	}
	if n := len(h.Sim.URLTasks("https://promo.flip.test/refused")); n != 2 {
		t.Errorf("%d scans, want the first and one recheck", n)
	}
}
