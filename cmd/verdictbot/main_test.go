package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/internal/testutil"
)

// testHosts is the DNS the tests see (through VERDICTBOT_RESOLVE_HOSTS's
// real wiring, as testOptions' Resolver): these names resolve as listed, every other name is
// NXDOMAIN at once, so no test depends on the machine's resolver.
var testHosts = hostTable{
	"localtest.me":          {"127.0.0.1"},
	"127.0.0.1.nip.io":      {"127.0.0.1"},
	"jira.corp.example.com": {"10.20.30.40"},
	// Would be malicious if sent (the simulator flags "phish" hosts).
	"sso.phish-intranet.test": {"10.9.8.7", "fd00::7"},
	"public.phish-mixed.test": {"10.9.8.7", "93.184.215.14"},
}

type hostTable map[string][]string

// testOptions are the options every test starts from: the wiring as in
// production, but for the DNS (testHosts).
func testOptions() Options { return Options{Options: app.Options{Resolver: testHosts}} }

func (h hostTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := h[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// TestMain lets the test binary act as verdictbot itself when
// GO_TEST_AS_VERDICTBOT=1, so tests can run (and kill) a real process, and
// as a disk load (see startFsyncLoad) when GO_TEST_FSYNC_LOAD names a
// directory. Otherwise it runs the tests, testutil.EndToEndParallel at once (or
// GOMAXPROCS if more) unless -parallel says otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("GO_TEST_AS_VERDICTBOT") == "1" {
		opts := testOptions()
		// The events e2e test shortens the sender's backoff cap (1 min).
		if d, err := time.ParseDuration(os.Getenv(eventsBackoffEnv)); err == nil {
			opts.EventsMaxBackoff = d
		}
		os.Exit(runCLI(processEnvironment(), opts, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if dir := os.Getenv(fsyncLoadEnv); dir != "" {
		os.Exit(fsyncLoad(dir))
	}
	testutil.RaiseParallel(testutil.EndToEndParallel)
	os.Exit(m.Run())
}
