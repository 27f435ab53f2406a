package shell

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// runShellScript runs the shell with env as its environment, as `printf … |
// verdictbot shell` would (stdin is not a terminal, so each line's cards
// and answers are printed before the next line is read). args are the
// shell's flags. code is 0 when the shell ends without an error, else 1
// with the error on stderr, as the CLI prints it ("verdictbot shell: …";
// cmd/verdictbot's shell_cli_test.go tests the CLI's exit statuses and texts).
func runShellScript(t *testing.T, env map[string]string, script string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runShellScriptWith(t, testOptions(), env, script, args...)
}

// runShellScriptWith is runShellScript with the wiring's options.
func runShellScriptWith(t *testing.T, opts Options, env map[string]string, script string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	settings := apptest.ShellSettings(t, env)
	var out, errOut bytes.Buffer
	lookup := func(name string) (string, bool) { v, ok := settings[name]; return v, ok }
	flags, err := ParseFlags(args, &errOut)
	if err == nil {
		err = Run(context.Background(), lookup, flags, opts, strings.NewReader(script), &out, &errOut)
	}
	if err != nil {
		code = 1
		fmt.Fprintf(&errOut, "verdictbot shell: %v\n", err)
	}
	return code, out.String(), errOut.String()
}

func TestShellScriptedSession(t *testing.T) {
	t.Parallel()
	sample := filepath.Join(t.TempDir(), "invoice.exe")
	if err := os.WriteFile(sample, []byte(apptest.Eicar+" SIM:SHOTS=2"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"fp 1", // no card yet
		"/foo",
		"look https://login.phish.test/verify",
		"fp 1",
		"fp 4",
		"/scan help",
		"file " + sample,
		"file " + filepath.Join(t.TempDir(), "missing.bin"),
		"docs at https://example.com/guide, thanks",
		"/scan history https://login.phish.test/verify",
		"\x1b[A\x1b[Alook https://example.org/typed-at-a-pipe",
		"mode verbose",
		"see https://example.net/page",
	}, "\n") + "\n"
	var sh *Session
	opts := testOptions()
	opts.Started = func(s *Session) { sh = s }
	code, out, errOut := runShellScriptWith(t, opts, nil, script, "--sim-profile", "quick", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out,
		"you: fp 1", "! there is no card yet",
		"you: /foo", "! only /scan is a command here",
		// The phishing link (a quiet channel: the card comes with the
		// verdict), defanged.
		"you: look https://login.phish.test/verify", "── card #1 ──",
		"MALICIOUS — do not open", "1. MALICIOUS · hxxps://login[.]phish[.]test/verify", "[fp 1] [fn 1] [restore 1] (category: phishing)",
		// fp 1: the audit line added to the card, as a change line, and
		// the private confirmation (sent only once the service accepted
		// the report).
		"you: fp 1", "card #1 · line 1 · @you reported a false positive (phishing)\n",
		"» Thanks: A false positive (phishing) was reported to the URL service for task ",
		"you: fp 4", "! card #1 has no fp button on line 4",
		"you: /scan help", "» /scan — scan links", "/scan history",
		// The file: its own card, then the screenshots in the thread.
		"you: file "+sample, "── card #2 ──", "MALICIOUS — do not open", "file invoice.exe", "family EICAR",
		"[screenshot 0001.jpg, 64×48 JPEG]", "[screenshot 0002.jpg, 64×48 JPEG]",
		"you: file", "! stat ", "missing.bin: no such file or directory",
		// Clean in a quiet channel: the reaction, no card.
		"you: docs at https://example.com/guide, thanks",
		"✓ verdictbot reacted :white_check_mark: to \"docs at https://example.com/guide, thanks\" (clean; a quiet channel gets no card)",
		"you: /scan history https://login.phish.test/verify", "» History of hxxps://login[.]phish[.]test/verify",
		"— malicious (scan, task", "@you reported a false positive (phishing)",
		// Arrow keys typed into a pipe arrive as escape sequences: shown
		// in caret notation, refused, never posted.
		"you: ^[[A^[[Alook https://example.org/typed-at-a-pipe", "! not posted: the line holds control characters",
		"you: mode verbose", "mode: #security is now verbose",
		"you: see https://example.net/page", "── card #3 ──",
	)
	// A verbose card is posted final when the verdict comes within the
	// post grace (2 s), else as "scanning…" and then changed: either way
	// the clean verdict is shown.
	if tail := out[strings.LastIndex(out, "── card #3 ──"):]; !strings.Contains(tail, "1. CLEAN · hxxps://example[.]net/page") &&
		!strings.Contains(tail, "hxxps://example[.]net/page · scanning → CLEAN") {
		t.Errorf("card #3 never shows the clean verdict:\n%s", tail)
	}
	if strings.Contains(out, "card #1, updated") || strings.Count(out, "── card #1 ──") != 1 {
		t.Errorf("card #1 printed in full more than once:\n%s", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Error("escape sequences in plain output")
	}
	for _, m := range sh.fake.Messages(Channel, "") {
		if HasControl(m.Text) || strings.Contains(m.Text, "typed-at-a-pipe") {
			t.Errorf("posted %q", m.Text)
		}
	}
	if strings.Count(out, "[screenshot ") != 2 {
		t.Errorf("want 2 screenshots:\n%s", out)
	}
	if !strings.Contains(errOut, "URL service: built-in simulator; sandbox: built-in simulator; logs in ") {
		t.Errorf("stderr: %q", errOut)
	}
	// Nothing but cards and answers on stdout: the logs went to the file.
	if strings.Contains(out, "level=") {
		t.Errorf("log lines on stdout:\n%s", out)
	}
}

// With REPUTATION_URL and SANDBOX_URL set, the shell uses those services:
// here a simulator the test can inspect, which must receive the report.
func TestShellUsesTheConfiguredServices(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickSandbox()})
	env := map[string]string{"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": base, "SANDBOX_API_KEY": e2eKey}
	code, out, errOut := runShellScript(t, env, "see https://login.phish.test/account\nfp 1\nquit\nnever read\n")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out, "MALICIOUS", "@you reported a false positive (phishing)", "» Thanks:")
	if strings.Contains(out, "never read") {
		t.Error("lines after quit were read")
	}
	tasks := srv.URLTasks("https://login.phish.test/account")
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	task, _ := srv.URLTask(tasks[0])
	if len(task.Dispositions) != 1 || task.Dispositions[0].Option != "fp" || task.Dispositions[0].VerdictType != "phishing" {
		t.Fatalf("the report did not reach the service: %+v", task.Dispositions)
	}
	if !strings.Contains(errOut, "URL service: "+base) || strings.Contains(errOut, e2eKey) {
		t.Errorf("stderr: %q", errOut)
	}
}

