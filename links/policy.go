package links

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/slack-go/slack"
	"golang.org/x/net/publicsuffix"
)

// DefaultMaxLinks is the number of targets Extract returns per message when
// Config.MaxLinks is zero; the rest are counted in Result.LeftOut, and the
// message is then "could not check" (issue 21: default 50, at most
// MaxMaxLinks, distinct after normalisation and the allowlist).
const DefaultMaxLinks = 50

// MaxMaxLinks is the highest VERDICTBOT_MAX_LINKS: every link up to it is
// analysed, and the card shows the worst lines first and summarises the
// rest to stay within Block Kit's 50 blocks.
const MaxMaxLinks = 200

// maxUnwrapDepth bounds how many nested slack-redir.net wrappers Extract
// unwraps for one link.
const maxUnwrapDepth = 3

// Reason says why a link was not sent to an analysis service. Values are
// stable strings for logs, metrics and stored cards.
//
// Keep in sync: the constants below, Reason.Text, and the "every reason"
// test table in policy_test.go.
type Reason string

const (
	// ReasonNone is the zero Reason: the link may be scanned.
	ReasonNone Reason = ""
	// ReasonMalformed means the link cannot be parsed: no host, bad port,
	// invalid host characters, unsupported internationalised name,
	// out-of-range numeric host, ….
	ReasonMalformed Reason = "malformed"
	// ReasonUnsupportedScheme means the link is not http or https (ftp:,
	// file:, javascript:, …). mailto: and tel: links are dropped silently
	// instead.
	ReasonUnsupportedScheme Reason = "unsupported_scheme"
	// ReasonPrivateAddress means the host is an IP address that is not
	// public unicast: loopback, RFC 1918, CGNAT, link-local, unique-local,
	// multicast, reserved (hosts.go has the table and its sources).
	ReasonPrivateAddress Reason = "private_address"
	// ReasonInternalName means the host is localhost or under a special-use
	// or private name suffix: .localhost .local .internal .home.arpa .corp
	// .home .mail .lan .localdomain (sources in hosts.go).
	ReasonInternalName Reason = "internal_name"
	// ReasonSingleLabel means the host name has no dot ("http://jira/"),
	// so it only resolves inside a network.
	ReasonSingleLabel Reason = "single_label"
	// ReasonInternalDomain means the host is, or is under, a configured
	// internal domain (Config.InternalDomains).
	ReasonInternalDomain Reason = "internal_domain"
	// ReasonAllowlisted means the host is, or is under, an allowlisted
	// domain (Slack's own by default, Config.AllowDomains), or
	// Config.AllowFunc allowed it.
	ReasonAllowlisted Reason = "allowlisted"
)

// Text returns a short human description of the reason, for cards.
func (r Reason) Text() string {
	switch r {
	case ReasonNone:
		return "scanned"
	case ReasonMalformed:
		return "not a valid web address"
	case ReasonUnsupportedScheme:
		return "not an http or https link"
	case ReasonPrivateAddress:
		return "private or reserved IP address"
	case ReasonInternalName:
		return "internal or reserved host name"
	case ReasonSingleLabel:
		return "internal host name (no dot)"
	case ReasonInternalDomain:
		return "internal domain"
	case ReasonAllowlisted:
		return "allowlisted domain"
	case ReasonResolvesPrivate:
		return resolvesPrivateText
	}
	return string(r)
}

// Target is a link to send to the analysis services.
type Target struct {
	// URL is the normalised form (see Normalize); it is what is sent to the
	// services and what deduplication uses.
	URL string
	// Raw is the link as found in the message, after HTML-entity unescaping
	// of text: the target of the link, never its label. Use it for display
	// (defanged) only.
	Raw string
	// Host is the ASCII (punycode) host of URL, lower case, without port or
	// IPv6 brackets.
	Host string
	// QueryDropped is set with Config.StripQuery when a query was removed
	// from this link or from a link merged into it (URL is then the link
	// as sent, without its query).
	QueryDropped bool
	// Labels are the visible labels that people wrote for this link, in
	// first-seen order, distinct: the label of a "<url|label>" sequence in
	// the text of a message without blocks (HTML-unescaped, as the URL
	// is) and the text of rich_text link elements, from every occurrence
	// of the link (and, for a link through Slack's redirector, of the
	// redirector link). Only messages written by people are read: never
	// an app's (bot_id or subtype bot_message), nor attachments, unfurls,
	// shared messages or other blocks, whose labels apps write. At most
	// MaxLabels, each trimmed and cut to MaxLabelLen bytes; a label may
	// equal the link itself. Labels are collected, never scanned, and are
	// untrusted text: defang them before showing them (DefangText).
	Labels []string
}

