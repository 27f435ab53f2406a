package links

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// seeds are hostile and edge-case inputs shared by the fuzz targets and the
// property test.
var seeds = []string{
	"https://example.com/", "HTTPS://EXAMPLE.COM:443/a?b=1&c=2#frag", "http://example.com:80",
	"http://good.example@evil.example/", `http://evil.example\@good.example/`, "https:///evil.example",
	"http://2130706433/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://127.1/", "http://0/",
	"http://0x7f.1./", "http://1.2.3.4../", "http://4294967296/", "http://[::1]/", "http://[::ffff:7f00:1]/",
	"http://[::127.0.0.1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/", "http://[fe80::1%25eth0]/",
	"http://%31%32%37.0.0.1/", "http://%6c%6f%63%61%6c%68%6f%73%74/", "http://LOCALHOST./", "http://１２７．０．０．１/",
	"http://ｌｏｃａｌｈｏｓｔ/", "https://xn--bcher-kva.example/", "https://BÜCHER.example/", "https://ⓔⓥⓘⓛ.example/",
	"http://a..b/", "http://nas/", "http://x.internal./", "http://169.254.169.254/latest/meta-data/",
	"https://slack-redir.net/link?url=http%3A%2F%2F10.0.0.1%2F", "ftp://x.example/", "javascript:alert(1)",
	"http://exa\tmple.com/", " http://example.com/ ", "http://example.com/%zz%", "http://example.com/ü",
	"<https://a.example/|https://b.example/>", "<http://10.0.0.1/> <@U1> <!here> <mailto:a@b.c>",
	"text https://bare.example/x. `https://code.example/`", "hxxps://evil[.]example/",
	"<https://slack-redir.net/link?url=https%3A%2F%2Fslack-redir.net%2Flink%3Furl%3Dhttp%253A%252F%252F127.0.0.1%252F>",
	"http://[::]:0/", "http:\\\\127.0.0.1\\x", "https:evil.example", "http://0x100000000/", "http://0.0x7f.1/",
}

