package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestLocalSignalsOnCards: in a quiet channel, where a clean link gets
// only a reaction, the bot's own signals make a card the service would
// not: a label that shows okta.com and opens another domain, a lookalike
// of okta.com, and one of the workspace's own email domain (team.info);
// each card says why and still shows the service's verdict; an edit that
// only turns a label into a lie is checked again; the OCSF findings name
// the rule as their analytic; the metrics count the signals.
func TestLocalSignalsOnCards(t *testing.T) {
	t.Parallel()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_EVENTS_FILE": eventsFile},
		sim.Config{}, false, nil, apptest.QuickPolling(), slackfake.WithEmailDomain("acme-corp.com"))}
	suspicious := func(ts string, want ...string) string {
		t.Helper()
		c := h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Suspicious") })
		b := apptest.BlocksText(c.Blocks)
		for _, w := range want {
			if !strings.Contains(b, w) {
				t.Errorf("card of %s lacks %q:\n%s", ts, w, b)
			}
		}
		return b
	}

	// A label showing okta.com on a link the service finds clean.
	d := h.Post("please sign in: <https://sso-portal.example.net/start|https://okta.com/login>")
	suspicious(d.TS, "shows okta[.]com, opens example[.]net", "URL service's verdict: *Clean*")

	// A lookalike of a built-in protected domain.
	d = h.Post("docs are at <https://0kta.com/docs>")
	suspicious(d.TS, "looks like okta[.]com (look-alike characters)")

	// A lookalike of the workspace's own email domain (learned at start).
	var b string
	deadline := time.Now().Add(10 * time.Second)
	for {
		d = h.Post("benefits: <https://acme-corp.co/benefits>")
		m := h.WaitCardIn(secChannel, d.TS, func(string) bool { return true })
		if b = apptest.BlocksText(m.Blocks); strings.Contains(b, "looks like acme-corp[.]com (different ending)") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(b, "looks like acme-corp[.]com (different ending)") || len(h.Slack.Calls("team.info")) == 0 {
		t.Errorf("the workspace's email domain was not protected (team.info calls %d):\n%s", len(h.Slack.Calls("team.info")), b)
	}

	// A domain allowed at run time (/scan allow) is protected from its
	// lookalikes at once, as VERDICTBOT_ALLOW_DOMAINS' are from the start.
	apptest.MustContain(t, h.Slash(adminUser, "allow add contoso-intranet.com"), "no longer sent for scanning")
	d = h.Post("wiki: <https://contoso-intranet.co/wiki>")
	suspicious(d.TS, "looks like contoso-intranet[.]com")

	// An honest label, then an edit that makes it lie: checked again.
	d = h.Post("agenda: <https://example.org/agenda|the agenda>")
	if err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, _ := st.Message(secChannel, d.TS)
		return len(m.Reactions) > 0
	}); err != nil {
		t.Fatalf("the honest link was not checked: %v", err)
	}
	if _, err := h.Slack.EditMessage(secChannel, d.TS, "agenda: <https://example.org/agenda|https://okta.com/agenda>"); err != nil {
		t.Fatal(err)
	}
	suspicious(d.TS, "shows okta[.]com, opens example[.]org")

	// The findings name the bot's own rule.
	apptest.WaitFor(t, func() bool {
		raw, _ := os.ReadFile(eventsFile)
		return strings.Contains(string(raw), `"verdictbot lookalike"`) && strings.Contains(string(raw), `"verdictbot deceptive_label"`)
	})
	raw, _ := os.ReadFile(eventsFile)
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct {
			FindingInfo struct {
				Analytic *struct {
					Name   string `json:"name"`
					TypeID int    `json:"type_id"`
					Desc   string `json:"desc"`
				} `json:"analytic"`
			} `json:"finding_info"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if a := e.FindingInfo.Analytic; a != nil && a.Name == "verdictbot deceptive_label" && a.TypeID == 1 && strings.Contains(a.Desc, "shows okta.com") {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding names the deceptive label rule as its analytic:\n%s", raw)
	}
	if got := h.Metric(`verdictbot_local_signals_total{kind="lookalike"}`); got == "0" || got == "" {
		t.Errorf("lookalike signals counted: %q", got)
	}
}
