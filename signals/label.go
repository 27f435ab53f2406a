package signals

import (
	"net/netip"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// fileEndings are public suffixes that are also common file-name
// extensions (README.md, main.py, setup.sh, lib.rs, Main.java, notes.zip,
// clip.mov, Makefile.in, application.properties, model.pt): a bare label
// ending in one is read as a file name, not a host. Each is an ICANN
// suffix in golang.org/x/net/publicsuffix (TestFileEndingsArePublicSuffixes).
// ai, app, dev, io and the like are left out: sites use them far more than
// files do.
var fileEndings = map[string]bool{
	"am": true, "cab": true, "cc": true, "data": true, "gs": true, "in": true,
	"java": true, "md": true, "mk": true, "ml": true, "mov": true, "nc": true,
	"one": true, "pl": true, "pm": true, "properties": true, "ps": true,
	"pt": true, "pub": true, "py": true, "rs": true, "sas": true, "sh": true,
	"so": true, "sv": true, "tf": true, "zip": true,
}

// Label reports whether label, the visible text of a link to targetURL,
// shows another site than the one the link opens: the label is read as an
// address and its registrable domain differs from the target's. The
// Signal's Protected is the registrable domain shown, and its Reason
// "shows okta.com, opens evil.test".
//
// A label is read as an address when, once trimmed of spaces and of
// surrounding brackets, quotes and trailing punctuation, it is one word
// (no space) that
//   - starts with http:// or https://, or
//   - is a host name starting with "www." or followed by a path, query or
//     fragment ("www.okta.com", "okta.com/login"), or
//   - is a bare host name ("okta.com") whose public suffix is an ICANN one
//     and not a common file-name extension (fileEndings: "report.zip",
//     "README.md" and "main.py" are file names);
//
// and its host has a public suffix on the public suffix list, ICANN or
// private ("file.txt", "v1.2" and "intranet.corp" have none). Plain words
// ("click here", "Okta"), e-mail addresses and IP addresses are not
// addresses. targetURL is the link (links.Target.URL); a target that does
// not parse gives no signal.
//
// Label does not depend on the protected set: any domain shown counts.
func (c *Checker) Label(label, targetURL string) (Signal, bool) {
	shown, ok := labelHost(label)
	if !ok {
		return Signal{}, false
	}
	shownReg, ok := registrable(shown)
	if !ok {
		return Signal{}, false
	}
	opened, ok := urlHost(targetURL)
	if !ok {
		return Signal{}, false
	}
	openedReg := opened // an IP address or a public suffix is shown whole
	if r, ok := registrable(opened); ok {
		openedReg = r
	}
	if shownReg == openedReg || !displayable(shownReg) || !displayable(openedReg) {
		return Signal{}, false
	}
	return Signal{
		Kind:      DeceptiveLabel,
		Reason:    "shows " + shownReg + ", opens " + openedReg,
		Protected: shownReg,
		Rule:      RuleLabel,
	}, true
}

// labelHost returns the ASCII host a label shows, if it is an address (see
// Label).
func labelHost(label string) (string, bool) {
	s := strings.TrimLeftFunc(label, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`<([{"'`+"`", r)
	})
	s = strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`>)]}"'.,;:!?`+"`", r)
	})
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return "", false
	}
	lower := strings.ToLower(s)
	var host string
	strong := false // a scheme, "www." or a path: surely meant as an address
	if strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", false
		}
		host, strong = u.Hostname(), true
	} else {
		if strings.Contains(s, "://") || strings.ContainsRune(s, '@') {
			return "", false // another scheme, or an e-mail address
		}
		host = s
		if i := strings.IndexAny(s, "/?#"); i >= 0 {
			host, strong = s[:i], true
		}
		if h, port, ok := strings.Cut(host, ":"); ok {
			if port == "" || strings.Trim(port, "0123456789") != "" {
				return "", false
			}
			host = h
		}
		strong = strong || strings.HasPrefix(strings.ToLower(host), "www.")
	}
	host = strings.TrimSuffix(host, ".")
	a, err := idna.Lookup.ToASCII(host)
	if err != nil || !validHost(a) || !strings.Contains(a, ".") {
		return "", false
	}
	if _, err := netip.ParseAddr(a); err == nil {
		return "", false
	}
	ps, icann := publicsuffix.PublicSuffix(a)
	if !icann && !strings.Contains(ps, ".") {
		return "", false // not on the list: "*" gave the last label
	}
	if !strong && (!icann || fileEndings[ps]) {
		return "", false
	}
	return a, true
}

// urlHost returns the lower-case ASCII host of a URL, IPv6 without
// brackets.
func urlHost(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "" {
		return "", false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String(), true
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", false
	}
	return a, true
}

// displayable reports whether s can go into a Reason as it is: letters,
// digits, '.', '-' and ':' (IPv6), none of Slack's mrkdwn control
// characters.
func displayable(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == ':':
		default:
			return false
		}
	}
	return s != ""
}
