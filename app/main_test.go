package app_test

import (
	"os"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

// TestMain runs the end-to-end tests testutil.EndToEndParallel at once
// (or GOMAXPROCS if more) unless -parallel says otherwise: they wait on
// timers and sockets, not on the CPU.
func TestMain(m *testing.M) {
	testutil.RaiseParallel(testutil.EndToEndParallel)
	os.Exit(m.Run())
}
