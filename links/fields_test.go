package links

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// decodeEvent decodes a message event the way the bot receives it
// (slackevents.MessageEvent, whose unmarshaller fills Message) and returns
// the message and its JSON as ExtractRaw takes it.
func decodeEvent(tb testing.TB, js string) (*slack.Msg, []byte) {
	tb.Helper()
	var ev slackevents.MessageEvent
	if err := json.Unmarshal([]byte(js), &ev); err != nil {
		tb.Fatalf("decode event: %v\n%s", err, js)
	}
	raw := []byte(js)
	if ev.SubType == "message_changed" {
		var outer struct {
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(raw, &outer); err != nil {
			tb.Fatal(err)
		}
		raw = outer.Message
	}
	return ev.Message, raw
}

// botEvent wraps attachments and blocks in a bot_message event as an
// incoming webhook or app posts it.
func botEvent(text, attachments, blocks string) string {
	js := `{"type":"message","subtype":"bot_message","bot_id":"B0HOOK","username":"alerts","channel":"C0SEC","channel_type":"channel",
		"ts":"1700000000.000900","event_ts":"1700000000.000900","text":` + fmt.Sprintf("%q", text)
	if attachments != "" {
		js += `,"attachments":` + attachments
	}
	if blocks != "" {
		js += `,"blocks":` + blocks
	}
	return js + "}"
}

// TestExtractFields covers the fields and text forms issue 10 found
// unread: stray backticks, overflow options, video and markdown blocks,
// attachment footers, calls, tables, rich_text mentions that
// carry an external url, and shared-message blocks. Each payload is written
// as Slack sends it.
func TestExtractFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		targets []string
		skipped []string
	}{
		{
			name:    "unmatched backtick in attachment text does not hide a later link",
			event:   botEvent("", `[{"id":1,"color":"danger","text":"Don`+"`"+`t click https://evil.example/x please"}]`, ""),
			targets: []string{"https://evil.example/x"},
		},
		{
			name:    "backtick left open at a line end; a real span later on",
			event:   botEvent("", `[{"id":1,"text":"it's `+"`"+`broken\nhttps://evil.example/y and `+"`"+`https://code.example/`+"`"+`"}]`, ""),
			targets: []string{"https://evil.example/y"},
		},
		{
			name:    "paired inline span is code; the link after it is read",
			event:   botEvent("run `curl https://code.example/` then https://after.example/", "", ""),
			targets: []string{"https://after.example/"},
		},
		{
			name:    "triple-backtick block across lines is code; unclosed fence is not",
			event:   botEvent("```\nhttps://code.example/a\n``` https://after.example/b ```https://evil.example/open", "", ""),
			targets: []string{"https://after.example/b", "https://evil.example/open"},
		},
		{
			name:    "an inline span does not cross lines (a stray backtick before a newline)",
			event:   botEvent("", `[{"id":1,"pretext":"see `+"`"+`\nhttps://evil.example/p `+"`"+`"}]`, ""),
			targets: []string{"https://evil.example/p"},
		},
		{
			name: "overflow options' url in an actions block and as a section accessory",
			event: botEvent("menu", "", `[
				{"type":"section","block_id":"s1","text":{"type":"mrkdwn","text":"Pick one"},
				 "accessory":{"type":"overflow","action_id":"o1","options":[
					{"text":{"type":"plain_text","text":"Docs"},"value":"v1","url":"https://overflow-section.example/a"},
					{"text":{"type":"plain_text","text":"None"},"value":"v2"}]}},
				{"type":"actions","block_id":"a1","elements":[
					{"type":"button","action_id":"b1","text":{"type":"plain_text","text":"Open"},"url":"https://button.example/"},
					{"type":"overflow","action_id":"o2","options":[
						{"text":{"type":"plain_text","text":"Report"},"value":"r","url":"https://overflow-actions.example/r"}]}]}]`),
			targets: []string{"https://overflow-section.example/a", "https://button.example/", "https://overflow-actions.example/r"},
		},
		{
			name: "video block: title_url and the video_url the player loads; not the thumbnail",
			event: botEvent("video", "", `[{"type":"video","block_id":"v1","title":{"type":"plain_text","text":"How to"},
				"title_url":"https://video-title.example/watch?v=1","video_url":"https://player.example/embed/1",
				"thumbnail_url":"https://thumbs.example/1.jpg","alt_text":"How to","author_name":"A","provider_name":"P",
				"provider_icon_url":"https://thumbs.example/icon.png"}]`),
			targets: []string{"https://video-title.example/watch?v=1", "https://player.example/embed/1"},
		},
		{
			name: "markdown block: inline link, autolink, bare URL; code and fences skipped",
			event: botEvent("md", "", `[{"type":"markdown","block_id":"m1","text":"Read [the docs](https://md-inline.example/a_(b)) or <https://md-auto.example/>, or https://md-bare.example/x.\n`+
				"`"+`https://md-code.example/`+"`"+` and `+"``"+`a`+"`"+`https://md-span.example/`+"``"+`\n[https://md-label.example/](<ftp://md.example/f>)\n`+"```"+`\nhttps://md-fence.example/\n`+"```"+`"}]`),
			targets: []string{"https://md-inline.example/a_(b)", "https://md-auto.example/", "https://md-bare.example/x", "https://md-label.example/"},
			skipped: []string{"unsupported_scheme ftp://md.example/f"},
		},
		{
			name: "attachment footer, author name and field title; the title is plain text (issue 25)",
			event: botEvent("", `[{"id":1,"title":"Report https://att-title.example/","author_name":"<https://att-author.example/|Scanner>",
				"fields":[{"title":"see https://att-field-title.example/","value":"x","short":true}],
				"footer":"<https://att-footer.example/run/9|CI run 9>","footer_icon":"https://icons.example/ci.png",
				"image_url":"https://images.example/a.png","thumb_url":"https://images.example/t.png"}]`, ""),
			targets: []string{"https://att-author.example/", "https://att-field-title.example/", "https://att-footer.example/run/9"},
		},
		{
			name: "call block join_url; desktop app link is not http",
			event: botEvent("call", "", `[{"type":"call","block_id":"c1","call_id":"R1","api_decoration_available":false,
				"call":{"v1":{"id":"R1","app_id":"A1","name":"Standup","join_url":"https://meet.example/j/123",
				"desktop_app_join_url":"meetapp://join/123","date_start":1700000000,"date_end":0,"is_dm_call":false,
				"was_rejected":false,"was_missed":false,"was_accepted":false,"has_ended":false}}}]`),
			targets: []string{"https://meet.example/j/123"},
		},
		{
			name: "table block rich_text cell link",
			event: botEvent("table", "", `[{"type":"table","block_id":"t1","rows":[
				[{"type":"raw_text","text":"Host"},{"type":"raw_text","text":"Link"}],
				[{"type":"raw_text","text":"a"},{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://table-cell.example/","text":"open"}]}]}]]}]`),
			targets: []string{"https://table-cell.example/"},
		},
		{
			name: "rich_text citation, attachment and work object mentions carry external urls",
			event: `{"type":"message","user":"U01","channel":"C0SEC","channel_type":"channel","ts":"1.2","text":"x",
				"blocks":[{"type":"rich_text","block_id":"r1","elements":[{"type":"rich_text_quote","elements":[
					{"type":"citation","url":"https://cite.example/src","text":"source"},
					{"type":"attachment_mention","url":"https://attach-mention.example/doc"},
					{"type":"work_object_mention","entity_id":"e1","app_id":"A1","text":"Ticket","url":"https://work-object.example/t/1"}]}]}]}`,
			targets: []string{"https://cite.example/src", "https://attach-mention.example/doc", "https://work-object.example/t/1"},
		},
		{
			name: "forwarded message: links in the shared message's blocks (message_blocks)",
			event: `{"type":"message","user":"U01","channel":"C0SEC","channel_type":"channel","ts":"1700000001.000100","text":"fyi",
				"attachments":[{"ts":"1699999999.000200","channel_id":"C0OTHER","channel_name":"vendors","is_msg_unfurl":true,"is_share":true,
					"id":1,"color":"D0D0D0","fallback":"[Nov 14th] Bob: new portal","text":"new portal",
					"author_id":"U02","author_name":"Bob","author_link":"https://acme.slack.com/team/U02",
					"from_url":"https://acme.slack.com/archives/C0OTHER/p1699999999000200","footer":"Posted in #vendors","mrkdwn_in":["text"],
					"message_blocks":[{"team":"T01","channel":"C0OTHER","ts":"1699999999.000200","message":{"blocks":[
						{"type":"rich_text","block_id":"z","elements":[{"type":"rich_text_section","elements":[
							{"type":"text","text":"new "},{"type":"link","url":"https://shared-portal.example/login","text":"portal"}]}]},
						{"type":"actions","block_id":"y","elements":[{"type":"button","action_id":"go","text":{"type":"plain_text","text":"Go"},
							"url":"https://shared-button.example/"}]},
						{"type":"future_block_kind","block_id":"w","elements":[{"type":"thing","url":"https://shared-unknown.example/"}]}]}}]}]}`,
			targets: []string{"https://shared-portal.example/login", "https://shared-button.example/", "https://shared-unknown.example/"},
			skipped: []string{"allowlisted https://acme.slack.com/archives/C0OTHER/p1699999999000200", "allowlisted https://acme.slack.com/team/U02"},
		},
	}
	p, err := NewPolicy(Config{MaxLinks: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, raw := decodeEvent(t, tc.event)
			res := p.ExtractRaw(msg, raw)
			targets, skipped := summary(res)
			if !slices.Equal(targets, tc.targets) {
				t.Errorf("targets = %q\nwant      %q", targets, tc.targets)
			}
			if !slices.Equal(skipped, tc.skipped) {
				t.Errorf("skipped = %q\nwant      %q", skipped, tc.skipped)
			}
			checkResult(t, tc.name, p, res)
		})
	}
}

