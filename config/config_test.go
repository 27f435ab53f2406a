package config

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is an environment for a test: the maps merged, later ones winning.
func env(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// lookup is os.LookupEnv over m.
func lookup(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// environ is os.Environ over m.
func environ(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// load is what the program does with an environment: Load and Unknown,
// every problem of both in one error.
func load(ms ...map[string]string) (Config, error) {
	m := env(ms...)
	cfg, err := Load(lookup(m))
	return cfg, Join(err, Unknown(environ(m)))
}

// loadValid is load, then Validate when it passed (for run: needSlack).
func loadValid(ms ...map[string]string) (Config, error) {
	cfg, err := load(ms...)
	if err == nil {
		err = cfg.Validate(true)
	}
	return cfg, err
}

var validEnv = map[string]string{
	"SLACK_BOT_TOKEN":    "xoxb-1-2-abc",
	"SLACK_APP_TOKEN":    "xapp-1-A1-2-def",
	"REPUTATION_URL":     "https://urlarmor.example/",
	"REPUTATION_API_KEY": "k-123456",
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(validEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(true); err != nil {
		t.Fatal(err)
	}
	if cfg.SlackAPIURL != "https://slack.com/api/" || cfg.ChannelMode != "quiet" || cfg.MaxLinks != 50 ||
		cfg.VerdictTTL != time.Hour || cfg.DataDir != "./data" || cfg.Reporters != "anyone" ||
		!cfg.ResolveHosts || cfg.URLQuery != "keep" || !cfg.ScanFiles || cfg.ScreenshotTimeout != 2*time.Minute ||
		cfg.QuarantineFiles != "message" || cfg.QuarantineFlipMax != 20 {
		t.Fatalf("defaults: %+v", cfg)
	}
	if b := cfg.Thresholds()["advertising"]; b.Suspicious != 0.8 || b.Malicious <= 1 {
		t.Fatalf("advertising band %+v", b)
	}
}

func TestConfigErrorsAreOneClearLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SLACK_BOT_TOKEN": ""}, "SLACK_BOT_TOKEN is not set (the bot token, xoxb-…)"},
		{map[string]string{"SLACK_BOT_TOKEN": "xapp-wrong"}, "SLACK_BOT_TOKEN must start with xoxb- (a bot token)"},
		{map[string]string{"SLACK_APP_TOKEN": "xoxb-wrong"}, "SLACK_APP_TOKEN must start with xapp- (an app-level token)"},
		{map[string]string{"REPUTATION_URL": ""}, "REPUTATION_URL is not set (the URL reputation service's base URL)"},
		{map[string]string{"REPUTATION_URL": "ftp://x"}, `REPUTATION_URL="ftp://x": want an http:// or https:// URL`},
		{map[string]string{"SLACK_API_URL": "not a url"}, `SLACK_API_URL="not a url": want an http:// or https:// URL`},
		{map[string]string{"VERDICTBOT_CHANNEL_MODE": "loud"}, `VERDICTBOT_CHANNEL_MODE="loud": want quiet, verbose or off`},
		{map[string]string{"VERDICTBOT_VERDICT_TTL": "an hour"}, `VERDICTBOT_VERDICT_TTL="an hour": not a valid duration (Go syntax: 90s, 15m, 1h)`},
		{map[string]string{"VERDICTBOT_MAX_LINKS": "ten"}, `VERDICTBOT_MAX_LINKS="ten": not a valid whole number`},
		{map[string]string{"VERDICTBOT_MAX_LINKS": "201"}, `VERDICTBOT_MAX_LINKS=201: want 1 to 200 (distinct links checked per message; the rest make the message "could not check")`},
		{map[string]string{"VERDICTBOT_MAX_LINKS": "0"}, `VERDICTBOT_MAX_LINKS=0: want 1 to 200 (distinct links checked per message; the rest make the message "could not check")`},
		{map[string]string{"VERDICTBOT_ADMINS": "U123,alice"}, `VERDICTBOT_ADMINS: "alice" is not a Slack user id (U… or W…)`},
		{map[string]string{"VERDICTBOT_THRESHOLD_PHISHING": "0.9,0.5"}, `VERDICTBOT_THRESHOLD_PHISHING="0.9,0.5": the suspicious threshold is above the malicious one`},
		{map[string]string{"VERDICTBOT_CHANEL_MODE": "quiet"}, "unknown setting VERDICTBOT_CHANEL_MODE (did you mean VERDICTBOT_CHANNEL_MODE?)"},
		{map[string]string{"VERDICTBOT_FROBNICATE": "1"}, "unknown setting VERDICTBOT_FROBNICATE"},
		{map[string]string{"VERDICTBOT_REPORTERS": "everyone"}, `VERDICTBOT_REPORTERS="everyone": want anyone or admins`},
		{map[string]string{"VERDICTBOT_URL_QUERY": "drop"}, `VERDICTBOT_URL_QUERY="drop": want keep or strip`},
		{map[string]string{"VERDICTBOT_RESOLVE_HOSTS": "maybe"}, `VERDICTBOT_RESOLVE_HOSTS="maybe": not a valid boolean (true or false)`},
		{map[string]string{"VERDICTBOT_SCAN_FILES": "yes please"}, `VERDICTBOT_SCAN_FILES="yes please": not a valid boolean (true or false)`},
		{map[string]string{"VERDICTBOT_SCREENSHOT_TIMEOUT": "500ms"}, "VERDICTBOT_SCREENSHOT_TIMEOUT=500ms: want 1s to 30m"},
		{map[string]string{"VERDICTBOT_SCREENSHOT_TIMEOUT": "2h"}, "VERDICTBOT_SCREENSHOT_TIMEOUT=2h0m0s: want 1s to 30m"},
		{map[string]string{"VERDICTBOT_QUARANTINE_FILES": "files"}, `VERDICTBOT_QUARANTINE_FILES="files": want message or delete (a malicious file removes the message that shared it, or deletes the file workspace-wide)`},
		{map[string]string{"VERDICTBOT_QUARANTINE_FLIP_MAX": "-1"}, "VERDICTBOT_QUARANTINE_FLIP_MAX=-1: want 0 to 10000 (messages one recheck may remove before an admin's Remove all; 0: every such removal waits)"},
		{map[string]string{"VERDICTBOT_QUARANTINE_FLIP_MAX": "many"}, `VERDICTBOT_QUARANTINE_FLIP_MAX="many": not a valid whole number`},
		{map[string]string{"VERDICTBOT_RETENTION": "24h"}, "VERDICTBOT_RETENTION=24h0m0s: want at least 48h (event ids are kept 48 h for Slack's retries; the default 2160h is 90 days)"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			_, err := loadValid(validEnv, tc.env)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatal("more than one line")
			}
		})
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	t.Parallel()
	cfg, err := load(validEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg.SlackBotToken)} {
		for _, secret := range []string{"xoxb-1-2-abc", "xapp-1-A1-2-def", "k-123456"} {
			if strings.Contains(s, secret) {
				t.Fatalf("secret printed: %s", s)
			}
		}
	}
}

