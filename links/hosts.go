package links

import (
	"net/netip"
	"strings"
)

// defaultAllowDomains are Slack's own domains: links to them are Slack
// messages, files, images and redirects, not third-party content. The list
// is the set of domains Slack asks network administrators to allow through
// firewalls and proxies (Slack Help Center connection-troubleshooting
// article, not re-read here; the list as copied in the Zscaler community
// post "Allow Specific Slack Workspace",
// https://community.zscaler.com/t/allow-specific-slack-workspace/4963), plus
// slack-gov.com, the GovSlack API host that slack-go v0.35.0 trusts with the
// token (misc.go ensureURLMayReceiveToken). Links through Slack's redirector
// slack-redir.net are unwrapped and the destination is checked on its own
// (see Policy.Extract).
//
// slack-files.com also serves public file links, which anyone in the
// workspace can create; set Config.NoDefaultAllow to scan them.
var defaultAllowDomains = []string{
	"slack.com",
	"slack-core.com",
	"slack-edge.com",
	"slack-files.com",
	"slack-gov.com",
	"slack-imgs.com",
	"slack-msgs.com",
	"slack-redir.net",
	"slackb.com",
}

// DefaultAllowDomains returns a copy of the domains every Policy allowlists
// unless Config.NoDefaultAllow is set: Slack's own domains (slack.com,
// slack-edge.com, slack-files.com, slack-imgs.com, slackb.com,
// slack-redir.net, …). Subdomains are included.
func DefaultAllowDomains() []string {
	return append([]string(nil), defaultAllowDomains...)
}

// internalNames are special-use and de-facto private name suffixes. A host
// equal to one of them or under one of them is never sent to a service.
//
// Deliberately absent: .test, .example and .invalid (RFC 6761 §6.2, RFC
// 2606, RFC 6761 §6.4). They resolve nowhere, so sending them reveals
// nothing, and the service simulator selects its behaviour by .test host
// (pending.test, fail.test, d<N>s.test…; sim/verdict.go), which must reach
// it through this package.
// Keep the comments on each entry: they are the source of the entry and are
// shown to users in Skipped.Detail.
var internalNames = map[string]string{
	// RFC 6761 §6.3; *.localhost is loopback too.
	"localhost": "reserved for loopback (RFC 6761 §6.3)",
	// RFC 6762 (multicast DNS), Appendix G lists .local.
	"local": "multicast DNS on the local network (RFC 6762)",
	// ICANN Board resolution of 29 July 2024 reserving .INTERNAL for private
	// use (after SSAC SAC113).
	"internal": "reserved for private networks (ICANN, 2024)",
	// RFC 8375.
	"home.arpa": "reserved for home networks (RFC 8375)",
	// Not delegated because of name collisions with private networks (ICANN
	// Board resolution of 4 February 2018 on .CORP, .HOME and .MAIL).
	"corp": "not a public top-level domain; used by private networks (ICANN, 2018)",
	"home": "not a public top-level domain; used by private networks (ICANN, 2018)",
	"mail": "not a public top-level domain; used by private networks (ICANN, 2018)",
	// De facto: router and operating-system defaults (e.g. OpenWrt "lan",
	// glibc/systemd "localdomain"); neither is delegated in the root zone.
	"lan":         "local network name used by routers, not a public top-level domain",
	"localdomain": "local host name default, not a public top-level domain",
}

// internalName reports whether host is or is under a special-use name, with
// a detail text.
func internalName(host string) (string, bool) {
	name, ok := matchSuffixMap(internalNames, host)
	if !ok {
		return "", false
	}
	return "." + name + " is " + internalNames[name], true
}

// addrRange is a non-public address block. When embed >= 0 the block embeds
// an IPv4 address at byte offset embed, which is checked instead.
type addrRange struct {
	prefix netip.Prefix
	what   string
	embed  int
}

func r(prefix, what string) addrRange {
	return addrRange{prefix: netip.MustParsePrefix(prefix), what: prefix + " is " + what, embed: -1}
}

