package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as verdictbot itself when
// GO_TEST_AS_VERDICTBOT=1, so tests can run (and kill) a real process.
func TestMain(m *testing.M) {
	if os.Getenv("GO_TEST_AS_VERDICTBOT") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
