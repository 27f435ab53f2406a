package testutil

import (
	"os"
	"strings"
)

// TestVariables names each environment variable the tests, benchmarks and
// their helper processes read, with what it does: the test suite's own
// inputs, never the bot's settings. The bot's configuration reaches a
// test as a value (a settings map loaded with package config, as
// app/apptest does), and a process a test starts gets an environment the
// test wrote (ChildEnv, or a list of its own), so a developer's exported
// SLACK_BOT_TOKEN, SANDBOX_URL, VERDICTBOT_CHANNEL_MODE or a mistyped
// VERDICTBOT_* changes no test; only cmd/verdictbot's main reads the
// process's environment for settings. Keep in sync with the reads:
// TestTestsReadOnlyTheirOwnVariables checks every read in the module
// against this list, and fails on an entry nothing reads.
var TestVariables = map[string]string{
	// PostgreSQL (package store/pg/pgtest).
	"VERDICTBOT_TEST_DATABASE_URL": "a postgres:// URL of any database: the PostgreSQL tests (store/pg, events, app, cmd/verdictbot) run in schemas of their own there and drop them; unset, they skip with one line",
	"VERDICTBOT_TEST_PG_RESTART":   "1 runs TestPostgresRestartLosesNothing, which stops and starts the machine's PostgreSQL (pg_ctlcluster): run alone, as .ci/run does",
	"VERDICTBOT_TEST_PG_OUTAGE":    "that test's outage (a duration; default 8s)",

	// The Helm chart's tests (deploy/deploy_helm_test.go).
	"HELM_BINARY":          "the helm the chart tests run (default: bin/tools/helm@*/helm from make tools, else helm on PATH; none: they skip)",
	"VERDICTBOT_TEST_HELM": "required: the chart tests fail instead of skipping when helm is not found (.ci/run's chart step)",

	// The chaos soak (make soak; cmd/verdictbot/soak_test.go).
	"VERDICTBOT_SOAK":        "how long the soak's load runs (a duration); unset, TestSoak skips",
	"VERDICTBOT_SOAK_SEED":   "the soak's seed, to replay a run (printed at its start)",
	"VERDICTBOT_SOAK_FAULTS": "the fault kinds the soak draws from, comma-separated (a leading - removes one)",
	"VERDICTBOT_SOAK_DRAIN":  "the bound on the soak's drain (default 4m)",

	// BenchmarkThroughputEndToEnd (cmd/verdictbot).
	"VERDICTBOT_BENCH_BINARY":         "the verdictbot binary the benchmark runs (default: built from the package)",
	"VERDICTBOT_BENCH_CPUPROFILE":     "a file for a CPU profile of the benchmarked bot (builds it with -tags benchprofile)",
	"VERDICTBOT_BENCH_MAX_CONCURRENT": "passed on to the benchmarked bot as VERDICTBOT_MAX_CONCURRENT",
	"VERDICTBOT_TEST_CPUPROFILE":      "set by the benchmark for a binary built with -tags benchprofile: where it writes the profile",
	"GOGC":                            "passed on to the benchmarked bot (it applies to the test process too)",
	"GOMEMLIMIT":                      "passed on to the benchmarked bot (it applies to the test process too)",
	"PATH":                            "passed on to the verdictbot processes the tests start (with HOME, their only inherited variables)",
	"HOME":                            "passed on to the verdictbot processes the tests start",
	"FIRSTVERDICT_SPEED":              "the virtual clock's speed of scan's first-verdict benchmarks (default 8)",
	"FIRSTVERDICT_PHASES":             "non-empty: those benchmarks log the sandbox status calls by status",
	"STORE_RETENTION_BENCH":           "non-empty runs the 30-day retention simulations of store/bolt and store/pg (minutes)",
	"STORE_RETENTION_BENCH_LINKS":     "links per day of store/pg's retention simulation (default 5000)",
	"HOME_CAPTURE_DIR":                "a directory where app's Home test writes the Home tabs it renders, as text",
	"QUARANTINE_RENDER":               "non-empty: app's quarantine tests log the channel as rendered",
	"KILL9_LOG":                       "a file where the kill -9 restart test writes both processes' logs when it fails",

	// Set by a test for the helper process it starts (this test binary
	// again), never by hand.
	"GO_TEST_AS_VERDICTBOT":                "1: cmd/verdictbot's test binary acts as verdictbot (its TestMain)",
	"GO_TEST_EVENTS_MAX_BACKOFF":           "that process's events sender backoff cap",
	"GO_TEST_FAILPOINT_WRITE":              "that process kills itself at the store write named",
	"GO_TEST_FLIP_POST_WAIT":               "that process's wait of a removal for its card",
	"GO_TEST_FSYNC_LOAD":                   "a directory: the process keeps its disk busy (a benchmark's load)",
	"GO_TEST_EVENTS_OUTAGE":                "the events end-to-end test's receiver outage (e.g. 60s for the real minute; default 5s)",
	"GO_TEST_FLIPKILL_AT":                  "the flip kill test kills at that store write only (default: each in turn)",
	"STORE_DUE_HELPER_DIR":                 "BenchmarkDue100k's measuring process: the store's directory",
	"STORE_DUE_HELPER_EVICT":               "true: that process evicts the store file from the page cache first",
	"VERDICTBOT_SLACKFILE_FILEHOST_HELPER": "BenchmarkFileMemory's file host process: the bot token it checks",
}

// strippedPrefixes are the families of the bot's settings and the
// services' variables that ChildEnv never passes on from the test
// process: SLACK_BOT_TOKEN, SANDBOX_URL, VERDICTBOT_CHANNEL_MODE…
var strippedPrefixes = []string{"VERDICTBOT_", "SLACK_", "REPUTATION_", "SANDBOX_"}

// ChildEnv is the environment for a process a test starts (this test
// binary again, as a helper): the test process's own without any
// VERDICTBOT_*, SLACK_*, REPUTATION_* or SANDBOX_* variable, then set
// (NAME=value each), which the test chose. It is the one place the tests
// pass the inherited environment on.
func ChildEnv(set ...string) []string {
	return CleanEnv(os.Environ(), set...)
}

// CleanEnv is environ (os.Environ's form, NAME=value) without any
// VERDICTBOT_*, SLACK_*, REPUTATION_* or SANDBOX_* variable, then set.
func CleanEnv(environ []string, set ...string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !stripped(name) {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// stripped reports whether ChildEnv drops the variable name.
func stripped(name string) bool {
	for _, p := range strippedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
