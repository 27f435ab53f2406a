package links

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// FromText returns the targets of the links Slack wrapped in message text,
// in order: "<url>" and "<url|label>" give url (never the label, which can
// show a different address), and "<!date^ts^format^url|fallback>" gives
// url. The HTML entities Slack escapes in text (&amp; &lt; &gt;) are
// unescaped after extraction.
//
// Skipped silently: user, channel and special mentions (<@U…>, <#C…>, <!…>),
// mailto: and tel: links, defanged addresses (hxxp://, evil[.]com) and
// sequences without a scheme. Other schemes (ftp:, file:, …) are returned so
// that Extract can report them. Bare URLs that Slack did not wrap are not
// returned: in text typed by a person Slack wraps every address it makes
// clickable, so an unwrapped one sits in a code span; see FromMrkdwn.
//
// Format reference: Slack's "Formatting text for app surfaces"
// (docs.slack.dev/messaging/formatting-message-text).
func FromText(text string) []string {
	return appendText(nil, text, nil)
}

// FromMrkdwn returns what FromText returns plus conservative bare URLs:
// "http://" or "https://" (any case) at a word start, outside code spans
// (`…`, ```…```, paired as codeEnd describes: a backtick Slack leaves
// literal does not start code), up to whitespace or one of < > " ` |, with trailing
// punctuation (. , : ; ! ? ' * _ ~ and unbalanced closing brackets) removed.
// It is for text written by apps, where Slack renders unwrapped addresses as
// links: bot message text, attachment text, pretext and field values, and
// mrkdwn text objects in section and context blocks.
func FromMrkdwn(text string) []string {
	return appendMrkdwn(nil, text)
}

// FromBlocks returns the link targets in Block Kit blocks, in order:
//
//   - rich_text (and rich_text_input) blocks, including sections, lists,
//     quotes and preformatted elements, at any depth: the url of every link
//     element (never its text), of date elements that carry one, and of
//     citation, attachment_mention and work_object_mention elements;
//   - section blocks: mrkdwn text and fields (FromMrkdwn), a button
//     accessory's url and an overflow accessory's options' url;
//   - context blocks: mrkdwn text elements;
//   - actions blocks: link buttons' url and overflow options' url;
//   - video blocks: title_url and video_url;
//   - markdown blocks: standard markdown links, autolinks and bare URLs;
//   - call blocks: join_url; table blocks: rich_text cells;
//   - block types slack-go does not know: strings under "url" and
//     "title_url" keys.
//
// Image URLs (previews fetched by Slack, not links a reader follows),
// plain_text objects (never rendered as links), input blocks and
// Slack-internal references (file, canvas, message and list mentions) are
// not read; doc.go lists every field. URLs in blocks are not HTML-escaped.
func FromBlocks(blocks slack.Blocks) []string {
	return appendBlocks(nil, blocks.BlockSet, nil)
}

// FromAttachments returns the link targets in legacy attachments, in order,
// per attachment: original_url, from_url (set by Slack on link unfurls),
// title_link, author_link, links in author_name, pretext, text, field
// titles and values and footer (FromMrkdwn), link buttons' url, and the
// attachment's blocks (FromBlocks). image_url, thumb_url and the icon
// fields are previews fetched by Slack, not links a reader follows, and are
// not returned; neither is fallback, a plain-text copy of the attachment,
// nor title, plain text that only title_link turns into a link.
// Shared-message blocks (message_blocks) are not in slack.Attachment: see
// SharedBlocks and Policy.ExtractRaw.
// Field reference: slack-go v0.35.0 attachments.go; Slack's "Legacy
// secondary message attachments" reference.
func FromAttachments(atts []slack.Attachment) []string {
	return appendAttachments(nil, atts, nil)
}

