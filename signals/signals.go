// Package signals finds local warning signs in a link, without a network
// or an analysis service (issue 26, items 1, 2 and 5): a visible label
// that shows another site than the one the link opens (a deceptive
// label), and a host name made to look like a protected domain (a
// lookalike).
//
// A Checker is built once with New from the protected domains (a built-in
// list of commonly impersonated sign-in, cloud, payment and parcel
// domains, embedded from protected.txt, plus the organisation's own) and is
// safe for concurrent use; AddProtected adds domains at run time. Label,
// Lookalike and Check are pure functions of their arguments and the
// protected set.
//
// # Rules
//
// Deceptive label (Checker.Label): the label is read as an address (see
// Label for when it is one) and its registrable domain (eTLD+1 by the
// public suffix list, golang.org/x/net/publicsuffix, private entries
// included) differs from the link's.
//
// Lookalike (Checker.Lookalike): the host's registrable domain is neither a
// protected domain nor under one, and, tried in this order:
//   - "subdomain": a protected domain is written into the host name in
//     front of another domain (okta.com.evil.test, paypal.com-verify.info);
//   - "tld": the label (the registrable domain without its public suffix)
//     is a protected label under another ICANN suffix (acme-corp.co for
//     acme-corp.com), unless the brand is global (google.de is Google's);
//     under a private suffix (okta.github.io) it is the brand's own page
//     far more often than not, and is not flagged;
//   - "homoglyph": the label, IDN-decoded, has the same confusable
//     skeleton (Unicode UTS #39, github.com/mtibben/confusables, plus the
//     folds in skeleton) as a protected label (pаypal.com with a Cyrillic
//     а, paypa1.com, rnicrosoft.com, g00gle.com);
//   - "typo": the label and a protected label, both of 5 or more
//     characters, are one edit apart (Damerau–Levenshtein: a letter added
//     or missing, two neighbours swapped, or a letter changed for a
//     neighbouring key or a look-alike letter, see nearKeys);
//   - "combo": a protected label of 4 or more characters is one or more of
//     the hyphen-separated parts of the label (okta-login.com,
//     secure-paypal-verify.com).
//
// Names marked "word" in protected.txt (live, office, chase) are left out
// of the typo and combo rules, and labels in its word list (revolt) are
// never typos or combinations; "owned" domains (googleusercontent.com,
// slack-files.com) are never flagged. The first rule that matches gives
// the host's one lookalike signal.
//
// Reasons name registrable domains only (ASCII, punycode for IDNs),
// never a URL, and contain none of Slack's mrkdwn control characters, so
// a card can show them as they are.
//
// # Measured precision
//
// precision_test.go runs the lookalike rule (and the label rule on each
// domain's own address) over 10,000 real registrable domains
// (testdata/popular.txt, with its provenance in testdata/README.md) and
// over a corpus of lookalikes by rule family (testdata/lookalikes.txt):
// it requires no false positive on the first and a recall of at least 95%
// on the second, and logs the table.
package signals

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/verdictbot/verdictbot/links"
)

// Kind is the kind of a Signal. Values are stable strings for logs,
// metrics and stored cards.
//
// Keep in sync: the constants below and the cards that show them.
type Kind string

const (
	// DeceptiveLabel: a link's visible label shows another site than the
	// one it opens.
	DeceptiveLabel Kind = "deceptive_label"
	// Lookalike: a link's host imitates a protected domain.
	Lookalike Kind = "lookalike"
)

// Rule names which rule produced a Signal. Values are stable strings.
//
// Keep in sync: the constants below, the package comment's "Rules", and
// the families in testdata/lookalikes.txt.
const (
	RuleLabel     = "label"     // DeceptiveLabel
	RuleSubdomain = "subdomain" // Lookalike: protected domain inside the host name
	RuleHomoglyph = "homoglyph" // Lookalike: same confusable skeleton
	RuleTypo      = "typo"      // Lookalike: one edit away
	RuleTLD       = "tld"       // Lookalike: same name, other public suffix
	RuleCombo     = "combo"     // Lookalike: protected name as a hyphen-separated part
)

