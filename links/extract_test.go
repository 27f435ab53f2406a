package links

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// mustMsg decodes a message as Slack sends it in an event.
func mustMsg(tb testing.TB, js string) *slack.Msg {
	tb.Helper()
	var m slack.Msg
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		tb.Fatalf("decode message: %v\n%s", err, js)
	}
	return &m
}

// summary renders a Result compactly for comparison: targets as URLs,
// skipped as "reason URL".
func summary(r Result) (targets, skipped []string) {
	for _, t := range r.Targets {
		targets = append(targets, t.URL)
	}
	for _, s := range r.Skipped {
		skipped = append(skipped, string(s.Reason)+" "+s.URL)
	}
	return targets, skipped
}

func TestExtract(t *testing.T) {
	t.Parallel()
	policy, err := NewPolicy(Config{InternalDomains: []string{"corp.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		msg     string
		targets []string
		skipped []string
		leftOut int
	}{
		{
			name: "text link with label, &amp; in query, port, fragment; blocks repeat it",
			msg: `{"type":"message","user":"U01","ts":"1700000000.000100",
				"text":"see <https://Example.COM:443/a?x=1&amp;y=2#top|example.com/a> please",
				"blocks":[{"type":"rich_text","block_id":"b1","elements":[{"type":"rich_text_section","elements":[
					{"type":"text","text":"see "},
					{"type":"link","url":"https://Example.COM:443/a?x=1&y=2#top","text":"example.com/a"},
					{"type":"text","text":" please"}]}]}]}`,
			targets: []string{"https://example.com/a?x=1&y=2"},
		},
		{
			name: "label lies: the target is scanned, never the label",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"log in at <https://evil.example/login|https://bank.example/login>",
				"blocks":[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://evil.example/login","text":"https://bank.example/login"}]}]}]}`,
			targets: []string{"https://evil.example/login"},
		},
		{
			name: "mentions, mailto and tel are skipped silently",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<@U123> <#C123|general> <#C456> <!here> <!channel> <!subteam^S1|@team> <mailto:a@b.example|a@b.example> <MAILTO:x@y.example> <tel:+15551234|call> <!date^1392734382^{date_short}|Feb 18>"}`,
		},
		{
			name: "date with a link",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"meet <!date^1392734382^{date_short}^https://example.com/event|Feb 18, 2014>"}`,
			targets: []string{"https://example.com/event"},
		},
		{
			name: "rich text sections, nested lists, quotes, preformatted, unknown elements",
			msg: `{"type":"message","user":"U01","ts":"1.2","text":"",
				"blocks":[{"type":"rich_text","block_id":"x","elements":[
					{"type":"rich_text_list","style":"bullet","indent":0,"elements":[
						{"type":"rich_text_section","elements":[{"type":"link","url":"https://list.example/1"}]},
						{"type":"rich_text_list","style":"ordered","indent":1,"elements":[
							{"type":"rich_text_section","elements":[{"type":"link","url":"https://list.example/nested"}]}]}]},
					{"type":"rich_text_quote","elements":[{"type":"text","text":"q "},{"type":"link","url":"https://quote.example/"}]},
					{"type":"rich_text_preformatted","border":0,"elements":[{"type":"link","url":"https://pre.example/x"}]},
					{"type":"rich_text_future_thing","url":"https://unknown-element.example/"},
					{"type":"rich_text_section","elements":[
						{"type":"sparkle","url":"https://unknown-section-element.example/"},
						{"type":"emoji","name":"x","url":"https://emoji.example/x.png"},
						{"type":"user","user_id":"U1"},
						{"type":"date","timestamp":1392734382,"format":"{date}","url":"https://date.example/"},
						{"type":"text","text":"https://plain-text.example/ in a code span","style":{"code":true}}]}]},
					{"type":"some_new_block","url":"https://unknown-block.example/"}]}`,
			targets: []string{
				"https://list.example/1", "https://list.example/nested", "https://quote.example/",
				"https://pre.example/x", "https://date.example/",
				// A block type slack-go does not know is read for its "url"
				// keys (issue 10: a new block type must not hide a link).
				"https://unknown-block.example/",
			},
		},
		{
			name: "legacy attachments from an integration: fields scanned, previews not",
			msg: `{"type":"message","subtype":"bot_message","bot_id":"B01","username":"mailgw","ts":"1.2",
				"text":"New report",
				"attachments":[{"id":1,"fallback":"https://fallback.example/",
					"pretext":"From <https://pretext.example/p|the gateway>",
					"title":"Suspicious","title_link":"https://title.example/t",
					"author_name":"a","author_link":"https://author.example/",
					"author_icon":"https://icons.example/a.png",
					"text":"Body links: <https://text.example/a?b=1&amp;c=2|click>, bare https://bare.example/path. and (https://paren.example/x)",
					"fields":[{"title":"URL","value":"https://field.example/f","short":false}],
					"image_url":"https://images.example/i.png","thumb_url":"https://images.example/t.png",
					"footer":"f","footer_icon":"https://icons.example/f.png",
					"actions":[{"name":"open","text":"Open","type":"button","url":"https://button.example/"}]}]}`,
			targets: []string{
				"https://title.example/t", "https://author.example/", "https://pretext.example/p",
				"https://text.example/a?b=1&c=2", "https://bare.example/path", "https://paren.example/x",
				"https://field.example/f", "https://button.example/",
			},
		},
		{
			name: "unfurl attachment: original_url dedupes, title_link is scanned, image is not",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://short.example/abc>",
				"attachments":[{"id":1,"original_url":"https://short.example/abc","from_url":"https://short.example/abc",
					"title":"Landing","title_link":"https://landing.example/page",
					"service_name":"short.example","image_url":"https://landing.example/og.png","fallback":"Landing"}]}`,
			targets: []string{"https://short.example/abc", "https://landing.example/page"},
		},
		{
			name: "IDN hosts become punycode; look-alike letters map as a browser maps them",
			msg: `{"type":"message","user":"U01","ts":"1.2","text":"",
				"blocks":[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://BÜCHER.example/ä?q=ü"},
					{"type":"link","url":"https://пример.рф/"},
					{"type":"link","url":"https://ⓔⓥⓘⓛ.example/"}]}]}]}`,
			targets: []string{"https://xn--bcher-kva.example/%C3%A4?q=%C3%BC", "https://xn--e1afmkfd.xn--p1ai/", "https://evil.example/"},
		},
		{
			name: "ports: defaults dropped, others kept",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<http://example.com:80/a> <https://example.com:8443/b> <http://example.com:443/c> <https://example.com:/d> <https://example.com:0443/e>"}`,
			targets: []string{
				"http://example.com/a", "https://example.com:8443/b", "http://example.com:443/c",
				"https://example.com/d", "https://example.com/e",
			},
		},
		{
			name: "dedupe on the normalised form keeps the first-seen order and raw",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://b.example/> <https://a.example/x#one> <HTTPS://A.EXAMPLE/x#two> <https://a.example./x> <https://b.example>"}`,
			targets: []string{"https://b.example/", "https://a.example/x"},
		},
		{
			name: "uppercase scheme, path case kept, empty path",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<HTTPS://Example.com/Path/To?Q=A> <HtTp://example.org>"}`,
			targets: []string{"https://example.com/Path/To?Q=A", "http://example.org/"},
		},
		{
			name: "userinfo tricks: the host after @ is scanned",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<http://good.example@evil.example/login|http://good.example/login> <https://user:pass@creds.example/> <http://backslash.example\\@good.example/>",
				"blocks":[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"http://good.example@evil.example/login","text":"http://good.example/login"},{"type":"text","text":" "},
					{"type":"link","url":"https://user:pass@creds.example/"},{"type":"text","text":" "},
					{"type":"link","url":"http://backslash.example\\@good.example/"}]}]}]}`,
			targets: []string{"http://evil.example/login", "https://creds.example/", "http://backslash.example/@good.example/"},
		},
		{
			name: "every skip reason",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://files.slack.com/files-pri/T1-F1/x.png> <https://app.slack.com/client/T1> <http://10.1.2.3/> <http://localhost:8080/> <http://jira/browse/X-1> <https://wiki.corp.example.com/page> <http://example.com:99999/> <http://[::1/> <ftp://files.example.com/x.zip> <https://ok.example/>"}`,
			targets: []string{"https://ok.example/"},
			skipped: []string{
				"allowlisted https://files.slack.com/files-pri/T1-F1/x.png",
				"allowlisted https://app.slack.com/client/T1",
				"private_address http://10.1.2.3/",
				"internal_name http://localhost:8080/",
				"single_label http://jira/browse/X-1",
				"internal_domain https://wiki.corp.example.com/page",
				"malformed http://example.com:99999/",
				"malformed http://[::1/",
				"unsupported_scheme ftp://files.example.com/x.zip",
			},
		},
		{
			name: "private and reserved addresses, including numeric tricks",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<http://127.0.0.1/> <http://2130706433/> <http://0x7f.0.0.1/> <http://0177.0.0.1/> <http://127.1/> <http://0/> <http://172.16.5.4/> <http://192.168.1.1/> <http://100.64.0.1/> <http://169.254.169.254/latest/meta-data/> <http://[::1]/> <http://[::]/> <http://[fe80::1]/> <http://[fd00::1]/> <http://[::ffff:7f00:1]/> <http://[::127.0.0.1]/> <http://[64:ff9b::a00:1]/> <http://[2002:c0a8:101::1]/> <http://224.0.0.1/> <http://8.8.8.8/> <http://[2001:4860:4860::8888]/>"}`,
			targets: []string{"http://8.8.8.8/", "http://[2001:4860:4860::8888]/"},
			skipped: []string{
				"private_address http://127.0.0.1/",
				"private_address http://0.0.0.0/",
				"private_address http://172.16.5.4/",
				"private_address http://192.168.1.1/",
				"private_address http://100.64.0.1/",
				"private_address http://169.254.169.254/latest/meta-data/",
				"private_address http://[::1]/",
				"private_address http://[::]/",
				"private_address http://[fe80::1]/",
				"private_address http://[fd00::1]/",
				"private_address http://[::ffff:7f00:1]/",
				"private_address http://[::7f00:1]/",
				"private_address http://[64:ff9b::a00:1]/",
				"private_address http://[2002:c0a8:101::1]/",
				"private_address http://224.0.0.1/",
			},
		},
		{
			name: "internal names",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<http://LOCALHOST./> <http://app.localhost/> <http://nas.local/> <http://svc.internal/> <http://printer.home.arpa/> <http://router.lan/> <http://dc1.corp/> <http://x.test/> <http://corp.example/> <http://internal.example.com/>"}`,
			// .test and .example are scanned: the simulator's sentinel hosts are .test.
			targets: []string{"http://x.test/", "http://corp.example/", "http://internal.example.com/"},
			skipped: []string{
				"internal_name http://localhost/",
				"internal_name http://app.localhost/",
				"internal_name http://nas.local/",
				"internal_name http://svc.internal/",
				"internal_name http://printer.home.arpa/",
				"internal_name http://router.lan/",
				"internal_name http://dc1.corp/",
			},
		},
		{
			name: "defanged indicators are not links",
			msg: `{"type":"message","subtype":"bot_message","bot_id":"B01","ts":"1.2",
				"text":"IOC: hxxps://evil[.]example/x and https://evil[.]example/y and <hxxp://evil.example/z> and <https://evil(.)example/>"}`,
		},
		{
			name: "bot text: bare URLs scanned outside code spans",
			msg: `{"type":"message","subtype":"bot_message","bot_id":"B01","ts":"1.2",
				"text":"Alert: https://evil.example/a?b=1&amp;c=2, also <https://wrapped.example/|label https://label.example/> but not ` + "`https://code.example/`" + ` or xhttps://glued.example/"}`,
			targets: []string{"https://evil.example/a?b=1&c=2", "https://wrapped.example/"},
		},
		{
			name: "person's text: bare URLs (in code spans) are not scanned",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"run ` + "`curl https://code.example/install.sh`" + ` and see <https://docs.example/>"}`,
			targets: []string{"https://docs.example/"},
		},
		{
			name: "Slack redirector is unwrapped",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://slack-redir.net/link?url=https%3A%2F%2Fevil.example%2Fpayload&amp;v=3>"}`,
			targets: []string{"https://evil.example/payload"},
			skipped: []string{"allowlisted https://slack-redir.net/link?url=https%3A%2F%2Fevil.example%2Fpayload&v=3"},
		},
		{
			name: "Slack redirector: a bad query pair does not hide the destination",
			msg: `{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://slack-redir.net/link?x=%zz&amp;url=http%3A%2F%2F10.0.0.1%2F>"}`,
			skipped: []string{
				"allowlisted https://slack-redir.net/link?x=%zz&url=http%3A%2F%2F10.0.0.1%2F",
				"private_address http://10.0.0.1/",
			},
		},
		{
			name: "app blocks: section mrkdwn, fields, button accessory, context, actions; not plain_text or images",
			msg: `{"type":"message","bot_id":"B01","app_id":"A01","ts":"1.2","text":"fallback",
				"blocks":[
					{"type":"section","text":{"type":"mrkdwn","text":"*Report* <https://section.example/|here> and https://bare-section.example/"},
						"fields":[{"type":"mrkdwn","text":"<https://field-block.example/>"},{"type":"plain_text","text":"https://plain.example/"}],
						"accessory":{"type":"button","text":{"type":"plain_text","text":"Open"},"url":"https://accessory.example/","action_id":"a"}},
					{"type":"context","elements":[{"type":"mrkdwn","text":"via <https://context.example/>"},{"type":"image","image_url":"https://img.example/x.png","alt_text":"x"}]},
					{"type":"actions","elements":[{"type":"button","text":{"type":"plain_text","text":"Go"},"url":"https://action.example/","action_id":"b"}]},
					{"type":"image","image_url":"https://img.example/y.png","alt_text":"y"}]}`,
			targets: []string{
				"https://section.example/", "https://bare-section.example/", "https://field-block.example/",
				"https://accessory.example/", "https://context.example/", "https://action.example/",
			},
		},
		{
			name: "no links",
			msg:  `{"type":"message","user":"U01","ts":"1.2","text":"just words, a <b> &lt;tag&gt; and example.com"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := policy.Extract(mustMsg(t, tc.msg))
			targets, skipped := summary(res)
			if !slices.Equal(targets, tc.targets) {
				t.Errorf("targets:\n got %q\nwant %q", targets, tc.targets)
			}
			if !slices.Equal(skipped, tc.skipped) {
				t.Errorf("skipped:\n got %q\nwant %q", skipped, tc.skipped)
			}
			if res.LeftOut != tc.leftOut {
				t.Errorf("LeftOut = %d, want %d", res.LeftOut, tc.leftOut)
			}
			for _, s := range res.Skipped {
				if s.Detail == "" {
					t.Errorf("skipped %q has no detail", s.URL)
				}
			}
		})
	}
}

func TestExtractTargetFields(t *testing.T) {
	t.Parallel()
	msg := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2",
		"text":"<HTTPS://Good.Example@EVIL.example:443/a?b=1&amp;c=2#f|https://good.example/>"}`)
	res := (*Policy)(nil).Extract(msg)
	want := []Target{{
		URL:    "https://evil.example/a?b=1&c=2",
		Raw:    "HTTPS://Good.Example@EVIL.example:443/a?b=1&c=2#f",
		Host:   "evil.example",
		Labels: []string{"https://good.example/"},
	}}
	if !reflect.DeepEqual(res.Targets, want) {
		t.Errorf("Targets = %+v, want %+v", res.Targets, want)
	}

	msg = mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"<http://[2001:DB8::1]:8080/> <http://[2606:4700::1111]:8080/>"}`)
	res = (*Policy)(nil).Extract(msg)
	if len(res.Targets) != 1 || res.Targets[0].Host != "2606:4700::1111" || res.Targets[0].URL != "http://[2606:4700::1111]:8080/" {
		t.Errorf("IPv6 target = %+v", res.Targets)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Detail != "2001:db8::/32 is reserved for documentation (RFC 3849)" {
		t.Errorf("IPv6 skipped = %+v", res.Skipped)
	}
}

func TestExtractMaxLinks(t *testing.T) {
	t.Parallel()
	const n = DefaultMaxLinks + 10
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<https://site%d.example/> <http://10.0.%d.%d/> ", i, i/200, i%200)
	}
	b.WriteString("<https://site0.example/#again>")
	msg := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"`+b.String()+`"}`)

	for _, tc := range []struct {
		max, targets, leftOut int
	}{
		{max: 0, targets: DefaultMaxLinks, leftOut: n - DefaultMaxLinks},
		{max: 3, targets: 3, leftOut: n - 3},
		{max: n, targets: n, leftOut: 0},
		{max: MaxMaxLinks, targets: n, leftOut: 0},
	} {
		p, err := NewPolicy(Config{MaxLinks: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		res := p.Extract(msg)
		if len(res.Targets) != tc.targets || res.LeftOut != tc.leftOut {
			t.Errorf("MaxLinks %d: %d targets, %d left out; want %d, %d", tc.max, len(res.Targets), res.LeftOut, tc.targets, tc.leftOut)
		}
		if len(res.Skipped) != n {
			t.Errorf("MaxLinks %d: %d skipped, want all %d private links (not capped)", tc.max, len(res.Skipped), n)
		}
		if len(res.Targets) > 0 && res.Targets[0].URL != "https://site0.example/" {
			t.Errorf("MaxLinks %d: first target %q, want first-seen order", tc.max, res.Targets[0].URL)
		}
	}
}

func TestExtractRedirectorNesting(t *testing.T) {
	t.Parallel()
	u := "https://evil.example/deep"
	for range maxUnwrapDepth + 2 {
		u = "https://slack-redir.net/link?url=" + url.QueryEscape(u)
	}
	res := (*Policy)(nil).Extract(mustMsg(t, `{"type":"message","user":"U1","ts":"1.2","text":"<`+u+`>"}`))
	if len(res.Targets) != 0 || len(res.Skipped) != maxUnwrapDepth+1 {
		t.Errorf("nested redirector: %d targets, %d skipped; want 0, %d", len(res.Targets), len(res.Skipped), maxUnwrapDepth+1)
	}
	for _, s := range res.Skipped {
		if s.Reason != ReasonAllowlisted {
			t.Errorf("skipped %+v", s)
		}
	}
}

func TestExtractNil(t *testing.T) {
	t.Parallel()
	var p *Policy
	if res := p.Extract(nil); len(res.Targets)+len(res.Skipped)+res.LeftOut != 0 {
		t.Errorf("Extract(nil) = %+v", res)
	}
	if got := p.MaxLinks(); got != DefaultMaxLinks {
		t.Errorf("nil policy MaxLinks = %d", got)
	}
}

func TestFromText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"<https://a.example/>", []string{"https://a.example/"}},
		{"x <https://a.example/?q=1&amp;r=&lt;2&gt;|label> y", []string{"https://a.example/?q=1&r=<2>"}},
		{"&amp;amp; <https://a.example/?x=&amp;lt;>", []string{"https://a.example/?x=&lt;"}},
		{"<https://a.example/?copy=1&amp;copy=2>", []string{"https://a.example/?copy=1&copy=2"}},
		{"<ftp://a.example/f>", []string{"ftp://a.example/f"}},
		{"<javascript:alert(1)|x>", []string{"javascript:alert(1)"}},
		{"<mailto:a@b.example> <tel:123> <@U1|bob> <#C1> <!everyone>", nil},
		{"<www.example.com> <|x> <>", nil},
		{"unclosed <https://a.example/", nil},
		{"<<https://inner.example/>", []string{"https://inner.example/"}},
		{"bare https://bare.example/ is not wrapped", nil},
		{"<hxxps://a.example/> <https://a[.]example/> <https://a[dot]example/> <https://ok.example/x[.]y>", []string{"https://ok.example/x[.]y"}},
	}
	for _, tc := range tests {
		if got := FromText(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("FromText(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestFromMrkdwn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"see https://a.example/x.", []string{"https://a.example/x"}},
		{"(https://a.example/wiki/Foo_(bar))", []string{"https://a.example/wiki/Foo_(bar)"}},
		{"*https://bold.example/* _https://it.example/_ ~https://st.example/~", []string{"https://bold.example/", "https://it.example/", "https://st.example/"}},
		{"HTTPS://UP.example/ and http://x.example/a,b", []string{"HTTPS://UP.example/", "http://x.example/a,b"}},
		{"a https://q.example/?a=1&amp;b=2&gt; b", []string{"https://q.example/?a=1&b=2"}},
		{"https:// alone, http://", nil},
		{"```\nhttps://block.example/\n``` after https://after.example/", []string{"https://after.example/"}},
		{"<https://w.example/|https://label.example/>", []string{"https://w.example/"}},
		{"nbsp https://n.example/\u00a0next", []string{"https://n.example/"}},
		{"[https://x.example/a]", []string{"https://x.example/a"}},
		{"wordhttps://glued.example/ 1https://digit.example/", nil},
		{"\"https://quoted.example/\"", []string{"https://quoted.example/"}},
		{"https://evil[.]example/ hxxps://evil.example/", nil},
	}
	for _, tc := range tests {
		if got := FromMrkdwn(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("FromMrkdwn(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestFromBlocksProgrammatic(t *testing.T) {
	t.Parallel()
	// Blocks built with slack-go's constructors (pointer and value forms),
	// as a caller or another package's test might.
	date := "https://date.example/"
	blocks := slack.Blocks{BlockSet: []slack.Block{
		slack.NewRichTextBlock("b",
			slack.NewRichTextSection(
				slack.NewRichTextSectionLinkElement("https://ptr.example/", "label", nil),
				slack.RichTextSectionLinkElement{Type: slack.RTSELink, URL: "https://val.example/"},
				slack.NewRichTextSectionDateElement(0, "{date}", &date, nil),
			),
			slack.NewRichTextList(slack.RTEListBullet, 0, slack.RichTextSection{
				Elements: []slack.RichTextSectionElement{slack.NewRichTextSectionLinkElement("https://list.example/", "", nil)},
			}),
			&slack.RichTextQuote{Elements: []slack.RichTextSectionElement{slack.NewRichTextSectionLinkElement("https://quote.example/", "", nil)}},
			(*slack.RichTextSection)(nil),
		),
		slack.RichTextBlock{Elements: []slack.RichTextElement{slack.NewRichTextSection(slack.NewRichTextSectionLinkElement("https://valblock.example/", "", nil))}},
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "<https://sec.example/>", false, false), nil,
			slack.NewAccessory(slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, "x", false, false)).WithURL("https://btn.example/"))),
		(*slack.SectionBlock)(nil),
		(*slack.ActionBlock)(nil),
		slack.NewDividerBlock(),
		nil,
	}}
	want := []string{
		"https://ptr.example/", "https://val.example/", "https://date.example/", "https://list.example/",
		"https://quote.example/", "https://valblock.example/", "https://sec.example/", "https://btn.example/",
	}
	if got := FromBlocks(blocks); !slices.Equal(got, want) {
		t.Errorf("FromBlocks = %q, want %q", got, want)
	}
}

