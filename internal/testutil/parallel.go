package testutil

import (
	"flag"
	"runtime"
	"strconv"
)

// EndToEndParallel is how many tests of an end-to-end package run at once
// when go test is not given -parallel. Those tests mostly wait on timers
// and sockets (a fake Slack, the simulator, the bot's own pacing), not on
// the CPU, so -parallel's default (GOMAXPROCS) leaves the machine idle: on
// 2 cores with -race (November 2026) the end-to-end tests, then one
// package, took about 690 s one test at a time, 205 s with 4, 162 s with 6
// and 131–164 s with 8. They are now two packages (app and cmd/verdictbot)
// that go test runs side by side (-p is GOMAXPROCS), and cmd's tests start
// whole clusters of replicas as processes: 8 or 4 each made the heaviest
// tests (200 links, three replicas, a killed leader's session) miss their
// bounds when the machine had other work; 2 each keeps about 4 bots
// running, like 4 in one package.
const EndToEndParallel = 2

// ProcessParallel is EndToEndParallel for cmd/verdictbot, whose tests
// wait on whole processes (killed, restarted, clusters of replicas) far
// more than on the CPU: once its slowest tests were cut to what they
// test (issue 22), 4 at once took the package from 122-132 s to 69 s with
// -race beside app's 78 s, with no test missing its bound (whole suite
// 186 s).
const ProcessParallel = 4

// ShortParallel is how many tests of an end-to-end package run at once
// under -short (make test-short), which runs without the race detector
// and skips the end-to-end tests that take several seconds each
// (apptest.SkipIfShort): the rest each wait a second or two on timers
// and sockets for little CPU, so more of them fit side by side. On 2
// cores (November 2026) app's took 66-72 s at 2 and 20-21 s at 8, with
// none missing its bound in repeated runs.
const ShortParallel = 8

// RaiseParallel parses the test flags and, unless the command line set
// -test.parallel, sets it to n (or GOMAXPROCS when that is more), or to
// ShortParallel under -short when that is more. Call it from TestMain
// before m.Run; an explicit -parallel still wins.
func RaiseParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return
	}
	if short := flag.Lookup("test.short"); short != nil && short.Value.String() == "true" {
		n = max(n, ShortParallel)
	}
	if err := flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0)))); err != nil {
		panic(err)
	}
}
