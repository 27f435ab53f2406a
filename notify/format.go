package notify

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the string hygiene shared by both renderers: make
// untrusted text printable (sanitize), make URLs unclickable (defang), cut it
// to a budget without splitting a rune (clip), and escape it for mrkdwn.
//
// Order matters and is always: sanitize → defang → clip → escape/wrap.

// sanitize makes untrusted text safe to show on one line, in Slack and in a
// terminal: invalid UTF-8 becomes U+FFFD; line breaks and tabs become
// spaces; other control characters (ESC included, so no ANSI injection)
// become U+FFFD; invisible format characters (bidi overrides such as U+202E,
// zero-width spaces and joiners, soft hyphens, BOMs) are shown as "[U+202E]"
// so a reader sees the trick instead of falling for it.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
			r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f' ||
			r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			b.WriteRune('\uFFFD')
		case unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, "[U+%04X]", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isDot reports whether r is a full stop that browsers treat as a label
// separator in a host name (IDNA maps the ideographic and fullwidth ones to
// '.'), so each must be defanged.
func isDot(r rune) bool {
	return r == '.' || r == '\u3002' || r == '\uff0e' || r == '\uff61'
}

// defangURL makes a URL unclickable the way analysts write indicators:
// "http" → "hxxp", "https" → "hxxps", and every dot in the authority (host,
// and userinfo, so "paypal.com@evil.example" is defanged too) → "[.]".
// Text that does not start with "scheme://" is taken to start with the
// host. URLs embedded further on ("…/redirect?u=https://b.example", or
// anything after junk before the scheme) are defanged as well, by
// defangSchemes. Dots already written "[.]" are kept, so defangURL is
// idempotent. The same rules as links.Defang, kept separate so notify does
// not depend on links.
func defangURL(u string) string {
	if i := strings.Index(u, "://"); i > 0 && isScheme(u[:i]) {
		return defangSchemes(u)
	}
	end := strings.IndexFunc(u, isAuthorityEnd)
	if end < 0 {
		end = len(u)
	}
	if i := strings.Index(u, "://"); i >= 0 && i < end {
		return defangSchemes(u) // junk, then a scheme: "<https://…"
	}
	return defangDots(u[:end]) + defangSchemes(u[end:])
}

// defangSchemes defangs every "scheme://authority" in s, wherever it
// stands: the scheme (letters, digits, '+', '-', '.' back from "://",
// starting with a letter) is rewritten when it is http or https, and the
// dots of the authority, up to the first '/', '\', '?', '#', space, quote,
// backtick, '<', '>' or '|', are bracketed.
func defangSchemes(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		for start < i && !isASCIILetter(s[start]) {
			start++
		}
		b.WriteString(s[:start])
		switch scheme := s[start:i]; {
		case strings.EqualFold(scheme, "http"):
			b.WriteString("hxxp")
		case strings.EqualFold(scheme, "https"):
			b.WriteString("hxxps")
		default:
			b.WriteString(scheme)
		}
		b.WriteString("://")
		s = s[i+3:]
		end := strings.IndexFunc(s, isAuthorityEnd)
		if end < 0 {
			end = len(s)
		}
		b.WriteString(defangDots(s[:end]))
		s = s[end:]
	}
}

// isAuthorityEnd reports whether r ends a URL's authority, or the URL
// itself in running text.
func isAuthorityEnd(r rune) bool {
	return strings.ContainsRune("/\\?#<>|\"'`", r) || unicode.IsSpace(r)
}

