package links

import (
	"reflect"
	"strings"
	"testing"
)

// TestLabels: Target.Labels holds the labels people wrote for a link
// (issue 26, item 1): the label of "<url|label>" in the text of a message
// without blocks and the text of rich_text link elements, at any depth;
// never what an app wrote (a bot's message, attachments, unfurls, shared
// messages). The payloads are written as Slack sends them in a message
// event.
func TestLabels(t *testing.T) {
	t.Parallel()
	type want map[string][]string // target URL → labels (nil: none)
	tests := []struct {
		name  string
		event string
		want  want
	}{
		{
			name: "message without blocks: the label of <url|label>, HTML-unescaped",
			event: `{"type":"message","user":"U0MALLORY","channel":"C0SEC","channel_type":"channel","ts":"1700000200.000100","team":"T01",
				"text":"Please re-login: <https://login-okta.evil.test/|https://okta.com/login> and <https://evil.test/b?x=1&amp;y=2|a &amp; b &lt;c&gt;>"}`,
			want: want{
				"https://login-okta.evil.test/": {"https://okta.com/login"},
				"https://evil.test/b?x=1&y=2":   {"a & b <c>"},
			},
		},
		{
			name: "a person's message typed in a client: rich_text link text, in a list and a quote",
			event: `{"type":"message","user":"U0MALLORY","client_msg_id":"0b9f7c1e-2d4a-4e1b-8f6c-3a5d7e9b1c20","channel":"C0SEC","channel_type":"channel",
				"ts":"1700000200.000200","team":"T01","text":"fallback <https://fallback.evil.test/|okta.com>",
				"blocks":[{"type":"rich_text","block_id":"Lb1","elements":[
					{"type":"rich_text_section","elements":[{"type":"text","text":"sign in at "},{"type":"link","url":"https://evil.test/x","text":"okta.com"}]},
					{"type":"rich_text_list","style":"bullet","indent":0,"elements":[
						{"type":"rich_text_section","elements":[{"type":"link","url":"https://evil.test/list","text":"www.paypal.com/signin","style":{"bold":true}}]}]},
					{"type":"rich_text_quote","elements":[{"type":"link","url":"https://evil.test/quote","text":"  github.com  "}]},
					{"type":"rich_text_preformatted","elements":[{"type":"link","url":"https://plain.example/"}]}]}]}`,
			want: want{
				"https://evil.test/x":     {"okta.com"},
				"https://evil.test/list":  {"www.paypal.com/signin"},
				"https://evil.test/quote": {"github.com"},
				"https://plain.example/":  nil,
			},
		},
		{
			name: "an app's message (bot_id): no labels from its section mrkdwn or its rich_text",
			event: botEvent("fallback", "", `[
				{"type":"section","block_id":"s","text":{"type":"mrkdwn","text":"Reset at <https://evil.test/reset|https://okta.com/reset>"}},
				{"type":"rich_text","block_id":"r","elements":[{"type":"rich_text_section","elements":[{"type":"link","url":"https://evil.test/rt","text":"okta.com"}]}]}]`),
			want: want{"https://evil.test/reset": nil, "https://evil.test/rt": nil},
		},
		{
			name:  "an app's message without blocks: no labels from its text",
			event: botEvent("Reset at <https://evil.test/reset|okta.com>", "", ""),
			want:  want{"https://evil.test/reset": nil},
		},
		{
			name: "a bot_message without bot_id (a legacy webhook): no labels",
			event: `{"type":"message","subtype":"bot_message","username":"hook","channel":"C0SEC","ts":"1700000200.000250",
				"text":"<https://evil.test/hook|okta.com>"}`,
			want: want{"https://evil.test/hook": nil},
		},
		{
			name: "an unfurl and a shared message in a person's message: only the person's label",
			event: `{"type":"message","user":"U0MALLORY","client_msg_id":"7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6","channel":"C0SEC","channel_type":"channel",
				"ts":"1700000200.000300","team":"T01","text":"<https://evil.test/u|okta.com>",
				"blocks":[{"type":"rich_text","block_id":"Lb2","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://evil.test/u","text":"okta.com"}]}]}],
				"attachments":[
					{"id":1,"service_name":"evil.test","title":"Okta sign in","title_link":"https://evil.test/title",
						"text":"Sign in to <https://evil.test/att|okta.com>","fallback":"evil.test: Okta sign in",
						"original_url":"https://evil.test/u","from_url":"https://evil.test/u",
						"blocks":[{"type":"rich_text","block_id":"a","elements":[{"type":"rich_text_section","elements":[
							{"type":"link","url":"https://evil.test/attblock","text":"okta.com"}]}]}]},
					{"ts":"1700000050.000200","channel_id":"C0OTHER","channel_team":"T01","is_msg_unfurl":true,"is_share":true,"id":2,
						"from_url":"https://acme.slack.com/archives/C0OTHER/p1700000050000200","fallback":"[shared]",
						"message_blocks":[{"team":"T01","channel":"C0OTHER","ts":"1700000050.000200","message":{"blocks":[
							{"type":"rich_text","block_id":"Ab3","elements":[{"type":"rich_text_section","elements":[
								{"type":"link","url":"https://evil.test/shared","text":"okta.com"}]}]}]}}]}]}`,
			want: want{
				"https://evil.test/u":        {"okta.com"},
				"https://evil.test/title":    nil,
				"https://evil.test/att":      nil,
				"https://evil.test/attblock": nil,
				"https://evil.test/shared":   nil,
			},
		},
		{
			name: "one link under several labels: distinct, first-seen order, at most MaxLabels",
			event: `{"type":"message","user":"U0MALLORY","channel":"C0SEC","ts":"1700000200.000400",
				"text":"<https://evil.test/m|okta.com> <https://EVIL.test/m|okta.com> <https://evil.test/m#x|paypal.com> <https://evil.test/m> <https://evil.test/m|a> <https://evil.test/m|b> <https://evil.test/m|c> <https://evil.test/m|  >"}`,
			want: want{"https://evil.test/m": {"okta.com", "paypal.com", "a", "b"}},
		},
		{
			name: "a link through Slack's redirector: the destination carries the label",
			event: `{"type":"message","user":"U0MALLORY","channel":"C0SEC","ts":"1700000200.000500",
				"text":"<https://slack-redir.net/link?url=https%3A%2F%2Fevil.test%2Fr|okta.com>"}`,
			want: want{"https://evil.test/r": {"okta.com"}},
		},
		{
			name: "labels of a skipped link are dropped",
			event: `{"type":"message","user":"U0MALLORY","channel":"C0SEC","ts":"1700000200.000600",
				"text":"<http://10.0.0.1/|okta.com> <https://evil.test/ok|github.com>"}`,
			want: want{"https://evil.test/ok": {"github.com"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, raw := decodeEvent(t, tc.event)
			res := (*Policy)(nil).ExtractRaw(msg, raw)
			got := want{}
			for _, tg := range res.Targets {
				got[tg.URL] = tg.Labels
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("labels by target:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestLabelsWithStripQuery: links merged once their query is stripped
// keep the labels of both.
func TestLabelsWithStripQuery(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(Config{StripQuery: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"<https://evil.test/p?a=1|okta.com> <https://evil.test/p?a=2|paypal.com> <https://evil.test/p?a=1|again>"}`)
	res := p.Extract(msg)
	if len(res.Targets) != 1 || !reflect.DeepEqual(res.Targets[0].Labels, []string{"okta.com", "paypal.com", "again"}) {
		t.Errorf("Targets = %+v", res.Targets)
	}
}

// TestLabelTruncated: a label is cut to MaxLabelLen bytes without
// splitting a character.
func TestLabelTruncated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxLabelLen-1) + "é" + "tail"
	msg := mustMsg(t, `{"type":"message","user":"U01","ts":"1.2","text":"<https://evil.test/|`+long+`>"}`)
	res := (*Policy)(nil).Extract(msg)
	if len(res.Targets) != 1 || len(res.Targets[0].Labels) != 1 {
		t.Fatalf("Targets = %+v", res.Targets)
	}
	if got := res.Targets[0].Labels[0]; got != strings.Repeat("a", MaxLabelLen-1) {
		t.Errorf("label = %q (%d bytes), want %d a's", got, len(got), MaxLabelLen-1)
	}
}

// TestLabelsDoNotChangeLinks: what is scanned and compared is the same
// with or without labels; an edit that only changes a label is not a
// change of links (SameLinks), as before labels were collected.
func TestLabelsDoNotChangeLinks(t *testing.T) {
	t.Parallel()
	with := `{"type":"message","user":"U01","ts":"1.2","text":"<https://evil.test/a|okta.com> <https://b.example/>"}`
	without := `{"type":"message","user":"U01","ts":"1.2","text":"<https://evil.test/a> <https://b.example/|b>"}`
	m1, m2 := mustMsg(t, with), mustMsg(t, without)
	t1, s1 := summary((*Policy)(nil).Extract(m1))
	t2, s2 := summary((*Policy)(nil).Extract(m2))
	if !reflect.DeepEqual(t1, t2) || !reflect.DeepEqual(s1, s2) {
		t.Errorf("targets %q / %q, skipped %q / %q", t1, t2, s1, s2)
	}
	if !SameLinks(m1, []byte(with), m2, []byte(without)) {
		t.Error("SameLinks: a label-only edit is a change")
	}
}
