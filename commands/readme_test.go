package commands

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite README.md's command table from the registry")

const (
	readmePath    = "../README.md"
	commandsBegin = "<!-- commands:begin -->"
	commandsEnd   = "<!-- commands:end -->"
)

// TestREADMECommandTable holds README.md's command table (between the
// commands markers) to the registry; it fails with the table to paste, and
// rewrites it with -update-readme (make readme).
func TestREADMECommandTable(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	before, rest, ok := strings.Cut(readme, commandsBegin+"\n")
	inside, after, ok2 := strings.Cut(rest, commandsEnd)
	if !ok || !ok2 {
		t.Fatalf("README.md lacks the markers %s … %s around the command table", commandsBegin, commandsEnd)
	}
	want := NewScanRegistry(nil).MarkdownTable()
	if inside == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(readmePath, []byte(before+commandsBegin+"\n"+want+commandsEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the command table of %s", readmePath)
		return
	}
	t.Errorf("README.md's command table is not the registry's (run make readme, or paste between the markers):\n%s%s%s",
		commandsBegin+"\n", want, commandsEnd)
}
