package links

import (
	"net"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// ArgKind is what ClassifyArg takes a command-line argument for.
type ArgKind int

const (
	// ArgLink is a link: Arg.URL is its normalised form and Arg.Reason says
	// whether the policy withholds it.
	ArgLink ArgKind = iota
	// ArgPath is written as a file path ("/…", "./…", "../…", "~…", a
	// backslash, "." or ".."), never a link.
	ArgPath
	// ArgBareName has no scheme and is not a name under an ICANN top-level
	// domain ("dist/app.exe", "build", "app.test/x"): taken for a file
	// name, not for a link, so a missing file is never looked up as
	// https://dist/app.exe. Written with https:// it is a link.
	ArgBareName
	// ArgInvalid has a scheme ("…://…") but does not normalise; Arg.Err
	// says why.
	ArgInvalid
)

// Arg is what ClassifyArg read in one argument.
type Arg struct {
	Kind ArgKind
	// MayBeFile is true when the argument has no scheme: it names a local
	// file if one exists at that path, whatever its Kind. ClassifyArg does
	// not look (it touches no file system); the caller does, first.
	MayBeFile bool
	// URL is the normalised link (ArgLink): the argument itself, or
	// "https://" + the argument when it has no scheme.
	URL string
	// Reason is why the policy withholds the link (ArgLink), ReasonNone
	// when it may be sent.
	Reason Reason
	// Err is the Normalize error (ArgInvalid).
	Err error
}

// ClassifyArg reads an argument typed on a command line (`verdictbot
// check`'s): with a scheme ("…://…") it is a link or invalid; without one
// it is a path when written as one, else a link to https://arg when its
// host is an IP address or a name under an ICANN top-level domain, else a
// bare name. A link is then checked against the policy (Check). A nil
// Policy is the default policy. ClassifyArg is pure: it neither resolves
// names nor looks at files.
func (p *Policy) ClassifyArg(arg string) Arg {
	hasScheme := strings.Contains(arg, "://")
	a := Arg{MayBeFile: !hasScheme}
	if !hasScheme && looksLikePath(arg) {
		a.Kind = ArgPath
		return a
	}
	u := arg
	if !hasScheme {
		u = "https://" + arg
	}
	norm, err := Normalize(u)
	switch {
	case !hasScheme && (err != nil || !icannHost(norm)):
		a.Kind = ArgBareName
	case err != nil:
		a.Kind, a.Err = ArgInvalid, err
	default:
		a.Kind, a.URL = ArgLink, norm
		a.Reason, _ = p.Check(norm)
	}
	return a
}

// looksLikePath: an argument written as a path, never a link.
func looksLikePath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "~") || strings.ContainsRune(s, '\\') || s == "." || s == ".."
}

// icannHost reports whether a normalised URL's host is a name under an
// ICANN top-level domain (an IP address counts).
func icannHost(norm string) bool {
	host := norm
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = rest
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if net.ParseIP(host) != nil {
		return true
	}
	_, icann := publicsuffix.PublicSuffix(host)
	_, err := publicsuffix.EffectiveTLDPlusOne(host) // a name under it, not "build" alone
	return icann && err == nil
}