// The database URL's password never prints, in a config dump or in the
// message of a malformed URL; only postgres:// and postgresql:// URLs pass.
func TestDatabaseURLPasswordNeverPrints(t *testing.T) {
	t.Parallel()
	const pw = "Hunter2-pw"
	cfg, err := load(validEnv, map[string]string{"VERDICTBOT_DATABASE_URL": "postgres://bot:" + pw + "@db.internal:5432/verdictbot?sslmode=require"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(true); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg.DatabaseURL)} {
		if strings.Contains(s, pw) {
			t.Fatalf("password printed: %s", s)
		}
	}
	if got := cfg.DatabaseURL.String(); got != "postgres://bot:xxxxx@db.internal:5432/verdictbot?sslmode=require" {
		t.Fatalf("String() = %q", got)
	}
	if cfg.DatabaseURL.Password().Reveal() != pw || !strings.Contains(cfg.DatabaseURL.Reveal(), pw) {
		t.Fatal("Reveal/Password lost the password")
	}
	for _, u := range []string{"postgresql://bot:" + pw + "@db/verdictbot", ""} {
		c := cfg
		c.DatabaseURL = DatabaseURL(u)
		if err := c.Validate(true); err != nil {
			t.Errorf("%q refused: %v", u, err)
		}
	}
	for _, u := range []string{"mysql://bot:" + pw + "@db/x", "bot:" + pw + "@db/x", "postgres://", "postgres://bot:" + pw + "@db:notaport/x"} {
		c := cfg
		c.DatabaseURL = DatabaseURL(u)
		err := c.Validate(true)
		if err == nil || !strings.HasPrefix(err.Error(), "VERDICTBOT_DATABASE_URL: want a postgres:// or postgresql:// URL") || strings.Contains(err.Error(), pw) {
			t.Errorf("%q: %v", u, err)
		}
	}
}

