package main

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/config"
)

// TestHelpOfEveryCommand: "verdictbot help CMD", "CMD -h" and "CMD --help"
// print the same help to stdout and exit 0, for every subcommand: its
// usage line, its flags and the settings it reads.
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	flags := map[string][]string{
		"check":   {"-json", "-sim", "-timeout"},
		"sim":     {"-addr", "-report-rate", "-profile"},
		"compact": {"-data-dir"},
		"events":  {"-limit", "-all"},
		"shell":   {"-sim-profile", "-wait"},
		"doctor":  {"-json", "-send-test-event", "-timeout"},
	}
	settings := map[string][]string{
		"run":         {"SLACK_BOT_TOKEN", "REPUTATION_API_KEY", "VERDICTBOT_CHANNEL_MODE", "VERDICTBOT_LOG_FORMAT"},
		"config":      {"SLACK_APP_TOKEN", "VERDICTBOT_DATABASE_URL"},
		"check":       {"REPUTATION_URL", "SANDBOX_API_KEY", "VERDICTBOT_THRESHOLD_PHISHING"},
		"shell":       {"REPUTATION_URL", "VERDICTBOT_DATA_DIR"},
		"migrate":     {"VERDICTBOT_DATABASE_URL", "VERDICTBOT_DATA_DIR"},
		"compact":     {"VERDICTBOT_DATA_DIR"},
		"events":      {"VERDICTBOT_DATABASE_URL", "VERDICTBOT_DATA_DIR", "VERDICTBOT_EVENTS_MAX_QUEUED"},
		"healthcheck": {"VERDICTBOT_HTTP_ADDR"},
		"doctor":      {"SLACK_BOT_TOKEN", "SLACK_ADMIN_USER_TOKEN", "VERDICTBOT_DATABASE_URL", "VERDICTBOT_ALERT_CHANNEL", "VERDICTBOT_EVENTS_URL"},
	}
	_, list, _ := runMain(nil, "help")
	for _, c := range cliCommands {
		if !strings.Contains(list, "\n  "+c.name+" ") {
			t.Errorf("verdictbot help does not list %s:\n%s", c.name, list)
		}
		var first string
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}} {
			code, out, errOut := runMain(nil, args...)
			if code != 0 || errOut != "" {
				t.Errorf("verdictbot %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
			if first == "" {
				first = out
			} else if out != first {
				t.Errorf("verdictbot %s differs from verdictbot help %s", strings.Join(args, " "), c.name)
			}
		}
		if !strings.HasPrefix(first, "Usage: verdictbot "+c.name) || !strings.Contains(first, "\nSettings") {
			t.Errorf("help %s:\n%s", c.name, first)
		}
		for _, f := range flags[c.name] {
			if !strings.Contains(first, "\n  "+f) {
				t.Errorf("help %s lacks the flag %s:\n%s", c.name, f, first)
			}
		}
		for _, s := range settings[c.name] {
			if !strings.Contains(first, "\n  "+s+" ") {
				t.Errorf("help %s lacks the setting %s:\n%s", c.name, s, first)
			}
		}
	}
	// run reads every setting.
	_, runHelp, _ := runMain(nil, "run", "-h")
	for _, s := range config.Names() {
		if !strings.Contains(runHelp, "\n  "+s+" ") {
			t.Errorf("run -h lacks %s", s)
		}
	}
	// A flag after others still asks for help; after "--" it is an argument.
	if code, out, _ := runMain(nil, "check", "--json", "-h"); code != 0 || !strings.HasPrefix(out, "Usage: verdictbot check") {
		t.Errorf("check --json -h: exit %d", code)
	}
}

