package links

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// The payloads in this file are written as Slack sends them in a message
// event (issue 25, item 3): each names the part of the message that a
// reader sees and can click, and the test checks that exactly those links,
// and no others, are scanned.

// TestFallbackTextOfABlocksMessageIsNotRead: with blocks, the top-level
// text is the notification fallback, not shown in the conversation (doc.go,
// "Fallback text"): a URL only there is neither a target nor skipped, and
// is not in Set. Without blocks the text is the message and is read.
func TestFallbackTextOfABlocksMessageIsNotRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		targets []string
	}{
		{
			name: "a person's message: rich_text block, fallback text with another link",
			event: `{"type":"message","user":"U01","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10","channel":"C0SEC","channel_type":"channel",
				"ts":"1700000100.000100","event_ts":"1700000100.000100","team":"T01",
				"text":"see <https://shown.example/a> (<https://fallback-only.example/x>)",
				"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
					{"type":"text","text":"see "},{"type":"link","url":"https://shown.example/a"}]}]}]}`,
			targets: []string{"https://shown.example/a"},
		},
		{
			name: "an app's message: section block, fallback text with a bare URL",
			event: botEvent("New alert: https://fallback-only.example/y", "", `[
				{"type":"header","block_id":"h","text":{"type":"plain_text","text":"New alert"}},
				{"type":"section","block_id":"s","text":{"type":"mrkdwn","text":"Details: <https://shown.example/alert/7|alert 7>"}}]`),
			targets: []string{"https://shown.example/alert/7"},
		},
		{
			name: "an app's message whose blocks carry no link: nothing at all",
			event: botEvent("Build failed: <https://fallback-only.example/ci/9|run 9>", "", `[
				{"type":"section","block_id":"s","text":{"type":"plain_text","text":"Build failed"}}]`),
		},
		{
			name:    "no blocks (an empty list): the text is the message",
			event:   botEvent("Build failed: https://ci.example/run/9", "", `[]`),
			targets: []string{"https://ci.example/run/9"},
		},
		{
			name:    "attachments and no blocks: the text is shown above them and read",
			event:   botEvent("Deploy <https://deploy.example/42|42> done", `[{"id":1,"color":"good","text":"all green"}]`, ""),
			targets: []string{"https://deploy.example/42"},
		},
	}
	p, err := NewPolicy(Config{MaxLinks: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, raw := decodeEvent(t, tc.event)
			targets, skipped := summary(p.ExtractRaw(msg, raw))
			if !slices.Equal(targets, tc.targets) || len(skipped) != 0 {
				t.Errorf("targets %q, skipped %q; want targets %q, nothing skipped", targets, skipped, tc.targets)
			}
			if set := Set(msg, raw); !slices.Equal(set, tc.targets) {
				t.Errorf("Set = %q, want %q", set, tc.targets)
			}
		})
	}
}

// TestAttachmentTitleIsPlainText: an attachment's title is plain text
// that only title_link turns into a link (doc.go): a title that looks like
// a URL is not scanned, with or without a title_link, and title_link is.
func TestAttachmentTitleIsPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		targets []string
	}{
		{
			name: "URL-looking title, no title_link",
			event: botEvent("", `[{"id":1,"color":"danger","fallback":"Alert: https://title-only.example/login",
				"title":"https://title-only.example/login","text":"Blocked by the proxy","footer":"proxy","ts":1700000000}]`, ""),
		},
		{
			name: "URL-looking title with a title_link elsewhere: the title_link is the link",
			event: botEvent("", `[{"id":1,"title":"https://title-text.example/","title_link":"https://title-target.example/report/5",
				"text":"weekly report"}]`, ""),
			targets: []string{"https://title-target.example/report/5"},
		},
	}
	p, err := NewPolicy(Config{MaxLinks: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, raw := decodeEvent(t, tc.event)
			targets, skipped := summary(p.ExtractRaw(msg, raw))
			if !slices.Equal(targets, tc.targets) || len(skipped) != 0 {
				t.Errorf("targets %q, skipped %q; want targets %q, nothing skipped", targets, skipped, tc.targets)
			}
			if got := FromAttachments(msg.Attachments); !slices.Equal(got, tc.targets) {
				t.Errorf("FromAttachments = %q, want %q", got, tc.targets)
			}
		})
	}
}

