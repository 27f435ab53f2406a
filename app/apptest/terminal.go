package apptest

import (
	"testing"
	"unicode"
)

// TerminalAttack is what a compromised service (or a message) could send
// to drive the reader's terminal: colours, clearing the screen, an OSC 8
// hyperlink that shows one text and opens another address, a window
// title, a bell, a carriage return that overwrites the line, an 8-bit
// CSI, and a bidi override that shows the text reversed.
const TerminalAttack = "\u202egnp.exe\u202c \x1b[2J\x1b[31mclean\x1b[0m \x1b]8;;https://evil.example/\x1b\\safe.example\x1b]8;;\x1b\\ " +
	"\x1b]0;title\x07\x07 over\rwritten \u009b6n end"

// MustBeInertTerminal fails when out holds a control character (but line
// breaks) or an invisible format character such as a bidi override.
func MustBeInertTerminal(t *testing.T, what, out string) {
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
