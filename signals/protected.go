package signals

import (
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// protectedTxt is the built-in list; its header says where it comes from
// and how to change it.
//
//go:embed protected.txt
var protectedTxt string

// builtin is protectedTxt parsed; a bad line is a build-time mistake,
// caught by TestBuiltinList, and panics at start.
var builtin = mustParseList(protectedTxt)

// builtinWords are the lines of protectedTxt that are one word, no dot:
// labels that are never reported as a typo or a combination.
var builtinWords = parseWords(protectedTxt)

func parseWords(s string) map[string]bool {
	words := map[string]bool{}
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if f := strings.Fields(line); len(f) == 1 && !strings.Contains(f[0], ".") {
			words[strings.ToLower(f[0])] = true
		}
	}
	return words
}

// Minimum label lengths for the typo and combo rules (issue 26, item 2):
// shorter names (ups, dhl, x, box) are one edit from, or a part of, too
// many ordinary names; they are still caught by the homoglyph, tld and
// subdomain rules.
const (
	minTypoLen  = 5
	minComboLen = 4
)

// entry is one protected domain.
type entry struct {
	domain string   // registrable domain, ASCII lower case
	label  string   // domain without its public suffix (one DNS label)
	suffix string   // the public suffix
	tokens []string // label split at hyphens
	word   bool     // a common word: no typo or combo rule
	global bool     // sites under many endings: no tld rule
	owned  bool     // never flagged, never imitated
}

func mustParseList(s string) []entry {
	var out []entry
	for n, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.Contains(f[0], ".") {
			continue // a common word, for parseWords
		}
		e, err := parseEntry(f[0])
		if err != nil {
			panic(fmt.Sprintf("signals: protected.txt line %d: %v", n+1, err))
		}
		for _, flag := range f[1:] {
			switch flag {
			case "word":
				e.word = true
			case "global":
				e.global = true
			case "owned":
				e.owned = true
			default:
				panic(fmt.Sprintf("signals: protected.txt line %d: unknown flag %q", n+1, flag))
			}
		}
		out = mergeEntries(out, []entry{e})
	}
	return out
}

// parseEntry reduces a domain name (or a host under it) to its registrable
// domain.
func parseEntry(raw string) (entry, error) {
	d := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(raw), "*."), ".")
	if d == "" {
		return entry{}, errors.New("empty domain")
	}
	if strings.ContainsAny(d, "/:@?#[] \t") {
		return entry{}, errors.New("must be a bare domain name such as example.com")
	}
	a, err := idna.Lookup.ToASCII(d)
	if err != nil {
		return entry{}, fmt.Errorf("not a valid domain name: %w", err)
	}
	if _, err := netip.ParseAddr(a); err == nil {
		return entry{}, errors.New("is an IP address, not a domain name")
	}
	if !validHost(a) || !displayable(a) {
		return entry{}, errors.New("not a valid domain name")
	}
	reg, ok := registrable(a)
	if !ok {
		return entry{}, errors.New("is a public suffix, not a registrable domain")
	}
	label, suffix, _ := strings.Cut(reg, ".")
	return entry{domain: reg, label: label, suffix: suffix, tokens: strings.Split(label, "-")}, nil
}

// registrable returns the registrable domain (eTLD+1) of a lower-case
// ASCII host name, by the public suffix list with its private entries;
// ok is false for an IP address, a public suffix, or a name that is not
// made of DNS labels.
func registrable(host string) (string, bool) {
	if !validHost(host) {
		return "", false
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return "", false
	}
	return reg, true
}

// validHost reports whether h is dot-separated non-empty labels of
// lower-case letters, digits, hyphens and underscores, with at least one
// letter in the last label (so not an IPv4 address).
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	start, letter := 0, false
	for i := 0; i <= len(h); i++ {
		if i == len(h) || h[i] == '.' {
			if i == start || i-start > 63 {
				return false
			}
			if i < len(h) {
				start, letter = i+1, false
			}
			continue
		}
		switch c := h[i]; {
		case c >= 'a' && c <= 'z':
			letter = true
		case c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return letter
}

// index is an immutable view of the protected set for the rules.
type index struct {
	domains map[string]*entry   // every entry, owned ones included
	byLabel map[string][]*entry // imitable entries by label (tld rule)
	bySkel  map[string][]*entry // imitable entries by label skeleton (homoglyph rule)
	byLen   map[int][]*entry    // typo-rule entries by label length
	byToken map[string][]*entry // combo-rule entries by first token
	words   map[string]bool     // labels never reported as typos or combinations
}

func newIndex(entries []entry, words map[string]bool) *index {
	own := append([]entry(nil), entries...) // the index owns its copy
	x := &index{
		words:   words,
		domains: make(map[string]*entry, len(own)),
		byLabel: make(map[string][]*entry),
		bySkel:  make(map[string][]*entry),
		byLen:   make(map[int][]*entry),
		byToken: make(map[string][]*entry),
	}
	for i := range own {
		e := &own[i]
		x.domains[e.domain] = e
		if e.owned {
			continue
		}
		x.byLabel[e.label] = append(x.byLabel[e.label], e)
		sk := skeleton(unicodeLabel(e.label))
		x.bySkel[sk] = append(x.bySkel[sk], e)
		if e.word {
			continue
		}
		if len(e.label) >= minTypoLen && !strings.HasPrefix(e.label, "xn--") {
			x.byLen[len(e.label)] = append(x.byLen[len(e.label)], e)
		}
		if len(e.label) >= minComboLen {
			x.byToken[e.tokens[0]] = append(x.byToken[e.tokens[0]], e)
		}
	}
	return x
}
