package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/internal/docgen"
)

var updateDocs = flag.Bool("update", false, "rewrite the list of subcommands in docs/usage.md (make docs)")

// usageDoc is where the subcommands are listed, from this directory.
const usageDoc = "../../docs/usage.md"

// commandList is the table of subcommands docs/usage.md shows: each
// command's synopsis and summary, in cliCommands' order.
func commandList() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range cliCommands {
		fmt.Fprintf(&b, "| `%s` | %s |\n", cell(c.synopsis), cell(c.summary))
	}
	return b.String()
}

// TestDocsCommandList holds docs/usage.md's list of subcommands (between
// the cli-commands markers) to cliCommands, and rewrites it with -update
// (make docs).
func TestDocsCommandList(t *testing.T) {
	raw, err := os.ReadFile(usageDoc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := docgen.Replace(string(raw), "cli-commands", commandList())
	if err != nil {
		t.Fatalf("%s: %v", usageDoc, err)
	}
	if got == string(raw) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(usageDoc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the subcommands of %s", usageDoc)
		return
	}
	t.Errorf("%s's list of subcommands is not cliCommands': run make docs; it should read:\n%s", usageDoc, commandList())
}

// TestDocsStateThePrerequisites: docs/development.md's Prerequisites
// name the Go version of go.mod's go line and say how to run the tests
// without gcc (the race detector needs cgo), with targets the Makefile
// has; the README says the same in short beside make test.
func TestDocsStateThePrerequisites(t *testing.T) {
	t.Parallel()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(read("../../go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	goVersion := "Go " + m[1] + " or newer"
	_, prereq, ok := strings.Cut(read("../../docs/development.md"), "\n## Prerequisites\n")
	if !ok {
		t.Fatal("docs/development.md has no Prerequisites section")
	}
	prereq, _, _ = strings.Cut(prereq, "\n## ")
	for _, want := range []string{goVersion, "(gcc)", "`make test RACE=`", "`make test-short`", "`CGO_ENABLED=0 go test ./...`"} {
		if !strings.Contains(prereq, want) {
			t.Errorf("docs/development.md's Prerequisites do not say %q", want)
		}
	}
	readme := read("../../README.md")
	_, afterTest, ok := strings.Cut(readme, "make test ")
	if !ok {
		t.Fatal("README.md does not show make test")
	}
	if i := strings.Index(afterTest, "\n## "); i >= 0 {
		afterTest = afterTest[:i] // the prerequisites sit before the first section
	}
	for _, want := range []string{goVersion, "gcc", "`make test RACE=`", "`make test-short`", "(docs/development.md#prerequisites)"} {
		if !strings.Contains(afterTest, want) {
			t.Errorf("README.md does not say %q beside make test", want)
		}
	}
	makefile := read("../../Makefile")
	for _, want := range []string{"\nRACE     ?= -race\n", "$(GO) test $(RACE) ", "\ntest-short:"} {
		if !strings.Contains(makefile, want) {
			t.Errorf("the Makefile has no %q, which the prerequisites name", want)
		}
	}
}
