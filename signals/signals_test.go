package signals

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/publicsuffix"

	"github.com/verdictbot/verdictbot/links"
)

func mustNew(tb testing.TB, protected ...string) *Checker {
	tb.Helper()
	c, err := New(protected, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestLabel(t *testing.T) {
	t.Parallel()
	c := mustNew(t)
	tests := []struct {
		label, target string
		reason        string // "" for no signal
	}{
		// Addresses shown for another site.
		{"https://okta.com/login", "https://login-okta.evil.test/", "shows okta.com, opens evil.test"},
		{"okta.com", "https://evil.test/x", "shows okta.com, opens evil.test"},
		{"www.okta.com/x", "https://evil.test/x", "shows okta.com, opens evil.test"},
		{"HTTPS://WWW.PayPal.com", "https://evil.test/", "shows paypal.com, opens evil.test"},
		{"  (okta.com).  ", "https://evil.test/", "shows okta.com, opens evil.test"},
		{"okta.com:443/login", "https://evil.test/", "shows okta.com, opens evil.test"},
		{"sso.acme.co.uk", "https://evil.test/", "shows acme.co.uk, opens evil.test"},
		{"pаypal.com", "https://evil.test/", "shows xn--pypal-4ve.com, opens evil.test"},
		{"https://okta.com@evil.net/", "https://good.example/", "shows evil.net, opens good.example"},
		{"okta.com", "https://203.0.113.7/login", "shows okta.com, opens 203.0.113.7"},
		{"okta.com", "https://[2001:db8::1]/", "shows okta.com, opens 2001:db8::1"},
		{"github.com", "https://user.github.io/x", "shows github.com, opens user.github.io"},
		// The same site: no signal.
		{"okta.com", "https://login.okta.com/app", ""},
		{"https://www.okta.com/", "https://okta.com/", ""},
		{"docs.example.org/runbook", "https://docs.example.org/runbook", ""},
		// Not addresses.
		{"click here", "https://evil.test/", ""},
		{"Okta", "https://evil.test/", ""},
		{"the bank page", "https://evil.test/", ""},
		{"support@okta.com", "https://evil.test/", ""},
		{"file.txt", "https://evil.test/", ""},
		{"v1.2", "https://evil.test/", ""},
		{"1.2.3.4", "https://evil.test/", ""},
		{"https://10.0.0.1/", "https://evil.test/", ""},
		{"intranet.corp", "https://evil.test/", ""},
		{"https://intranet.corp/", "https://evil.test/", ""},
		{"ftp://okta.com/", "https://evil.test/", ""},
		{"", "https://evil.test/", ""},
		// File names: an ICANN suffix that is a common extension.
		{"report.zip", "https://evil.test/", ""},
		{"README.md", "https://github.com/acme/app/blob/main/README.md", ""},
		{"main.py", "https://github.com/acme/app", ""},
		{"Makefile.in", "https://github.com/acme/app", ""},
		{"application.properties", "https://github.com/acme/app", ""},
		{"Main.java", "https://github.com/acme/app", ""},
		// ... unless written as an address.
		{"https://report.zip/", "https://evil.test/", "shows report.zip, opens evil.test"},
		{"www.report.zip", "https://evil.test/", "shows report.zip, opens evil.test"},
		// A target that does not parse.
		{"okta.com", "://", ""},
	}
	for _, tc := range tests {
		t.Run(tc.label+" → "+tc.target, func(t *testing.T) {
			s, ok := c.Label(tc.label, tc.target)
			if tc.reason == "" {
				if ok {
					t.Errorf("signal %+v, want none", s)
				}
				return
			}
			if !ok || s.Reason != tc.reason || s.Kind != DeceptiveLabel || s.Rule != RuleLabel {
				t.Fatalf("got %v %+v, want reason %q", ok, s, tc.reason)
			}
			if want, _, _ := strings.Cut(strings.TrimPrefix(tc.reason, "shows "), ","); s.Protected != want {
				t.Errorf("Protected = %q, want %q", s.Protected, want)
			}
		})
	}
}

func TestLookalike(t *testing.T) {
	t.Parallel()
	c := mustNew(t, "acme-corp.com")
	tests := []struct {
		host      string
		rule      string // "" for no signal
		protected string
		reason    string
	}{
		{"okta.com.evil.test", RuleSubdomain, "okta.com", "uses the name of okta.com in another domain"},
		{"paypal.com-verify.info", RuleSubdomain, "paypal.com", "uses the name of paypal.com in another domain"},
		{"login.microsoftonline.com.x.evil.test", RuleSubdomain, "microsoftonline.com", ""},
		{"xn--pypal-4ve.com", RuleHomoglyph, "paypal.com", "looks like paypal.com (look-alike characters)"},
		{"paypa1.com", RuleHomoglyph, "paypal.com", ""},
		{"rnicrosoft.com", RuleHomoglyph, "microsoft.com", ""},
		{"tvvitter.com", RuleHomoglyph, "twitter.com", ""},
		{"WWW.G00GLE.COM", RuleHomoglyph, "google.com", ""},
		{"paypall.com", RuleTypo, "paypal.com", "looks like paypal.com (one letter added)"},
		{"paypl.com", RuleTypo, "paypal.com", "looks like paypal.com (one letter missing)"},
		{"paypla.com", RuleTypo, "paypal.com", "looks like paypal.com (two letters swapped)"},
		{"paypsl.com", RuleTypo, "paypal.com", "looks like paypal.com (one letter differs)"},
		{"acme-corp.co", RuleTLD, "acme-corp.com", "looks like acme-corp.com (different ending)"},
		{"okta.co", RuleTLD, "okta.com", ""},
		{"okta-login.com", RuleCombo, "okta.com", "uses the name of okta.com in another domain"},
		{"secure-paypal-verify.com", RuleCombo, "paypal.com", ""},
		{"acme-corp-sso.net", RuleCombo, "acme-corp.com", ""},
		{"sso.acme-corp-login.com", RuleCombo, "acme-corp.com", ""},
		// Protected, owned, and under them.
		{"okta.com", "", "", ""},
		{"acme.okta.com", "", "", ""},
		{"acme-corp.com", "", "", ""},
		{"mail.acme-corp.com", "", "", ""},
		{"googleusercontent.com", "", "", ""},
		{"lh3.googleusercontent.com", "", "", ""},
		{"paypal-community.com", "", "", ""},
		// Global brands' country sites, platform names.
		{"google.de", "", "", ""},
		{"amazon.co.uk", "", "", ""},
		{"paypal.com.au", "", "", ""},
		{"okta.github.io", "", "", ""},
		// Words, short names, unrelated keys, hyphens within a word.
		{"offices.com", "", "", ""},
		{"live-music.com", "", "", ""},
		{"ups-and-downs.com", "", "", ""},
		{"chase-bank-news.com", "", "", ""},
		{"stripes.com", "", "", ""},
		{"paypxl.com", "", "", ""},
		{"oktaa.com", "", "", ""}, // okta has 4 letters: no typo rule
		{"googleusercontent-cache.com", "", "", ""},
		// Not names.
		{"203.0.113.7", "", "", ""},
		{"2001:db8::1", "", "", ""},
		{"com", "", "", ""},
		{"", "", "", ""},
		{"evil.test", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			s, ok := c.Lookalike(tc.host)
			if tc.rule == "" {
				if ok {
					t.Errorf("signal %+v, want none", s)
				}
				return
			}
			if !ok || s.Rule != tc.rule || s.Protected != tc.protected || s.Kind != Lookalike {
				t.Fatalf("got %v %+v, want rule %s, protected %s", ok, s, tc.rule, tc.protected)
			}
			if tc.reason != "" && s.Reason != tc.reason {
				t.Errorf("Reason = %q, want %q", s.Reason, tc.reason)
			}
		})
	}
}

// TestCheck: both rules over a links.Target, one label signal per domain
// shown.
func TestCheck(t *testing.T) {
	t.Parallel()
	c := mustNew(t)
	tg := links.Target{
		URL:    "https://okta-login.evil.test/x",
		Host:   "okta-login.evil.test",
		Labels: []string{"https://okta.com/login", "okta.com", "click here", "paypal.com"},
	}
	got := c.Check(tg)
	want := []Signal{
		{Kind: DeceptiveLabel, Reason: "shows okta.com, opens evil.test", Protected: "okta.com", Rule: RuleLabel},
		{Kind: DeceptiveLabel, Reason: "shows paypal.com, opens evil.test", Protected: "paypal.com", Rule: RuleLabel},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Check = %+v\nwant %+v", got, want)
	}
	tg = links.Target{URL: "https://paypa1.com/", Host: "paypa1.com", Labels: []string{"paypal.com"}}
	got = c.Check(tg)
	if len(got) != 2 || got[0].Rule != RuleLabel || got[1].Rule != RuleHomoglyph {
		t.Errorf("Check = %+v, want a label and a homoglyph signal", got)
	}
	if got := c.Check(links.Target{URL: "https://okta.com/", Host: "okta.com", Labels: []string{"okta.com"}}); len(got) != 0 {
		t.Errorf("Check(okta.com) = %+v, want none", got)
	}
}

// TestReasonsAreDisplayable: reasons carry no URL and none of Slack's
// mrkdwn control characters, whatever the label or host.
func TestReasonsAreDisplayable(t *testing.T) {
	t.Parallel()
	c := mustNew(t)
	labels := []string{"https://okta.com/<x>|*_~`&", "okta.com/a_b", "https://user:pw@okta.com:8443/p?q=<b>#f", "ok_ta.com", "okta.com"}
	targets := []string{"https://evil.test/<x>", "https://a_b.evil.test/", "https://evil.test:8443/p?q=1", "https://[2001:db8::1]:8443/"}
	for _, l := range labels {
		for _, u := range targets {
			s, ok := c.Label(l, u)
			if ok && (strings.ContainsAny(s.Reason, "<>&|*_~`/?#@") || strings.Contains(s.Reason, "://")) {
				t.Errorf("Label(%q, %q).Reason = %q", l, u, s.Reason)
			}
		}
	}
	for _, h := range []string{"okta.com.evil.test", "okta-login.com", "paypa1.com", "okta.co", "xn--pypal-4ve.com"} {
		s, ok := c.Lookalike(h)
		if !ok || !displayable(strings.NewReplacer(" ", "", "(", "", ")", "", "'", "", ",", "").Replace(s.Reason)) {
			t.Errorf("Lookalike(%q) = %v %q", h, ok, s.Reason)
		}
	}
}

func TestNewAndAddProtected(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "com", "co.uk", "github.io", "https://acme.example/", "acme.example:443", "10.0.0.1", "a_b.example", "bad..example"} {
		if _, err := New([]string{"acme.example", bad}, Options{}); err == nil {
			t.Errorf("New(%q) accepted it", bad)
		} else if !strings.Contains(err.Error(), "protected domain 2") {
			t.Errorf("New(%q): error %q does not name the entry", bad, err)
		}
	}
	c, err := New([]string{"SSO.Acme-Corp.COM.", "*.bücher.example"}, Options{NoBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Protected("www.acme-corp.com") || !c.Protected("xn--bcher-kva.example") {
		t.Error("entries are not reduced to their registrable domain")
	}
	if c.Protected("okta.com") {
		t.Error("NoBuiltin: the built-in list is protected")
	}
	if _, ok := c.Lookalike("okta-login.com"); ok {
		t.Error("NoBuiltin: okta-login.com is flagged")
	}
	if err := c.AddProtected("okta.com", "com"); err == nil {
		t.Error("AddProtected accepted a public suffix")
	}
	if c.Protected("okta.com") {
		t.Error("AddProtected added entries of a failed call")
	}
	if err := c.AddProtected("okta.com"); err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Lookalike("okta-login.com"); !ok || s.Protected != "okta.com" {
		t.Errorf("after AddProtected: %v %+v", ok, s)
	}
	// The organisation naming an owned domain protects it from imitation.
	c = mustNew(t)
	if _, ok := c.Lookalike("googleusercontent.co"); ok {
		t.Error("an owned domain is imitated")
	}
	if err := c.AddProtected("googleusercontent.com"); err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Lookalike("googleusercontent.co"); !ok || s.Rule != RuleTLD {
		t.Errorf("after AddProtected: %v %+v", ok, s)
	}
}

// TestConcurrentAddProtected: AddProtected while checks run (run with
// -race).
func TestConcurrentAddProtected(t *testing.T) {
	t.Parallel()
	c := mustNew(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if i == 0 {
					if err := c.AddProtected(fmt.Sprintf("workspace-%d.example", j)); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				c.Check(links.Target{URL: "https://okta-login.com/", Host: "okta-login.com", Labels: []string{"okta.com"}})
				c.Lookalike(fmt.Sprintf("workspace-%d.example.evil.test", j))
			}
		}()
	}
	wg.Wait()
	if s, ok := c.Lookalike("workspace-49.example.evil.test"); !ok || s.Rule != RuleSubdomain {
		t.Errorf("after AddProtected: %v %+v", ok, s)
	}
}

// TestBuiltinList: the embedded list parses (a bad line panics at start),
// has about a hundred protected names, and every flag is one the code
// knows.
func TestBuiltinList(t *testing.T) {
	t.Parallel()
	imitable := 0
	for _, e := range builtin {
		if !e.owned {
			imitable++
		}
		if e.domain != e.label+"."+e.suffix {
			t.Errorf("%s: label %q, suffix %q", e.domain, e.label, e.suffix)
		}
	}
	if imitable < 100 {
		t.Errorf("%d protected names, want at least 100", imitable)
	}
	if !builtinWords["revolt"] {
		t.Error("the word list is not read")
	}
	for _, bad := range []string{"okta.com wrod", "co.uk", "https://okta.com/"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("mustParseList(%q) did not panic", bad)
				}
			}()
			mustParseList(bad)
		}()
	}
}