// Skipped is a link that is not sent to any service, and why.
type Skipped struct {
	// URL is the normalised URL, or the link as found when it could not be
	// normalised (ReasonMalformed, ReasonUnsupportedScheme).
	URL string
	// Reason is the machine-readable cause.
	Reason Reason
	// Detail is a short human explanation naming the rule and its source,
	// e.g. "10.0.0.0/8 is a private network (RFC 1918)". It does not
	// contain the URL; it may name the domain or address a rule matched.
	Detail string
}

// Result is what Extract found in one message.
type Result struct {
	// Targets are the links to scan, deduplicated on their normalised form,
	// in first-seen order, at most the policy's MaxLinks.
	Targets []Target
	// Skipped are the links that must not or need not be scanned,
	// deduplicated the same way, in first-seen order. Not limited by
	// MaxLinks.
	Skipped []Skipped
	// LeftOut counts further distinct scannable links beyond MaxLinks:
	// distinct after normalisation, the allowlist and (Config.StripQuery)
	// the query's removal, so neither repeats nor allowlisted links push a
	// link out.
	LeftOut int
}

// Config is the input to NewPolicy.
type Config struct {
	// AllowDomains are domains whose links are never scanned, subdomains
	// included, on top of DefaultAllowDomains. Entries are normalised by
	// NormalizeDomain; public suffixes ("com", "co.uk", "github.io") are
	// rejected because they would allow everyone's sites.
	AllowDomains []string
	// InternalDomains are the organisation's own domains, subdomains
	// included; their links are never sent to a service. Entries are
	// normalised by NormalizeDomain; ICANN public suffixes are rejected.
	InternalDomains []string
	// MaxLinks caps Result.Targets; 0 means DefaultMaxLinks.
	MaxLinks int
	// StripQuery removes the query of every target (VERDICTBOT_URL_QUERY=
	// strip): Target.URL is the link as it will be sent, and links equal
	// once stripped are one target (so query variants of one link cannot
	// push another past MaxLinks).
	StripQuery bool
	// NoDefaultAllow drops DefaultAllowDomains (Slack's own domains) from
	// the allowlist, so that e.g. public slack-files.com links are scanned.
	NoDefaultAllow bool
	// AllowFunc, when set, is asked about every host that passed the other
	// rules; returning true skips it as ReasonAllowlisted. It receives the
	// ASCII host (see Target.Host), must be safe for concurrent use, and is
	// the hook for allowlist entries added at run time (e.g. by "/scan
	// allow"): look them up in a store or an atomic snapshot and use
	// MatchDomain for subdomain semantics.
	AllowFunc func(host string) bool
}

// Policy decides which links of a message are scanned. It is immutable and
// safe for concurrent use; to change the static lists at run time, build a
// new Policy from Policy.Config and swap it (atomic.Pointer[Policy]), or use
// Config.AllowFunc. A nil *Policy behaves like NewPolicy(Config{}).
type Policy struct {
	cfg       Config // normalised lists, without the defaults
	allow     map[string]struct{}
	internal  map[string]struct{}
	maxLinks  int
	strip     bool
	allowFunc func(string) bool
}

var defaultPolicy = func() *Policy {
	p, err := NewPolicy(Config{})
	if err != nil {
		panic(err) // the built-in lists are constants; covered by tests
	}
	return p
}()

