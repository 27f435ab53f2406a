package main

import (
	"strings"
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

// TestCheckSanitisesServiceTextForTheTerminal: `verdictbot check` prints
// a hostile service's words (here a family, a problem) with no escape
// sequence, in text and in JSON (whose values stay what the service said).
func TestCheckSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: quickSandbox})
	bad := startHostileService(t, base, map[string]string{"malfamily": terminalAttack, "result": terminalAttack, "msg": terminalAttack})
	bad.on.Store(true)
	env := checkEnv(map[string]string{"REPUTATION_URL": bad.URL, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": bad.URL, "SANDBOX_API_KEY": e2eKey})
	sample := writeFile(t, "eicar.txt", eicar)
	for _, args := range [][]string{{sample, "https://noresult.test/x"}, {"--json", sample, "https://noresult.test/x"}} {
		code, out, errOut := runCheckArgs(env, args...)
		t.Logf("check %v: exit %d\n%s%s", args, code, out, errOut)
		if bad.rewritten("malfamily") == 0 {
			t.Fatal("the service sent no hostile family: the test proves nothing")
		}
		mustBeInertTerminal(t, "check "+strings.Join(args, " "), out+errOut)
	}
}