// TestCommandsAndUsageErrors: Main knows exactly the commands the help
// lists; an unknown one, or wrong arguments, exit 2 with a clear line.
func TestCommandsAndUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `verdictbot: unknown command "frobnicate"; the commands are run, shell, check`},
		{[]string{"rnu"}, `unknown command "rnu" (did you mean "run"?)`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "extra"}, "verdictbot run: run takes no arguments, got [\"extra\"]"},
		{[]string{"migrate", "now"}, "verdictbot migrate: migrate takes no arguments"},
		{[]string{"compact", "x"}, "verdictbot compact: compact takes no arguments but --data-dir"},
		{[]string{"compact", "--frob"}, "verdictbot compact: flag provided but not defined: -frob\nUsage: verdictbot compact [--data-dir DIR]"},
		{[]string{"sim", "--frob"}, "verdictbot sim: flag provided but not defined: -frob"},
		{[]string{"healthcheck", "a:1", "b:2"}, "healthcheck takes at most one address"},
		{[]string{"events"}, "verdictbot events: events takes a subcommand: list or retry\nUsage: verdictbot events list [--limit N] | retry SEQ… | retry --all"},
		{[]string{"events", "resend"}, `unknown subcommand "resend": want list or retry`},
		{[]string{"events", "list", "7"}, "events list takes no arguments but --limit"},
		{[]string{"events", "list", "--limit", "0"}, "--limit 0: want at least 1"},
		{[]string{"events", "retry"}, "events retry needs the sequence numbers of the dead letters (events list shows them), or --all"},
		{[]string{"events", "retry", "--all", "3"}, "events retry takes sequence numbers or --all, not both"},
		{[]string{"events", "retry", "x7"}, `"x7" is not a sequence number`},
		{[]string{"events", "retry", "0"}, `"0" is not a sequence number`},
		{[]string{"events", "retry", "--frob"}, "flag provided but not defined: -frob"},
		{[]string{"config", "x"}, "config takes no arguments"},
		{[]string{"doctor", "now"}, "verdictbot doctor: doctor takes no arguments but its flags, got [\"now\"]"},
		{[]string{"doctor", "--timeout", "0s"}, "--timeout must be positive\nUsage: verdictbot doctor [--json] [--send-test-event] [--timeout 10s]"},
		{[]string{"doctor", "--frob"}, "verdictbot doctor: flag provided but not defined: -frob"},
		{[]string{"version", "x"}, "version takes no arguments"},
	} {
		code, out, errOut := runMain(nil, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("verdictbot %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, _, errOut := runMain(nil); code != 2 || !strings.Contains(errOut, "Commands:") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut)
	}
	if code, out, _ := runMain(nil, "help"); code != 0 || !strings.Contains(out, "Commands:") {
		t.Errorf("help: exit %d", code)
	}
}

// TestStartupReportsEverySettingProblem: run with several wrong settings
// reports all of them, one line each, and exits 1 before connecting.
func TestStartupReportsEverySettingProblem(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"SLACK_APP_TOKEN":          "xoxb-wrong-kind",
		"REPUTATION_URL":           "https://urlarmor.example/",
		"VERDICTBOT_MAX_LINKS":     "ten",
		"VERDICTBOT_CHANNEL_MODE":  "loud",
		"VERDICTBOT_LEASE":         "1s",
		"VERDICTBOT_CHANEL_MODE":   "quiet",
		"VERDICTBOT_RESOLVE_HOSTS": "maybe",
	}
	code, out, errOut := runMain(env, "run")
	want := []string{
		"verdictbot run: 8 settings are wrong:",
		`  VERDICTBOT_MAX_LINKS="ten": not a valid whole number`,
		`  VERDICTBOT_RESOLVE_HOSTS="maybe": not a valid boolean (true or false)`,
		"  unknown setting VERDICTBOT_CHANEL_MODE (did you mean VERDICTBOT_CHANNEL_MODE?)",
		"  SLACK_BOT_TOKEN is not set (the bot token, xoxb-…)",
		"  SLACK_APP_TOKEN must start with xapp- (an app-level token)",
		"  REPUTATION_API_KEY is not set",
		`  VERDICTBOT_CHANNEL_MODE="loud": want quiet, verbose or off`,
		"  VERDICTBOT_LEASE=1s: want 5s to 10m (how soon a stopped replica's work is taken over; default 30s)",
	}
	if code != 1 || out != "" || errOut != strings.Join(want, "\n")+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errOut, strings.Join(want, "\n"))
	}
	if strings.Contains(errOut, "xoxb-wrong-kind") {
		t.Fatal("a token was echoed")
	}
}

// TestConfigCommandMasksSecrets: verdictbot config prints every setting
// with its value and source; no token, key or password appears.
func TestConfigCommandMasksSecrets(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"SLACK_BOT_TOKEN":         "xoxb-111-222-BotTokenSecret",
		"SLACK_APP_TOKEN":         "xapp-1-A1-333-AppTokenSecret",
		"REPUTATION_API_KEY":      "RepKeySecret123",
		"SANDBOX_API_KEY":         "SbKeySecret456",
		"VERDICTBOT_DATABASE_URL": "postgres://bot:DbPassSecret@db.internal:5432/vb?sslmode=require&password=QueryPassSecret",
	}
	env := merged(secrets, map[string]string{
		"REPUTATION_URL":          "https://urlarmor.example/",
		"SANDBOX_URL":             "https://sandbox.example/",
		"VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_WORKERS":      "",
	})
	code, out, errOut := runMain(env, "config")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, s := range []string{"BotTokenSecret", "AppTokenSecret", "RepKeySecret123", "SbKeySecret456", "DbPassSecret", "QueryPassSecret"} {
		if strings.Contains(out+errOut, s) {
			t.Errorf("config shows %s:\n%s", s, out)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[2:] {
		f := strings.Fields(line)
		rows[f[0]] = f[1:]
	}
	for _, name := range config.Names() {
		if _, ok := rows[name]; !ok {
			t.Errorf("config lacks %s", name)
		}
	}
	for name, want := range map[string]string{
		"SLACK_BOT_TOKEN":          "<secret> environment",
		"REPUTATION_API_KEY":       "<secret> environment",
		"VERDICTBOT_DATABASE_URL":  "postgres://bot:xxxxx@db.internal:5432/vb?password=xxxxx&sslmode=require environment",
		"VERDICTBOT_CHANNEL_MODE":  "verbose environment",
		"VERDICTBOT_MAX_LINKS":     "50 default",
		"VERDICTBOT_RECHECK_AFTER": "1h,6h,24h,72h default",
		"VERDICTBOT_WORKERS":       "8 default (empty in the environment)",
		"VERDICTBOT_ALERT_CHANNEL": "- default",
	} {
		if got := strings.Join(rows[name], " "); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	// A wrong setting: the table, then every problem; exit 1. A URL's
	// credentials are masked in both.
	env = merged(env, map[string]string{"SANDBOX_URL": "https://user:UrlPassSecret@sandbox.example/", "VERDICTBOT_MAX_LINKS": "many"})
	code, out, errOut = runMain(env, "config")
	if code != 1 || !strings.Contains(out, "VERDICTBOT_MAX_LINKS") || !strings.Contains(out, "default (the environment's value is not valid)") ||
		!strings.Contains(errOut, "verdictbot config: 2 settings are wrong:\n") || !strings.Contains(errOut, `VERDICTBOT_MAX_LINKS="many"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "UrlPassSecret") {
		t.Errorf("a URL's password shows:\n%s\n%s", out, errOut)
	}
}