// Set returns the sorted, distinct links of a message as Normalize writes
// them (or as found, for links Normalize rejects), whatever a Policy would
// do with them. It reads exactly what Policy.ExtractRaw reads, from the
// same arguments: the text (unless the message has blocks), the blocks,
// and every attachment (link and message unfurls included) with the
// blocks of the messages they share, read from rawMsg (see SharedBlocks;
// rawMsg may be nil only for a message known to have no message_blocks).
// Order, repeats and spellings that normalise alike do not change it.
// Compare with SameLinks.
func Set(msg *slack.Msg, rawMsg []byte) []string {
	if msg == nil {
		return nil
	}
	var buf [16]string
	raws := appendMessage(buf[:0], msg, SharedBlocks(rawMsg), nil)
	out := make([]string, 0, len(raws))
	for _, raw := range raws {
		if u, err := parse(raw); err == nil {
			out = append(out, u.url)
		} else {
			out = append(out, raw)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SameLinks reports whether two versions of a message carry the same set
// of links (see Set): when it returns true, an edit needs no new scan.
// prev and msg are the versions decoded, rawPrev and rawMsg their JSON as
// Slack sent it (for message_changed: the event's "previous_message" and
// "message" members), so that both are read in full, the same way, shared
// messages' blocks included. An unfurl Slack adds is a change when it
// carries a link the message did not (a message link's shared blocks, a
// preview's title_link to another address), and none when it only repeats
// the message's own links. Likewise an edit that adds, removes or changes
// a link anywhere is a change, and one that only moves, repeats or
// respaces links is not.
func SameLinks(prev *slack.Msg, rawPrev []byte, msg *slack.Msg, rawMsg []byte) bool {
	return slices.Equal(Set(prev, rawPrev), Set(msg, rawMsg))
}

// appendMessage appends the link targets of msg: text, then blocks, then
// attachments. When the message has blocks, its text is the notification
// fallback, which Slack does not show in the conversation, and is not
// read (doc.go). Text from apps (bot_id set or subtype bot_message) is
// read as mrkdwn with bare URLs; text typed by people only for wrapped
// links. shared holds, per attachment, the blocks of the messages it
// shares (see SharedBlocks); it may be nil. When lb is not nil it
// collects the labels people wrote for the links (see Target.Labels):
// those of the text's "<url|label>" sequences and of the rich_text link
// elements of a message not written by an app; never those of
// attachments, shared messages or other blocks.
func appendMessage(dst []string, msg *slack.Msg, shared [][]slack.Blocks, lb *labels) []string {
	app := msg.BotID != "" || msg.SubType == "bot_message"
	if app {
		lb = nil
	}
	switch {
	case len(msg.Blocks.BlockSet) > 0:
		// text is the fallback for notifications: not shown, not clickable.
	case app:
		dst = appendMrkdwn(dst, msg.Text)
	default:
		dst = appendText(dst, msg.Text, lb)
	}
	dst = appendBlocks(dst, msg.Blocks.BlockSet, lb)
	return appendAttachments(dst, msg.Attachments, shared)
}

// MaxLabels is the most labels kept per target (Target.Labels), and
// MaxLabelLen the most bytes kept of each: a link is rarely shown under
// more than one or two labels, and a label that long is a sentence, not
// an address; the caps bound what one message can make the bot hold.
const (
	MaxLabels   = 4
	MaxLabelLen = 200
)

// rawLabel is a label written for the link at index i of the list
// appendMessage builds.
type rawLabel struct {
	i     int
	label string
}

// labels collects rawLabels in index order. A nil *labels collects
// nothing, so that the readers that only want links (Set, FromText,
// FromBlocks, attachments) pay one nil check per link.
type labels struct{ list []rawLabel }

// add records label for the link appendTarget appended to dst, if it
// appended one (len(dst) > before). The label is trimmed and cut to
// MaxLabelLen bytes on a UTF-8 boundary; an empty one is dropped.
func (lb *labels) add(dst []string, before int, label string) {
	if lb == nil || len(dst) == before {
		return
	}
	label = strings.TrimSpace(label)
	if len(label) > MaxLabelLen {
		n := MaxLabelLen
		for n > 0 && !utf8.RuneStart(label[n]) {
			n--
		}
		label = strings.TrimSpace(label[:n])
	}
	if label == "" {
		return
	}
	lb.list = append(lb.list, rawLabel{i: len(dst) - 1, label: label})
}

// SharedBlocks returns the blocks of the messages that the attachments of a
// message share, indexed like the message's attachments: for a shared or
// forwarded message and for a message link unfurl, Slack sends them as
// attachments[i].message_blocks[j].message.blocks, which slack-go's
// Attachment type does not decode. rawMsg is the message's JSON as Slack
// sent it (the event itself for a new message, its "message" member for
// message_changed). It returns nil when rawMsg has no message_blocks, so
// the usual message costs one byte search. A block that does not decode
// is replaced by a rich_text block holding the links found in its JSON
// under "url" keys, so that a block type slack-go does not know cannot
// hide a link.
func SharedBlocks(rawMsg []byte) [][]slack.Blocks {
	if !bytes.Contains(rawMsg, []byte(`"message_blocks"`)) {
		return nil
	}
	var shape struct {
		Attachments []struct {
			MessageBlocks []struct {
				Message struct {
					Blocks []json.RawMessage `json:"blocks"`
				} `json:"message"`
			} `json:"message_blocks"`
		} `json:"attachments"`
	}
	if json.Unmarshal(rawMsg, &shape) != nil {
		return nil
	}
	var out [][]slack.Blocks
	for i, a := range shape.Attachments {
		for _, mb := range a.MessageBlocks {
			var bs slack.Blocks
			for _, rb := range mb.Message.Blocks {
				var one slack.Blocks
				if err := json.Unmarshal(append(append([]byte{'['}, rb...), ']'), &one); err == nil {
					bs.BlockSet = append(bs.BlockSet, one.BlockSet...)
					continue
				}
				bs.BlockSet = append(bs.BlockSet, urlsBlock(rb))
			}
			if len(bs.BlockSet) == 0 {
				continue
			}
			for len(out) <= i {
				out = append(out, nil)
			}
			out[i] = append(out[i], bs)
		}
	}
	return out
}

// urlsBlock returns a rich_text block with a link element for every
// string appendURLKeys finds in raw.
func urlsBlock(raw []byte) *slack.RichTextBlock {
	var elems []slack.RichTextSectionElement
	for _, u := range appendURLKeys(nil, raw) {
		elems = append(elems, &slack.RichTextSectionLinkElement{Type: slack.RTSELink, URL: u})
	}
	return slack.NewRichTextBlock("", slack.NewRichTextSection(elems...))
}

// appendURLKeys appends, in document order, every string value under a
// "url" or "title_url" key at any depth of the JSON in raw: the links of a
// block type this package does not know (slack.UnknownBlock) or that does
// not decode. Image fields (image_url, icon_url, …) are not read.
func appendURLKeys(dst []string, raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct{ obj, wantKey bool }
	var stack []frame
	key := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return dst
		}
		top := len(stack) - 1
		inObj := top >= 0 && stack[top].obj
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if inObj {
					stack[top].wantKey = true
				}
				stack = append(stack, frame{obj: d == '{', wantKey: true})
			default:
				stack = stack[:top]
			}
			continue
		}
		if inObj && stack[top].wantKey {
			key, _ = tok.(string)
			stack[top].wantKey = false
			continue
		}
		if v, ok := tok.(string); ok && inObj && (key == "url" || key == "title_url") {
			dst = appendTarget(dst, v, false)
		}
		if inObj {
			stack[top].wantKey = true
		}
	}
}

