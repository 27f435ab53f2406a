package links

import (
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
// Format reference: notes/slack-platform.md §4.1 and Slack's "Formatting
// text for app surfaces" (docs.slack.dev/messaging/formatting-message-text).
func FromText(text string) []string {
	return appendText(nil, text)
}

// FromMrkdwn returns what FromText returns plus conservative bare URLs:
// "http://" or "https://" (any case) at a word start, outside code spans
// (`…`, ```…```), up to whitespace or one of < > " ` |, with trailing
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
//     element (never its text) and of date elements that carry one;
//   - section blocks: mrkdwn text and fields (FromMrkdwn) and a button
//     accessory's url;
//   - context blocks: mrkdwn text elements;
//   - actions blocks: link buttons' url.
//
// Unknown block and element types are ignored, as are image URLs (previews
// fetched by Slack, not links a reader follows), plain_text objects (never
// rendered as links), markdown blocks, and Slack-internal references (file,
// canvas, message and list mentions). URLs in blocks are not HTML-escaped.
func FromBlocks(blocks slack.Blocks) []string {
	return appendBlocks(nil, blocks.BlockSet)
}

// FromAttachments returns the link targets in legacy attachments, in order,
// per attachment: original_url, from_url (set by Slack on link unfurls),
// title_link, author_link, links in pretext, text and field values
// (FromMrkdwn), link buttons' url, and the attachment's blocks
// (FromBlocks). image_url, thumb_url and the icon fields are previews
// fetched by Slack, not links a reader follows, and are not returned;
// neither is fallback, a plain-text copy of the attachment.
// Field reference: slack-go v0.35.0 attachments.go; Slack's "Legacy
// secondary message attachments" reference.
func FromAttachments(atts []slack.Attachment) []string {
	return appendAttachments(nil, atts, true)
}

// Set returns the sorted, distinct links of a message as Normalize writes
// them (or as found, for links Normalize rejects), whatever a Policy would
// do with them. Link-unfurl attachments (those Slack adds with original_url,
// from_url or is_msg_unfurl set) are left out, so a message_changed event
// that only adds unfurls has the same Set as the message before it
// (notes/slack-platform.md pitfall 11). Compare with slices.Equal or
// SameLinks.
func Set(msg *slack.Msg) []string {
	if msg == nil {
		return nil
	}
	raws := appendMessage(nil, msg, false)
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

// SameLinks reports whether two versions of a message carry the same set of
// links (see Set): when it returns true, an edit needs no new scan.
func SameLinks(a, b *slack.Msg) bool {
	return slices.Equal(Set(a), Set(b))
}

// appendMessage appends the link targets of msg: text, then blocks, then
// attachments. Text from apps (bot_id set or subtype bot_message) is read as
// mrkdwn with bare URLs; text typed by people only for wrapped links.
func appendMessage(dst []string, msg *slack.Msg, unfurls bool) []string {
	if msg.BotID != "" || msg.SubType == "bot_message" {
		dst = appendMrkdwn(dst, msg.Text)
	} else {
		dst = appendText(dst, msg.Text)
	}
	dst = appendBlocks(dst, msg.Blocks.BlockSet)
	return appendAttachments(dst, msg.Attachments, unfurls)
}

func appendText(dst []string, s string) []string {
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
		dst = appendControl(dst, s[:j])
		s = s[j+1:]
	}
}

// appendControl handles the inside of one "<…>" sequence.
func appendControl(dst []string, inner string) []string {
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
	target, _, _ := strings.Cut(inner, "|")
	return appendTarget(dst, target, true)
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
	inCode := false
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '<':
			j := strings.IndexByte(s[i+1:], '>')
			if j < 0 {
				i++
				continue
			}
			dst = appendControl(dst, s[i+1:i+1+j])
			i += j + 2
		case c == '`':
			inCode = !inCode
			i++
		case (c == 'h' || c == 'H') && !inCode && (i == 0 || !isWordByte(s[i-1])):
			if n := bareURLLen(s[i:]); n > 0 {
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

// isWordByte reports whether c continues a word, so that "xhttps://" is
// not read as a URL; '_' and '*' are not, so mrkdwn _italic_ and *bold*
// URLs are.
func isWordByte(c byte) bool { return isAlpha(c) || isDigit(c) }

// bareURLLen returns the length of the bare http(s) URL s starts with, or 0.
func bareURLLen(s string) int {
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

func appendBlocks(dst []string, blocks []slack.Block) []string {
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.RichTextBlock:
			if b != nil {
				dst = appendRichText(dst, b.Elements)
			}
		case slack.RichTextBlock:
			dst = appendRichText(dst, b.Elements)
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
		}
	}
	return dst
}

func appendRichText(dst []string, elems []slack.RichTextElement) []string {
	for _, e := range elems {
		switch e := e.(type) {
		case *slack.RichTextSection:
			if e != nil {
				dst = appendRichSection(dst, e.Elements)
			}
		case slack.RichTextSection:
			dst = appendRichSection(dst, e.Elements)
		case *slack.RichTextList:
			if e != nil {
				dst = appendRichText(dst, e.Elements)
			}
		case slack.RichTextList:
			dst = appendRichText(dst, e.Elements)
		case *slack.RichTextQuote:
			if e != nil {
				dst = appendRichSection(dst, e.Elements)
			}
		case *slack.RichTextPreformatted:
			if e != nil {
				dst = appendRichSection(dst, e.Elements)
			}
		}
	}
	return dst
}

func appendRichSection(dst []string, elems []slack.RichTextSectionElement) []string {
	for _, e := range elems {
		switch e := e.(type) {
		case *slack.RichTextSectionLinkElement:
			if e != nil {
				dst = appendTarget(dst, e.URL, false)
			}
		case slack.RichTextSectionLinkElement:
			dst = appendTarget(dst, e.URL, false)
		case *slack.RichTextSectionDateElement:
			if e != nil && e.URL != nil {
				dst = appendTarget(dst, *e.URL, false)
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
	if s.Accessory != nil && s.Accessory.ButtonElement != nil {
		dst = appendTarget(dst, s.Accessory.ButtonElement.URL, false)
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
		if b, ok := e.(*slack.ButtonBlockElement); ok && b != nil {
			dst = appendTarget(dst, b.URL, false)
		}
	}
	return dst
}

// isUnfurl reports whether Slack added the attachment as a link or message
// preview. These fields are set by Slack, not by apps posting attachments.
func isUnfurl(a *slack.Attachment) bool {
	return a.OriginalURL != "" || a.FromURL != "" || a.IsMsgUnfurl
}

func appendAttachments(dst []string, atts []slack.Attachment, unfurls bool) []string {
	for i := range atts {
		a := &atts[i]
		if !unfurls && isUnfurl(a) {
			continue
		}
		dst = appendTarget(dst, a.OriginalURL, false)
		dst = appendTarget(dst, a.FromURL, false)
		dst = appendTarget(dst, a.TitleLink, false)
		dst = appendTarget(dst, a.AuthorLink, false)
		dst = appendMrkdwn(dst, a.Pretext)
		dst = appendMrkdwn(dst, a.Text)
		for _, f := range a.Fields {
			dst = appendMrkdwn(dst, f.Value)
		}
		for _, act := range a.Actions {
			dst = appendTarget(dst, act.URL, false)
		}
		dst = appendBlocks(dst, a.Blocks.BlockSet)
	}
	return dst
}
