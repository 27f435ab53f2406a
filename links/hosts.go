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

// addrRange is a special-purpose address block. The first block of a table
// that contains an address decides: allow blocks are globally reachable
// special-purpose addresses inside a larger non-public block (they are
// listed before it); a block with embed >= 0 carries an IPv4 address at
// byte offset embed (bit-inverted when xor is set), which is judged
// instead; any other block is not public.
type addrRange struct {
	prefix netip.Prefix
	what   string
	embed  int
	xor    bool
	allow  bool
}

func r(prefix, what string) addrRange {
	return addrRange{prefix: netip.MustParsePrefix(prefix), what: prefix + " is " + what, embed: -1}
}

func embeds(prefix, what string, at int) addrRange {
	return addrRange{prefix: netip.MustParsePrefix(prefix), what: prefix + " is " + what, embed: at}
}

// public marks a globally reachable special-purpose block that sits inside
// a non-public one.
func public(prefix string) addrRange {
	return addrRange{prefix: netip.MustParsePrefix(prefix), embed: -1, allow: true}
}

// v4Ranges are the IPv4 blocks that are not globally reachable unicast:
// every entry of the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry/, RFC 6890;
// newest copy consulted: registry last updated 2020-09-04) whose "Globally
// Reachable" is False or N/A (deprecated), plus multicast 224.0.0.0/4 (IPv4
// Multicast Address Space registry, RFC 5771), which is not unicast.
//
// Registry entries that are globally reachable and so are scanned:
// 192.0.0.9/32 (Port Control Protocol anycast, RFC 7723), 192.0.0.10/32
// (TURN anycast, RFC 8155), 192.31.196.0/24 (AS112-v4, RFC 7535),
// 192.52.193.0/24 (AMT, RFC 7450), 192.175.48.0/24 (Direct Delegation
// AS112 Service, RFC 7534).
var v4Ranges = []addrRange{
	r("0.0.0.0/8", `"this network" (RFC 791, RFC 6890)`), // includes 0.0.0.0/32, "this host on this network"
	r("10.0.0.0/8", "a private network (RFC 1918)"),
	r("100.64.0.0/10", "shared carrier-grade NAT space (RFC 6598)"),
	r("127.0.0.0/8", "loopback (RFC 1122 §3.2.1.3)"),
	r("169.254.0.0/16", "link-local (RFC 3927)"),
	r("172.16.0.0/12", "a private network (RFC 1918)"),
	public("192.0.0.9/32"),  // Port Control Protocol anycast (RFC 7723)
	public("192.0.0.10/32"), // TURN anycast (RFC 8155)
	r("192.0.0.0/29", "the IPv4 service continuity prefix (RFC 7335)"),
	r("192.0.0.8/32", "the IPv4 dummy address (RFC 7600)"),
	r("192.0.0.170/31", "reserved for NAT64/DNS64 discovery (RFC 8880, RFC 7050)"), // .170 and .171
	r("192.0.0.0/24", "reserved for IETF protocols (RFC 6890)"),
	r("192.0.2.0/24", "reserved for documentation (RFC 5737)"),
	r("192.88.99.0/24", "the deprecated 6to4 relay anycast block (RFC 7526)"), // includes 192.88.99.2/32, 6a44 relay (RFC 6751)
	r("192.168.0.0/16", "a private network (RFC 1918)"),
	r("198.18.0.0/15", "reserved for benchmarking (RFC 2544)"),
	r("198.51.100.0/24", "reserved for documentation (RFC 5737)"),
	r("203.0.113.0/24", "reserved for documentation (RFC 5737)"),
	r("224.0.0.0/4", "multicast (RFC 5771)"),
	r("255.255.255.255/32", "the limited broadcast address (RFC 919 §7)"),
	r("240.0.0.0/4", "reserved (RFC 1112 §4)"),
}