func embeds(prefix, what string, at int) addrRange {
	return addrRange{prefix: netip.MustParsePrefix(prefix), what: prefix + " is " + what, embed: at}
}

// v4Ranges are the IPv4 blocks that are not globally reachable unicast, from
// the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry/, RFC 6890)
// plus multicast and the reserved class E block.
var v4Ranges = []addrRange{
	r("0.0.0.0/8", `"this network" (RFC 791, RFC 6890)`),
	r("10.0.0.0/8", "a private network (RFC 1918)"),
	r("100.64.0.0/10", "shared carrier-grade NAT space (RFC 6598)"),
	r("127.0.0.0/8", "loopback (RFC 1122 §3.2.1.3)"),
	r("169.254.0.0/16", "link-local (RFC 3927)"),
	r("172.16.0.0/12", "a private network (RFC 1918)"),
	r("192.0.0.0/24", "reserved for IETF protocols (RFC 6890)"),
	r("192.0.2.0/24", "reserved for documentation (RFC 5737)"),
	r("192.168.0.0/16", "a private network (RFC 1918)"),
	r("198.18.0.0/15", "reserved for benchmarking (RFC 2544)"),
	r("198.51.100.0/24", "reserved for documentation (RFC 5737)"),
	r("203.0.113.0/24", "reserved for documentation (RFC 5737)"),
	r("224.0.0.0/4", "multicast (RFC 5771)"),
	r("240.0.0.0/4", "reserved, including broadcast (RFC 1112 §4, RFC 919)"),
}

// v6Ranges are the IPv6 blocks that are not globally reachable unicast, from
// the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry/). Order
// matters: ::1 and :: come before the ::/96 block that contains them.
var v6Ranges = []addrRange{
	r("::1/128", "loopback (RFC 4291 §2.5.3)"),
	r("::/128", "the unspecified address (RFC 4291 §2.5.2)"),
	embeds("::/96", "IPv4-compatible (RFC 4291 §2.5.5.1)", 12),
	embeds("64:ff9b::/96", "the NAT64 prefix (RFC 6052)", 12),
	r("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
	r("100::/64", "discard-only (RFC 6666)"),
	r("2001:db8::/32", "reserved for documentation (RFC 3849)"),
	embeds("2002::/16", "6to4 (RFC 3056)", 2),
	r("fc00::/7", "a unique local network (RFC 4193)"),
	r("fe80::/10", "link-local (RFC 4291 §2.5.6)"),
	r("fec0::/10", "site-local (deprecated, RFC 3879)"),
	r("ff00::/8", "multicast (RFC 4291 §2.7)"),
}

// nonPublicAddr reports whether a is private, loopback, link-local or
// otherwise not a public unicast address, with a detail text. IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible, NAT64 and 6to4 addresses are judged by
// the IPv4 address they carry.
func nonPublicAddr(a netip.Addr) (string, bool) {
	if a.Is4In6() {
		if what, bad := nonPublicAddr(a.Unmap()); bad {
			return "IPv4-mapped " + a.Unmap().String() + ": " + what, true
		}
		return "", false
	}
	ranges := v6Ranges
	if a.Is4() {
		ranges = v4Ranges
	}
	for _, rg := range ranges {
		if !rg.prefix.Contains(a) {
			continue
		}
		if rg.embed < 0 {
			return rg.what, true
		}
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[rg.embed : rg.embed+4]))
		if what, bad := nonPublicAddr(v4); bad {
			return rg.what + " and carries " + v4.String() + ": " + what, true
		}
		return "", false
	}
	return "", false
}

// matchSuffixMap returns the longest key of set that equals host or is a
// parent domain of it, on label boundaries ("evilcorp.com" is not under
// "corp.com"). It does not allocate.
func matchSuffixMap[V any](set map[string]V, host string) (string, bool) {
	if len(set) == 0 {
		return "", false
	}
	for h := host; ; {
		if _, ok := set[h]; ok {
			return h, true
		}
		i := strings.IndexByte(h, '.')
		if i < 0 {
			return "", false
		}
		h = h[i+1:]
	}
}
