package notify

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/verdictbot/verdictbot/links"
)

// This file holds the string hygiene shared by both renderers: make
// untrusted text printable (sanitize), make URLs unclickable (the links
// package's defangers, the bot's only ones), cut it to a budget without
// splitting a rune (clip), and escape it for mrkdwn.
//
// Order matters and is always: sanitize → defang → clip → escape/wrap.

// sanitize makes untrusted text safe to show on one line, in Slack and in a
// terminal: invalid UTF-8 becomes U+FFFD; line breaks and tabs become
// spaces; other control characters (ESC included, so no ANSI injection)
// become U+FFFD; invisible format characters (bidi overrides such as U+202E,
// zero-width spaces and joiners, soft hyphens, BOMs) are shown as "[U+202E]"
// so a reader sees the trick instead of falling for it.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
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

// escapeMrkdwn escapes Slack's three control characters so untrusted text
// can never form a link, a mention (<!channel>) or an entity
// (docs.slack.dev/messaging/formatting-message-text, "Escaping text").
func escapeMrkdwn(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return mrkdwnEscaper.Replace(s)
}

// unsafeRune reports whether r must not reach a reader as it is: invalid
// UTF-8 (decoded as U+FFFD), a C0 control (ESC, BEL, CR, line breaks…),
// DEL, a C1 control (U+0080–U+009F: CSI, OSC, NEL…), a line or paragraph
// separator, or an invisible format character (Unicode category Cf: bidi
// overrides and isolates, zero-width characters, soft hyphens, tags).
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
		r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
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
	return clip(links.Defang(sanitize(u)), limit, true)
}

// showText prepares untrusted free text: sanitized, URLs and host names
// defanged, clipped at the end to limit.
func showText(s string, limit int) string {
	return clip(links.DefangText(sanitize(s)), limit, false)
}

// showLiteral prepares an untrusted literal (file name, hash, task id,
// type): sanitized, URLs defanged, clipped to limit (in the middle when
// tail is set).
func showLiteral(s string, limit int, tail bool) string {
	return clip(links.DefangLinks(sanitize(s)), limit, tail)
}
