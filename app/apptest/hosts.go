package apptest

import (
	"context"
	"net"
	"net/netip"

	"github.com/verdictbot/verdictbot/app"
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