func TestEveryReadSettingIsKnown(t *testing.T) {
	t.Parallel()
	// The unknown-setting check and the documentation both rely on
	// Names; every VERDICTBOT_ tag must be listed once.
	seen := map[string]bool{}
	for _, tag := range Names() {
		if seen[tag] {
			t.Fatalf("%s twice", tag)
		}
		seen[tag] = true
	}
	if !seen["VERDICTBOT_CHANNEL_MODE"] || !seen["SLACK_API_URL"] {
		t.Fatal("settings missing")
	}
}

func TestKubernetesServiceVariablesAreNotUnknownSettings(t *testing.T) {
	t.Parallel()
	if _, err := load(validEnv, map[string]string{
		"VERDICTBOT_METRICS_SERVICE_HOST": "10.0.0.1", "VERDICTBOT_METRICS_SERVICE_PORT": "8080",
		"VERDICTBOT_METRICS_PORT": "tcp://10.0.0.1:8080", "VERDICTBOT_METRICS_PORT_8080_TCP_ADDR": "10.0.0.1",
		// The test suite's own variable, exported by CI, is not a setting either.
		"VERDICTBOT_TEST_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test",
	}); err != nil {
		t.Fatal(err)
	}
}

// TestConfigRulesEachNameTheirSetting: with every setting wrong, each rule
// of the table reports one problem, and its message starts with the
// setting the row names; Validate returns them all.
func TestConfigRulesEachNameTheirSetting(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, tag := range Names() {
		known[tag] = true
	}
	bad := Config{
		SlackBotToken: "xapp-no", SlackAppToken: "xoxb-no", SlackAPIURL: "ftp://x",
		ReputationURL: "", ReputationAPIKey: "", SandboxURL: "gopher://x", SandboxAPIKey: "",
		ChannelMode: "loud", URLQuery: "drop", Reporters: "everyone", Admins: []string{"alice"}, AdminGroup: "@admins",
		MaxLinks: 201, VerdictTTL: -1, URLDeadline: time.Second, RecheckSchedule: "often",
		RecheckAfter: []time.Duration{time.Hour, time.Minute}, MaxFileBytes: 0, SandboxDeadline: time.Second,
		MaxScreenshots: 11, ScreenshotTimeout: time.Hour, FileVerdictTTL: -1, SandboxRunRate: 0, RecheckMax: 0,
		AlertChannel: "#alerts", ReportChannel: "#security", ReportEmoji: ":Phish Me:", BackfillMax: time.Minute, BackfillOnJoin: "1w", Workers: 0, QueueSize: 0, ReputationRunRate: 0, MaxConcurrent: -1, UserLinksPerHour: -1, ServiceCAFile: "/nonexistent/ca.pem",
		HTTPAddr: "8080", LogLevel: "loud", LogFormat: "xml", DatabaseURL: "mysql://u:p@h/db",
		ThresholdPhishing: "x", ThresholdAdvertising: "x", ThresholdMalicious: "x", ThresholdIllegal: "x",
		Quarantine: "always", SlackAdminUserToken: "xoxb-not-a-user-token", QuarantineFiles: "files", QuarantineFlipMax: -1,
		EventsURL: "http://siem.example.com/hook", EventsFile: "/nonexistent/dir/events.jsonl", EventsMaxQueued: 0,
		ServicePlainHTTPHosts: []string{"http://sim:8099"}, Lookalike: "loud", ProtectedDomains: []string{"https://okta.com/"},
	}
	errs := bad.problems(true)
	// REPUTATION_URL unset is a problem once (not set); its URL form is
	// not checked when it is empty.
	if len(errs) != len(configRules)-1 {
		t.Fatalf("%d problems for %d rules: %v", len(errs), len(configRules), errs)
	}
	i := 0
	for _, r := range configRules {
		if !known[r.setting] {
			t.Errorf("rule for %s: not a setting Config reads", r.setting)
		}
		if r.setting == "REPUTATION_URL" && !r.slackOnly {
			continue
		}
		if !strings.HasPrefix(errs[i].Error(), r.setting) {
			t.Errorf("rule for %s says %q", r.setting, errs[i])
		}
		i++
	}
	// Validate reports them all, one line each, in table order.
	err := bad.Validate(true)
	if err == nil {
		t.Fatal("Validate passed")
	}
	lines := strings.Split(err.Error(), "\n")
	if lines[0] != fmt.Sprintf("%d settings are wrong:", len(errs)) || len(lines) != len(errs)+1 {
		t.Fatalf("Validate = %v", err)
	}
	for i, e := range errs {
		if lines[i+1] != "  "+e.Error() {
			t.Errorf("line %d = %q, want %q", i+1, lines[i+1], e)
		}
	}
	if n := len(bad.problems(false)); n >= len(errs) {
		t.Errorf("check (no Slack) sees %d problems, want fewer than run's %d", n, len(errs))
	}
}

