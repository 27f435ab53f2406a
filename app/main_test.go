package app_test

import (
	"os"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestMain runs the end-to-end tests testutil.EndToEndParallel at once
// (or GOMAXPROCS if more) unless -parallel says otherwise: they wait on
// timers and sockets, not on the CPU. The package fails when a test left
// a PostgreSQL table outside its own schemas (pgtest.CheckNoSharedTables).
func TestMain(m *testing.M) {
	testutil.RaiseParallel(testutil.EndToEndParallel)
	os.Exit(pgtest.CheckNoSharedTables(m.Run))
}
