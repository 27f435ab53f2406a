// Package links finds the links in Slack messages, normalises them, and
// decides which may be sent to the analysis services.
//
// The entry point is Policy.Extract, which takes a decoded *slack.Msg (for a
// message_changed event, the new message) and returns the targets to scan,
// the links skipped with a reason, and how many were left out over the
// per-message cap. Set and SameLinks compare the links of two versions of a
// message, so that an edit that only adds unfurls does not trigger a scan.
// Defang and DefangTruncate make URLs safe to show in cards and logs.
//
// # Where links are found
//
//   - Message text: the "<url>" and "<url|label>" sequences Slack writes for
//     every link it renders, HTML-unescaped; the label is never scanned
//     (labels can lie). Mentions, mailto: and tel: are skipped silently.
//   - Blocks: link elements of rich_text blocks at any depth, plus mrkdwn
//     text and link buttons of section, context and actions blocks (app
//     messages).
//   - Legacy attachments: original_url, from_url, title_link, author_link,
//     link buttons, and links in pretext, text and field values; not
//     image_url, thumb_url or icons, which are previews Slack fetches.
//
// Bare URLs (not wrapped by Slack) are read only in text written by apps:
// attachment text, mrkdwn text objects, and message text when bot_id is set
// or the subtype is bot_message. In text typed by a person Slack wraps every
// link it makes clickable, so a bare URL there sits in a code span and is
// left alone, as are bare URLs inside backticks in app text. Defanged
// addresses (hxxp://, evil[.]com) are never links.
//
// # What is never sent to a service
//
// Links are skipped, each with a Reason and a Detail naming the rule and its
// source, when they are malformed, not http(s), point at a non-public IP
// address (every block of IANA's IPv4 and IPv6 special-purpose registries
// that is not globally reachable: loopback, RFC 1918, CGNAT, link-local,
// unique-local, documentation, benchmarking, reserved; and multicast —
// including numeric forms such as http://2130706433/ and
// http://0x7f.0.0.1/, which are read as browsers read them, and IPv6
// addresses that carry an IPv4 address: IPv4-mapped, NAT64, 6to4, Teredo),
// use a special-use or private name (localhost, .local, .internal,
// .home.arpa, .lan, .corp, …), have a single label, fall under a configured
// internal domain, or are allowlisted (Slack's own domains by default). The
// package resolves no DNS: a public name that resolves to a private address
// (such as 127.0.0.1.nip.io) is not detected.
//
// All functions are pure and safe for concurrent use; a Policy is immutable.
package links