// TestDefaultsAreWrittenOnce: Default is the only place a default is
// written; a `default` tag would be a second one (envconfig, which decoded
// the settings once, would have applied it in Load; the shell would not
// see it).
func TestDefaultsAreWrittenOnce(t *testing.T) {
	t.Parallel()
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if def, ok := ct.Field(i).Tag.Lookup("default"); ok {
			t.Errorf("%s has a default tag %q: write it in Default", ct.Field(i).Name, def)
		}
	}
}

// TestMaxConcurrentFollowsTheBudgets: VERDICTBOT_MAX_CONCURRENT wins when
// set; 0 derives it from the reputation budgets, within its bounds.
func TestMaxConcurrentFollowsTheBudgets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		set         int
		run, report float64
		want        int
	}{
		{"defaults give the floor", 0, 1, 5, 64},
		{"set wins", 10, 1, 5, 10},
		{"report-bound", 0, 100, 65, 600}, // 2 × 65/13 × 60
		{"run-bound", 0, 2, 1000, 240},    // 2 × 2 × 60
		{"raised budgets hit the cap", 0, 100, 1000, 4096},
		{"set above the cap", 5000, 100, 1000, 5000},
	} {
		c := Default()
		c.MaxConcurrent, c.ReputationRunRate, c.ReputationReportRate = tc.set, tc.run, tc.report
		if got := c.EffectiveMaxConcurrent(); got != tc.want {
			t.Errorf("%s: EffectiveMaxConcurrent() = %d, want %d", tc.name, got, tc.want)
		}
	}
	_, err := loadValid(validEnv, map[string]string{"VERDICTBOT_MAX_CONCURRENT": "-1"})
	if err == nil || !strings.HasPrefix(err.Error(), "VERDICTBOT_MAX_CONCURRENT") {
		t.Errorf("VERDICTBOT_MAX_CONCURRENT=-1: %v", err)
	}
}

