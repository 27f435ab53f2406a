package links

import (
	"net/netip"
	"strings"
	"testing"
)

// TestSpecialPurposeAddresses checks every entry of the IPv4 and IPv6
// special-purpose tables with an address inside it and, where meaningful,
// one just outside it, and the IPv4 addresses carried by IPv4-mapped,
// IPv4-compatible, NAT64, 6to4 and Teredo addresses.
func TestSpecialPurposeAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		blocked bool
		detail  string // a part of the detail when blocked
	}{
		// IPv4 registry, in registry order.
		{"0.0.0.0", true, "0.0.0.0/8"},
		{"0.255.255.255", true, "0.0.0.0/8"},
		{"1.0.0.0", false, ""},
		{"10.0.0.1", true, "10.0.0.0/8"},
		{"9.255.255.255", false, ""},
		{"11.0.0.0", false, ""},
		{"100.64.0.1", true, "100.64.0.0/10"},
		{"100.127.255.255", true, "100.64.0.0/10"},
		{"100.63.255.255", false, ""},
		{"100.128.0.0", false, ""},
		{"127.0.0.1", true, "127.0.0.0/8"},
		{"127.255.255.254", true, "127.0.0.0/8"},
		{"128.0.0.0", false, ""},
		{"126.255.255.255", false, ""},
		{"169.254.169.254", true, "169.254.0.0/16"},
		{"169.255.0.0", false, ""},
		{"169.253.255.255", false, ""},
		{"172.16.0.1", true, "172.16.0.0/12"},
		{"172.31.255.255", true, "172.16.0.0/12"},
		{"172.15.255.255", false, ""},
		{"172.32.0.0", false, ""},
		{"192.0.0.1", true, "192.0.0.0/29"},
		{"192.0.0.7", true, "192.0.0.0/29"},
		{"192.0.0.8", true, "192.0.0.8/32"},
		{"192.0.0.9", false, ""},  // PCP anycast, globally reachable
		{"192.0.0.10", false, ""}, // TURN anycast, globally reachable
		{"192.0.0.11", true, "192.0.0.0/24"},
		{"192.0.0.170", true, "NAT64/DNS64"},
		{"192.0.0.171", true, "NAT64/DNS64"},
		{"192.0.0.172", true, "192.0.0.0/24"},
		{"192.0.0.255", true, "192.0.0.0/24"},
		{"191.255.255.255", false, ""},
		{"192.0.1.0", false, ""},
		{"192.0.2.1", true, "192.0.2.0/24"},
		{"192.0.3.0", false, ""},
		{"192.31.196.1", false, ""}, // AS112-v4, globally reachable
		{"192.52.193.1", false, ""}, // AMT, globally reachable
		{"192.88.99.1", true, "192.88.99.0/24"},
		{"192.88.99.2", true, "192.88.99.0/24"}, // 6a44 relay, deprecated with the block
		{"192.88.98.255", false, ""},
		{"192.88.100.0", false, ""},
		{"192.168.1.1", true, "192.168.0.0/16"},
		{"192.167.255.255", false, ""},
		{"192.169.0.0", false, ""},
		{"192.175.48.1", false, ""}, // Direct Delegation AS112, globally reachable
		{"198.18.0.1", true, "198.18.0.0/15"},
		{"198.19.255.255", true, "198.18.0.0/15"},
		{"198.17.255.255", false, ""},
		{"198.20.0.0", false, ""},
		{"198.51.100.7", true, "198.51.100.0/24"},
		{"198.51.101.0", false, ""},
		{"203.0.113.9", true, "203.0.113.0/24"},
		{"203.0.114.0", false, ""},
		{"203.0.112.255", false, ""},
		{"224.0.0.1", true, "224.0.0.0/4"},
		{"239.255.255.255", true, "224.0.0.0/4"},
		{"223.255.255.255", false, ""},
		{"240.0.0.1", true, "240.0.0.0/4"},
		{"255.255.255.254", true, "240.0.0.0/4"},
		{"255.255.255.255", true, "limited broadcast"},
		{"8.8.8.8", false, ""},

		// IPv6 registry.
		{"::1", true, "loopback"},
		{"::", true, "unspecified"},
		{"::2", true, "IPv4-compatible"}, // carries 0.0.0.2
		{"::8.8.8.8", false, ""},         // IPv4-compatible, public IPv4
		{"::127.0.0.1", true, "carries 127.0.0.1"},
		{"::ffff:127.0.0.1", true, "IPv4-mapped 127.0.0.1"},
		{"::ffff:7f00:1", true, "IPv4-mapped 127.0.0.1"},
		{"::ffff:8.8.8.8", false, ""},
		{"::1:0:0:1", false, ""}, // just past ::/96 and ::ffff:0:0/96
		{"64:ff9b::a00:1", true, "NAT64 prefix (RFC 6052) and carries 10.0.0.1"},
		{"64:ff9b::c0a8:101", true, "carries 192.168.1.1"},
		{"64:ff9b::808:808", false, ""}, // NAT64 of 8.8.8.8: public
		{"64:ff9b::1:808:808", false, ""},
		{"64:ff9b:1::1", true, "64:ff9b:1::/48"},
		{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", true, "64:ff9b:1::/48"},
		{"64:ff9b:2::", false, ""},
		{"100::1", true, "100::/64"},
		{"100::ffff:ffff:ffff:ffff", true, "100::/64"},
		{"100:0:0:1::1", true, "100:0:0:1::/64"},
		{"100:0:0:2::", false, ""},
		{"ff::ffff", false, ""},
		// Teredo: server 65.54.227.120, client 10.0.0.1 (bit-inverted f5ff:fffe).
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", true, "Teredo (RFC 4380) and carries 10.0.0.1"},
		// Teredo with client 127.0.0.1 (80ff:fffe).
		{"2001:0:4136:e378:0:0:80ff:fffe", true, "carries 127.0.0.1"},
		// Teredo with client 8.8.8.8 (f7f7:f7f7): public.
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", false, ""},
		{"2001:1::1", false, ""}, // PCP anycast
		{"2001:1::2", false, ""}, // TURN anycast
		{"2001:1::3", false, ""}, // DNS-SD SRP anycast
		{"2001:1::4", true, "2001::/23"},
		{"2001:2::1", true, "2001:2::/48"},
		{"2001:2:0:ffff::1", true, "2001:2::/48"},
		{"2001:2:1::", true, "2001::/23"},
		{"2001:3::1", false, ""},     // AMT
		{"2001:4:112::1", false, ""}, // AS112-v6
		{"2001:4:113::", true, "2001::/23"},
		{"2001:10::1", true, "ORCHID"},
		{"2001:1f:ffff::", true, "ORCHID"},
		{"2001:20::1", false, ""}, // ORCHIDv2
		{"2001:30::1", false, ""}, // DRIP DETs
		{"2001:40::", true, "2001::/23"},
		{"2001:1ff:ffff::", true, "2001::/23"},
		{"2001:200::1", false, ""}, // just past 2001::/23
		{"2001:db8::1", true, "2001:db8::/32"},
		{"2001:db9::", false, ""},
		{"2001:db7:ffff::", false, ""},
		{"2002:c0a8:101::1", true, "6to4 (RFC 3056) and carries 192.168.1.1"},
		{"2002:7f00:1::", true, "carries 127.0.0.1"},
		{"2002:808:808::1", false, ""},
		{"2003::1", false, ""},
		{"2620:4f:8000::1", false, ""}, // Direct Delegation AS112
		{"3fff::1", true, "3fff::/20"},
		{"3fff:fff:ffff::", true, "3fff::/20"},
		{"3fff:1000::", false, ""},
		{"3ffe:ffff::", false, ""},
		{"5f00::1", true, "5f00::/16"},
		{"5f01::", false, ""},
		{"5eff:ffff::", false, ""},
		{"fc00::1", true, "fc00::/7"},
		{"fdff:ffff::1", true, "fc00::/7"},
		{"fbff:ffff::", false, ""},
		{"fe80::1", true, "fe80::/10"},
		{"febf:ffff::1", true, "fe80::/10"},
		{"fe7f:ffff::", false, ""},
		{"fec0::1", true, "fec0::/10"},
		{"ff02::1", true, "ff00::/8"},
		{"2606:4700::1111", false, ""},
	}
	for _, tc := range tests {
		a := netip.MustParseAddr(tc.addr)
		what, bad := nonPublicAddr(a)
		if bad != tc.blocked {
			t.Errorf("nonPublicAddr(%s) = %q, %v; want blocked %v", tc.addr, what, bad, tc.blocked)
			continue
		}
		if bad && !strings.Contains(what, tc.detail) {
			t.Errorf("nonPublicAddr(%s) detail %q, want it to contain %q", tc.addr, what, tc.detail)
		}
	}
}

