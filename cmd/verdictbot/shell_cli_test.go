package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
)

// The shell's CLI contract: its exit statuses and what it prints on
// stderr for a setting or flag it refuses and for a script it gave up
// waiting on. The shell's own tests (package shell) run it without the CLI.

// runShellScript runs `verdictbot shell` through runCLI with env, as `printf … |
// verdictbot shell` would (stdin is not a terminal, so each line's cards
// and answers are printed before the next line is read).
func runShellScript(t *testing.T, env map[string]string, script string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runShellScriptWith(t, testOptions(), env, script, args...)
}

// runShellScriptWith is runShellScript with the wiring's options.
func runShellScriptWith(t *testing.T, opts Options, env map[string]string, script string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	settings := apptest.ShellSettings(t, env)
	var out, errOut bytes.Buffer
	code = runCLI(mapEnv(settings), opts, append([]string{"shell"}, args...), strings.NewReader(script), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestShellGivesUpWaitingAfterTheBound(t *testing.T) {
	t.Parallel()
	// pending.test never completes: at EOF the shell waits --wait, then
	// says what is unfinished and exits 1.
	code, out, errOut := runShellScript(t, nil, "mode verbose\nhttps://pending.test/forever\n", "--sim-profile", "quick", "--wait", "2s")
	if code != 1 || !strings.Contains(errOut, "verdictbot shell: gave up waiting after 2s: 1 card(s) still being analysed") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	apptest.InOrder(t, out, "── card #1 ──", "SCANNING…", "hxxps://pending[.]test/forever")
}

func TestShellRefusesAURLWithoutItsKey(t *testing.T) {
	t.Parallel()
	code, _, errOut := runShellScript(t, map[string]string{"REPUTATION_URL": "http://127.0.0.1:1/"}, "")
	if code != 1 || !strings.Contains(errOut, "REPUTATION_API_KEY is not set (REPUTATION_URL is)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runShellScript(t, nil, "", "--sim-profile", "slow")
	if code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("bad flag: exit %d, stderr %q", code, errOut)
	}
}
