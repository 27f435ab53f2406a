package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/sim"
)

// The settings, channel and people of the bot the metrics check starts.
const (
	e2eKey     = "sim-key-e2e-9f3a"
	secChannel = "C0SEC"
	alice      = "U0ALICE"
)

// quickSandbox finishes a sandbox task in 0.45 s, so the bot's first status
// check (after about a second) finds it reported.
var quickSandbox = sim.Profile{Name: "e2e-files", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
	SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
	SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}

// settingsMap is an environment holding exactly the variables of a map.
type settingsMap map[string]string

// mapEnv is the environment m (what the checks give config instead of
// the process's environment).
func mapEnv(m map[string]string) settingsMap { return settingsMap(m) }

// loadValidConfig is the settings of env checked as `verdictbot run`
// checks them (needSlack) or `verdictbot migrate` (not): config.Load,
// config.Unknown and Validate, every problem in one error.
func loadValidConfig(env settingsMap, needSlack bool) (config.Config, error) {
	cfg, err := config.Load(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return cfg, config.Join(err, config.Unknown(environ), cfg.Validate(needSlack))
}

// mustConfig is loadValidConfig for run; a problem fails the test.
func mustConfig(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	cfg, err := loadValidConfig(mapEnv(env), true)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testOptions are the wiring as in production, but for the DNS: every
// name is NXDOMAIN at once, as the names the end-to-end tests' table does
// not list, so that no check depends on the machine's resolver.
func testOptions() app.Options { return app.Options{Resolver: noHosts{}} }

// noHosts resolves no name.
type noHosts struct{}

func (noHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// serve is what `verdictbot run` does: app.New with the logger log and
// the options o, attach (when set) given the wired app before it runs,
// Run until ctx ends, Close.
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

// blocksText returns the blocks' JSON without HTML escaping.
func blocksText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.String()
}
