package links

import (
	"encoding/hex"
	"net/netip"
	"strings"
)

// Some public DNS names answer with an address chosen by the name itself,
// so that developers can reach their own machine or network with a real
// host name. They are judged here, without a lookup, so that they are
// withheld even when resolution is off (VERDICTBOT_RESOLVE_HOSTS=false) or
// the resolver cannot be reached: a link to one of them points inside the
// network of whoever clicks it.

// loopbackNames always resolve, with every name under them, to 127.0.0.1
// (each service's own documentation).
var loopbackNames = map[string]string{
	"localtest.me":     "localtest.me and every name under it resolve to 127.0.0.1 (readme.localtest.me)",
	"lvh.me":           "lvh.me and every name under it resolve to 127.0.0.1",
	"vcap.me":          "vcap.me and every name under it resolve to 127.0.0.1 (Cloud Foundry's local domain)",
	"localhost.direct": "localhost.direct and every name under it resolve to 127.0.0.1 (get.localhost.direct)",
}

// ipEchoNames answer with the IPv4 address written in the name:
// 10.0.0.1.nip.io, app.10.0.0.1.nip.io, app-10-0-0-1.nip.io and
// 0a000001.nip.io all resolve to 10.0.0.1 (nip.io and sslip.io
// documentation; xip.io was the original, now gone, and traefik.me and
// nip.direct copy the scheme).
var ipEchoNames = []string{"nip.io", "sslip.io", "xip.io", "traefik.me", "nip.direct"}

// resolvesPrivateByName reports whether host is a well-known name that
// resolves to a non-public address without a lookup, with a detail text.
func resolvesPrivateByName(host string) (string, bool) {
	if d, ok := matchSuffixMap(loopbackNames, host); ok {
		return loopbackNames[d], true
	}
	for _, svc := range ipEchoNames {
		if host != svc && !strings.HasSuffix(host, "."+svc) {
			continue
		}
		a, ok := echoedIPv4(strings.TrimSuffix(host, svc))
		if !ok {
			return "", false
		}
		what, bad := nonPublicAddr(a)
		if !bad {
			return "", false
		}
		return svc + " answers with the address in the name, " + a.String() + ": " + what, true
	}
	return "", false
}

// echoedIPv4 finds the IPv4 address an IP-echo service reads from the labels
// before its own name (prefix ends with a dot): four dotted decimal labels
// at the end, or a last label that is, or ends in "-" followed by, a dashed
// address (10-0-0-1) or eight hex digits (0a000001).
func echoedIPv4(prefix string) (netip.Addr, bool) {
	prefix = strings.TrimSuffix(prefix, ".")
	if prefix == "" {
		return netip.Addr{}, false
	}
	labels := strings.Split(prefix, ".")
	if n := len(labels); n >= 4 {
		if a, err := netip.ParseAddr(strings.Join(labels[n-4:], ".")); err == nil && a.Is4() {
			return a, true
		}
	}
	last := labels[len(labels)-1]
	parts := strings.Split(last, "-")
	if n := len(parts); n >= 4 {
		if a, err := netip.ParseAddr(strings.Join(parts[n-4:], ".")); err == nil && a.Is4() {
			return a, true
		}
	}
	if h := parts[len(parts)-1]; len(h) == 8 {
		if b, err := hex.DecodeString(h); err == nil {
			return netip.AddrFrom4([4]byte(b)), true
		}
	}
	return netip.Addr{}, false
}