func TestSlackTextIsWhatAClientSends(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"look https://a.test/x?a=1&b=2, ok <b>": "look <https://a.test/x?a=1&amp;b=2>, ok &lt;b&gt;",
		"(see http://b.test/p).":                "(see <http://b.test/p>).",
		"no link & no <tag>":                    "no link &amp; no &lt;tag&gt;",
		"sign in [https://okta.com/login](https://login-okta.evil.test/) now": "sign in <https://login-okta.evil.test/|https://okta.com/login> now",
		"[a & b](https://c.test/x) and https://d.test/":                       "<https://c.test/x|a &amp; b> and <https://d.test/>",
	} {
		if got := slackText(in); got != want {
			t.Errorf("slackText(%q) = %q, want %q", in, got, want)
		}
	}
}

// The shell's own commands in a script: mode, flip then recheck (the
// recheck job's card and thread reply), as @bob refused an admin command,
// show, and their usage errors.
func TestShellScriptedRecheckModeAndAs(t *testing.T) {
	t.Parallel()
	script := strings.Join([]string{
		"mode",
		"recheck",
		"see https://example.com/landing",
		"flip https://example.com/landing",
		"recheck",
		"recheck",
		"flip https://example.com/landing clean",
		"recheck",
		"flip nota url",
		"mode loud",
		"as @carol",
		"as @bob",
		"/scan allow add example.org",
		"/scan channel verbose",
		"mode",
		"as you",
		"/scan channel verbose",
		"mode",
		"show",
		"show 9",
	}, "\n") + "\n"
	code, out, errOut := runShellScript(t, nil, script, "--sim-profile", "quick", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out,
		"you: mode", "mode: #security is quiet, the default (VERDICTBOT_CHANNEL_MODE, as in production)",
		"you: recheck", "recheck: nothing to recheck",
		"you: see https://example.com/landing", "✓ verdictbot reacted :white_check_mark:",
		"you: flip https://example.com/landing", "will say phishing 97% (last verdict clean)",
		// Quiet and clean had no card: the recheck posts one, and replies.
		"you: recheck", "── card #1 ──", "1. MALICIOUS · hxxps://example[.]com/landing",
		"Note: Rechecked ", "is now malicious (was clean).",
		"verdictbot: @you a link you shared was checked again: hxxps://example[.]com/landing is now malicious (was clean).",
		"recheck: 1 due, 1 checked, 1 changed, 0 failed",
		// The flip held for one scan: the next age finds it clean again,
		// told as change lines.
		"you: recheck", "card #1 · hxxps://example[.]com/landing · malicious → CLEAN\n",
		"card #1 · note: Rechecked ", "is now clean (was malicious).",
		"recheck: 1 due, 1 checked, 1 changed",
		"you: flip https://example.com/landing clean", "will say clean (last verdict clean)",
		"you: recheck", "recheck: 1 due, 1 checked, 0 changed, 0 failed",
		"you: flip nota url", "! flip: not a URL",
		"you: mode loud", "! usage: mode [quiet|verbose|off]",
		"you: as @carol", "! as: nobody called @carol in #security; people here: @you (admin), @alice, @bob",
		"you: as @bob", "as: you are now @bob (U0BOB), not an admin",
		"bob: /scan allow add example.org", "» Only admins can change the allowlist.",
		"bob: /scan channel verbose", "» Only admins can change this channel's mode.",
		"bob: mode", "is quiet, the default",
		"you: /scan channel verbose", "» This channel's mode is now verbose.",
		"you: mode", "mode: #security is verbose",
		"you: show", "── card #1 ──", "1. CLEAN · hxxps://example[.]com/landing",
		"you: show 9", "! there is no card #9",
	)
	if strings.Count(out, "── card #1 ──") != 2 { // first shown, then `show`
		t.Errorf("card #1 printed in full %d times:\n%s", strings.Count(out, "── card #1 ──"), out)
	}
	if !strings.Contains(errOut, "You are @you (an admin) in #security, mode quiet as in production") {
		t.Errorf("banner: %q", errOut)
	}
}

