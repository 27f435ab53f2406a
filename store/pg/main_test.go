package pg_test

import (
	"os"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestMain runs the conformance cases testutil.EndToEndParallel at once
// (or GOMAXPROCS if more) unless -parallel says otherwise: each case has
// a store of its own and mostly waits on the disk or the database, not
// on the CPU. The package fails when a test left a table outside its
// own schemas (pgtest.CheckNoSharedTables).
func TestMain(m *testing.M) {
	testutil.RaiseParallel(testutil.EndToEndParallel)
	os.Exit(pgtest.CheckNoSharedTables(m.Run))
}