// oracleNonPublic is an independent judgement, from net/netip's own
// predicates and a few names, of hosts that must never be sent out. It is a
// subset of the package's rules.
func oracleNonPublic(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() ||
			a.IsMulticast() || netip.MustParsePrefix("100.64.0.0/10").Contains(a) ||
			netip.MustParsePrefix("0.0.0.0/8").Contains(a)
	}
	if !strings.Contains(host, ".") {
		return true
	}
	for _, s := range []string{"localhost", "local", "internal", "home.arpa", "lan", "corp"} {
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

// checkNormalized asserts the invariants of a successful Normalize.
func checkNormalized(t *testing.T, raw, out string) {
	t.Helper()
	again, err := Normalize(out)
	if err != nil || again != out {
		t.Fatalf("Normalize(%q) = %q; Normalize of that = %q, %v: not stable", raw, out, again, err)
	}
	pathEnd := strings.IndexByte(out, '?')
	if pathEnd < 0 {
		pathEnd = len(out)
	}
	if !isASCII(out) || strings.ContainsAny(out, " \t\r\n\"<>#") || strings.ContainsAny(out[:pathEnd], "`{}") {
		t.Fatalf("Normalize(%q) = %q contains characters a URL cannot carry", raw, out)
	}
	// A '%' that starts no valid escape is kept, as browsers keep it
	// (WHATWG URL Standard); net/url rejects it, so escape it for the check.
	u, err := url.Parse(escapeStrayPercent(out))
	if err != nil {
		t.Fatalf("Normalize(%q) = %q, which net/url rejects: %v", raw, out, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Fragment != "" || u.Host == "" || u.Path == "" {
		t.Fatalf("Normalize(%q) = %q: scheme %q user %v fragment %q host %q path %q", raw, out, u.Scheme, u.User, u.Fragment, u.Host, u.Path)
	}
	host := u.Hostname()
	if host != strings.ToLower(host) {
		t.Fatalf("Normalize(%q) = %q: host not lower case", raw, out)
	}
	// A browser must read the host the same way: a host that ends in a
	// number is a canonical dotted quad.
	if last := host[strings.LastIndexByte(host, '.')+1:]; !strings.Contains(host, ":") && last != "" && (allDigits(last) || isHexNumber(last)) {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is4() {
			t.Fatalf("Normalize(%q) = %q: numeric host is not a dotted quad", raw, out)
		}
	}
	if reason, ok := (*Policy)(nil).Check(out); ok && oracleNonPublic(host) {
		t.Fatalf("Check(%q) allows non-public host %q (reason %q)", out, host, reason)
	}
}

// isHexNumber reports whether s is "0x" followed by hex digits only, the
// hex form the WHATWG ends-in-a-number checker reads as IPv4 ("0.0.0xx" is
// a domain, "0.0.0x1" is not).
func isHexNumber(s string) bool {
	if len(s) < 2 || s[0] != '0' || s[1]|0x20 != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// escapeStrayPercent replaces each '%' not followed by two hex digits with
// "%25".
func escapeStrayPercent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkResult asserts the invariants of an Extract result.
func checkResult(t *testing.T, in string, p *Policy, res Result) {
	t.Helper()
	if len(res.Targets) > p.MaxLinks() || res.LeftOut < 0 {
		t.Fatalf("%q: %d targets, %d left out, max %d", in, len(res.Targets), res.LeftOut, p.MaxLinks())
	}
	seen := map[string]bool{}
	for _, tg := range res.Targets {
		if seen[tg.URL] {
			t.Fatalf("%q: duplicate target %q", in, tg.URL)
		}
		seen[tg.URL] = true
		checkNormalized(t, tg.Raw, tg.URL)
		if n, _ := Normalize(tg.Raw); n != tg.URL {
			t.Fatalf("%q: target %q does not come from raw %q (%q)", in, tg.URL, tg.Raw, n)
		}
		if u, _ := url.Parse(escapeStrayPercent(tg.URL)); u.Hostname() != tg.Host {
			t.Fatalf("%q: target host %q, URL host %q", in, tg.Host, u.Hostname())
		}
		if oracleNonPublic(tg.Host) {
			t.Fatalf("%q: non-public host %q is a target", in, tg.Host)
		}
		if reason, ok := p.Check(tg.URL); !ok {
			t.Fatalf("%q: target %q fails Check: %q", in, tg.URL, reason)
		}
	}
	for _, s := range res.Skipped {
		if seen[s.URL] {
			t.Fatalf("%q: %q both target and skipped, or skipped twice", in, s.URL)
		}
		seen[s.URL] = true
		if s.Reason == ReasonNone || s.Detail == "" {
			t.Fatalf("%q: skipped %q without reason or detail", in, s.URL)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := Normalize(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedScheme) {
				t.Fatalf("Normalize(%q): unclassified error %v", raw, err)
			}
			return
		}
		checkNormalized(t, raw, out)
	})
}

func FuzzExtractText(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
		f.Add("<" + s + ">")
	}
	p, err := NewPolicy(Config{MaxLinks: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, msg := range []*slack.Msg{
			{Text: text},
			{Text: text, BotID: "B1", Attachments: []slack.Attachment{{Text: text, TitleLink: text, Footer: text}}},
			{BotID: "B1", Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewMarkdownBlock("m", text)}}},
		} {
			checkResult(t, text, p, p.Extract(msg))
		}
		if s := Set(&slack.Msg{Text: text}, nil); len(s) > 1 {
			for i := 1; i < len(s); i++ {
				if s[i-1] >= s[i] {
					t.Fatalf("Set(%q) not sorted and distinct: %q", text, s)
				}
			}
		}
	})
}

func FuzzDefang(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, u string, limit int) {
		checkDefanged(t, u)
		tr := DefangTruncate(u, limit)
		if n := utf8.RuneCountInString(tr); n > max(limit, 0) {
			t.Fatalf("DefangTruncate(%q, %d) = %q has %d runes", u, limit, tr, n)
		}
		if utf8.ValidString(u) && !utf8.ValidString(tr) {
			t.Fatalf("DefangTruncate(%q, %d) = %q is not valid UTF-8", u, limit, tr)
		}
		if d := Defang(u); limit > 0 && tr != d && (!strings.HasSuffix(tr, "…") || !strings.HasPrefix(d, strings.TrimSuffix(tr, "…"))) {
			t.Fatalf("DefangTruncate(%q, %d) = %q is not a cut of %q", u, limit, tr, d)
		}
	})
}

var (
	// liveScheme is an http(s) scheme the defangers must have rewritten: at
	// the start or after a byte that cannot be in a scheme (leading
	// digits, '+', '-', '.' aside), before a colon.
	liveScheme = regexp.MustCompile(`(?i)(^|[^a-z0-9+.\-])[0-9+.\-]*https?:`)
	// liveSchemeText is the same in text, where "HTTP: 503" may stay.
	liveSchemeText = regexp.MustCompile(`(?i)(^|[^a-z0-9+.\-])[0-9+.\-]*https?:[/\\\pL\pN]`)
)

