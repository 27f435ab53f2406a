package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// hostileFields are what a compromised or careless service could put in
// the fields /scan status and /scan hash show: mentions, links, code
// spans to break out of, host names to be linked.
var hostileFields = map[string]string{
	"status":      "completed* <!channel> `x` <https://evil.example/a|click> evil.example/status",
	"file_type":   "PE32 `<!here>` evil.example/type",
	"malfamily":   "Fam*ily* <@U0BOSS> & `co` evil.example/fam",
	"added_on":    "2024-01-01 <!subteam^S0ADM|@admins>",
	"started_on":  "<https://evil.example/s|yesterday>",
	"sha1":        "abc`<!everyone>`def",
	"error_value": "no such task <!channel> `x` <https://evil.example/e|see>",
}

// TestVendorFieldsCannotFormatSlashAnswers: whatever a service puts in
// the fields /scan status and /scan hash show, the answer can neither
// mention anyone, nor link anywhere, nor end a code span early: every
// field goes through the one escaping helper (notify).
func TestVendorFieldsCannotFormatSlashAnswers(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickSandbox()})
	bad := apptest.StartHostileService(t, base, hostileFields)
	h := startFileBot(t, map[string]string{"REPUTATION_URL": bad.URL, "SANDBOX_URL": bad.URL})

	const url = "https://login.phish.test/account"
	d := h.Post("<" + url + ">")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	_, ds := h.Share(secChannel, slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar)}, "")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "invoice.exe") })
	urlTasks := srv.URLTasks(url)
	sum := sha256.Sum256([]byte(apptest.Eicar))
	fileTasks := srv.SandboxTasksFor(hex.EncodeToString(sum[:]))
	if len(urlTasks) != 1 || len(fileTasks) != 1 {
		t.Fatalf("tasks: url %v, file %v", urlTasks, fileTasks)
	}

	bad.On.Store(true) // from now on the services' fields are hostile
	answers := map[string]string{
		"status (URL task)":     h.Slash(adminUser, "status "+urlTasks[0]),
		"status (sandbox task)": h.Slash(adminUser, "status "+fileTasks[0]),
		"status (unknown task)": h.Slash(adminUser, "status 999999"),
		"hash":                  h.Slash(adminUser, "hash 44d88612fea8a8f36de82e1278abb02f"),
	}
	for _, key := range []string{"status", "file_type", "malfamily", "added_on", "sha1", "error_value"} {
		if bad.Rewritten(key) == 0 {
			t.Errorf("the service never sent a hostile %q: the test proves nothing about it", key)
		}
	}
	for what, text := range answers {
		if strings.Contains(text, "could not be reached") || text == "" {
			t.Errorf("%s: no real answer: %q", what, text)
			continue
		}
		mustBeInertMrkdwn(t, what, text, "evil.example")
		t.Logf("%s:\n%s", what, text)
	}
	// The service's words are still shown, escaped and defanged: the user
	// sees what the service said.
	apptest.MustContain(t, answers["status (URL task)"], "&lt;!channel&gt;", "evil[.]example")
	apptest.MustContain(t, answers["hash"], "&lt;@U0BOSS&gt;", "&amp;", "PE32", "ˋ")
}

// TestBacktickURLStaysInItsCodeSpan: a link whose query holds backticks
// (a valid URL: the query keeps them) cannot end the code span the bot
// shows it in and have the rest of it formatted or linked, in any answer:
// the recheck's reply and alert, quarantine's notice to the author,
// /scan recent, /scan history and the App Home.
func TestBacktickURLStaysInItsCodeSpan(t *testing.T) {
	t.Parallel()
	const alerts = "C0ALERTS"
	seed := func(f *slackfake.Server) {
		f.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
		f.AddUser(slackfake.User{ID: alice, Name: "alice"})
		f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, adminUser}})
		f.AddChannel(slackfake.Channel{ID: alerts, Name: "sec-alerts"})
	}
	h := startBotSeeded(t, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "quiet",
		"VERDICTBOT_QUARANTINE":       "malicious",
		"SLACK_ADMIN_USER_TOKEN":      apptest.AdminToken,
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "1s,1h",
		"VERDICTBOT_ALERT_CHANNEL":    alerts,
	}, sim.Config{}, false, seed,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))

	// flip.test: clean at first, phishing when rechecked. The query's
	// backticks would end the span, and the host name between them
	// would be shown as text Slack links.
	const url = "https://promo.flip.test/spring?q=`steal.evil.example/login`&r=`"
	d := h.Post("spring offer <" + url + ">")
	h.WaitDeleted(d.TS) // the recheck found it phishing; quarantine removed it

	var texts = map[string]string{}
	err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.Messages(secChannel, d.TS) {
			if m.Bot && strings.Contains(m.Text, "checked again") {
				texts["recheck reply"] = m.Text
			}
		}
		for _, m := range st.Messages(alerts, "") {
			if m.Bot && strings.Contains(m.Text, "recheck changed") {
				texts["recheck alert"] = m.Text
			}
		}
		for _, e := range st.Ephemerals(secChannel, alice) {
			if strings.Contains(e.Text, "was removed") {
				texts["author's notice"] = e.Text
			}
		}
		return len(texts) == 3
	})
	if err != nil {
		t.Fatalf("reply, alert or notice missing (%v): %q\nlogs:\n%s", err, texts, h.Logs.String())
	}
	texts["/scan recent"] = h.Slash(alice, "recent")
	texts["/scan history"] = h.Slash(alice, "history "+url)
	texts["App Home"] = homeText(h.openHome(alice, 1).Blocks)
	for what, text := range texts {
		if !strings.Contains(text, "hxxps://promo[.]flip[.]test/spring?q=ˋs") {
			t.Errorf("%s does not show the link: %q", what, text)
		}
		mustBeInertMrkdwn(t, what, text, "steal", "evil.example", "login")
	}
}
