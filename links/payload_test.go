package links

import (
	"slices"
	"testing"
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
			if set := Set(msg); !slices.Equal(set, tc.targets) {
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
