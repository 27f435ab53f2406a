package links

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// richTextPair turns a fuzz input into the two forms in which Slack
// delivers what a person typed in the composer: the message text (mrkdwn
// with Slack's escapes) and the rich_text block of the same message.
//
// The input is cut at '\x00' into segments: even segments are plain text,
// odd ones are entities. An entity starting with '@' is a user mention,
// '#' a channel mention, '!' a broadcast (@here); any other entity is a
// link "url" or "url\x01label". For the text, plain text and labels get
// Slack's three escapes (& < >) and a link becomes "<url|label>" or
// "<url>"; for the rich_text block, plain text is a text element and a
// link a link element with the url and label unescaped.
//
// Two things Slack never produces are normalised away so that the
// comparison means something: a url without a scheme gets "http://" (the
// composer only makes links of addresses, and "<@…>" or "<!…>" in text
// would be a mention, not a link), and '|' is dropped from a url (in text
// it would end the target; Slack percent-encodes it).
func richTextPair(in string) (text string, blocks slack.Blocks) {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var b strings.Builder
	var elems []slack.RichTextSectionElement
	for i, seg := range strings.Split(in, "\x00") {
		if i%2 == 0 {
			if seg != "" {
				b.WriteString(esc.Replace(seg))
				elems = append(elems, slack.NewRichTextSectionTextElement(seg, nil))
			}
			continue
		}
		switch {
		case strings.HasPrefix(seg, "@"):
			b.WriteString("<@U0FUZZ>")
			elems = append(elems, slack.NewRichTextSectionUserElement("U0FUZZ", nil))
		case strings.HasPrefix(seg, "#"):
			b.WriteString("<#C0FUZZ|chan>")
			elems = append(elems, slack.NewRichTextSectionChannelElement("C0FUZZ", nil))
		case strings.HasPrefix(seg, "!"):
			b.WriteString("<!here>")
			elems = append(elems, slack.NewRichTextSectionBroadcastElement("here"))
		default:
			url, label, _ := strings.Cut(seg, "\x01")
			url = strings.ReplaceAll(url, "|", "")
			if schemeLen(url) == 0 {
				url = "http://" + url
			}
			b.WriteString("<" + esc.Replace(url))
			if label != "" {
				b.WriteString("|" + esc.Replace(label))
			}
			b.WriteString(">")
			elems = append(elems, slack.NewRichTextSectionLinkElement(url, label, nil))
		}
	}
	return b.String(), slack.Blocks{BlockSet: []slack.Block{slack.NewRichTextBlock("b", slack.NewRichTextSection(elems...))}}
}

// FuzzTextVsRichText is a differential target: for a message typed by a
// person, extracting its text alone and its rich_text block alone must
// give the same Result (targets with their Raw form, skipped links,
// left-out count) and the same Set. Text from apps is not compared: there
// bare URLs count, and rich_text text elements are never read for them.
func FuzzTextVsRichText(f *testing.F) {
	for _, s := range seeds {
		f.Add("see \x00" + s + "\x01label\x00 now")
	}
	f.Add("a & b < c\x00https://a.example/?x=1&y=<2>\x01l>a|b&amp;\x00\x00@\x00\x00#\x00\x00!\x00 end")
	f.Add("\x00 https://spaced.example/ \x00\x00https://slack-redir.net/link?url=http%3A%2F%2F10.0.0.1%2F\x00")
	f.Add("\x00&amp;lt;https://x.example/\x00\x00mailto:a@b.example\x00\x00hxxps://evil[.]example/\x00")
	p, err := NewPolicy(Config{MaxLinks: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		text, blocks := richTextPair(in)
		fromText := p.Extract(&slack.Msg{Text: text, User: "U1"})
		fromBlocks := p.Extract(&slack.Msg{Blocks: blocks, User: "U1"})
		if !reflect.DeepEqual(fromText, fromBlocks) {
			t.Fatalf("input %q\ntext %q\n  gives %+v\nrich_text gives %+v", in, text, fromText, fromBlocks)
		}
		checkResult(t, text, p, fromText)
		if a, b := Set(&slack.Msg{Text: text}, nil), Set(&slack.Msg{Blocks: blocks}, nil); !slices.Equal(a, b) {
			t.Fatalf("input %q: Set of text %q, of rich_text %q", in, a, b)
		}
	})
}