// TestEventsSettings: VERDICTBOT_EVENTS_URL is https, or plain http to a
// loopback host only, and its message never shows the URL's path (it may
// hold a token); VERDICTBOT_EVENTS_SECRET is required unless the URL's
// host is loopback (127.0.0.0/8, ::1, localhost: a name that merely
// resolves there does not count), and never prints.
func TestEventsSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://siem.example.com/hook/tok-1", "VERDICTBOT_EVENTS_SECRET": "whsec-1"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "http://127.0.0.1:8089/hook"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "http://[::1]:8089/hook"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "http://localhost:8089/hook"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://127.0.0.9:8443/hook"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://LocalHost/hook"}, ""},
		// Unsigned events leave the machine only with a secret.
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://siem.example.com/hook/tok-1"},
			"VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (siem.example.com), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://10.0.0.5:8443/tok-1"},
			"VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (10.0.0.5), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://127.0.0.1.nip.io/tok-1"},
			"VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (127.0.0.1.nip.io), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "https://[::ffff:10.0.0.5]/tok-1", "VERDICTBOT_EVENTS_SECRET": "   "},
			"VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (::ffff:10.0.0.5), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "http://siem.example.com/hook/tok-1"},
			"2 settings are wrong:\n  VERDICTBOT_EVENTS_URL: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not siem.example.com: use https\n  VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (siem.example.com), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "http://10.0.0.5/hook/tok-1"},
			"2 settings are wrong:\n  VERDICTBOT_EVENTS_URL: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not 10.0.0.5: use https\n  VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (10.0.0.5), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "ftp://siem.example.com/tok-1"},
			"2 settings are wrong:\n  VERDICTBOT_EVENTS_URL: want an https:// URL (plain http:// only to a loopback host)\n  VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (siem.example.com), so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)"},
		{map[string]string{"VERDICTBOT_EVENTS_URL": "siem.example.com/tok-1"},
			"VERDICTBOT_EVENTS_URL: want an https:// URL (plain http:// only to a loopback host)"},
		{map[string]string{"VERDICTBOT_EVENTS_FILE": "-"}, ""},
		{map[string]string{"VERDICTBOT_EVENTS_FILE": "/nonexistent/dir/events.jsonl"},
			`VERDICTBOT_EVENTS_FILE="/nonexistent/dir/events.jsonl": its directory does not exist (want a file path, or - for standard output)`},
		{map[string]string{"VERDICTBOT_EVENTS_MAX_QUEUED": "0"},
			"VERDICTBOT_EVENTS_MAX_QUEUED=0: want at least 1 (events kept while the receiver is down)"},
	}
	for _, tc := range cases {
		_, err := loadValid(validEnv, tc.env)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v: err = %q\nwant %q", tc.env, got, tc.want)
		}
		if strings.Contains(got, "tok-1") {
			t.Errorf("the URL's path is in the message: %s", got)
		}
	}
	cfg, err := load(validEnv, map[string]string{"VERDICTBOT_EVENTS_SECRET": "whsec-never-print"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EventsMaxQueued != 100000 {
		t.Errorf("VERDICTBOT_EVENTS_MAX_QUEUED default %d", cfg.EventsMaxQueued)
	}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, "whsec-never-print") {
			t.Fatalf("the events secret printed: %s", s)
		}
	}
}

