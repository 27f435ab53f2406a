package links

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the bot's only defanger: every URL, host name or piece of
// untrusted text the bot shows (cards, /scan answers, logs, check output,
// the shell) is made unclickable here, the way analysts write indicators.
//
// The rules, shared by Defang, DefangLinks and DefangText:
//
//   - A scheme is a letter followed by letters, digits, '+', '-' or '.'
//     (RFC 3986 §3.1), standing at the start of the string or after a byte
//     that cannot be part of a scheme; leading digits, '+', '-' and '.' are
//     not part of it ("1https://x" has the scheme "https").
//   - http and https become hxxp and hxxps (lower case) before "://" and
//     also before a colon followed by anything else ("https:evil.example",
//     "http:\\evil.example", "http:://0"), because Normalize and browsers
//     read those as http(s) URLs. In text (DefangLinks, DefangText) the
//     colon must be followed by a non-space, so "HTTP: 503" stays as it is.
//     Any other scheme is kept, and starts an authority only before "://".
//     A "://" after no scheme at all starts an authority too.
//   - The slashes and backslashes after the colon are kept; then comes the
//     authority (userinfo, host, port), in which every full stop that a
//     browser reads as a label separator ('.', and U+3002, U+FF0E, U+FF61,
//     which IDNA maps to '.') becomes "[.]". A '.' already written "[.]" is
//     kept, so every defanger here is idempotent.
//   - The authority ends at '/', '\', '?' or '#'; in text also at a space,
//     a quote, a backtick, '<', '>' or '|'.
//   - A URL (Defang) that does not start with a scheme is read as starting
//     with its authority, after any slashes ("evil.example/x",
//     "//evil.example/x", "mailto:a@b.example").
//   - Inside an authority a dot ends a would-be scheme, so "a.https://x" in
//     a host becomes "a[.]hxxps://x" and a second pass finds nothing new.
//
// None of these escape for mrkdwn (&, <, >); render the result in a code
// span or escape it when posting (Slack reads &, < and > as control
// characters in mrkdwn).

// Defang makes a URL unclickable for cards and logs: "http" becomes "hxxp",
// "https" becomes "hxxps", and every dot in the authority (userinfo
// included, so "paypal.com@evil.example" is defanged too) becomes "[.]",
// e.g. "https://evil.example/a.php" → "hxxps://evil[.]example/a.php". URLs
// embedded further on ("…/redirect?u=https://b.example", or after junk
// before the scheme) are defanged the same way. See the rules above.
// Defang(Defang(u)) == Defang(u).
//
// Defang does not stop Slack from linking a domain-like word in the path
// or query; show the result in a code span.
func Defang(u string) string { return defang(u, false) }

// DefangLinks defangs only the "scheme://authority" parts of free text (and
// "http:"/"https:" followed by a non-space), for literals a reader must see
// exactly (file names, hashes, task ids), which are shown in code spans,
// where Slack links nothing. DefangLinks(DefangLinks(s)) == DefangLinks(s).
func DefangLinks(s string) string { return defang(s, true) }

// DefangText defangs the URLs and host names inside free text (page titles,
// problems, notes): every link as DefangLinks does, and every
// whitespace-separated word that starts with a host name ("evil.example",
// "10.0.0.1", "user@evil.example", possibly in brackets, followed by
// punctuation, a path or a query) has the dots of that host bracketed. It
// errs on the side of defanging: "Node.js" becomes "Node[.]js", which is
// harmless, whereas a missed host could be linked. Version numbers and
// abbreviations ("2.0", "e.g.") are left alone.
// DefangText(DefangText(s)) == DefangText(s).
func DefangText(s string) string {
	if !strings.ContainsFunc(s, isDot) {
		return defang(s, true)
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for len(s) > 0 {
		// Copy the separator run, then handle one word.
		i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, unicode.IsSpace)
		if j < 0 {
			j = len(s)
		}
		b.WriteString(defangHostWord(s[:j]))
		s = s[j:]
	}
	// Links last: the host words' "[.]" can end a would-be scheme
	// ("a.https:x" → "a[.]https:x"), which must then be defanged.
	return defang(b.String(), true)
}

// DefangTruncate returns Defang(u) cut to at most max runes, ending in "…"
// when cut, without splitting a rune or a "[.]" marker. The start is kept
// (scheme and host first), which is what a reader needs. max < 1 gives "".
func DefangTruncate(u string, max int) string {
	d := Defang(u)
	if max < 1 {
		return ""
	}
	if utf8.RuneCountInString(d) <= max {
		return d
	}
	// Byte offset just after max-1 runes, leaving room for "…".
	cut, n := 0, 0
	for n < max-1 {
		_, size := utf8.DecodeRuneInString(d[cut:])
		cut += size
		n++
	}
	// Do not leave half a marker: "evil[" or "evil[.".
	switch {
	case strings.HasSuffix(d[:cut], "[."):
		cut -= 2
	case strings.HasSuffix(d[:cut], "["):
		cut--
	}
	return d[:cut] + "…"
}