// TestSlackDomainsAreProtected: Slack's own domains, which links
// allowlists by default, are never taken for look-alikes of slack.com
// (slack-files.com is a hyphenated "slack"), and are in protected.txt.
func TestSlackDomainsAreProtected(t *testing.T) {
	t.Parallel()
	c := mustNew(t)
	for _, d := range links.DefaultAllowDomains() {
		if !c.Protected(d) {
			t.Errorf("%s: not in protected.txt", d)
		}
		if s, ok := c.Lookalike("files." + d); ok {
			t.Errorf("files.%s: %+v", d, s)
		}
	}
}

// TestSkeletonASCIIFastPath: the ASCII shortcut gives what the UTS #39
// path gives, for every label of up to two host-name characters, and for
// some longer ones.
func TestSkeletonASCIIFastPath(t *testing.T) {
	t.Parallel()
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789-_"
	slow := func(s string) string {
		// The general path, forced by a non-ASCII rune that maps to
		// nothing after NFD (a combining mark), then stripped.
		return skeleton(s + "\u0301")
	}
	check := func(s string) {
		if got, want := skeleton(s), slow(s); got != want {
			t.Errorf("skeleton(%q) = %q, want %q", s, got, want)
		}
	}
	for i := range len(chars) {
		check(chars[i : i+1])
		for j := range len(chars) {
			check(chars[i:i+1] + chars[j:j+1])
		}
	}
	for _, s := range []string{"microsoft", "paypa1", "g00gle", "twitter", "rnicrosoft", "1password", "t-mobile", "wellsfargo"} {
		check(s)
	}
}

