package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the test helpers (sim/simtest,
// internal/slackfake/slackfaketest, internal/testutil, app/apptest)
// stay out of the production binary, and with them the testing and httptest packages.
func TestBinaryLinksNoTestCode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "testing", pkg == "net/http/httptest", strings.HasPrefix(pkg, "testing/"),
			strings.HasSuffix(pkg, "/internal/testutil"), strings.HasSuffix(pkg, "/app/apptest"),
			strings.HasSuffix(pkg, "/simtest"), strings.HasSuffix(pkg, "/slackfaketest"):
			t.Errorf("the binary links %s", pkg)
		}
	}
}
