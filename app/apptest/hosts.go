package apptest

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

// HostTable is a DNS resolver (app.Options.Resolver) answering from a
// table: a name resolves to the addresses listed for it, every other name
// is NXDOMAIN at once.
type HostTable map[string][]string

// LookupNetIP returns host's addresses from the table, or a not-found
// *net.DNSError.
func (h HostTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
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

// Hosts is the DNS the tests see (through VERDICTBOT_RESOLVE_HOSTS's real
// wiring, as Options' Resolver): these names resolve as listed, every
// other name is NXDOMAIN at once, so no test depends on the machine's
// resolver.
func Hosts() HostTable {
	return HostTable{
		"localtest.me":          {"127.0.0.1"},
		"127.0.0.1.nip.io":      {"127.0.0.1"},
		"jira.corp.example.com": {"10.20.30.40"},
		// Would be malicious if sent (the simulator flags "phish" hosts).
		"sso.phish-intranet.test": {"10.9.8.7", "fd00::7"},
		"public.phish-mixed.test": {"10.9.8.7", "93.184.215.14"},
	}
}

// Options are the options every test starts from: the wiring as in
// production, but for the DNS (Hosts).
func Options() app.Options { return app.Options{Resolver: Hosts()} }

// QuickPolling is Options with the analyses' status checked every 0.1 s
// at first, then up to every 0.5 s (app.Options.URLPolling and
// SandboxPolling), instead of on the learned schedules, whose first
// check comes after about a second: for the tests whose subject is not
// how the bot polls. A QuickProfile analysis is then seen done after
// about 0.5 s, not 1 s.
func QuickPolling() app.Options {
	o := Options()
	o.URLPolling = reputation.Backoff{Initial: 100 * time.Millisecond, Factor: 1.5, Max: 500 * time.Millisecond}
	o.SandboxPolling = sandbox.Backoff{Initial: 100 * time.Millisecond, Factor: 1.5, Max: 500 * time.Millisecond}
	return o
}