// checkDefanged asserts the invariants of Defang, DefangLinks and
// DefangText on u: idempotent, nothing removed, no live http(s) scheme,
// and no dot left bare in an authority (after "://", after a leading
// "http:", or a whole URL with no colon).
func checkDefanged(t *testing.T, u string) {
	t.Helper()
	for _, f := range []struct {
		name   string
		fn     func(string) string
		text   bool
		live   *regexp.Regexp
		prefix bool // the input is a URL, whose start is its authority
	}{
		{"Defang", Defang, false, liveScheme, true},
		{"DefangLinks", DefangLinks, true, liveSchemeText, false},
		{"DefangText", DefangText, true, liveSchemeText, false},
	} {
		d := f.fn(u)
		if again := f.fn(d); again != d {
			t.Fatalf("%s(%q) = %q, then %q", f.name, u, d, again)
		}
		if len(d) < len(u) {
			t.Fatalf("%s(%q) = %q is shorter", f.name, u, d)
		}
		if loc := f.live.FindStringIndex(d); loc != nil {
			t.Fatalf("%s(%q) = %q keeps a live scheme at %d", f.name, u, d, loc[0])
		}
		var starts []int
		for i := 0; ; {
			j := strings.Index(d[i:], "://")
			if j < 0 {
				break
			}
			starts = append(starts, i+j+1)
			i += j + 1
		}
		if f.prefix {
			if n := schemeLen(u); n == 4 || n == 5 {
				if s := strings.ToLower(u[:n]); s == "http" || s == "https" {
					starts = append(starts, n+1)
				}
			}
			if !strings.Contains(u, ":") {
				starts = append(starts, 0)
			}
		}
		for _, start := range starts {
			rest := strings.TrimLeft(d[start:], `/\`)
			end := strings.IndexFunc(rest, func(r rune) bool { return endsAuthority(r, f.text) })
			if end < 0 {
				end = len(rest)
			}
			// A bracketed dot is replaced, not removed: removing it could
			// join the bytes around it into a dot that was never there
			// ("\xef\xbc" + "[.]" + "\x8e" is not U+FF0E).
			auth := strings.ReplaceAll(rest[:end], "[.]", "_")
			if strings.ContainsFunc(auth, isDot) {
				t.Fatalf("%s(%q) = %q leaves a dot in the authority %q", f.name, u, d, rest[:end])
			}
		}
	}
}

// TestDefangProperties runs the defang invariants over URLs and texts
// assembled from hostile parts, so that plain "go test" exercises them.
func TestDefangProperties(t *testing.T) {
	t.Parallel()
	parts := []string{"http", "HTTPS", "ftp", "hxxp", "x", "1", ":", "://", ":\\\\", "/", "\\", ".", "。", "．", "｡",
		"[.]", "[", "]", "evil", "example", "@", "?", "#", " ", "\"", "`", "<", ">", "|", "=", "-", "+", "é", "\xff"}
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range seeds {
		checkDefanged(t, s)
	}
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		checkDefanged(t, b.String())
	}
}

// TestNormalizeProperties runs the fuzz invariants over URLs assembled from
// hostile parts, so that plain "go test" exercises them broadly.
func TestNormalizeProperties(t *testing.T) {
	t.Parallel()
	schemes := []string{"http://", "HTTPS://", "hTtP:", "https:\\\\", "https:///", "ftp://", ""}
	userinfo := []string{"", "user@", "good.example@", "a:b@c@", "%40@"}
	hosts := []string{
		"example.com", "EXAMPLE.com.", "127.0.0.1", "2130706433", "0x7f.1", "0177.0.1", "0", "10.1", "256.0.0.1",
		"[::1]", "[::ffff:10.0.0.1]", "[2001:db8::1]", "[64:ff9b::a00:1]", "[fe80::1%25x]", "[1:2]", "localhost",
		"svc.internal", "nas", "a.lan.", "bücher.example", "ⓔⓥⓘⓛ.com", "ｅｘａｍｐｌｅ．ｃｏｍ", "%65xample.com",
		"%zz", "xn--bcher-kva.example", "a..b", "-a-.b_c.example", "slack.com", "x.slack-edge.com", "",
	}
	ports := []string{"", ":", ":80", ":443", ":0080", ":65535", ":65536", ":x"}
	paths := []string{"", "/", "/a/../b", "\\a\\b", "/ü", "/a b", "/%", "/%4", "/%41"}
	queries := []string{"", "?", "?a=1&b=2", "?q=ü&x=%", "?a='\"`"}
	frags := []string{"", "#", "#f", "#a?b"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for _, s := range seeds {
		if out, err := Normalize(s); err == nil {
			checkNormalized(t, s, out)
		}
	}
	for range 5000 {
		raw := pick(schemes) + pick(userinfo) + pick(hosts) + pick(ports) + pick(paths) + pick(queries) + pick(frags)
		if out, err := Normalize(raw); err == nil {
			checkNormalized(t, raw, out)
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedScheme) {
			t.Fatalf("Normalize(%q): unclassified error %v", raw, err)
		}
		text := "see <" + raw + "|label> and " + raw
		p := (*Policy)(nil)
		checkResult(t, text, p.orDefault(), p.Extract(&slack.Msg{Text: text, BotID: "B1"}))
	}
}
