package links

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCheckEveryReason(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(Config{
		AllowDomains:    []string{"trusted.example"},
		InternalDomains: []string{"corp.example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Keep in sync with the Reason constants: every reason appears here.
	tests := []struct {
		url    string
		reason Reason
	}{
		{"https://public.example/", ReasonNone},
		{"http://8.8.8.8/", ReasonNone},
		{"https://notslack.com/", ReasonNone},
		{"https://evilcorp.example.com/", ReasonNone},
		{"http://exa mple.com/", ReasonMalformed},
		{"ftp://public.example/", ReasonUnsupportedScheme},
		{"http://127.0.0.1/", ReasonPrivateAddress},
		{"http://2130706433/", ReasonPrivateAddress},
		{"http://0x7f.0.0.1/", ReasonPrivateAddress},
		{"http://[::1]/", ReasonPrivateAddress},
		{"http://[fc00::1]/", ReasonPrivateAddress},
		{"http://[::ffff:10.0.0.1]/", ReasonPrivateAddress},
		{"http://localhost/", ReasonInternalName},
		{"http://printer.home.arpa/", ReasonInternalName},
		{"http://nas/", ReasonSingleLabel},
		{"http://corp.example.com/", ReasonInternalDomain},
		{"http://wiki.corp.example.com/", ReasonInternalDomain},
		{"https://slack.com/", ReasonAllowlisted},
		{"https://a.slack-edge.com/x.js", ReasonAllowlisted},
		{"https://slack-files.com/T1-F1-abc", ReasonAllowlisted},
		{"https://www.trusted.example/", ReasonAllowlisted},
	}
	seen := map[Reason]bool{}
	for _, tc := range tests {
		seen[tc.reason] = true
		reason, ok := p.Check(tc.url)
		if reason != tc.reason || ok != (tc.reason == ReasonNone) {
			t.Errorf("Check(%q) = %q, %v; want %q", tc.url, reason, ok, tc.reason)
		}
	}
	for _, r := range []Reason{ReasonNone, ReasonMalformed, ReasonUnsupportedScheme, ReasonPrivateAddress,
		ReasonInternalName, ReasonSingleLabel, ReasonInternalDomain, ReasonAllowlisted} {
		if !seen[r] {
			t.Errorf("reason %q not covered", r)
		}
		if r.Text() == "" || r.Text() == string(r) {
			t.Errorf("reason %q has no text", r)
		}
	}
}

func TestPrivateRangeDetails(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, detail string }{
		{"http://10.9.8.7/", "10.0.0.0/8 is a private network (RFC 1918)"},
		{"http://100.127.255.255/", "100.64.0.0/10 is shared carrier-grade NAT space (RFC 6598)"},
		{"http://169.254.169.254/", "169.254.0.0/16 is link-local (RFC 3927)"},
		{"http://0.1.2.3/", `0.0.0.0/8 is "this network" (RFC 791, RFC 6890)`},
		{"http://255.255.255.255/", "255.255.255.255/32 is the limited broadcast address (RFC 919 §7)"},
		{"http://[fe80::1]/", "fe80::/10 is link-local (RFC 4291 §2.5.6)"},
		{"http://[fd12:3456::1]/", "fc00::/7 is a unique local network (RFC 4193)"},
		{"http://[::]/", "::/128 is the unspecified address (RFC 4291 §2.5.2)"},
		{"http://[::ffff:192.168.0.1]/", "IPv4-mapped 192.168.0.1: 192.168.0.0/16 is a private network (RFC 1918)"},
		{"http://[64:ff9b::7f00:1]/", "64:ff9b::/96 is the NAT64 prefix (RFC 6052) and carries 127.0.0.1: 127.0.0.0/8 is loopback (RFC 1122 §3.2.1.3)"},
		{"http://localhost./", ".localhost is reserved for loopback (RFC 6761 §6.3)"},
		{"http://x.internal/", ".internal is reserved for private networks (ICANN, 2024)"},
	}
	for _, tc := range tests {
		res := (*Policy)(nil).Extract(mustMsg(t, `{"type":"message","user":"U1","ts":"1.2","text":"<`+tc.url+`>"}`))
		if len(res.Skipped) != 1 || res.Skipped[0].Detail != tc.detail {
			t.Errorf("%s: skipped %+v, want detail %q", tc.url, res.Skipped, tc.detail)
		}
	}
	// Public addresses next to the ranges stay public.
	for _, u := range []string{"http://100.128.0.1/", "http://172.32.0.1/", "http://11.0.0.1/", "http://[2002:808:808::1]/", "http://[::8.8.8.8]/", "http://[64:ff9b::808:808]/"} {
		if reason, ok := (*Policy)(nil).Check(u); !ok {
			t.Errorf("Check(%q) = %q, want public", u, reason)
		}
	}
}

func TestNewPolicyValidation(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(Config{
		AllowDomains:    []string{" *.Trusted.EXAMPLE. ", ".other.example", "trusted.example", "BÜCHER.example"},
		InternalDomains: []string{"corp", "Corp.Example.com"},
		MaxLinks:        5,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Config()
	if want := []string{"trusted.example", "other.example", "xn--bcher-kva.example"}; !slices.Equal(cfg.AllowDomains, want) {
		t.Errorf("AllowDomains = %q, want %q", cfg.AllowDomains, want)
	}
	if want := []string{"corp", "corp.example.com"}; !slices.Equal(cfg.InternalDomains, want) {
		t.Errorf("InternalDomains = %q, want %q", cfg.InternalDomains, want)
	}
	if cfg.MaxLinks != 5 || p.MaxLinks() != 5 {
		t.Errorf("MaxLinks = %d/%d, want 5", cfg.MaxLinks, p.MaxLinks())
	}
	cfg.AllowDomains[0] = "mutated.example"
	if p.Config().AllowDomains[0] != "trusted.example" {
		t.Error("Config() shares its slices with the policy")
	}

	_, err = NewPolicy(Config{
		AllowDomains:    []string{"https://x.example/", "com", "co.uk", "github.io", "", "10.0.0.1", "ok.example", "a..b"},
		InternalDomains: []string{"co.uk", "example.com:8080"},
		MaxLinks:        -1,
	})
	if err == nil {
		t.Fatal("NewPolicy accepted invalid config")
	}
	for _, want := range []string{
		`links: MaxLinks -1: must be zero (default 50) or positive`,
		`links: allow domain 1 ("https://x.example/"): must be a bare domain name`,
		`links: allow domain 2 ("com"): is a public suffix; allowlisting it would allow every site under it`,
		`links: allow domain 3 ("co.uk"): is a public suffix`,
		`links: allow domain 4 ("github.io"): is a public suffix`,
		`links: allow domain 5 (""): empty domain`,
		`links: allow domain 6 ("10.0.0.1"): is an IP address, not a domain name`,
		`links: allow domain 8 ("a..b"): empty label in host`,
		`links: internal domain 1 ("co.uk"): is a public suffix, not an organisation's domain`,
		`links: internal domain 2 ("example.com:8080"): must be a bare domain name`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ok.example") {
		t.Errorf("valid entry reported: %v", err)
	}
}

func TestNoDefaultAllow(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(Config{NoDefaultAllow: true})
	if err != nil {
		t.Fatal(err)
	}
	if reason, ok := p.Check("https://slack-files.com/T1-F1-x"); !ok {
		t.Errorf("NoDefaultAllow: Check = %q, want scanned", reason)
	}
	if reason, _ := (*Policy)(nil).Check("https://slack-files.com/T1-F1-x"); reason != ReasonAllowlisted {
		t.Errorf("default: Check = %q, want allowlisted", reason)
	}
	d := DefaultAllowDomains()
	d[0] = "changed"
	if DefaultAllowDomains()[0] == "changed" {
		t.Error("DefaultAllowDomains returns the package's slice")
	}
	for _, dom := range DefaultAllowDomains() {
		if n, err := NormalizeDomain(dom); err != nil || n != dom {
			t.Errorf("default domain %q is not normal: %q, %v", dom, n, err)
		}
	}
}

// TestAllowFuncRuntimeSwap shows the runtime allowlist pattern: the caller
// keeps a snapshot in an atomic.Pointer and AllowFunc reads it, under -race.
func TestAllowFuncRuntimeSwap(t *testing.T) {
	t.Parallel()
	var allowed atomic.Pointer[[]string]
	allowed.Store(&[]string{})
	p, err := NewPolicy(Config{AllowFunc: func(host string) bool {
		for _, d := range *allowed.Load() {
			if MatchDomain(host, d) {
				return true
			}
		}
		return false
	}})
	if err != nil {
		t.Fatal(err)
	}
	msg := mustMsg(t, `{"type":"message","user":"U1","ts":"1.2","text":"<https://www.runtime.example/> <https://other.example/>"}`)

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				res := p.Extract(msg)
				if n := len(res.Targets) + len(res.Skipped); n != 2 {
					t.Errorf("got %d links, want 2", n)
					return
				}
			}
		})
	}
	d, err := NormalizeDomain("Runtime.Example")
	if err != nil {
		t.Fatal(err)
	}
	allowed.Store(&[]string{d})
	wg.Wait()

	res := p.Extract(msg)
	targets, skipped := summary(res)
	if want := []string{"https://other.example/"}; !slices.Equal(targets, want) {
		t.Errorf("targets = %q, want %q", targets, want)
	}
	if want := []string{"allowlisted https://www.runtime.example/"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
	if res.Skipped[0].Detail != "allowlisted at run time" {
		t.Errorf("detail = %q", res.Skipped[0].Detail)
	}
	// AllowFunc never overrides the privacy rules.
	if reason, _ := p.Check("http://runtime/"); reason != ReasonSingleLabel {
		t.Errorf("Check(single label) = %q", reason)
	}
}

func TestMatchDomain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, domain string
		want         bool
	}{
		{"example.com", "example.com", true},
		{"a.b.example.com", "example.com", true},
		{"badexample.com", "example.com", false},
		{"example.com", "a.example.com", false},
		{"example.com.evil", "example.com", false},
		{"example.com", "", false},
	}
	for _, tc := range tests {
		if got := MatchDomain(tc.host, tc.domain); got != tc.want {
			t.Errorf("MatchDomain(%q, %q) = %v", tc.host, tc.domain, got)
		}
	}
}