// editParts decodes a message_changed event as the bot does and returns
// both versions of the message with their JSON, as SameLinks takes them.
func editParts(tb testing.TB, js string) (prev *slack.Msg, rawPrev []byte, msg *slack.Msg, rawMsg []byte) {
	tb.Helper()
	var ev slackevents.MessageEvent
	if err := json.Unmarshal([]byte(js), &ev); err != nil {
		tb.Fatalf("decode event: %v\n%s", err, js)
	}
	var parts struct {
		Message         json.RawMessage `json:"message"`
		PreviousMessage json.RawMessage `json:"previous_message"`
	}
	if err := json.Unmarshal([]byte(js), &parts); err != nil {
		tb.Fatal(err)
	}
	return ev.PreviousMessage, parts.PreviousMessage, ev.Message, parts.Message
}

// changedEvent is a message_changed event in C0SEC for Alice's message
// 1700000100.000100: message and previous are the two versions' JSON.
func changedEvent(message, previous string) string {
	return `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C0SEC","channel_type":"channel",
		"ts":"1700000160.000300","event_ts":"1700000160.000300","message":` + message + `,"previous_message":` + previous + `}`
}

// alicesMessage is the message posted: one link, in its text and its
// rich_text block, as a Slack client writes it.
const alicesMessage = `{"type":"message","user":"U0ALICE","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10","team":"T01",
	"ts":"1700000100.000100","text":"vendor update: <https://acme.slack.com/archives/C0OTHER/p1700000050000200>",
	"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
		{"type":"text","text":"vendor update: "},{"type":"link","url":"https://acme.slack.com/archives/C0OTHER/p1700000050000200"}]}]}]}`