// Signal is one warning sign about a link.
type Signal struct {
	// Kind is DeceptiveLabel or Lookalike.
	Kind Kind
	// Reason is a short phrase for the card, such as "shows okta.com,
	// opens evil.test" or "looks like okta.com (one letter differs)". It
	// names registrable domains only, contains no URL and none of the
	// characters < > & | * _ ~ `, and can be shown as it is.
	Reason string
	// Protected is the registrable domain shown (DeceptiveLabel) or
	// imitated (Lookalike).
	Protected string
	// Rule is one of the Rule constants.
	Rule string
}

// Options tunes New.
type Options struct {
	// NoBuiltin leaves out the built-in protected list (protected.txt),
	// so that only the domains given to New and AddProtected count.
	NoBuiltin bool
}

// Checker applies the rules. It is safe for concurrent use: the protected
// set is an immutable index swapped atomically by AddProtected.
type Checker struct {
	mu      sync.Mutex      // serialises AddProtected
	entries []entry         // under mu: the index's source, in order
	words   map[string]bool // read-only: never typos or combinations
	idx     atomic.Pointer[index]
}

// New returns a Checker protecting the built-in list (unless
// opts.NoBuiltin) and protected: extra domains such as
// VERDICTBOT_PROTECTED_DOMAINS, the workspace's email domains and the
// allowlist. Each is reduced to its registrable domain ("sso.acme.com" →
// "acme.com"); an entry that is not a domain name, or is a public suffix,
// is an error naming it, and no Checker is returned.
func New(protected []string, opts Options) (*Checker, error) {
	c := &Checker{}
	if !opts.NoBuiltin {
		c.entries = append(c.entries, builtin...)
	}
	extra, err := parseDomains(protected)
	if err != nil {
		return nil, err
	}
	c.entries = mergeEntries(c.entries, extra)
	if !opts.NoBuiltin {
		c.words = builtinWords
	}
	c.idx.Store(newIndex(c.entries, c.words))
	return c, nil
}

// AddProtected adds domains at run time (the workspace's domains learned
// at start, an allowlist entry), with New's rules; on error none is added.
// Concurrent Label, Lookalike and Check calls see the set before or after,
// never a mix.
func (c *Checker) AddProtected(domains ...string) error {
	extra, err := parseDomains(domains)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = mergeEntries(c.entries, extra)
	c.idx.Store(newIndex(c.entries, c.words))
	return nil
}

// Protected reports whether host is a protected domain or under one (an
// owned domain of a brand counts).
func (c *Checker) Protected(host string) bool {
	reg, ok := registrable(strings.ToLower(host))
	if !ok {
		return false
	}
	_, ok = c.idx.Load().domains[reg]
	return ok
}

// Check applies both rules to a target: Label to each of its Labels
// against its URL (one signal per domain shown), then Lookalike to its
// Host.
func (c *Checker) Check(t links.Target) []Signal {
	var out []Signal
	for _, l := range t.Labels {
		s, ok := c.Label(l, t.URL)
		if !ok || containsProtected(out, s.Protected) {
			continue
		}
		out = append(out, s)
	}
	if s, ok := c.Lookalike(t.Host); ok {
		out = append(out, s)
	}
	return out
}

func containsProtected(ss []Signal, d string) bool {
	for _, s := range ss {
		if s.Protected == d {
			return true
		}
	}
	return false
}

// parseDomains reduces each entry to a registrable domain; errors name
// the entry and its position.
func parseDomains(in []string) ([]entry, error) {
	var out []entry
	for i, raw := range in {
		e, err := parseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("signals: protected domain %d (%q): %w", i+1, raw, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// mergeEntries appends the entries of add whose domain is not in list
// yet; a domain given again keeps its first flags, except that an entry
// given without flags (the organisation naming its own domain) clears
// "owned", so that it is protected from imitation.
func mergeEntries(list, add []entry) []entry {
	for _, e := range add {
		dup := false
		for i := range list {
			if list[i].domain == e.domain {
				dup = true
				if !e.owned {
					list[i].owned = false
				}
				break
			}
		}
		if !dup {
			list = append(list, e)
		}
	}
	return list
}
