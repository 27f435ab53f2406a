package signals

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Lookalike reports whether host imitates a protected domain (the rules in
// the package comment, tried in order), with one Signal naming the rule
// and the domain imitated. host is a lower-case ASCII host name as
// links.Target.Host (punycode for IDNs); upper case is folded. IP
// addresses, public suffixes, protected domains and their subdomains
// (owned ones included) never match.
func (c *Checker) Lookalike(host string) (Signal, bool) {
	host = strings.ToLower(host)
	reg, ok := registrable(host)
	if !ok {
		return Signal{}, false
	}
	x := c.idx.Load()
	if _, ok := x.domains[reg]; ok {
		return Signal{}, false
	}
	if e := x.inHost(host, len(host)-len(reg)); e != nil {
		return lookalike(RuleSubdomain, e, "uses the name of "+e.domain+" in another domain"), true
	}
	label, _, _ := strings.Cut(reg, ".")
	if es := x.byLabel[label]; len(es) > 0 {
		// The protected name itself under another ending. Not flagged
		// for a global brand (google.de is one of Google's sites), nor
		// under a private suffix of the public suffix list (okta.github.io
		// is Okta's own GitHub organisation, as most brand.platform
		// names are); a name can only be imitated once.
		if _, icann := publicsuffix.PublicSuffix(reg); es[0].global || !icann {
			return Signal{}, false
		}
		return lookalike(RuleTLD, es[0], "looks like "+es[0].domain+" (different ending)"), true
	}
	if sk := skeleton(unicodeLabel(label)); len(x.bySkel[sk]) > 0 {
		return lookalike(RuleHomoglyph, x.bySkel[sk][0], "looks like "+x.bySkel[sk][0].domain+" (look-alike characters)"), true
	}
	if x.words[label] {
		return Signal{}, false // a common word: not a typo, nor a combination
	}
	if len(label) >= minTypoLen && !strings.HasPrefix(label, "xn--") {
		for n := len(label) - 1; n <= len(label)+1; n++ {
			for _, e := range x.byLen[n] {
				if what, ok := oneEdit(label, e.label); ok {
					return lookalike(RuleTypo, e, "looks like "+e.domain+" ("+what+")"), true
				}
			}
		}
	}
	if strings.IndexByte(label, '-') > 0 {
		tokens := strings.Split(label, "-")
		for i, t := range tokens {
			for _, e := range x.byToken[t] {
				if hasTokens(tokens[i:], e.tokens) {
					return lookalike(RuleCombo, e, "uses the name of "+e.domain+" in another domain"), true
				}
			}
		}
	}
	return Signal{}, false
}

func lookalike(rule string, e *entry, reason string) Signal {
	return Signal{Kind: Lookalike, Reason: reason, Protected: e.domain, Rule: rule}
}

// inHost returns a protected domain (owned ones included) written into
// host in front of its registrable domain, which starts at regAt: starting
// at a label and followed by "." or "-" (okta.com.evil.test,
// paypal.com-verify.info, login.microsoftonline.com.evil.test), or nil.
func (x *index) inHost(host string, regAt int) *entry {
	for start := 0; start < regAt; {
		// The pieces that start here and end before a '.' or '-', of two
		// or three labels (okta.com, barclays.co.uk).
		dots := 0
		for i := start; i < len(host) && dots <= 2; i++ {
			c := host[i]
			if c != '.' && c != '-' {
				continue
			}
			if dots > 0 {
				if e, ok := x.domains[host[start:i]]; ok {
					return e
				}
			}
			if c == '.' {
				dots++
			}
		}
		next := strings.IndexByte(host[start:], '.')
		if next < 0 {
			break
		}
		start += next + 1
	}
	return nil
}

// hasTokens reports whether have starts with want.
func hasTokens(have, want []string) bool {
	if len(have) < len(want) {
		return false
	}
	for i, w := range want {
		if have[i] != w {
			return false
		}
	}
	return true
}

// unicodeLabel decodes a punycode ("xn--") label; any other label, or one
// that does not decode, is returned as it is.
func unicodeLabel(label string) string {
	if !strings.HasPrefix(label, "xn--") {
		return label
	}
	u, err := idna.Punycode.ToUnicode(label)
	if err != nil {
		return label
	}
	return u
}

// skeleton returns the confusable skeleton of a label: UTS #39's skeleton
// (github.com/mtibben/confusables, confusables.txt of Unicode 13.0, after
// extraConfusable), then
// lower-cased, without combining marks, with "w" written as "vv". UTS #39
// maps 1 and I to l, m to rn and 0 to O; lower-casing makes 0 match o
// (UTS #39 maps O and o apart, as skeletons are case-sensitive, but host
// names are not); dropping the marks that its NFD leaves makes accented
// letters match theirs (paypál, gööglé), as Chromium's lookalike checks
// do; the "vv" fold adds the w/vv pair that UTS #39 lacks. Only the comparison of two
// skeletons means anything: a skeleton is not a name to show.
func skeleton(label string) string {
	ascii := true
	for i := 0; i < len(label); i++ {
		if label[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii && !strings.ContainsAny(label, "ABCDEFGHIJKLMNOPQRSTUVWXYZ|`\"%") {
		// What the general path gives for such a label
		// (TestSkeletonASCIIFastPath), without its two normalisations:
		// UTS #39 maps only 0, 1, m (and I | ` " %) among them.
		if !strings.ContainsAny(label, "01mw") {
			return label
		}
		var b strings.Builder
		b.Grow(len(label) + 4)
		for i := 0; i < len(label); i++ {
			switch c := label[i]; c {
			case '0':
				b.WriteByte('o')
			case '1':
				b.WriteByte('l')
			case 'm':
				b.WriteString("rn")
			case 'w':
				b.WriteString("vv")
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	s := confusables.Skeleton(strings.Map(extraConfusable, label))
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1 // a combining mark left by NFD: paypál reads as paypal
		}
		return unicode.ToLower(r)
	}, s)
	return strings.ReplaceAll(s, "w", "vv")
}

// extraConfusable maps the characters that read as a letter in most
// fonts but that UTS #39 (Unicode 13.0) maps to another: Cyrillic palochka
// ӏ (U+04CF) reads as l, as in аррӏе.com (Xudong Zheng's 2017 proof of
// concept), but confusables.txt maps it to i.
func extraConfusable(r rune) rune {
	if r == '\u04cf' {
		return 'l'
	}
	return r
}

// oneEdit reports whether a is one Damerau–Levenshtein edit from b (a
// letter changed for a near one (nearKeys), added or missing, or two
// neighbours swapped), and says
// which, as the reason's words, seen from b: "one letter added" means a
// has a letter that b has not.
func oneEdit(a, b string) (string, bool) {
	switch len(a) - len(b) {
	case 0:
		i := firstDiff(a, b)
		if i == len(a) {
			return "", false
		}
		if a[i+1:] == b[i+1:] && nearKeys(a[i], b[i]) {
			return "one letter differs", true
		}
		if i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] {
			return "two letters swapped", true
		}
	case 1:
		i := firstDiff(a, b)
		if a[i+1:] == b[i:] {
			return "one letter added", true
		}
	case -1:
		i := firstDiff(a, b)
		if a[i:] == b[i+1:] {
			return "one letter missing", true
		}
	}
	return "", false
}

// keyboardRows are the rows of a QWERTY keyboard; a row is shifted half
// a key right of the one above, so key i touches keys i-1 and i of the
// row below.
var keyboardRows = [...]string{"1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm"}

// lookAlikeLetters are pairs of characters that read alike in most fonts
// (the single-letter cases of the typosquatting permutations in dnstwist's
// "homoglyph" and "replacement" rules).
var lookAlikeLetters = [...]string{"il", "i1", "l1", "o0", "ec", "uv", "nm", "nh", "gq", "ij"}

// nearKeys reports whether one letter typed or read for the other is a
// plausible slip: neighbouring keys on a QWERTY keyboard, or characters
// that look alike. A substitution of any other letter makes another word
// far more often than a typo (finance for binance, lithub for github, on
// the precision corpus), so the typo rule counts only these.
func nearKeys(a, b byte) bool {
	for _, p := range lookAlikeLetters {
		if (a == p[0] && b == p[1]) || (a == p[1] && b == p[0]) {
			return true
		}
	}
	ra, ia := keyPos(a)
	rb, ib := keyPos(b)
	if ra < 0 || rb < 0 {
		return false
	}
	switch ra - rb {
	case 0:
		return ia-ib == 1 || ib-ia == 1
	case 1: // a is on the row below b
		return ia == ib || ia == ib-1
	case -1:
		return ib == ia || ib == ia-1
	}
	return false
}

func keyPos(c byte) (row, i int) {
	for r, keys := range keyboardRows {
		if i := strings.IndexByte(keys, c); i >= 0 {
			return r, i
		}
	}
	return -1, -1
}

// firstDiff returns the first index where a and b differ, or the length
// of the shorter.
func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
