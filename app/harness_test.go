package app_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/config"
)

// The end-to-end tests of this package run the bot's real wiring
// (app.New, Run) against the fake Slack and the simulator (run_test.go's
// harness). Their settings are a map loaded with package config, as
// `verdictbot run` loads the environment; nothing reads the process's
// environment, so they run side by side.

// testHosts is the DNS the tests see (through VERDICTBOT_RESOLVE_HOSTS's
// real wiring, as testOptions' Resolver): these names resolve as listed,
// every other name is NXDOMAIN at once, so no test depends on the
// machine's resolver.
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
func testOptions() app.Options { return app.Options{Resolver: testHosts} }

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

// mustConfig is the settings of env, checked as `run` checks them
// (config.Load, config.Unknown, Validate); a problem fails the test.
func mustConfig(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	if err := config.Join(err, config.Unknown(environ), cfg.Validate(true)); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serve is what `verdictbot run` does: app.New with the logger log and
// the hooks o, attach (when set) given the wired app before it runs, Run
// until ctx ends, Close.
func serve(ctx context.Context, cfg config.Config, o app.Options, log *slog.Logger, attach func(*app.App)) error {
	o.Logger = log
	a, err := app.New(cfg, o)
	if err != nil {
		return err
	}
	defer a.Close()
	if attach != nil {
		attach(a)
	}
	return a.Run(ctx)
}

// deferredWords is what the card of a link past the cap says until its
// deferred check is made (scan.DeferredProblem).
const deferredWords = "not checked yet: too many links from you this hour; it will be checked at low priority"

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitFor waits up to 15 s for ok.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileLines reads the JSON-lines file.
func fileLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