func TestFromAttachments(t *testing.T) {
	t.Parallel()
	atts := []slack.Attachment{{
		OriginalURL: "https://orig.example/",
		FromURL:     "https://from.example/",
		TitleLink:   "https://title.example/",
		ImageURL:    "https://image.example/i.png",
		ThumbURL:    "https://image.example/t.png",
		Text:        "see https://text.example/",
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewRichTextBlock("b", slack.NewRichTextSection(
			slack.NewRichTextSectionLinkElement("https://att-block.example/", "", nil)))}},
	}}
	want := []string{"https://orig.example/", "https://from.example/", "https://title.example/", "https://text.example/", "https://att-block.example/"}
	if got := FromAttachments(atts); !slices.Equal(got, want) {
		t.Errorf("FromAttachments = %q, want %q", got, want)
	}
}

func TestSetAndSameLinks(t *testing.T) {
	t.Parallel()
	// A message as first posted, then the message_changed events Slack
	// sends when it adds an unfurl (event.message), then a real edit.
	posted := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2",
		"text":"<https://short.example/abc> and <https://Other.example/#x|other>",
		"blocks":[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
			{"type":"link","url":"https://short.example/abc"},{"type":"text","text":" and "},
			{"type":"link","url":"https://Other.example/#x","text":"other"}]}]}]}`)
	unfurled := func(titleLink string) *slack.Msg {
		var changed struct {
			Message *slack.Msg `json:"message"`
		}
		err := json.Unmarshal([]byte(`{"type":"message","subtype":"message_changed","hidden":true,"channel":"C1","ts":"1.3",
			"message":{"type":"message","user":"U01","ts":"1.2",
				"text":"<https://short.example/abc> and <https://Other.example/#x|other>",
				"attachments":[{"id":1,"original_url":"https://short.example/abc","from_url":"https://short.example/abc",
					"title_link":"`+titleLink+`","title":"Landing","image_url":"https://landing.example/og.png"}]},
			"previous_message":{"type":"message","user":"U01","ts":"1.2","text":"<https://short.example/abc> and <https://Other.example/#x|other>"}}`), &changed)
		if err != nil {
			t.Fatal(err)
		}
		return changed.Message
	}
	edited := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","edited":{"user":"U01","ts":"1.4"},
		"text":"<https://short.example/abc> and <https://another.example/>"}`)

	wantSet := []string{"https://other.example/", "https://short.example/abc"}
	if got := Set(posted, nil); !slices.Equal(got, wantSet) {
		t.Errorf("Set(posted) = %q, want %q", got, wantSet)
	}
	if same := unfurled("https://short.example/abc"); !SameLinks(posted, nil, same, nil) {
		t.Errorf("unfurl of the message's own link: SameLinks = false; sets %q vs %q", Set(posted, nil), Set(same, nil))
	}
	// The preview's title opens https://landing.example/page, a link the
	// message did not carry, clickable from now on: a change (the old Set
	// left every unfurl out, and with it this link, unscanned).
	if SameLinks(posted, nil, unfurled("https://landing.example/page"), nil) {
		t.Error("unfurl whose title_link is another address: SameLinks = true")
	}
	if SameLinks(posted, nil, edited, nil) {
		t.Error("real edit: SameLinks = true")
	}
	// Set covers links a policy would skip, and malformed ones as found.
	m := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"<http://10.0.0.1/> <http://bad:port/> <ftp://x.example/>"}`)
	wantSet = []string{"ftp://x.example/", "http://10.0.0.1/", "http://bad:port/"}
	if got := Set(m, nil); !slices.Equal(got, wantSet) {
		t.Errorf("Set = %q, want %q", got, wantSet)
	}
	if Set(nil, nil) != nil {
		t.Error("Set(nil) != nil")
	}
}

// TestExtractPaddingDoesNotPushALinkOut: the cap counts distinct links as
// they will be sent. Repeats of one link in any spelling that normalises
// the same (case, default port, fragment, a dot at the end of the host),
// allowlisted and private links, and (with StripQuery) query variants of
// one link, however many, never push a later link past MaxLinks.
func TestExtractPaddingDoesNotPushALinkOut(t *testing.T) {
	t.Parallel()
	const max = 5
	var b strings.Builder
	for i := range 3 * max {
		fmt.Fprintf(&b, "<https://pad.example/a> <HTTPS://PAD.EXAMPLE:443/a#%d> <https://pad.example./a> ", i)
		fmt.Fprintf(&b, "<https://files.slack.com/f%d> <https://docs.corp.example.net/%d> <http://10.9.8.%d/> ", i, i, i)
		fmt.Fprintf(&b, "<https://track.example/c?id=%d> ", i) // one link as sent with strip, many without
	}
	b.WriteString("<https://login.phish.example/verify>")
	msg := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"`+b.String()+`"}`)

	p, err := NewPolicy(Config{MaxLinks: max, InternalDomains: []string{"corp.example.net"}, StripQuery: true})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Extract(msg)
	got := make([]string, 0, len(res.Targets))
	for _, tg := range res.Targets {
		got = append(got, tg.URL)
	}
	want := []string{"https://pad.example/a", "https://track.example/c", "https://login.phish.example/verify"}
	if !slices.Equal(got, want) || res.LeftOut != 0 {
		t.Fatalf("targets %q, %d left out; want %q and none left out", got, res.LeftOut, want)
	}
	if !res.Targets[1].QueryDropped || res.Targets[0].QueryDropped {
		t.Errorf("QueryDropped: %+v", res.Targets)
	}

	// Without StripQuery each query is a link of its own: the cap is
	// reached, and what it leaves out is counted, never dropped silently.
	keep, err := NewPolicy(Config{MaxLinks: max, InternalDomains: []string{"corp.example.net"}})
	if err != nil {
		t.Fatal(err)
	}
	res = keep.Extract(msg)
	if len(res.Targets) != max || res.LeftOut != 3*max+2-max {
		t.Fatalf("keep: %d targets, %d left out; want %d and %d", len(res.Targets), res.LeftOut, max, 3*max+2-max)
	}
}
