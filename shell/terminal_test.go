package shell

import (
	"testing"
	"unicode"

	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// terminalAttack is what a compromised service (or a message) could send
// to drive the reader's terminal: colours, clearing the screen, an OSC 8
// hyperlink that shows one text and opens another address, a window
// title, a bell, a carriage return that overwrites the line, an 8-bit
// CSI, and a bidi override that shows the text reversed.
const terminalAttack = "\u202egnp.exe\u202c \x1b[2J\x1b[31mclean\x1b[0m \x1b]8;;https://evil.example/\x1b\\safe.example\x1b]8;;\x1b\\ " +
	"\x1b]0;title\x07\x07 over\rwritten \u009b6n end"

// mustBeInertTerminal fails when out holds a control character (but line
// breaks) or an invisible format character such as a bidi override.
func mustBeInertTerminal(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r == '\n' {
			continue
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("%s: %U reaches the terminal:\n%q", what, r, out)
			return
		}
	}
}

// TestShellSanitisesServiceTextForTheTerminal: the shell prints cards and
// the bot's answers holding a hostile service's words (a family, a file
// type, a status) with no escape sequence and no bidi override.
func TestShellSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: quickSandbox})
	bad := startHostileService(t, base, map[string]string{"malfamily": terminalAttack, "file_type": terminalAttack, "added_on": terminalAttack})
	bad.on.Store(true)
	sample := writeFile(t, "invoice.exe", eicar)
	env := map[string]string{"REPUTATION_URL": bad.URL, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": bad.URL, "SANDBOX_API_KEY": e2eKey}
	code, out, errOut := runShellScript(t, env, "file "+sample+"\n/scan hash 44d88612fea8a8f36de82e1278abb02f\n/scan status 1000\n", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	for _, key := range []string{"malfamily", "file_type", "added_on"} {
		if bad.rewritten(key) == 0 {
			t.Errorf("the service sent no hostile %s: the test proves nothing about it", key)
		}
	}
	mustBeInertTerminal(t, "shell", out)
	// The card, and both answers, show the service's words, made inert.
	inOrder(t, out, "── card #1 ──", "[U+202E]gnp.exe", "» File", "[U+202E]gnp.exe", "» Sandbox task", "[U+202E]gnp.exe")
}
