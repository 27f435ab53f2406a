package notify

import "strings"

// This file is the bot's one escaping helper for mrkdwn that holds outside
// text: a service's fields (statuses, families, file types, messages, task
// ids), what people wrote (URLs, file names, command words), Slack's own
// error codes. Cards use it through the mrkdwn markup; every other answer
// (the /scan commands, the App Home, recheck replies, quarantine's notices)
// calls these functions. Each one sanitizes (no control or invisible
// characters, one line), defangs, clips and escapes, in that order (see
// format.go).
//
// Slack's rules (docs.slack.dev/messaging/formatting-message-text,
// "Escaping text"): &, < and > are control characters everywhere, code
// spans included, and must be sent as &amp;, &lt; and &gt;; an unescaped
// "<!channel>" or "<https://x|label>" is a mention or a link. A code span
// ends at the next backtick, so a backtick inside one (a URL's query may
// hold one) is shown as "ˋ" (U+02CB), never sent as is.

// Escape escapes &, < and > in s, and nothing else: for text that is
// already known to be printable (our own words around a value, a
// sentence built from escaped pieces must not go through it twice).
func Escape(s string) string { return escapeMrkdwn(s) }

// Prose is untrusted prose for mrkdwn outside a code span (a service's
// status or message, a person's words): sanitized to one line, URLs and
// host names defanged, cut to about limit characters (counted escaped),
// backticks shown as "ˋ" (a lone one would pair with the next code span's
// and turn the answer inside out), and escaped, so it can never form a
// mention, a link, an entity or a code span.
func Prose(s string, limit int) string {
	return escapeMrkdwn(strings.ReplaceAll(showText(s, limit), "`", "ˋ"))
}

// Code is an untrusted literal (a task id, a hash, a file name or type, a
// domain, a word someone typed) as a code span: sanitized, links in it
// defanged, cut in the middle to about limit characters, backticks shown
// as "ˋ", escaped. An empty s is "(empty)".
func Code(s string, limit int) string { return mrkdwn{}.code(showLiteral(s, limit, true)) }

// CodeURL is an untrusted URL as a code span: sanitized, defanged (so
// Slack links nothing), cut in the middle to about limit characters,
// backticks shown as "ˋ", escaped.
func CodeURL(u string, limit int) string { return mrkdwn{}.code(showURL(u, limit)) }

// Mention is a Slack user id (U…, W…) as a mention, "someone" for none,
// and anything else (a damaged record) as escaped text: an id from
// outside can never become <!channel> or a link.
func Mention(id string) string { return mrkdwn{}.user(id) }
