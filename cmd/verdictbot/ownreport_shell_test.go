package main

import (
	"strings"
	"testing"
)

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
	inOrder(t, out, "alice: look https://login.phish.test/verify", "MALICIOUS",
		"alice: fp 1", "» You shared this link (or asked me to check it), so you cannot report it as a false positive",
		"bob: fp 1", "card #1 · line 1 · @U0BOB reported a false positive (phishing)", "» Thanks:")
	if strings.Contains(out, "@U0ALICE reported a false positive") {
		t.Errorf("alice's own report landed:\n%s", out)
	}
}
