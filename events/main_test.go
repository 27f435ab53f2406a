package events_test

import (
	"os"
	"testing"

	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestMain fails the package when its PostgreSQL tests left a table
// outside their own schemas (pgtest.CheckNoSharedTables).
func TestMain(m *testing.M) {
	os.Exit(pgtest.CheckNoSharedTables(m.Run))
}