// v6Ranges are the IPv6 blocks that are not globally reachable unicast:
// every entry of the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry/; registry
// last updated 2024-10-22, plus 100:0:0:1::/64 from RFC 9780, 2025) whose
// "Globally Reachable" is False or N/A, plus multicast ff00::/8 (RFC 4291
// §2.7), deprecated site-local fec0::/10 (RFC 3879) and the deprecated
// IPv4-compatible ::/96 (RFC 4291 §2.5.5.1). Blocks that carry an IPv4
// address are judged by it: IPv4-mapped ::ffff:0:0/96 (handled before the
// table), IPv4-compatible ::/96, NAT64 64:ff9b::/96 (RFC 6052: the IPv4
// address is the last 32 bits), 6to4 2002::/16 (RFC 3056: bits 16–47) and
// Teredo 2001::/32 (RFC 4380: the client's IPv4 address is the last 32
// bits, bit-inverted).
//
// Registry entries that are globally reachable and so are scanned:
// 2001:1::1/128 (PCP anycast, RFC 7723), 2001:1::2/128 (TURN anycast, RFC
// 8155), 2001:1::3/128 (DNS-SD SRP anycast, RFC 9665), 2001:3::/32 (AMT,
// RFC 7450), 2001:4:112::/48 (AS112-v6, RFC 7535), 2001:20::/28 (ORCHIDv2,
// RFC 7343), 2001:30::/28 (DRIP entity tags, RFC 9374), 2620:4f:8000::/48
// (Direct Delegation AS112 Service, RFC 7534). Order matters: ::1 and ::
// come before ::/96, and the public entries of 2001::/23 before it.
var v6Ranges = []addrRange{
	r("::1/128", "loopback (RFC 4291 §2.5.3)"),
	r("::/128", "the unspecified address (RFC 4291 §2.5.2)"),
	embeds("::/96", "IPv4-compatible (RFC 4291 §2.5.5.1)", 12),
	embeds("64:ff9b::/96", "the NAT64 prefix (RFC 6052)", 12),
	r("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
	r("100::/64", "discard-only (RFC 6666)"),
	r("100:0:0:1::/64", "the dummy IPv6 prefix (RFC 9780)"),
	{prefix: netip.MustParsePrefix("2001::/32"), what: "2001::/32 is Teredo (RFC 4380)", embed: 12, xor: true},
	public("2001:1::1/128"),   // Port Control Protocol anycast (RFC 7723)
	public("2001:1::2/128"),   // TURN anycast (RFC 8155)
	public("2001:1::3/128"),   // DNS-SD Service Registration Protocol anycast (RFC 9665)
	public("2001:3::/32"),     // AMT (RFC 7450)
	public("2001:4:112::/48"), // AS112-v6 (RFC 7535)
	public("2001:20::/28"),    // ORCHIDv2 (RFC 7343)
	public("2001:30::/28"),    // Drone Remote ID Protocol Entity Tags (RFC 9374)
	r("2001:2::/48", "reserved for benchmarking (RFC 5180)"),
	r("2001:10::/28", "deprecated ORCHID (RFC 4843)"),
	r("2001::/23", "reserved for IETF protocols (RFC 2928)"),
	r("2001:db8::/32", "reserved for documentation (RFC 3849)"),
	embeds("2002::/16", "6to4 (RFC 3056)", 2),
	r("3fff::/20", "reserved for documentation (RFC 9637)"),
	r("5f00::/16", "reserved for SRv6 segment identifiers (RFC 9602)"),
	r("fc00::/7", "a unique local network (RFC 4193)"),
	r("fe80::/10", "link-local (RFC 4291 §2.5.6)"),
	r("fec0::/10", "site-local (deprecated, RFC 3879)"),
	r("ff00::/8", "multicast (RFC 4291 §2.7)"),
}

// nonPublicAddr reports whether a is private, loopback, link-local or
// otherwise not a public unicast address, with a detail text. IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible, NAT64, 6to4 and Teredo addresses are
// judged by the IPv4 address they carry.
func nonPublicAddr(a netip.Addr) (string, bool) {
	a = a.WithZone("")
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
		if rg.allow {
			return "", false
		}
		if rg.embed < 0 {
			return rg.what, true
		}
		b := a.As16()
		v4b := [4]byte(b[rg.embed : rg.embed+4])
		if rg.xor {
			for i := range v4b {
				v4b[i] ^= 0xff
			}
		}
		v4 := netip.AddrFrom4(v4b)
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
