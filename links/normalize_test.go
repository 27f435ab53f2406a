package links

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, want string
	}{
		// Case, default ports, fragment, empty path, trailing dot.
		{"HTTPS://Example.COM", "https://example.com/"},
		{"https://example.com:443/a#frag", "https://example.com/a"},
		{"http://example.com:80", "http://example.com/"},
		{"http://example.com:443/", "http://example.com:443/"},
		{"https://example.com:8443", "https://example.com:8443/"},
		{"https://example.com:08443/", "https://example.com:8443/"},
		{"https://example.com:/x", "https://example.com/x"},
		{"https://example.com./x", "https://example.com/x"},
		{"https://example.com/Path/../A?Q=Keep&b=%41#x", "https://example.com/A?Q=Keep&b=%41"},
		{"https://example.com?", "https://example.com/?"},
		{"https://example.com?q#f", "https://example.com/?q"},
		{"https://example.com#f?x", "https://example.com/"},
		{"https://sub_domain.example.com/", "https://sub_domain.example.com/"},
		{"https://r3---sn-abc.googlevideo.com/x", "https://r3---sn-abc.googlevideo.com/x"},
		// Whitespace and controls, as the WHATWG parser treats them.
		{"  https://example.com/a \n", "https://example.com/a"},
		{"https://exa\tmple.com/a\nb", "https://example.com/ab"},
		// Userinfo is dropped; the host after the last @ counts.
		{"http://good.example@evil.example/", "http://evil.example/"},
		{"http://u:p@a@evil.example:8080/x", "http://evil.example:8080/x"},
		// Backslashes and extra slashes, as browsers read http(s).
		{`http://evil.example\@good.example/`, "http://evil.example/@good.example/"},
		{`https:\\evil.example\a\b`, "https://evil.example/a/b"},
		{"https:///evil.example/", "https://evil.example/"},
		{"https:evil.example", "https://evil.example/"},
		// Host percent-decoding; path and query escaping.
		{"http://%65vil.example/", "http://evil.example/"},
		{"http://EXA%4dPLE.com/", "http://example.com/"},
		{"https://example.com/a b\"<>`", "https://example.com/a%20b%22%3C%3E%60"},
		{"https://example.com/100%/x?p=50%&q=%zz", "https://example.com/100%/x?p=50%&q=%zz"},
		{"https://example.com/ü?q=ü", "https://example.com/%C3%BC?q=%C3%BC"},
		{"https://example.com/?a=1&b='x'|{y}", "https://example.com/?a=1&b=%27x%27|{y}"},
		// WHATWG percent-encode sets: path (" # < > ? ` { } and controls),
		// special query (" # < > ' and controls); ^ | [ ] stay.
		{"https://example.com/a`{b}|^[c]?q=`{}|^\"<>", "https://example.com/a%60%7Bb%7D|^[c]?q=`{}|^%22%3C%3E"},
		{"https://example.com/%2F%zz%4?%", "https://example.com/%2F%zz%4?%"},
		{"https://example.com/a\x7f?b\x7f", "https://example.com/a%7F?b%7F"},
		// Dot segments, plain and percent-encoded, as the path state resolves them.
		{"https://example.com/a/b/../c", "https://example.com/a/c"},
		{"https://example.com/a/./b/.", "https://example.com/a/b/"},
		{"https://example.com/a/b/..", "https://example.com/a/"},
		{"https://example.com/../../x", "https://example.com/x"},
		{"https://example.com/a/%2e%2E/b/.%2e/%2E./c/%2e", "https://example.com/c/"},
		{"https://example.com/a/%2e.x/..b/...", "https://example.com/a/%2e.x/..b/..."},
		{`https://example.com/a\b\..\c`, "https://example.com/a/c"},
		{"https://example.com//a//../b", "https://example.com//a/b"},
		{"https://example.com/a/..?x=/../", "https://example.com/?x=/../"},
		{"https://example.com/a/%2e%2", "https://example.com/a/%2e%2"},
		// IPv4 in every form a browser accepts.
		{"http://2130706433/", "http://127.0.0.1/"},
		{"http://0x7f.0.0.1/", "http://127.0.0.1/"},
		{"http://0X7F.1/", "http://127.0.0.1/"},
		{"http://0177.0.0.1/", "http://127.0.0.1/"},
		{"http://127.1/", "http://127.0.0.1/"},
		{"http://127.0.1/", "http://127.0.0.1/"},
		{"http://10.0.0.1./", "http://10.0.0.1/"},
		{"http://0/", "http://0.0.0.0/"},
		{"http://0x/", "http://0.0.0.0/"},
		{"http://4294967295/", "http://255.255.255.255/"},
		{"http://%31%32%37.0.0.1/", "http://127.0.0.1/"},
		// IPv6 literals in canonical form.
		{"http://[::1]/", "http://[::1]/"},
		{"http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"},
		{"http://[2001:DB8::0001]/", "http://[2001:db8::1]/"},
		{"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"},
		{"http://[::FFFF:7F00:1]/", "http://[::ffff:7f00:1]/"},
		{"http://[::127.0.0.1]/", "http://[::7f00:1]/"},
		{"http://[0:0:0:0:0:0:13.1.68.3]/", "http://[::d01:4403]/"},
		{"http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/"},
		{"http://[1:0:0:2:0:0:3:4]/", "http://[1::2:0:0:3:4]/"},
		{"http://[0:1:0:1:0:1:0:1]/", "http://[0:1:0:1:0:1:0:1]/"},
		{"http://[1:0::]/", "http://[1::]/"},
		{"http://[0:0:0:0:0:0:0:0]/", "http://[::]/"},
		{"http://[2001:0DB8:0000:0000:0000:0000:0000:0001]:0443/", "http://[2001:db8::1]:443/"},
		// Hosts that end in something that is not a number are domains.
		{"http:0.0.0XX", "http://0.0.0xx/"},
		{"http://0x7f.0.0.0x7g/", "http://0x7f.0.0.0x7g/"},
		// Internationalised names.
		{"https://BÜCHER.example/", "https://xn--bcher-kva.example/"},
		{"https://пример.рф/", "https://xn--e1afmkfd.xn--p1ai/"},
		{"https://例え.テスト/", "https://xn--r8jz45g.xn--zckzah/"},
		{"https://münchen。example/", "https://xn--mnchen-3ya.example/"},
		{"https://ｅｘａｍｐｌｅ．ｃｏｍ/", "https://example.com/"},
		{"http://１２７．０．０．１/", "http://127.0.0.1/"},
		{"https://fußball.example/", "https://xn--fuball-cta.example/"},
		{"https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"},
		{"https://コーヒー.example/", "https://xn--tck2c4fb.example/"},
		{"https://%C3%BC.example/", "https://xn--tda.example/"},
	}
	for _, tc := range tests {
		got, err := Normalize(tc.raw)
		if err != nil {
			t.Errorf("Normalize(%q): %v", tc.raw, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.raw, got, tc.want)
		}
		if again, err := Normalize(got); err != nil || again != got {
			t.Errorf("Normalize(%q) = %q, %v; not stable", got, again, err)
		}
		if _, err := url.Parse(escapeStrayPercent(got)); err != nil {
			t.Errorf("net/url cannot parse %q: %v", got, err)
		}
	}
}