// defangDots replaces every dot-like rune in s with "[.]", leaving dots
// that are already bracketed alone.
func defangDots(s string) string {
	if !strings.ContainsFunc(s, isDot) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		if isDot(r) && !(r == '.' && i > 0 && s[i-1] == '[' && i+1 < len(s) && s[i+1] == ']') {
			b.WriteString("[.]")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.' (RFC 3986 §3.1).
func isScheme(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isSchemeByte(s[i]) {
			return false
		}
	}
	return true
}

func isSchemeByte(c byte) bool {
	return isASCIILetter(c) || ('0' <= c && c <= '9') || c == '+' || c == '-' || c == '.'
}

func isASCIILetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// defangText defangs the URLs and host names inside free text (page
// titles, problems, notes): every "scheme://authority" (defangSchemes),
// and every word that looks like a host name ("evil.example", "10.0.0.1",
// "user@evil.example") has its dots bracketed. It errs on the side of
// defanging: "Node.js" becomes "Node[.]js", which is harmless, whereas a
// missed host could be linked.
func defangText(s string) string {
	s = defangSchemes(s)
	if !strings.ContainsFunc(s, isDot) {
		return s
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
	return b.String()
}

// defangLinks defangs only the "scheme://authority" parts of s, for
// literals a reader must see exactly (file names, hashes, task ids), which
// are always shown in code spans, where Slack links nothing.
func defangLinks(s string) string { return defangSchemes(s) }

// defangHostWord brackets the dots of a whitespace-free word that reads as
// a host name, possibly wrapped in punctuation: "(evil.example)," or
// "evil.example/path.".
func defangHostWord(w string) string {
	if strings.Contains(w, "://") {
		return w // defangSchemes did it
	}
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

// escapeMrkdwn escapes Slack's three control characters so untrusted text
// can never form a link, a mention (<!channel>) or an entity
// (docs.slack.dev/messaging/formatting-message-text, "Escaping text").
func escapeMrkdwn(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// textLen is the length Slack limits are checked against. Slack does not say
// how it counts; UTF-16 code units are never fewer than runes (what
// slack-go's TextBlockObject.Validate counts) or than JavaScript's length,
// so budgeting in them is safe for both.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeLen(r)
	}
	return n
}

func runeLen(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// escapedLen is the cost of r once escaped for mrkdwn.
func escapedLen(r rune) int {
	switch r {
	case '&':
		return 5
	case '<', '>':
		return 4
	}
	return runeLen(r)
}

// ellipsis marks a cut.
const ellipsis = "…"

// clip cuts s so that, once escaped for mrkdwn, it costs at most limit
// (see escapedLen), never splitting a rune. A cut string ends in "…"
// (tail=false: keep the start) or has "…" in the middle (tail=true: keep
// about two thirds of the budget for the start — scheme and host — and the
// rest for the end, where a file extension shows). limit < 1 gives "".
func clip(s string, limit int, tail bool) string {
	if limit < 1 {
		return ""
	}
	total := 0
	for _, r := range s {
		total += escapedLen(r)
	}
	if total <= limit {
		return s
	}
	avail := limit - 1 // room for the ellipsis
	head := avail
	if tail {
		head = avail * 2 / 3
	}
	rs := []rune(s)
	h, used := 0, 0
	for h < len(rs) && used+escapedLen(rs[h]) <= head {
		used += escapedLen(rs[h])
		h++
	}
	t := len(rs)
	if tail {
		left := avail - used
		for t > h && escapedLen(rs[t-1]) <= left {
			left -= escapedLen(rs[t-1])
			t--
		}
	}
	return string(rs[:h]) + ellipsis + string(rs[t:])
}

// showURL prepares an untrusted URL for display: sanitized, defanged and
// clipped in the middle to limit.
func showURL(u string, limit int) string {
	return clip(defangURL(sanitize(u)), limit, true)
}

// showText prepares untrusted free text: sanitized, URLs and host names
// defanged, clipped at the end to limit.
func showText(s string, limit int) string {
	return clip(defangText(sanitize(s)), limit, false)
}

// showLiteral prepares an untrusted literal (file name, hash, task id,
// type): sanitized, URLs defanged, clipped to limit (in the middle when
// tail is set).
func showLiteral(s string, limit int, tail bool) string {
	return clip(defangLinks(sanitize(s)), limit, tail)
}