func appendText(dst []string, s string, lb *labels) []string {
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			return dst
		}
		s = s[i+1:]
		j := strings.IndexByte(s, '>')
		if j < 0 {
			return dst
		}
		dst = appendControl(dst, s[:j], lb)
		s = s[j+1:]
	}
}

// appendControl handles the inside of one "<…>" sequence; lb, when not
// nil, collects the label of a "<url|label>" (HTML-unescaped, as the url).
func appendControl(dst []string, inner string, lb *labels) []string {
	// Slack escapes a literal '<', so a second one means junk before the
	// real sequence; keep the innermost.
	if k := strings.LastIndexByte(inner, '<'); k >= 0 {
		inner = inner[k+1:]
	}
	if inner == "" {
		return dst
	}
	switch inner[0] {
	case '@', '#': // <@U123>, <#C123|name>
		return dst
	case '!':
		// <!here>, <!subteam^S1>, … and <!date^ts^format^optional_link|fallback>.
		if rest, ok := strings.CutPrefix(inner, "!date^"); ok {
			rest, _, _ = strings.Cut(rest, "|")
			if parts := strings.SplitN(rest, "^", 3); len(parts) == 3 {
				return appendTarget(dst, parts[2], true)
			}
		}
		return dst
	}
	target, label, ok := strings.Cut(inner, "|")
	n := len(dst)
	dst = appendTarget(dst, target, true)
	if ok && lb != nil {
		lb.add(dst, n, unescapeEntities(label))
	}
	return dst
}

