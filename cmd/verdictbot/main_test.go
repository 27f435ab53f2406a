package main

import (
	"os"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// The shared harness's people, channel and service key (package
// app/apptest), by their short names.
const (
	e2eKey     = apptest.Key
	secChannel = apptest.Channel
	alice      = apptest.Alice
	adminUser  = apptest.Admin
	bob        = apptest.Bob
)

// testOptions are the options every test starts from: the wiring as in
// production, but for the DNS (apptest.Hosts).
func testOptions() Options { return Options{Options: apptest.Options()} }

// TestMain lets the test binary act as verdictbot itself when
// GO_TEST_AS_VERDICTBOT=1, so tests can run (and kill) a real process, and
// as a disk load (see startFsyncLoad) when GO_TEST_FSYNC_LOAD names a
// directory. Otherwise it runs the tests, testutil.ProcessParallel at once (or
// GOMAXPROCS if more) unless -parallel says otherwise, and fails when one
// left a PostgreSQL table outside its own schemas
// (pgtest.CheckNoSharedTables).
func TestMain(m *testing.M) {
	if os.Getenv("GO_TEST_AS_VERDICTBOT") == "1" {
		opts := testOptions()
		// The events e2e test shortens the sender's backoff cap (1 min).
		if d, err := time.ParseDuration(os.Getenv(eventsBackoffEnv)); err == nil {
			opts.EventsMaxBackoff = d
		}
		// The outbox test's failpoint: every store write is counted, and
		// the process kills itself at the one named (see killAtWrite).
		if fp := os.Getenv(failpointEnv); fp != "" {
			opts.StoreWriteFault = killAtWrite(fp)
		}
		// The flip kill test: a removal waits this long for its card.
		if d, err := time.ParseDuration(os.Getenv(flipPostWaitEnv)); err == nil {
			opts.FlipPostWait = d
		}
		os.Exit(runCLI(processEnvironment(), opts, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if dir := os.Getenv(fsyncLoadEnv); dir != "" {
		os.Exit(fsyncLoad(dir))
	}
	testutil.RaiseParallel(testutil.ProcessParallel)
	os.Exit(pgtest.CheckNoSharedTables(m.Run))
}
