package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	dir := t.TempDir()
	settings := map[string]string{"VERDICTBOT_DATA_DIR": dir, "REPUTATION_URL": "", "REPUTATION_API_KEY": "",
		"SANDBOX_URL": "", "SANDBOX_API_KEY": "", "NO_COLOR": ""}
	for k, v := range env {
		settings[k] = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := os.ReadFile(filepath.Join(dir, "shell.log"))
			t.Logf("shell.log:\n%s", logs)
		}
	})
	var out, errOut bytes.Buffer
	code = runCLI(mapEnv(settings), opts, append([]string{"shell"}, args...), strings.NewReader(script), &out, &errOut)
	return code, out.String(), errOut.String()
}

// inOrder fails unless the wants appear in s in this order.
func inOrder(t *testing.T, s string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after byte %d:\n%s", w, at, s)
		}
		at += i + len(w)
	}
}

func TestShellGivesUpWaitingAfterTheBound(t *testing.T) {
	t.Parallel()
	// pending.test never completes: at EOF the shell waits --wait, then
	// says what is unfinished and exits 1.
	code, out, errOut := runShellScript(t, nil, "mode verbose\nhttps://pending.test/forever\n", "--sim-profile", "quick", "--wait", "2s")
	if code != 1 || !strings.Contains(errOut, "verdictbot shell: gave up waiting after 2s: 1 card(s) still being analysed") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	inOrder(t, out, "── card #1 ──", "SCANNING…", "hxxps://pending[.]test/forever")
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
