package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestAFinalCardSlackFailedToTakeIsShownOnceItCan: Slack answers every
// chat.update with a 5xx page while a link's verdict comes in, longer
// than the poster's own tries last; the verdict is in the store, and the
// card in the thread must not keep saying it is scanning: once Slack
// takes updates again, the card shows the verdict.
func TestAFinalCardSlackFailedToTakeIsShownOnceItCan(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose"},
		sim.Config{Profile: sim.Profile{Name: "slow-url", URLPending: 4 * time.Second, URLProcessing: time.Second}})
	d := h.Post("have a look <https://login.phish.test/final-retry>")
	// The card is posted while the link is still being checked.
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "login[.]phish") && !strings.Contains(b, "Malicious") })
	h.Slack.InjectFault(slackfake.Fault{Method: "chat.update", Status: http.StatusServiceUnavailable})
	// The poster's own tries of the final card (three, a second or two
	// apart), all refused.
	waitRefusedUpdates(t, h, "Malicious", 3)
	time.Sleep(500 * time.Millisecond)
	h.Slack.ClearFaults()
	h.WaitCardWithin(20*time.Second, d.TS, func(b string) bool { return strings.Contains(b, "Malicious") && !strings.Contains(b, "Scanning") })
}

// waitRefusedUpdates waits up to 30 s until Slack has refused (503) n
// chat.update calls whose blocks contain substr.
func waitRefusedUpdates(t *testing.T, h *harness, substr string, n int) {
	t.Helper()
	refused := func() (got int) {
		for _, c := range h.Slack.Calls("chat.update") {
			if c.Status == http.StatusServiceUnavailable && strings.Contains(c.Params.Get("blocks"), substr) {
				got++
			}
		}
		return got
	}
	for deadline := time.Now().Add(30 * time.Second); refused() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d chat.update calls with %q refused in 30 s, want %d", refused(), substr, n)
		}
	}
}
