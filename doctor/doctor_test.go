package doctor

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/config"
)

// TestCleanRedactsEverySecret: whatever a check's text holds, no token,
// key, secret or password of the settings survives, as written or
// URL-escaped; terminal escapes go, and the text stays on one line.
func TestCleanRedactsEverySecret(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAdminUserToken = "xoxb-1-2-BotSecret", "xapp-1-A-3-AppSecret", "xoxp-1-2-AdminSecret"
	cfg.ReputationAPIKey, cfg.SandboxAPIKey, cfg.EventsSecret = "rep key/with+odd", "SbKey9", "EventsSecret0"
	cfg.DatabaseURL = "postgres://u:DbPass%2Fword@db:5432/vb"
	r := &run{cfg: cfg, redact: secretsRedactor(cfg)}
	in := "xoxb-1-2-BotSecret xapp-1-A-3-AppSecret xoxp-1-2-AdminSecret /api/rep%20key%2Fwith+odd/ rep+key%2Fwith%2Bodd SbKey9 EventsSecret0 DbPass/word\x1b[31m\nnext"
	got := r.clean(in)
	for _, s := range []string{"BotSecret", "AppSecret", "AdminSecret", "with", "SbKey9", "EventsSecret0", "DbPass", "\x1b", "\n"} {
		if strings.Contains(got, s) {
			t.Errorf("clean left %q in %q", s, got)
		}
	}
	if strings.Count(got, "<secret>") != 8 {
		t.Errorf("clean(%q) = %q", in, got)
	}
}

// TestGrantedScopes: a scope missing from X-OAuth-Scopes fails with the
// fix, one beyond the manifest's is a warning, all and only them pass,
// and no header at all is a warning (nothing was checked).
func TestGrantedScopes(t *testing.T) {
	t.Parallel()
	r := &run{}
	want := []string{"chat:write", "users:read", "team:read"}
	for _, tc := range []struct {
		header []string // nil: no header
		status Status
		detail string
	}{
		{[]string{"chat:write,users:read,team:read"}, Pass, "all 3 bot scopes of manifest.yaml granted, no others"},
		{[]string{"team:read, chat:write,users:read"}, Pass, "all 3 bot scopes"},
		{[]string{"chat:write,users:read"}, Fail, "missing team:read: Slack granted 2 of the 3 bot scopes manifest.yaml asks for"},
		{[]string{""}, Fail, "missing chat:write, users:read, team:read: Slack granted 0 of the 3"},
		{[]string{"chat:write,users:read,team:read,admin"}, Warn, "and also admin, which the bot does not use"},
		{nil, Warn, "no X-OAuth-Scopes header"},
	} {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("X-OAuth-Scopes", v)
		}
		res := r.grantedScopes(Result{Name: "bot scopes"}, h, "bot", want, "the fix")
		if res.Status != tc.status || !strings.Contains(res.Detail, tc.detail) || (tc.status == Fail && res.Fix != "the fix") {
			t.Errorf("header %q: %+v, want %s with %q", tc.header, res, tc.status, tc.detail)
		}
	}
}

// TestWriteText: sections, aligned names, a fix under a failure or a
// warning only, the totals; the settings' problems are the first check.
func TestWriteText(t *testing.T) {
	t.Parallel()
	rep := Report{Results: []Result{
		(&run{opts: Options{Problems: errors.New("2 settings are wrong:\n  A=\"x\": bad\n  B is not set")}}).configuration(),
		{Section: secSlack, Name: "bot scopes", Status: Fail, Detail: "missing team:read", Fix: "reinstall"},
		{Section: secSlack, Name: "Socket Mode", Status: Pass, Detail: "hello", Fix: "never shown"},
		{Section: secEvents, Name: "events", Status: Skip, Detail: "not set"},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `Configuration
  ✗ settings     A="x": bad; B is not set
      fix: correct them (verdictbot config lists every setting and each problem, one line each); the checks below use the rest
Slack
  ✗ bot scopes   missing team:read
      fix: reinstall
  ✓ Socket Mode  hello
Events
  - events       not set

1 passed, 2 failed, 0 warnings, 1 skipped: not ready (fix the ✗ lines, then run verdictbot doctor again)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if rep.OK() {
		t.Error("OK with failures")
	}
}