// appendTarget appends t unless it has no scheme, is mailto: or tel:, or is
// defanged.
func appendTarget(dst []string, t string, escaped bool) []string {
	t = strings.TrimSpace(t)
	if escaped {
		t = unescapeEntities(t)
	}
	n := schemeLen(t)
	if n == 0 {
		return dst
	}
	scheme := t[:n]
	if strings.EqualFold(scheme, "mailto") || strings.EqualFold(scheme, "tel") {
		return dst
	}
	if defanged(scheme, t[n+1:]) {
		return dst
	}
	return append(dst, t)
}

// defanged reports whether a link was deliberately broken, as analysts do
// to share indicators (hxxp://evil[.]com): a hxxp/hxxps/fxp scheme, or a
// marker such as [.] (.) {.} [dot] [:] in the host part. Markers in the path
// do not count, or "https://evil.com/x[.]y" would escape scanning.
func defanged(scheme, rest string) bool {
	switch strings.ToLower(scheme) {
	case "hxxp", "hxxps", "hxp", "hxps", "fxp", "fxps":
		return true
	}
	rest = strings.TrimLeft(rest, `/\`)
	if i := strings.IndexAny(rest, `/\?#`); i >= 0 {
		rest = rest[:i]
	}
	if !strings.ContainsAny(rest, "[({") {
		return false
	}
	rest = strings.ToLower(rest)
	for _, m := range [...]string{"[.]", "(.)", "{.}", "[dot]", "(dot)", "{dot}", "[:]"} {
		if strings.Contains(rest, m) {
			return true
		}
	}
	return false
}