// TestExtractFieldsCap: a message whose links sit in the newly read fields
// still gets at most MaxLinks targets, the rest counted as left out.
func TestExtractFieldsCap(t *testing.T) {
	t.Parallel()
	var opts, atts []string
	for i := range 4 {
		opts = append(opts, fmt.Sprintf(`{"text":{"type":"plain_text","text":"o%d"},"value":"%d","url":"https://overflow%d.example/"}`, i, i, i))
		atts = append(atts, fmt.Sprintf(`{"id":%d,"footer":"<https://footer%d.example/|f>","text":"Don`+"`"+`t https://text%d.example/"}`, i+1, i, i))
	}
	blocks := `[{"type":"actions","elements":[{"type":"overflow","action_id":"o","options":[` + strings.Join(opts, ",") + `]}]},
		{"type":"video","title":{"type":"plain_text","text":"v"},"alt_text":"v","video_url":"https://video.example/e","title_url":"https://video.example/t","thumbnail_url":"https://video.example/i.png"},
		{"type":"markdown","text":"[a](https://md.example/a) https://md.example/b"}]`
	msg, raw := decodeEvent(t, botEvent("", "["+strings.Join(atts, ",")+"]", blocks))
	p, err := NewPolicy(Config{MaxLinks: 5})
	if err != nil {
		t.Fatal(err)
	}
	res := p.ExtractRaw(msg, raw)
	if len(res.Targets) != 5 || res.LeftOut != 4+2+2+8-5 {
		t.Fatalf("%d targets, %d left out; want 5 and %d", len(res.Targets), res.LeftOut, 4+2+2+8-5)
	}
	if got := res.Targets[0].URL; got != "https://overflow0.example/" {
		t.Errorf("first target %q: blocks come before attachments", got)
	}
	// Set (edit detection) reads the same fields: all 16 links.
	if s := Set(msg, raw); len(s) != 16 {
		t.Errorf("Set has %d links, want 16: %q", len(s), s)
	}
}

