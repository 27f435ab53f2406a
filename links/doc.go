// Package links finds the links in Slack messages, normalises them, and
// decides which may be sent to the analysis services.
//
// The entry point is Policy.Extract (or ExtractRaw, which also takes the
// message's JSON for the fields slack-go drops), which takes a decoded
// *slack.Msg (for a message_changed event, the new message) and returns the targets to scan,
// the links skipped with a reason, and how many were left out over the
// per-message cap. Set and SameLinks compare the links of two versions of a
// message, so that an edit (or an unfurl Slack adds) is scanned when it
// changes them and only then.
// Defang, DefangTruncate, DefangLinks and DefangText make URLs and untrusted
// text safe to show in cards and logs; they are the bot's only defanger.
// Policy.ClassifyArg reads an argument typed on a command line (`verdictbot
// check`'s) as a link, a file path or a bare name (arg.go).
//
// # Where links are found
//
// Field references: Block Kit (docs.slack.dev/reference/block-kit/blocks,
// …/block-elements, …/composition-objects), "Legacy secondary message
// attachments" (docs.slack.dev/messaging/formatting-message-text#attachments,
// api.slack.com/reference/messaging/attachments), slack-go v0.35.0 types.
// "mrkdwn" below means the FromMrkdwn reading: "<url>" sequences plus bare
// http(s) URLs outside code.
//
// Read:
//   - Message text: the "<url>" and "<url|label>" sequences Slack writes
//     for every link it renders, HTML-unescaped; the label is never scanned
//     (labels can lie), only collected (see "Labels" below). Mentions,
//     mailto: and tel: are skipped silently.
//     Text from apps (bot_id set or subtype bot_message) is read as mrkdwn.
//     Only when the message has no blocks: see "Fallback text" below.
//   - rich_text blocks (and rich_text_input, and rich_text cells of table
//     blocks), in sections, lists, quotes and preformatted elements at any
//     depth: url of link, date, citation, attachment_mention and
//     work_object_mention elements.
//   - section: mrkdwn text and fields; accessory button url and overflow
//     options' url.
//   - context: mrkdwn text elements.
//   - actions: button url and overflow options' url.
//   - video: title_url and video_url (the player the reader's client loads).
//   - markdown: standard markdown, with inline links "[t](u)" and
//     "[t](<u>)", autolinks "<u>" and bare http(s) URLs outside code spans
//     and fences (labels are read as text).
//   - call: call.v1.join_url.
//   - Block types slack-go does not know (slack.UnknownBlock): every string
//     under a "url" or "title_url" key, at any depth.
//   - Legacy attachments: original_url, from_url, title_link, author_link,
//     url of link buttons (actions), blocks; as mrkdwn: author_name,
//     pretext, text, fields' title and value, footer.
//   - Shared messages (forwards and message-link unfurls):
//     attachments[].message_blocks[].message.blocks, which slack-go does not
//     decode, read from the message JSON by ExtractRaw (SharedBlocks); a
//     block that fails to decode is read for its "url" keys.
//
// Skipped on purpose:
//   - image_url, thumb_url, author_icon, footer_icon, service_icon, image
//     blocks' image_url and slack_file, image elements, video
//     thumbnail_url and provider_icon_url, rich_text emoji url: images that
//     Slack fetches and proxies itself; the reader never opens them.
//   - plain_text objects (header text, image and video titles, button and
//     option text, labels, hints, placeholders, confirm dialogs, alt_text):
//     Slack renders them as text, never as links.
//   - The text of a message that has blocks: see "Fallback text" below.
//   - Attachment title: "Large title text near the top of the attachment",
//     plain text; title_link is "A valid URL that turns the title text into
//     a hyperlink" (Slack's attachment reference, as in @slack/types
//     message-attachments.d.ts), and is read: the title that looks like
//     a URL ("https://x.example/") is text, the link is title_link.
//   - Attachment fallback: a plain-text copy for notifications, not rendered
//     with links; attachment app_unfurl_url and preview: Slack sets them
//     for app unfurls of a link the message already carries.
//   - call desktop_app_join_url: a custom scheme (app launcher), not a web
//     link; input blocks and their elements (url_text_input initial_value,
//     select menus' options, which only carry a url in overflow menus):
//     form fields, not links; file blocks: a Slack-hosted remote file, no
//     URL in the block (files are scanned as files).
//   - rich_text canvas, file, list_record, message_mention and
//     workflow_mention urls: Slack-internal references.
//
// # Labels
//
// A link's visible label can claim another address than the one it opens
// ("<https://login-okta.evil.test/|https://okta.com/login>"), so each
// Target carries the labels people wrote for it (Target.Labels), for the
// local signals (package signals) to compare: the label of "<url|label>"
// in the text of a message without blocks, and the text of rich_text link
// elements, at any depth. Labels are collected, never scanned, and read
// only from what a person wrote: not from the messages of apps (bot_id set
// or subtype bot_message), attachments (link and message unfurls
// included), shared messages' blocks, section, context or markdown
// blocks, or tables, which apps write (an app's tracking redirect under
// the address it leads to is routine, not a lie). A label does not change
// which links are read, scanned or compared: Set and SameLinks ignore
// labels, so an edit that only changes a label is not a change of links.
//
// # Fallback text
//
// A message's top-level text is what Slack shows only when the message has
// no blocks. With blocks, the blocks are the message and the text is the
// fallback for notifications: "If you are [using blocks], this is used as
// a fallback string to display in notifications. If you aren't, this is
// the main body text of the message" (the message payload's text field,
// api.slack.com/reference/messaging/payload; see also "Formatting text for
// app surfaces", docs.slack.dev/messaging/formatting-message-text), and
// "If attachments or blocks are included, text will be used as fallback
// text for notifications only" (chat.postMessage's text argument,
// api.slack.com/methods/chat.postMessage, now
// docs.slack.dev/reference/methods/chat.postMessage). A URL in it is
// neither shown in the conversation nor clickable there, so it is not one
// of the message's links and is not scanned: an app or a crafted payload
// can put any address in the fallback, and sending it to a service would
// be an over-scan (a private address leaving, a card listing a link nobody
// can click). Messages typed in a Slack client carry a rich_text block
// with the same links as their text, so nothing a reader sees is lost. A
// message with no blocks ("blocks": [] or none) is read from its text,
// also when it has attachments: Slack shows that text above them, and
// reading it costs at most an over-scan where skipping it could miss a
// link shown.
//
// Code: bare URLs are not read inside code, but only what Slack surely
// renders as code counts as code, so a stray backtick cannot hide a link.
// In mrkdwn, "```" opens a block closed by the next "```" (across lines),
// and a single "`" at a word start opens an inline span closed by the next
// "`" on the same line that is not followed by a letter or digit; anything
// else (an unclosed fence, "Don`t", a span left open at a line end) is
// literal. In markdown blocks a run of n backticks is closed by the next run
// of exactly n, not across a blank line. "<url>" sequences are read
// everywhere.
//
// In text typed by a person Slack wraps every link it makes clickable, so a
// bare URL there is not a link and is left alone. Defanged addresses
// (hxxp://, evil[.]com) are never links.
//
// # Edits
//
// Slack sends an edit, and also the unfurls it adds after posting, as a
// message_changed event carrying the new message and the previous one.
// Set, which edit detection compares (SameLinks), reads exactly what
// ExtractRaw reads, from the same arguments: both versions are read in
// full from the event's JSON, unfurls and their shared-message blocks
// included. An unfurl is therefore a change when it brings a link the
// message did not carry (a permalink's preview showing the shared
// message's links, clickable in this channel from then on; a link
// preview whose title_link is another address), and no change when it only
// repeats the message's own links, as a link preview does (original_url,
// from_url and title_link the link itself). Set is sorted, distinct and
// normalised, so an edit that only reorders, repeats or respaces links, or
// changes the fallback text of a message with blocks, is no change.
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
// internal domain, or are allowlisted (Slack's own domains by default).
// Public names known to answer with a private address are judged without a
// lookup (ReasonResolvesPrivate): localtest.me, lvh.me and the like, and
// IP-echo services such as 10.0.0.1.nip.io or app-10-0-0-1.sslip.io
// (dnsnames.go).
//
// Policy resolves no DNS and all its functions are pure and safe for
// concurrent use; a Policy is immutable. Other names that resolve only to
// private addresses (jira.corp.example.com → 10.x) are found by
// HostResolver, which the scan pipeline calls right before submission,
// never on the ack path (resolve.go).
package links
