package notify

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the bot's one sanitiser for text printed on a terminal
// (`verdictbot check`, `verdictbot shell`): a service's answer or a message
// may hold escape sequences meant for the reader's terminal — CSI (colours,
// cursor moves, clearing the screen), OSC (window titles, OSC 8 hyperlinks
// that show one text and open another address, clipboard writes), BEL,
// bare carriage returns that overwrite a line — or bidi overrides that
// show a different text than the bytes say. None of them gets through: the
// rules are sanitize's (format.go), the same as for cards.

// TermText makes untrusted text safe to print on a terminal, keeping its
// line breaks ("\n"): on each line every control character (C0 such as
// ESC, BEL and CR; DEL; C1 such as CSI U+009B), line separator and invalid
// UTF-8 becomes U+FFFD or a space (tabs), and invisible format characters
// (bidi overrides such as U+202E, zero-width characters) are shown as
// "[U+202E]". Colours the caller adds after it are its own.
func TermText(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && unsafeRune(r) }) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = sanitize(l)
	}
	return strings.Join(lines, "\n")
}

// TermLine is TermText for text shown on one line: line breaks become
// spaces too.
func TermLine(s string) string { return sanitize(s) }

// TermMrkdwn is the bot's mrkdwn (an answer, a notice) as terminal text
// (`verdictbot shell`): Slack's references shown as words as a client
// shows them (<@U1> as @U1, <#C1|sec> as #sec, <!here> as @here,
// <url|label> as label, <url> as url), the three entities Slack escapes
// (&amp; &lt; &gt;) unescaped in one pass, then TermText. Formatting
// marks (*bold*, `code`) are left as they are for the caller.
func TermMrkdwn(s string) string {
	s = slackRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := slackRef.FindStringSubmatch(m)
		target, label := sub[1], sub[2]
		switch {
		case strings.HasPrefix(target, "@"):
			return "@" + strings.TrimPrefix(target, "@")
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			return "@" + target[1:]
		case label != "":
			return label
		}
		return target
	})
	return TermText(mrkdwnUnescaper.Replace(s))
}

// slackRef is a Slack mrkdwn reference: <@U…>, <#C…|name>, <!here>,
// <url|label> (docs.slack.dev/messaging/formatting-message-text).
var slackRef = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)

// mrkdwnUnescaper undoes mrkdwnEscaper.
var mrkdwnUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// TermJSON returns encoded JSON with every character that TermText would
// replace, and that encoding/json leaves as it is (DEL, C1 controls, U+FFFD
// from invalid UTF-8 is already escaped, invisible format characters such
// as bidi overrides), written as a \u escape instead: the document decodes
// to the very same values, and printing it shows no escape sequence. Such
// characters can only occur inside JSON strings, where \u escapes are
// valid.
func TermJSON(b []byte) []byte {
	if !strings.ContainsFunc(string(b), unsafeJSONRune) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if !unsafeJSONRune(r) {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// unsafeJSONRune is unsafeRune but for the line breaks and tabs that
// indented JSON holds between values (inside strings encoding/json
// escapes them).
func unsafeJSONRune(r rune) bool { return r != '\n' && r != '\t' && unsafeRune(r) }