// TestSharedBlocksInEdits: a message link's preview (an is_msg_unfurl
// attachment) comes as a message_changed event, the shared message's
// blocks in attachments[].message_blocks, which slack-go does not decode:
// SameLinks on the two versions' JSON sees the link they add (issue 25:
// the old Set left unfurls out, so this edit was dropped and the link,
// clickable in the channel from then on, never scanned), and ExtractRaw on
// the event's message reads it.
func TestSharedBlocksInEdits(t *testing.T) {
	t.Parallel()
	ev := `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C0SEC","channel_type":"channel","ts":"1.3","event_ts":"1.3",
		"message":{"type":"message","user":"U01","ts":"1.2","text":"<https://acme.slack.com/archives/C2/p1000>",
			"attachments":[{"id":1,"is_msg_unfurl":true,"from_url":"https://acme.slack.com/archives/C2/p1000","text":"x",
				"message_blocks":[{"team":"T1","channel":"C2","ts":"1000.0","message":{"blocks":[{"type":"section","text":{"type":"mrkdwn","text":"<https://unfurled-shared.example/|here>"}}]}}]}]},
		"previous_message":{"type":"message","user":"U01","ts":"1.2","text":"<https://acme.slack.com/archives/C2/p1000>"}}`
	var full slackevents.MessageEvent
	if err := json.Unmarshal([]byte(ev), &full); err != nil {
		t.Fatal(err)
	}
	var parts struct {
		Message         json.RawMessage `json:"message"`
		PreviousMessage json.RawMessage `json:"previous_message"`
	}
	if err := json.Unmarshal([]byte(ev), &parts); err != nil {
		t.Fatal(err)
	}
	if SameLinks(full.PreviousMessage, parts.PreviousMessage, full.Message, parts.Message) {
		t.Errorf("a message unfurl that adds a link counts as no change: %q vs %q",
			Set(full.PreviousMessage, parts.PreviousMessage), Set(full.Message, parts.Message))
	}
	msg, raw := decodeEvent(t, ev)
	targets, _ := summary((*Policy)(nil).ExtractRaw(msg, raw))
	if !slices.Equal(targets, []string{"https://unfurled-shared.example/"}) {
		t.Errorf("targets = %q", targets)
	}
	if got := SharedBlocks([]byte(`{"text":"no shares"}`)); got != nil {
		t.Errorf("SharedBlocks without message_blocks = %v", got)
	}
}