// unescapeEntities reverses the only three escapes Slack applies to text
// (&amp; &lt; &gt;), in one pass so "&amp;lt;" becomes "&lt;". It does not
// decode other entities: "&copy=1" in a query must stay as is.
func unescapeEntities(s string) string {
	if strings.IndexByte(s, '&') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '&' {
			switch rest := s[i:]; {
			case strings.HasPrefix(rest, "&amp;"):
				b.WriteByte('&')
				i += len("&amp;") - 1
				continue
			case strings.HasPrefix(rest, "&lt;"):
				b.WriteByte('<')
				i += len("&lt;") - 1
				continue
			case strings.HasPrefix(rest, "&gt;"):
				b.WriteByte('>')
				i += len("&gt;") - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func appendMrkdwn(dst []string, s string) []string {
	return scanText(dst, s, false)
}

// appendMarkdown reads a markdown block's text (standard markdown, as
// Slack's markdown block renders it): inline links "[t](u)" and
// "[t](<u>)" give u, autolinks "<u>" give u, bare http(s) URLs are read as
// in mrkdwn; code spans (a run of n backticks closed by the next run of
// exactly n) and fenced blocks are skipped. Labels of inline links are
// text: a URL written in a label is read as a bare URL too.
func appendMarkdown(dst []string, s string) []string {
	return scanText(dst, s, true)
}

// scanText is the mrkdwn (markdown false) and markdown scanner behind
// appendMrkdwn and appendMarkdown: "<…>" sequences anywhere, bare URLs
// outside code. What is code follows codeEnd; anything it does not
// recognise as code is read, so that a stray backtick cannot hide a link.
func scanText(dst []string, s string, markdown bool) []string {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '<':
			j := strings.IndexByte(s[i+1:], '>')
			if j < 0 {
				i++
				continue
			}
			dst = appendControl(dst, s[i+1:i+1+j], nil)
			i += j + 2
		case c == '`':
			if end := codeEnd(s, i, markdown); end > i {
				i = end
				continue
			}
			// Not code: skip the whole run of backticks.
			for i < len(s) && s[i] == '`' {
				i++
			}
		case markdown && c == ']' && i+1 < len(s) && s[i+1] == '(':
			n, dest, angle := linkDestination(s[i+2:])
			if !angle {
				dst = appendTarget(dst, dest, false)
			} else {
				dst = appendControl(dst, dest, nil)
			}
			i += 2 + n
		case (c == 'h' || c == 'H') && (i == 0 || !isWordByte(s[i-1])):
			if n := bareURLLen(s[i:], markdown); n > 0 {
				dst = appendTarget(dst, s[i:i+n], true)
				i += n
				continue
			}
			i++
		default:
			i++
		}
	}
	return dst
}

// codeEnd returns the index just past the code span or block that the
// backtick at s[i] opens, or i when it opens none. The rules are a
// conservative reading of how Slack renders code (only what it surely
// shows as code is skipped; when in doubt the text is read):
//
// mrkdwn (message text, attachments, mrkdwn text objects):
//   - "```" opens a preformatted block closed by the next "```", across
//     lines; without a closing "```" the backticks are literal;
//   - otherwise a single "`" opens an inline span only at a word start
//     (not after a letter or digit, so "Don`t" is literal) and only if a
//     later "`" on the same line, not followed by a letter or digit,
//     closes it with something in between; inline spans never cross a
//     line break.
//
// markdown blocks (CommonMark): a run of n backticks is closed by the next
// run of exactly n backticks, not across a blank line (a paragraph
// break); without one the run is literal.
func codeEnd(s string, i int, markdown bool) int {
	run := 0
	for i+run < len(s) && s[i+run] == '`' {
		run++
	}
	if markdown {
		rest := s[i+run:]
		for off := 0; off < len(rest); {
			k := strings.IndexByte(rest[off:], '`')
			if k < 0 {
				return i
			}
			if strings.Contains(rest[off:off+k], "\n\n") {
				return i
			}
			start := off + k
			n := 0
			for start+n < len(rest) && rest[start+n] == '`' {
				n++
			}
			if n == run {
				return i + run + start + n
			}
			off = start + n
		}
		return i
	}
	if run >= 3 {
		if k := strings.Index(s[i+3:], "```"); k >= 0 {
			end := i + 3 + k + 3
			for end < len(s) && s[end] == '`' { // "````" closes too
				end++
			}
			return end
		}
		return i
	}
	if run != 1 || (i > 0 && isWordByte(s[i-1])) {
		return i
	}
	line := s[i+1:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	k := strings.IndexByte(line, '`')
	if k <= 0 {
		return i
	}
	if after := i + 1 + k + 1; after < len(s) && isWordByte(s[after]) {
		return i
	}
	return i + 1 + k + 1
}

// linkDestination reads the destination of a markdown inline link, s
// being what follows "](": "<u>" (angle true, dest without the brackets) or
// u up to whitespace or an unbalanced ")". n is how much of s it used.
func linkDestination(s string) (n int, dest string, angle bool) {
	if strings.HasPrefix(s, "<") {
		if j := strings.IndexAny(s[1:], ">\n"); j >= 0 && s[1+j] == '>' {
			return j + 2, s[1 : 1+j], true
		}
		return 0, "", false
	}
	depth := 0
	for n = 0; n < len(s); n++ {
		c := s[n]
		if c <= ' ' || c == 0x7f {
			break
		}
		if c == '(' {
			depth++
		} else if c == ')' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	return n, s[:n], false
}

// isWordByte reports whether c continues a word, so that "xhttps://" is
// not read as a URL; '_' and '*' are not, so mrkdwn _italic_ and *bold*
// URLs are.
func isWordByte(c byte) bool { return isAlpha(c) || isDigit(c) }

// bareURLLen returns the length of the bare http(s) URL s starts with, or 0.
// In markdown, "](" also ends it: "[https://a.example](https://b.example)"
// is a label and a destination, not one URL.
func bareURLLen(s string, markdown bool) int {
	var n int
	switch {
	case len(s) >= 8 && strings.EqualFold(s[:8], "https://"):
		n = 8
	case len(s) >= 7 && strings.EqualFold(s[:7], "http://"):
		n = 7
	default:
		return 0
	}
	end := n
scan:
	for end < len(s) {
		c := s[end]
		switch {
		case c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '"' || c == '`' || c == '|':
			break scan
		case c == '&' && (strings.HasPrefix(s[end:], "&gt;") || strings.HasPrefix(s[end:], "&lt;")):
			break scan
		case markdown && c == ']' && end+1 < len(s) && s[end+1] == '(':
			break scan
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[end:])
			if unicode.IsSpace(r) {
				break scan
			}
			end += size
		default:
			end++
		}
	}
	u := s[:end]
	for len(u) > n {
		switch u[len(u)-1] {
		case '.', ',', ':', ';', '!', '?', '\'', '*', '_', '~':
			u = u[:len(u)-1]
			continue
		case ')':
			if strings.Count(u, "(") < strings.Count(u, ")") {
				u = u[:len(u)-1]
				continue
			}
		case ']':
			if strings.Count(u, "[") < strings.Count(u, "]") {
				u = u[:len(u)-1]
				continue
			}
		case '}':
			if strings.Count(u, "{") < strings.Count(u, "}") {
				u = u[:len(u)-1]
				continue
			}
		}
		break
	}
	if len(u) == n {
		return 0
	}
	return len(u)
}

// appendBlocks appends the links of blocks; lb, when not nil, collects the
// labels of rich_text blocks' link elements (the blocks of a person's
// message: see appendMessage).
func appendBlocks(dst []string, blocks []slack.Block, lb *labels) []string {
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.RichTextBlock:
			if b != nil {
				dst = appendRichText(dst, b.Elements, lb)
			}
		case slack.RichTextBlock:
			dst = appendRichText(dst, b.Elements, lb)
		case *slack.SectionBlock:
			if b != nil {
				dst = appendSection(dst, b)
			}
		case slack.SectionBlock:
			dst = appendSection(dst, &b)
		case *slack.ContextBlock:
			if b != nil {
				dst = appendMixed(dst, b.ContextElements.Elements)
			}
		case slack.ContextBlock:
			dst = appendMixed(dst, b.ContextElements.Elements)
		case *slack.ActionBlock:
			if b != nil && b.Elements != nil {
				dst = appendElements(dst, b.Elements.ElementSet)
			}
		case slack.ActionBlock:
			if b.Elements != nil {
				dst = appendElements(dst, b.Elements.ElementSet)
			}
		case *slack.VideoBlock:
			if b != nil {
				dst = appendTarget(dst, b.TitleURL, false)
				dst = appendTarget(dst, b.VideoURL, false)
			}
		case *slack.MarkdownBlock:
			if b != nil {
				dst = appendMarkdown(dst, b.Text)
			}
		case *slack.CallBlock:
			if b != nil && b.Call != nil && b.Call.V1 != nil {
				dst = appendTarget(dst, b.Call.V1.JoinURL, false)
			}
		case *slack.TableBlock:
			if b != nil {
				dst = appendTable(dst, b.Rows)
			}
		case *slack.UnknownBlock:
			if b != nil {
				if raw, err := b.MarshalJSON(); err == nil {
					dst = appendURLKeys(dst, raw)
				}
			}
		}
	}
	return dst
}