// TestServiceURLsAreHTTPSOrLoopback: SLACK_API_URL (the bot token rides
// every call), REPUTATION_URL and SANDBOX_URL (the API key is in the URL
// path) are https, or plain http only to a loopback host, like
// VERDICTBOT_EVENTS_URL; the services also to the hosts an operator names
// in VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS (the Compose demo's simulator),
// never Slack. `check` applies the services' rules too
// (TestCheckRefusesAPlainHTTPService, cmd/verdictbot).
func TestServiceURLsAreHTTPSOrLoopback(t *testing.T) {
	t.Parallel()
	const (
		slackPlain = "SLACK_API_URL: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not %s: use https (the bot token would cross the network in clear text)"
		svcPlain   = "%s: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not %s: use https (the API key would cross the network in clear text), or name the host in VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS"
	)
	sandbox := func(u string) map[string]string { return map[string]string{"SANDBOX_URL": u, "SANDBOX_API_KEY": "k-2"} }
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SLACK_API_URL": "https://slack-gov.com/api/"}, ""},
		{map[string]string{"SLACK_API_URL": "http://127.0.0.1:9000/api/"}, ""},
		{map[string]string{"SLACK_API_URL": "http://localhost:9000/api/"}, ""},
		{map[string]string{"SLACK_API_URL": "http://[::1]:9000/api/"}, ""},
		{map[string]string{"SLACK_API_URL": "http://slack.example.com/api/"}, fmt.Sprintf(slackPlain, "slack.example.com")},
		{map[string]string{"SLACK_API_URL": "HTTP://SLACK.EXAMPLE.COM/api/"}, fmt.Sprintf(slackPlain, "SLACK.EXAMPLE.COM")},
		{map[string]string{"SLACK_API_URL": "http://127.0.0.1.evil.example/api/"}, fmt.Sprintf(slackPlain, "127.0.0.1.evil.example")},
		{map[string]string{"SLACK_API_URL": "http://localhost.evil.example/api/"}, fmt.Sprintf(slackPlain, "localhost.evil.example")},
		// The hosts named for the services never apply to Slack.
		{map[string]string{"SLACK_API_URL": "http://sim:8099/api/", "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": "sim"}, fmt.Sprintf(slackPlain, "sim")},

		{map[string]string{"REPUTATION_URL": "http://127.0.0.1:8099/"}, ""},
		{map[string]string{"REPUTATION_URL": "http://127.0.0.2:8099/"}, ""},
		{map[string]string{"REPUTATION_URL": "http://urlarmor.example/"}, fmt.Sprintf(svcPlain, "REPUTATION_URL", "urlarmor.example")},
		{map[string]string{"REPUTATION_URL": "http://0.0.0.0:8099/"}, fmt.Sprintf(svcPlain, "REPUTATION_URL", "0.0.0.0")},
		{map[string]string{"REPUTATION_URL": "http://sim:8099/", "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": "sim"}, ""},
		{map[string]string{"REPUTATION_URL": "http://SIM:8099/", "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": " lab , sim "}, ""},
		{map[string]string{"REPUTATION_URL": "http://sim.evil.example/", "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": "sim"},
			fmt.Sprintf(svcPlain, "REPUTATION_URL", "sim.evil.example")},
		{sandbox("https://sandbox.example.net/"), ""},
		{sandbox("http://[::1]:8000/"), ""},
		{sandbox("http://10.0.0.5:8000/"), fmt.Sprintf(svcPlain, "SANDBOX_URL", "10.0.0.5")},
		{map[string]string{"VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": "http://sim:8099"},
			`VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS: "http://sim:8099" is not a host name (want names such as sim or sandbox.lab, no scheme, port or path)`},
		{map[string]string{"VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": "sim:8099"},
			`VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS: "sim:8099" is not a host name (want names such as sim or sandbox.lab, no scheme, port or path)`},
	}
	for _, tc := range cases {
		_, err := loadValid(validEnv, map[string]string{"SLACK_API_URL": "https://slack.com/api/", "SANDBOX_URL": "", "SANDBOX_API_KEY": "", "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": ""}, tc.env)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v: err = %q\nwant %q", tc.env, got, tc.want)
		}
		if strings.Contains(got, "k-123456") || strings.Contains(got, "/api/") && tc.want != "" && strings.Contains(got, "http") {
			t.Errorf("%v: the message shows more than the host: %q", tc.env, got)
		}
	}
}

