package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEStatesThePrerequisites: the README's Development section names
// the Go version of go.mod's go line, and says how to run the tests
// without gcc (the race detector needs cgo) with targets the Makefile has.
func TestREADMEStatesThePrerequisites(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, dev, ok := strings.Cut(string(readme), "\n## Development\n")
	if !ok {
		t.Fatal("README.md has no Development section")
	}
	for _, want := range []string{"Go " + string(m[1]) + " or newer", "(gcc)", "`make test RACE=`", "`make test-short`", "`CGO_ENABLED=0 go test ./...`"} {
		if !strings.Contains(dev, want) {
			t.Errorf("README.md's Development section does not say %q", want)
		}
	}
	for _, want := range []string{"\nRACE     ?= -race\n", "$(GO) test $(RACE) ", "\ntest-short:"} {
		if !strings.Contains(string(makefile), want) {
			t.Errorf("the Makefile has no %q, which the README's prerequisites name", want)
		}
	}
}