func appendTable(dst []string, rows [][]slack.TableCell) []string {
	for _, row := range rows {
		for _, c := range row {
			switch c := c.(type) {
			case *slack.TableRichTextCell:
				if c != nil {
					dst = appendRichText(dst, c.Elements, nil)
				}
			case slack.TableRichTextCell:
				dst = appendRichText(dst, c.Elements, nil)
			}
		}
	}
	return dst
}

func appendRichText(dst []string, elems []slack.RichTextElement, lb *labels) []string {
	for _, e := range elems {
		switch e := e.(type) {
		case *slack.RichTextSection:
			if e != nil {
				dst = appendRichSection(dst, e.Elements, lb)
			}
		case slack.RichTextSection:
			dst = appendRichSection(dst, e.Elements, lb)
		case *slack.RichTextList:
			if e != nil {
				dst = appendRichText(dst, e.Elements, lb)
			}
		case slack.RichTextList:
			dst = appendRichText(dst, e.Elements, lb)
		case *slack.RichTextQuote:
			if e != nil {
				dst = appendRichSection(dst, e.Elements, lb)
			}
		case *slack.RichTextPreformatted:
			if e != nil {
				dst = appendRichSection(dst, e.Elements, lb)
			}
		}
	}
	return dst
}

// appendRichSection appends the links of rich text elements; lb, when not
// nil, collects the text (the visible label) of link elements.
func appendRichSection(dst []string, elems []slack.RichTextSectionElement, lb *labels) []string {
	for _, e := range elems {
		switch e := e.(type) {
		case *slack.RichTextSectionLinkElement:
			if e != nil {
				n := len(dst)
				dst = appendTarget(dst, e.URL, false)
				lb.add(dst, n, e.Text)
			}
		case slack.RichTextSectionLinkElement:
			n := len(dst)
			dst = appendTarget(dst, e.URL, false)
			lb.add(dst, n, e.Text)
		case *slack.RichTextSectionDateElement:
			if e != nil && e.URL != nil {
				dst = appendTarget(dst, *e.URL, false)
			}
		case *slack.RichTextSectionCitationElement:
			if e != nil {
				dst = appendTarget(dst, e.URL, false)
			}
		case *slack.RichTextSectionAttachmentMentionElement:
			if e != nil {
				dst = appendTarget(dst, e.URL, false)
			}
		case *slack.RichTextSectionWorkObjectMentionElement:
			if e != nil {
				dst = appendTarget(dst, e.URL, false)
			}
		}
	}
	return dst
}