func TestNormalizeReturnsInputWhenNormal(t *testing.T) {
	// Not parallel: AllocsPerRun refuses to run alongside parallel tests.
	raw := "https://example.com/a?b=c"
	allocs := testing.AllocsPerRun(100, func() {
		if got, _ := Normalize(raw); got != raw {
			t.Fatalf("Normalize(%q) = %q", raw, got)
		}
	})
	if allocs != 0 && !raceEnabled {
		t.Errorf("Normalize of a normal URL allocates %v times, want 0", allocs)
	}
}

func TestNormalizeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		kind    error
		wantWhy string
	}{
		{"", ErrMalformed, "no scheme"},
		{"example.com/x", ErrMalformed, "no scheme"},
		{"//example.com/", ErrMalformed, "no scheme"},
		{"1http://example.com/", ErrMalformed, "no scheme"},
		{"http://", ErrMalformed, "no host"},
		{"http:///", ErrMalformed, "no host"},
		{"http://user@/x", ErrMalformed, "no host"},
		{"http://:80/", ErrMalformed, "no host"},
		{"http://./", ErrMalformed, "no host"},
		{"http://example.com:99999/", ErrMalformed, "invalid port"},
		{"http://example.com:8o/", ErrMalformed, "invalid port"},
		{"http://example.com:-1/", ErrMalformed, "invalid port"},
		{"http://a:b:c/", ErrMalformed, "invalid port"},
		{"http://[::1/", ErrMalformed, "invalid IPv6 address"},
		{"http://[::1]x/", ErrMalformed, "invalid IPv6 address"},
		{"http://[fe80::1%25eth0]/", ErrMalformed, "invalid IPv6 address"},
		{"http://[127.0.0.1]/", ErrMalformed, "invalid IPv6 address"},
		{"http://[zz]/", ErrMalformed, "invalid IPv6 address"},
		{"http://[::1:80/", ErrMalformed, "invalid IPv6 address"},
		{"http://[::1]:3:4/", ErrMalformed, "invalid port"},
		{"http://[::1.2.3.4x]/", ErrMalformed, "invalid IPv6 address"},
		{"http://256.1.1.1/", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://1.2.3.4.5/", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://4294967296/", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://08.1.1.1/", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://example.123/", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://1.2.3.4../", ErrMalformed, "host looks like an IPv4 address but is not a valid one"},
		{"http://%zz.example/", ErrMalformed, "invalid percent-escape in host"},
		{"http://%ff.example/", ErrMalformed, "host is not valid UTF-8"},
		{"http://exa mple.com/", ErrMalformed, "invalid character in host"},
		{"http://exa$mple.com/", ErrMalformed, "invalid character in host"},
		{"http://evil[.]example/", ErrMalformed, "invalid character in host"},
		{"http://a..b/", ErrMalformed, "empty label in host"},
		{"http://.a.b/", ErrMalformed, "empty label in host"},
		{"http://a.b../", ErrMalformed, "empty label in host"},
		{"http://" + strings.Repeat("a", 64) + ".example/", ErrMalformed, "host label longer than 63 characters"},
		{"http://" + strings.Repeat("a.", 127) + "ab/", ErrMalformed, "host longer than 253 characters"},
		{"https://a\u200db.example/", ErrMalformed, "invalid internationalised domain name"},    // ZWJ outside a joining context
		{"https://\u05d0a.example/", ErrMalformed, "invalid internationalised domain name"},     // mixed-direction label (Bidi rule)
		{"https://a.b.c.xn--pokxncvks/", ErrMalformed, "invalid internationalised domain name"}, // bad punycode
		{"https://a.XN--pokxncvks/", ErrMalformed, "invalid internationalised domain name"},
		{"http://10.0.0.xn--pokxncvks/", ErrMalformed, "invalid internationalised domain name"},
		{"ftp://example.com/", ErrUnsupportedScheme, "ftp: links are not scanned"},
		{"FILE:///etc/passwd", ErrUnsupportedScheme, "file: links are not scanned"},
		{"javascript:alert(1)", ErrUnsupportedScheme, "javascript: links are not scanned"},
		{"hxxps://evil[.]example/", ErrUnsupportedScheme, "hxxps: links are not scanned"},
		{"mailto:a@b.example", ErrUnsupportedScheme, "mailto: links are not scanned"},
		{strings.Repeat("x", 40) + "://a/", ErrUnsupportedScheme, strings.Repeat("x", 16) + "…: links are not scanned"},
	}
	for _, tc := range tests {
		got, err := Normalize(tc.raw)
		if err == nil {
			t.Errorf("Normalize(%q) = %q, want error", tc.raw, got)
			continue
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("Normalize(%q) error %v, want %v", tc.raw, err, tc.kind)
		}
		if want := "links: " + tc.kind.Error() + ": " + tc.wantWhy; err.Error() != want {
			t.Errorf("Normalize(%q) error %q, want %q", tc.raw, err, want)
		}
		if host := strings.TrimPrefix(tc.raw, "http://"); len(host) > 8 && strings.Contains(err.Error(), host) {
			t.Errorf("error %q repeats the URL", err)
		}
	}
}