// TestUserLinksPerHourSetting: VERDICTBOT_USER_LINKS_PER_HOUR defaults to
// 300, takes 0 (no cap) up to 1,000,000, and says so when out of range or
// not a number; `verdictbot config` lists it.
func TestUserLinksPerHourSetting(t *testing.T) {
	t.Parallel()
	if got := Default().UserLinksPerHour; got != 300 {
		t.Errorf("default %d, want 300", got)
	}
	const outOfRange = "VERDICTBOT_USER_LINKS_PER_HOUR=%s: want 0 (no cap) to 1000000 (links and files one person may have sent to the services per hour; default 300)"
	for _, tc := range []struct{ value, want string }{
		{"0", ""},
		{"1000000", ""},
		{"25", ""},
		{"-1", fmt.Sprintf(outOfRange, "-1")},
		{"1000001", fmt.Sprintf(outOfRange, "1000001")},
		{"lots", `VERDICTBOT_USER_LINKS_PER_HOUR="lots": not a valid whole number`},
	} {
		_, err := loadValid(validEnv, map[string]string{"VERDICTBOT_USER_LINKS_PER_HOUR": tc.value})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.value, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.value, err, tc.want)
		}
	}
	if v, ok := Default().Values()["VERDICTBOT_USER_LINKS_PER_HOUR"]; !ok || v != "300" {
		t.Errorf("verdictbot config shows %q (listed: %v), want 300", v, ok)
	}
}

// TestEmptyValueMeansDefault: every setting given as VAR= loads exactly
// as if it were unset, and is valid.
func TestEmptyValueMeansDefault(t *testing.T) {
	t.Parallel()
	unset, err := load()
	if err != nil {
		t.Fatal(err)
	}
	empty := map[string]string{}
	for _, name := range Names() {
		empty[name] = ""
	}
	got, err := load(empty)
	if err != nil {
		t.Fatalf("VAR= refused: %v", err)
	}
	if !reflect.DeepEqual(got, unset) {
		t.Fatalf("VAR= differs from unset:\n%+v\n%+v", got, unset)
	}
	blank := env(empty, map[string]string{"VERDICTBOT_MAX_LINKS": "  "}, validEnv) // blank is empty too
	if _, err := loadValid(blank); err != nil {
		t.Fatalf("empty values with the required ones set: %v", err)
	}
	// A value still wins.
	if cfg, _ := load(blank, map[string]string{"VERDICTBOT_MAX_LINKS": "12"}); cfg.MaxLinks != 12 || !cfg.fromEnv["VERDICTBOT_MAX_LINKS"] || cfg.fromEnv["VERDICTBOT_WORKERS"] {
		t.Fatalf("MaxLinks %d, from env %v", cfg.MaxLinks, cfg.fromEnv)
	}
}

// TestLoadReadsOnlyItsLookup: Load takes every value from the lookup it
// is given and Unknown from its list, never from the process's
// environment.
func TestLoadReadsOnlyItsLookup(t *testing.T) {
	t.Parallel()
	var asked []string
	cfg, err := Load(func(name string) (string, bool) {
		asked = append(asked, name)
		if name == "VERDICTBOT_MAX_LINKS" {
			return "7", true
		}
		return "", false
	})
	if err != nil || cfg.MaxLinks != 7 || cfg.Workers != Default().Workers {
		t.Fatalf("Load = %d workers, %d max links, %v", cfg.Workers, cfg.MaxLinks, err)
	}
	if !reflect.DeepEqual(asked, Names()) {
		t.Fatalf("Load asked for %v, want every setting once, in order", asked)
	}
	if err := Unknown(nil); err != nil {
		t.Fatalf("Unknown(nil) = %v", err)
	}
}

// TestDefaultIsLoadInAnEmptyEnvironment: Default is what Load gives when
// no setting is set (the shell starts from Default).
func TestDefaultIsLoadInAnEmptyEnvironment(t *testing.T) {
	t.Parallel()
	loaded, err := Load(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if def := Default(); !reflect.DeepEqual(loaded, def) {
		t.Fatalf("Default differs from Load's defaults:\n got %+v\nwant %+v", def, loaded)
	}
}