func appendSection(dst []string, s *slack.SectionBlock) []string {
	dst = appendTextObject(dst, s.Text)
	for _, f := range s.Fields {
		dst = appendTextObject(dst, f)
	}
	if a := s.Accessory; a != nil {
		if a.ButtonElement != nil {
			dst = appendTarget(dst, a.ButtonElement.URL, false)
		}
		dst = appendOverflow(dst, a.OverflowElement)
	}
	return dst
}

// appendOverflow appends the url of an overflow menu's options: Slack opens
// it in the reader's browser when the option is chosen.
func appendOverflow(dst []string, o *slack.OverflowBlockElement) []string {
	if o == nil {
		return dst
	}
	for _, opt := range o.Options {
		if opt != nil {
			dst = appendTarget(dst, opt.URL, false)
		}
	}
	return dst
}

func appendTextObject(dst []string, t *slack.TextBlockObject) []string {
	if t == nil || t.Type != slack.MarkdownType {
		return dst
	}
	return appendMrkdwn(dst, t.Text)
}

func appendMixed(dst []string, elems []slack.MixedElement) []string {
	for _, e := range elems {
		if t, ok := e.(*slack.TextBlockObject); ok {
			dst = appendTextObject(dst, t)
		}
	}
	return dst
}

func appendElements(dst []string, elems []slack.BlockElement) []string {
	for _, e := range elems {
		switch e := e.(type) {
		case *slack.ButtonBlockElement:
			if e != nil {
				dst = appendTarget(dst, e.URL, false)
			}
		case *slack.OverflowBlockElement:
			dst = appendOverflow(dst, e)
		}
	}
	return dst
}

func appendAttachments(dst []string, atts []slack.Attachment, shared [][]slack.Blocks) []string {
	for i := range atts {
		a := &atts[i]
		dst = appendTarget(dst, a.OriginalURL, false)
		dst = appendTarget(dst, a.FromURL, false)
		dst = appendTarget(dst, a.TitleLink, false)
		dst = appendTarget(dst, a.AuthorLink, false)
		dst = appendMrkdwn(dst, a.AuthorName)
		// a.Title is plain text: only title_link (read above) makes it a link.
		dst = appendMrkdwn(dst, a.Pretext)
		dst = appendMrkdwn(dst, a.Text)
		for _, f := range a.Fields {
			dst = appendMrkdwn(dst, f.Title)
			dst = appendMrkdwn(dst, f.Value)
		}
		dst = appendMrkdwn(dst, a.Footer)
		for _, act := range a.Actions {
			dst = appendTarget(dst, act.URL, false)
		}
		dst = appendBlocks(dst, a.Blocks.BlockSet, nil)
		if i < len(shared) {
			for _, bs := range shared[i] {
				dst = appendBlocks(dst, bs.BlockSet, nil)
			}
		}
	}
	return dst
}