func TestOneEdit(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b, want string }{
		{"paypall", "paypal", "one letter added"},
		{"paypl", "paypal", "one letter missing"},
		{"paypla", "paypal", "two letters swapped"},
		{"apypal", "paypal", "two letters swapped"},
		{"paypsl", "paypal", "one letter differs"}, // a, s: neighbours
		{"paypai", "paypal", "one letter differs"}, // i, l: look alike
		{"paypxl", "paypal", ""},                   // a, x: neither
		{"paypal", "paypal", ""},
		{"pyapla", "paypal", ""},
		{"paypalxx", "paypal", ""},
	}
	for _, tc := range tests {
		got, ok := oneEdit(tc.a, tc.b)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("oneEdit(%q, %q) = %q, %v; want %q", tc.a, tc.b, got, ok, tc.want)
		}
	}
	for _, p := range []string{"qw", "qa", "wa", "az", "sz", "12", "1q", "2q", "mk", "mn", "pl", "ol"} {
		if !nearKeys(p[0], p[1]) || !nearKeys(p[1], p[0]) {
			t.Errorf("nearKeys(%q) = false", p)
		}
	}
	for _, p := range []string{"qs", "a0", "pa", "zq", "fb", "gl", "ml"} {
		if nearKeys(p[0], p[1]) {
			t.Errorf("nearKeys(%q) = true", p)
		}
	}
}