// TestSpecialPurposeTablesCovered checks that every table entry has a test
// address inside it above, so that an entry added later gets a test.
func TestSpecialPurposeTablesCovered(t *testing.T) {
	t.Parallel()
	inside := []string{
		"0.0.0.0", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.9",
		"192.0.0.10", "192.0.0.1", "192.0.0.8", "192.0.0.170", "192.0.0.11", "192.0.2.1", "192.88.99.1",
		"192.168.1.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "255.255.255.255", "240.0.0.1",
		"::1", "::", "::2", "64:ff9b::a00:1", "64:ff9b:1::1", "100::1", "100:0:0:1::1",
		"2001:0:4136:e378:8000:63bf:f5ff:fffe", "2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1",
		"2001:4:112::1", "2001:20::1", "2001:30::1", "2001:2::1", "2001:10::1", "2001:1::4", "2001:db8::1",
		"2002:c0a8:101::1", "3fff::1", "5f00::1", "fc00::1", "fe80::1", "fec0::1", "ff02::1",
	}
	for _, table := range [][]addrRange{v4Ranges, v6Ranges} {
		for _, rg := range table {
			found := false
			for _, s := range inside {
				if rg.prefix.Contains(netip.MustParseAddr(s)) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("no test address inside %s", rg.prefix)
			}
		}
	}
}