// TestEditsComparedOnTheFullMessage: a message_changed event is a change
// of links exactly when the full extraction of the new message (text or
// blocks, attachments, shared messages' blocks) differs from that of the
// previous one, both read from the event's JSON.
func TestEditsComparedOnTheFullMessage(t *testing.T) {
	t.Parallel()
	// Slack unfurls the permalink: the shared message is an app's alert
	// whose link is only in its blocks (its text, the attachment's text,
	// is the app's fallback).
	unfurledMsg := `{"type":"message","user":"U0ALICE","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10","team":"T01",
		"ts":"1700000100.000100","text":"vendor update: <https://acme.slack.com/archives/C0OTHER/p1700000050000200>",
		"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"vendor update: "},{"type":"link","url":"https://acme.slack.com/archives/C0OTHER/p1700000050000200"}]}]}],
		"attachments":[{"ts":"1700000050.000200","channel_id":"C0OTHER","channel_team":"T01","is_msg_unfurl":true,"is_share":true,
			"message_blocks":[{"team":"T01","channel":"C0OTHER","ts":"1700000050.000200","message":{"blocks":[
				{"type":"rich_text","block_id":"Ab3","elements":[{"type":"rich_text_section","elements":[
					{"type":"text","text":"The vendor portal moved to "},{"type":"link","url":"https://vendor-portal.example/login","text":"the new portal"}]}]}]}}],
			"id":1,"original_url":"https://acme.slack.com/archives/C0OTHER/p1700000050000200",
			"fallback":"[November 14th, 2023 10:14 PM] vendor-bot: The vendor portal moved","text":"The vendor portal moved",
			"author_name":"vendor-bot","author_icon":"https://avatars.slack-edge.com/2023-01-01/1_48.png","mrkdwn_in":["text"],"color":"D0D0D0",
			"from_url":"https://acme.slack.com/archives/C0OTHER/p1700000050000200","footer":"Posted in #vendors"}]}`
	// A link unfurl that only repeats the message's own link.
	linkUnfurl := `{"type":"message","user":"U0ALICE","team":"T01","ts":"1700000100.000100","text":"see <https://docs.example.org/runbook>",
		"blocks":[{"type":"rich_text","block_id":"Q1","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"see "},{"type":"link","url":"https://docs.example.org/runbook"}]}]}],
		"attachments":[{"id":1,"service_name":"docs.example.org","title":"Runbook","title_link":"https://docs.example.org/runbook",
			"text":"How we respond to incidents","fallback":"docs.example.org: Runbook","thumb_url":"https://docs.example.org/og.png",
			"original_url":"https://docs.example.org/runbook","from_url":"https://docs.example.org/runbook","service_icon":"https://docs.example.org/favicon.ico"}]}`
	linkPosted := `{"type":"message","user":"U0ALICE","team":"T01","ts":"1700000100.000100","text":"see <https://docs.example.org/runbook>",
		"blocks":[{"type":"rich_text","block_id":"Q1","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"see "},{"type":"link","url":"https://docs.example.org/runbook"}]}]}]}`
	twoLinks := `{"type":"message","user":"U0ALICE","team":"T01","ts":"1700000100.000100","text":"see <https://a.example/x> and <https://b.example/y>",
		"blocks":[{"type":"rich_text","block_id":"Q2","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"see "},{"type":"link","url":"https://a.example/x"},{"type":"text","text":" and "},{"type":"link","url":"https://b.example/y"}]}]}]}`
	edited := func(text, elems string) string {
		return `{"type":"message","user":"U0ALICE","team":"T01","ts":"1700000100.000100","edited":{"user":"U0ALICE","ts":"1700000150.000000"},
			"text":` + strconv.Quote(text) + `,"blocks":[{"type":"rich_text","block_id":"Q3","elements":[{"type":"rich_text_section","elements":[` + elems + `]}]}]}`
	}
	tests := []struct {
		name  string
		event string
		same  bool
		added []string // in the new Set, not in the old
	}{
		{
			name:  "permalink unfurled: the shared message's rich_text link (message_blocks) is new",
			event: changedEvent(unfurledMsg, alicesMessage),
			added: []string{"https://vendor-portal.example/login"},
		},
		{
			name:  "link unfurl repeating the message's own link: no change",
			event: changedEvent(linkUnfurl, linkPosted),
			same:  true,
		},
		{
			name: "edit that only reorders and respaces the links: no change",
			event: changedEvent(edited("<https://b.example/y>   and\n<https://A.example/x#top>",
				`{"type":"link","url":"https://b.example/y"},{"type":"text","text":"   and\n"},{"type":"link","url":"https://A.example/x#top"}`), twoLinks),
			same: true,
		},
		{
			name: "edit that only changes the fallback text of a blocks message: no change",
			event: changedEvent(edited("see <https://a.example/x> and <https://b.example/y> <https://fallback-only.example/>",
				`{"type":"text","text":"see "},{"type":"link","url":"https://a.example/x"},{"type":"text","text":" and "},{"type":"link","url":"https://b.example/y"}`), twoLinks),
			same: true,
		},
		{
			name: "edit that adds a second link",
			event: changedEvent(edited("see <https://docs.example.org/runbook> and <https://evil.example/new>",
				`{"type":"text","text":"see "},{"type":"link","url":"https://docs.example.org/runbook"},{"type":"text","text":" and "},{"type":"link","url":"https://evil.example/new"}`), linkPosted),
			added: []string{"https://evil.example/new"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev, rawPrev, msg, rawMsg := editParts(t, tc.event)
			before, after := Set(prev, rawPrev), Set(msg, rawMsg)
			if got := SameLinks(prev, rawPrev, msg, rawMsg); got != tc.same {
				t.Errorf("SameLinks = %v, want %v\nbefore %q\nafter  %q", got, tc.same, before, after)
			}
			for _, u := range tc.added {
				if !slices.Contains(after, u) || slices.Contains(before, u) {
					t.Errorf("%s is not added: before %q, after %q", u, before, after)
				}
			}
		})
	}
}