// flip works on a URL never posted: the shell posts it first and waits
// for its verdict, so that the recheck after the flip finds a change.
func TestShellFlipsAURLNeverPosted(t *testing.T) {
	t.Parallel()
	script := "flip https://example.net/never-seen\nrecheck\nflip https://app.slack.com/client\n"
	code, out, errOut := runShellScript(t, nil, script, "--sim-profile", "quick", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out,
		"you: flip https://example.net/never-seen", "was never posted here; posting it first",
		"✓ verdictbot reacted :white_check_mark:",
		"will say phishing 97% (last verdict clean)",
		"you: recheck", "1. MALICIOUS · hxxps://example[.]net/never-seen", "is now malicious (was clean).",
		"recheck: 1 due, 1 checked, 1 changed, 0 failed",
		// A URL the bot never sends (Slack's own) has no verdict to change:
		// said at once, not after --wait.
		"you: flip https://app.slack.com/client", "! flip: hxxps://app[.]slack[.]com/client is not sent to the URL service here")
}

// TestShellRefusesAPostersOwnFalsePositive: in the shell too (the same
// wiring), the person who posted a link cannot press its False positive;
// another person can.
func TestShellRefusesAPostersOwnFalsePositive(t *testing.T) {
	t.Parallel()
	script := "as alice\nlook https://login.phish.test/verify\nfp 1\nas bob\nfp 1\n"
	code, out, errOut := runShellScript(t, nil, script, "--sim-profile", "quick", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out, "alice: look https://login.phish.test/verify", "MALICIOUS",
		"alice: fp 1", "» You shared this link (or asked me to check it), so you cannot report it as a false positive",
		"bob: fp 1", "card #1 · line 1 · @bob reported a false positive (phishing)", "» Thanks:")
	if strings.Contains(out, "@alice reported a false positive") {
		t.Errorf("alice's own report landed:\n%s", out)
	}
}

func TestShellWithholdsNamesThatResolvePrivate(t *testing.T) {
	t.Parallel()
	code, out, errOut := runShellScript(t, nil, "dev box http://localtest.me:3000/admin and https://evil.test/x\n", "--sim-profile", "quick", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	apptest.InOrder(t, out, "MALICIOUS", "localtest[.]me:3000/admin", "resolves to a private address")
}
