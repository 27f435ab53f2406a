package pg_test

import (
	"os"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

// TestMain runs the conformance cases testutil.EndToEndParallel at once
// (or GOMAXPROCS if more) unless -parallel says otherwise: each case has
// a store of its own and mostly waits on the disk or the database, not
// on the CPU.
func TestMain(m *testing.M) {
	testutil.RaiseParallel(testutil.EndToEndParallel)
	os.Exit(m.Run())
}
