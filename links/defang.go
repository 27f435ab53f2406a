package links

import (
	"strings"
	"unicode/utf8"
)

// Defang makes a URL unclickable for cards and logs, the way analysts write
// indicators: http becomes hxxp, https becomes hxxps, and every dot in the
// host (the whole authority, userinfo included) becomes "[.]", e.g.
// "https://evil.example/a.php" → "hxxps://evil[.]example/a.php". Dots that
// are already defanged are left alone, so Defang(Defang(u)) == Defang(u).
// Input without "scheme://" is treated as starting with the host.
//
// Defang does not escape for mrkdwn (&, <, >) and does not stop Slack from
// linking a domain-like word in the path; render the result in a code span
// or escape it when posting (notes/slack-platform.md pitfall 12).
func Defang(u string) string {
	var b strings.Builder
	b.Grow(len(u) + 8)
	rest := u
	if n := schemeLen(u); n > 0 {
		// An http or https scheme is defanged whatever follows its colon
		// ("http:://x", "https:evil.example": Normalize reads the latter
		// as https://evil.example/); another scheme only before "://", so
		// that "evil.example:8080/x" keeps its host.
		scheme, after := u[:n], u[n+1:]
		switch {
		case strings.EqualFold(scheme, "http"):
			b.WriteString("hxxp:")
			rest = after
		case strings.EqualFold(scheme, "https"):
			b.WriteString("hxxps:")
			rest = after
		case strings.HasPrefix(after, "//"):
			b.WriteString(scheme)
			b.WriteByte(':')
			rest = after
		}
		if rest != u {
			// The slashes (or backslashes, which browsers read as slashes
			// in http URLs) before the authority.
			k := 0
			for k < len(rest) && (rest[k] == '/' || rest[k] == '\\') {
				k++
			}
			b.WriteString(rest[:k])
			rest = rest[k:]
		}
	}
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	for i := 0; i < len(auth); i++ {
		if auth[i] == '.' && !(i > 0 && auth[i-1] == '[' && i+1 < len(auth) && auth[i+1] == ']') {
			b.WriteString("[.]")
			continue
		}
		b.WriteByte(auth[i])
	}
	b.WriteString(rest[end:])
	return b.String()
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