// NewPolicy validates cfg and returns a Policy. Every invalid entry is
// reported, joined, with its list and position; the domain lists are
// normalised (see NormalizeDomain) and deduplicated.
func NewPolicy(cfg Config) (*Policy, error) {
	var errs []error
	p := &Policy{
		allow:     make(map[string]struct{}),
		internal:  make(map[string]struct{}),
		maxLinks:  cfg.MaxLinks,
		strip:     cfg.StripQuery,
		allowFunc: cfg.AllowFunc,
	}
	if cfg.MaxLinks < 0 {
		errs = append(errs, fmt.Errorf("links: MaxLinks %d: must be zero (default %d) or positive", cfg.MaxLinks, DefaultMaxLinks))
	}
	if p.maxLinks == 0 {
		p.maxLinks = DefaultMaxLinks
	}
	if !cfg.NoDefaultAllow {
		for _, d := range defaultAllowDomains {
			p.allow[d] = struct{}{}
		}
	}
	p.cfg = Config{MaxLinks: cfg.MaxLinks, NoDefaultAllow: cfg.NoDefaultAllow, AllowFunc: cfg.AllowFunc, StripQuery: cfg.StripQuery}
	p.cfg.AllowDomains, errs = addDomains(p.allow, cfg.AllowDomains, "allow", errs, func(d string) error {
		if ps, _ := publicSuffix(d); ps == d {
			return errors.New("is a public suffix; allowlisting it would allow every site under it")
		}
		return nil
	})
	p.cfg.InternalDomains, errs = addDomains(p.internal, cfg.InternalDomains, "internal", errs, func(d string) error {
		if ps, icann := publicSuffix(d); ps == d && icann {
			return errors.New("is a public suffix, not an organisation's domain")
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func publicSuffix(d string) (string, bool) { return publicsuffix.PublicSuffix(d) }

func addDomains(set map[string]struct{}, in []string, list string, errs []error, extra func(string) error) ([]string, []error) {
	var out []string
	for i, raw := range in {
		d, err := NormalizeDomain(raw)
		if err == nil {
			err = extra(d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("links: %s domain %d (%q): %w", list, i+1, raw, err))
			continue
		}
		if _, dup := set[d]; !dup {
			out = append(out, d)
		}
		set[d] = struct{}{}
	}
	return out, errs
}

// NormalizeDomain turns an allowlist or internal-domain entry into the form
// hosts are compared with: surrounding space, a leading "*." or ".", and a
// trailing dot are removed, the name is lower-cased and converted to
// punycode. It rejects URLs, ports, paths, IP addresses and invalid names,
// with an error saying why (the entry itself is not repeated).
func NormalizeDomain(d string) (string, error) {
	d = strings.TrimSpace(d)
	d = strings.TrimPrefix(d, "*.")
	d = strings.TrimLeft(d, ".")
	if d == "" {
		return "", errors.New("empty domain")
	}
	if strings.ContainsAny(d, "/:@?#[] \t") {
		return "", errors.New("must be a bare domain name such as example.com, not a URL or host:port")
	}
	host, addr, err := parseHost(d)
	if err != nil {
		var ue *urlError
		if errors.As(err, &ue) {
			return "", errors.New(ue.why)
		}
		return "", err
	}
	if addr.IsValid() {
		return "", errors.New("is an IP address, not a domain name")
	}
	return host, nil
}

// MatchDomain reports whether host is domain or a subdomain of it, on label
// boundaries: "a.example.com" matches "example.com", "badexample.com" does
// not. Both must already be normalised (Target.Host, NormalizeDomain).
func MatchDomain(host, domain string) bool {
	if domain == "" || !strings.HasSuffix(host, domain) {
		return false
	}
	return len(host) == len(domain) || host[len(host)-len(domain)-1] == '.'
}

// Config returns the policy's configuration with normalised, deduplicated
// domain lists (the defaults are not included), for building a modified
// Policy.
func (p *Policy) Config() Config {
	p = p.orDefault()
	c := p.cfg
	c.AllowDomains = append([]string(nil), c.AllowDomains...)
	c.InternalDomains = append([]string(nil), c.InternalDomains...)
	return c
}

// MaxLinks returns the cap on Result.Targets.
func (p *Policy) MaxLinks() int { return p.orDefault().maxLinks }

func (p *Policy) orDefault() *Policy {
	if p == nil {
		return defaultPolicy
	}
	return p
}

// Check reports whether a URL may be sent to an analysis service (ok is
// true, reason ReasonNone) or, if not, why. normalised should come from
// Normalize; any other input is normalised first, so a non-normal URL
// cannot slip past the rules, and an unparseable one gives
// ReasonMalformed or ReasonUnsupportedScheme.
func (p *Policy) Check(normalised string) (reason Reason, ok bool) {
	u, err := parse(normalised)
	if err != nil {
		reason, _ = errReason(err)
		return reason, false
	}
	reason, _ = p.orDefault().check(u)
	return reason, reason == ReasonNone
}

// check applies the rules in order: private address, internal name, a
// well-known name that resolves to a private address (dnsnames.go), single
// label, internal domain, allowlist, AllowFunc.
func (p *Policy) check(u parsedURL) (Reason, string) {
	if u.addr.IsValid() {
		if what, bad := nonPublicAddr(u.addr); bad {
			return ReasonPrivateAddress, what
		}
	} else {
		if what, ok := internalName(u.host); ok {
			return ReasonInternalName, what
		}
		if what, ok := resolvesPrivateByName(u.host); ok {
			return ReasonResolvesPrivate, what
		}
		if strings.IndexByte(u.host, '.') < 0 {
			return ReasonSingleLabel, "a host name without a dot only resolves inside a network"
		}
		if d, ok := matchSuffixMap(p.internal, u.host); ok {
			return ReasonInternalDomain, "under internal domain " + d
		}
		if d, ok := matchSuffixMap(p.allow, u.host); ok {
			return ReasonAllowlisted, "under allowlisted domain " + d
		}
	}
	if p.allowFunc != nil && p.allowFunc(u.host) {
		return ReasonAllowlisted, "allowlisted at run time"
	}
	return ReasonNone, ""
}

func errReason(err error) (Reason, string) {
	var ue *urlError
	if !errors.As(err, &ue) {
		return ReasonMalformed, err.Error()
	}
	if ue.kind == ErrUnsupportedScheme {
		return ReasonUnsupportedScheme, ue.why
	}
	return ReasonMalformed, ue.why
}

// Extract finds the links in a message (text, blocks and attachments; see
// FromText, FromMrkdwn, FromBlocks, FromAttachments; text is read as
// mrkdwn with bare URLs when bot_id is set or the subtype is bot_message,
// and not at all when the message has blocks, whose text is only the
// notification fallback: doc.go, "Fallback text"),
// normalises them, drops duplicates of an earlier normalised URL, and splits
// them into targets to scan and skipped links with reasons. Targets beyond
// MaxLinks are counted in LeftOut. For links through Slack's redirector
// (slack-redir.net/link?url=…, allowlisted by default) the destination is
// also checked, as a link of its own found after the others. For
// message_changed events pass the new message (event.Message). A nil msg
// gives an empty Result.
func (p *Policy) Extract(msg *slack.Msg) Result {
	return p.ExtractRaw(msg, nil)
}

// ExtractRaw is Extract with the message's JSON as Slack sent it (the
// event for a new message, the event's "message" member for
// message_changed), from which it also reads what slack-go does not
// decode: the blocks of shared messages (see SharedBlocks), after each
// attachment's own links. rawMsg may be nil.
func (p *Policy) ExtractRaw(msg *slack.Msg, rawMsg []byte) Result {
	p = p.orDefault()
	var res Result
	if msg == nil {
		return res
	}
	var rawBuf [16]string
	var lb labels // allocated on the first label: most messages have none
	raws := appendMessage(rawBuf[:0], msg, SharedBlocks(rawMsg), &lb)
	var depth []int // unwrap depth of raws[i], allocated on first unwrap
	var seen dedupe
	var stripped map[string]int // with strip: target index of each URL as sent (-1: left out)
	next := 0                   // lb.list is in index order: labels of raws[i] start at or after next
	for i := 0; i < len(raws); i++ {
		raw := raws[i]
		for next < len(lb.list) && lb.list[next].i < i {
			next++
		}
		first := next
		for next < len(lb.list) && lb.list[next].i == i {
			next++
		}
		mine := lb.list[first:next] // the labels written for raws[i]
		u, err := parse(raw)
		if err != nil {
			if seen.add(raw) {
				reason, detail := errReason(err)
				res.Skipped = append(res.Skipped, Skipped{URL: raw, Reason: reason, Detail: detail})
			}
			continue
		}
		if !seen.add(u.url) {
			if len(mine) > 0 {
				res.addLabels(p.sentAs(u.url), mine)
			}
			continue
		}
		if inner := redirTarget(u); inner != "" {
			d := 0
			if depth != nil {
				d = depth[i]
			}
			if d < maxUnwrapDepth {
				if depth == nil {
					depth = make([]int, len(raws))
				}
				n := len(raws)
				raws = appendTarget(raws, inner, false)
				for len(depth) < len(raws) {
					depth = append(depth, d+1)
				}
				if len(raws) > n {
					// The destination is shown under the redirector's
					// labels. Its index is past every index in lb.list,
					// which stays in order.
					for _, l := range mine {
						lb.list = append(lb.list, rawLabel{i: n, label: l.label})
					}
				}
			}
		}
		reason, detail := p.check(u)
		if reason != ReasonNone {
			res.Skipped = append(res.Skipped, Skipped{URL: u.url, Reason: reason, Detail: detail})
			continue
		}
		target := Target{URL: u.url, Raw: raw, Host: u.host}
		if p.strip {
			target.URL, target.QueryDropped = StripQuery(u.url)
			if i, dup := stripped[target.URL]; dup {
				if i >= 0 {
					res.Targets[i].QueryDropped = res.Targets[i].QueryDropped || target.QueryDropped
					res.Targets[i].addLabels(mine)
				}
				continue // the same link as sent: one target
			}
			if stripped == nil {
				stripped = map[string]int{}
			}
			stripped[target.URL] = -1 // left out, unless it fits below
		}
		if len(res.Targets) >= p.maxLinks {
			res.LeftOut++
			continue
		}
		if p.strip {
			stripped[target.URL] = len(res.Targets)
		}
		target.addLabels(mine)
		res.Targets = append(res.Targets, target)
	}
	return res
}

// sentAs returns the target URL that the normalised url is sent as.
func (p *Policy) sentAs(normalised string) string {
	if p.strip {
		s, _ := StripQuery(normalised)
		return s
	}
	return normalised
}

// addLabels adds labels to the target sent as url, if there is one (a
// repeat of a skipped or left-out link has none).
func (r *Result) addLabels(url string, labels []rawLabel) {
	for i := range r.Targets {
		if r.Targets[i].URL == url {
			r.Targets[i].addLabels(labels)
			return
		}
	}
}

// addLabels appends the labels t does not have yet, up to MaxLabels.
func (t *Target) addLabels(labels []rawLabel) {
	for _, l := range labels {
		if len(t.Labels) >= MaxLabels {
			return
		}
		if !slices.Contains(t.Labels, l.label) {
			t.Labels = append(t.Labels, l.label)
		}
	}
}

// redirTarget returns the destination of a Slack redirector link
// (https://slack-redir.net/link?url=…), or "".
func redirTarget(u parsedURL) string {
	if !MatchDomain(u.host, "slack-redir.net") {
		return ""
	}
	_, rest, _ := strings.Cut(u.url, "://")
	_, pathQuery, _ := strings.Cut(rest, "/")
	path, query, ok := strings.Cut(pathQuery, "?")
	if !ok || path != "link" {
		return ""
	}
	// ParseQuery keeps parsing past a bad pair; use what it found, so junk
	// such as "&x=%zz" cannot hide the destination.
	v, _ := url.ParseQuery(query)
	return v.Get("url")
}

// dedupe is a set of strings that stays a slice for the usual handful of
// links and becomes a map past dedupeMapAt.
type dedupe struct {
	list []string
	m    map[string]struct{}
}

const dedupeMapAt = 32

// add reports whether s was new.
func (d *dedupe) add(s string) bool {
	if d.m != nil {
		if _, ok := d.m[s]; ok {
			return false
		}
		d.m[s] = struct{}{}
		return true
	}
	for _, x := range d.list {
		if x == s {
			return false
		}
	}
	d.list = append(d.list, s)
	if len(d.list) > dedupeMapAt {
		d.m = make(map[string]struct{}, 2*len(d.list))
		for _, x := range d.list {
			d.m[x] = struct{}{}
		}
	}
	return true
}