func TestFileEndingsArePublicSuffixes(t *testing.T) {
	t.Parallel()
	for e := range fileEndings {
		if ps, icann := publicsuffix.PublicSuffix("x." + e); ps != e || !icann {
			t.Errorf("%s: not an ICANN public suffix (%q, %v): drop it from fileEndings", e, ps, icann)
		}
	}
}

// BenchmarkCheck measures Check per target over a mix of ordinary links,
// lookalikes and labelled links.
func BenchmarkCheck(b *testing.B) {
	c := mustNew(b, "acme-corp.com")
	targets := []links.Target{
		{URL: "https://www.example.com/security/advisory-2024-17", Host: "www.example.com"},
		{URL: "https://github.com/acme/app/pull/1234", Host: "github.com"},
		{URL: "https://docs.google.com/document/d/1x", Host: "docs.google.com"},
		{URL: "https://login.examp1e-bank.com/verify", Host: "login.examp1e-bank.com", Labels: []string{"the bank page"}},
		{URL: "https://okta-login.evil.test/", Host: "okta-login.evil.test", Labels: []string{"https://okta.com/login"}},
		{URL: "https://xn--pypal-4ve.com/signin", Host: "xn--pypal-4ve.com"},
		{URL: "https://acme-corp.co/sso", Host: "acme-corp.co", Labels: []string{"acme-corp.com"}},
		{URL: "https://news.ycombinator.com/item?id=1", Host: "news.ycombinator.com"},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = c.Check(targets[i%len(targets)])
		i++
	}
}