// defang implements Defang (text false) and DefangLinks (text true) in one
// left-to-right pass over s; invalid UTF-8 is copied as it is.
func defang(s string, text bool) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	i := 0
	auth := false // inside an authority: dots are bracketed
	if !text {
		// A URL starts with its scheme or, failing that, its authority.
		if q, ok := schemeEnd(s, 0, false, false); ok {
			i = writeScheme(&b, s, 0, q)
		} else {
			i = writeSlashes(&b, s, 0)
		}
		auth = true
	}
	letter := false // the current run of scheme bytes has a letter
	for i < len(s) {
		c := s[i]
		if !letter && isAlpha(c) {
			if q, ok := schemeEnd(s, i, auth, text); ok {
				i = writeScheme(&b, s, i, q)
				auth = true
				continue
			}
		}
		if c == ':' && strings.HasPrefix(s[i:], "://") {
			// "://" after no scheme, or after digits: still a link.
			b.WriteByte(':')
			i = writeSlashes(&b, s, i+1)
			auth, letter = true, false
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if auth && endsAuthority(r, text) {
			auth = false
		}
		if auth && isDot(r) && !(c == '.' && i > 0 && s[i-1] == '[' && i+1 < len(s) && s[i+1] == ']') {
			b.WriteString("[.]")
		} else {
			b.WriteString(s[i : i+size])
		}
		switch {
		case size > 1 || !isSchemeByte(c) || (auth && c == '.'):
			letter = false
		case isAlpha(c):
			letter = true
		}
		i += size
	}
	return b.String()
}

// schemeEnd reports whether a scheme starts at s[p] (a letter), and if so
// the index of its colon. Inside an authority (auth) a dot ends the scheme
// bytes, since it will be bracketed. See the rules at the top of the file.
func schemeEnd(s string, p int, auth, text bool) (int, bool) {
	if p >= len(s) || !isAlpha(s[p]) {
		return 0, false
	}
	q := p + 1
	for q < len(s) && isSchemeByte(s[q]) && !(auth && s[q] == '.') {
		q++
	}
	if q >= len(s) || s[q] != ':' {
		return 0, false
	}
	if scheme := s[p:q]; strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") {
		if !text {
			return q, true
		}
		r, _ := utf8.DecodeRuneInString(s[q+1:])
		return q, q+1 < len(s) && !unicode.IsSpace(r)
	}
	return q, strings.HasPrefix(s[q:], "://")
}

// writeScheme writes the scheme s[p:q] (http and https defanged), its
// colon and the slashes after it, and returns the index of the authority.
func writeScheme(b *strings.Builder, s string, p, q int) int {
	switch scheme := s[p:q]; {
	case strings.EqualFold(scheme, "http"):
		b.WriteString("hxxp")
	case strings.EqualFold(scheme, "https"):
		b.WriteString("hxxps")
	default:
		b.WriteString(scheme)
	}
	b.WriteByte(':')
	return writeSlashes(b, s, q+1)
}

// writeSlashes copies the slashes and backslashes (which browsers read as
// slashes in http URLs) at s[i:] and returns the index after them.
func writeSlashes(b *strings.Builder, s string, i int) int {
	k := i
	for k < len(s) && (s[k] == '/' || s[k] == '\\') {
		k++
	}
	b.WriteString(s[i:k])
	return k
}

// endsAuthority reports whether r ends an authority: in a URL at the path,
// query or fragment; in text also at a space, a quote or Slack markup.
func endsAuthority(r rune, text bool) bool {
	switch r {
	case '/', '\\', '?', '#':
		return true
	case '<', '>', '|', '"', '\'', '`':
		return text
	}
	return text && unicode.IsSpace(r)
}

// isDot reports whether r is a full stop that browsers treat as a label
// separator in a host name: IDNA (UTS #46, as Normalize applies it) maps
// the ideographic, fullwidth and halfwidth ideographic ones to '.'.
func isDot(r rune) bool {
	return r == '.' || r == '\u3002' || r == '\uff0e' || r == '\uff61'
}

func isSchemeByte(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.'
}

// defangHostWord brackets the dots of a whitespace-free word that reads as
// a host name, possibly wrapped in punctuation: "(evil.example)," or
// "evil.example/path.".
func defangHostWord(w string) string {
	lead := strings.IndexFunc(w, func(r rune) bool { return !strings.ContainsRune("([{<\"'«“‘", r) })
	if lead < 0 {
		return w
	}
	core := strings.TrimRightFunc(w[lead:], func(r rune) bool { return strings.ContainsRune(".,;:!?)]}>\"'»”’", r) })
	trail := w[lead+len(core):]
	hostEnd := strings.IndexAny(core, `/\?#`)
	if hostEnd < 0 {
		hostEnd = len(core)
	}
	host := core[:hostEnd]
	if !looksLikeHost(host) {
		return w
	}
	return w[:lead] + defangDots(host) + core[hostEnd:] + trail
}

// defangDots replaces every dot-like rune in s with "[.]", leaving dots
// that are already bracketed alone.
func defangDots(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isDot(r) && !(r == '.' && i > 0 && s[i-1] == '[' && i+1 < len(s) && s[i+1] == ']') {
			b.WriteString("[.]")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// looksLikeHost reports whether s (optionally "userinfo@host[:port]") reads
// as a domain name with an alphabetic top-level label of two or more
// letters, or as a dotted IPv4 address.
func looksLikeHost(s string) bool {
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		s = s[at+1:]
	}
	if c := strings.LastIndexByte(s, ':'); c >= 0 {
		s = s[:c]
	}
	labels := strings.FieldsFunc(s, isDot)
	if len(labels) < 2 || strings.IndexFunc(s, isDot) == 0 {
		return false
	}
	allDigits := true
	for _, l := range labels {
		for _, r := range l {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && !unicode.Is(unicode.Mn, r) {
				return false
			}
			if !unicode.IsDigit(r) {
				allDigits = false
			}
		}
	}
	if allDigits {
		return len(labels) == 4
	}
	tld := labels[len(labels)-1]
	if utf8.RuneCountInString(tld) < 2 {
		return false
	}
	for _, r := range tld {
		if !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
			return false
		}
	}
	return true
}
