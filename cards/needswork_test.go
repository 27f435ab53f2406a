package cards

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/links"
)

func TestMessagesNeedsWork(t *testing.T) {
	policy, err := links.NewPolicy(links.Config{MaxLinks: 10})
	if err != nil {
		t.Fatal(err)
	}
	self := func() bot.Identity { return bot.Identity{UserID: "UBOT", BotID: "BBOT", AppID: "ABOT"} }
	withFiles := &Messages{Self: self, Links: policy, Files: &Files{}}
	noFiles := &Messages{Self: self, Links: policy}
	for _, tc := range []struct {
		name  string
		m     *Messages
		event string
		want  bool
	}{
		{"plain text", noFiles, `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","ts":"1.1","text":"lunch at noon?"}`, false},
		{"bare URL typed by a person is not a link", noFiles, `{"type":"message","channel":"C1","user":"U1","ts":"1.1","text":"see example.com"}`, false},
		{"link in text", noFiles, `{"type":"message","channel":"C1","user":"U1","ts":"1.1","text":"see <https://example.com/a|this>"}`, true},
		{"link only in blocks", noFiles, `{"type":"message","channel":"C1","user":"U1","ts":"1.1","text":"see this",
			"blocks":[{"type":"rich_text","block_id":"b","elements":[{"type":"rich_text_section","elements":[{"type":"link","url":"https://example.com/b"}]}]}]}`, true},
		{"link that is only listed (private address)", noFiles, `{"type":"message","channel":"C1","user":"U1","ts":"1.1","text":"<http://10.0.0.1/admin>"}`, true},
		{"another app's message with a link", noFiles, `{"type":"message","subtype":"bot_message","channel":"C1","bot_id":"BOTHER","ts":"1.1","text":"alert: https://example.com/c"}`, true},
		{"our own card", noFiles, `{"type":"message","channel":"C1","user":"UBOT","bot_id":"BBOT","ts":"1.1","text":"<https://example.com/a>"}`, false},
		{"channel_join", noFiles, `{"type":"message","subtype":"channel_join","channel":"C1","user":"U1","ts":"1.1","text":"<@U1> has joined the channel"}`, false},
		{"link sent to the bot (its Messages tab)", noFiles, `{"type":"message","channel":"D1","channel_type":"im","user":"U1","ts":"1.1","text":"<https://example.com/a>"}`, true},
		{"file sent to the bot", withFiles, `{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U1","ts":"1.1","text":"","files":[{"id":"F1","name":"a.pdf"}]}`, true},
		{"DM to the bot without a link: not read", noFiles, `{"type":"message","channel":"D1","channel_type":"im","user":"U1","ts":"1.1","text":"hello, are you there?"}`, false},
		{"edit in a DM to the bot", noFiles, `{"type":"message","subtype":"message_changed","channel":"D1","channel_type":"im","ts":"1.2",
			"message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>"},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"hello"}}`, false},
		{"our own card in the DM", noFiles, `{"type":"message","channel":"D1","channel_type":"im","user":"UBOT","bot_id":"BBOT","ts":"1.1","text":"<https://example.com/a>"}`, false},
		{"group DM", noFiles, `{"type":"message","channel":"G1","channel_type":"mpim","user":"U1","ts":"1.1","text":"<https://example.com/a>"}`, false},
		{"file shared, files scanned", withFiles, `{"type":"message","subtype":"file_share","channel":"C1","user":"U1","ts":"1.1","text":"","files":[{"id":"F1","name":"a.pdf"}]}`, true},
		{"file shared, files not handled", noFiles, `{"type":"message","subtype":"file_share","channel":"C1","user":"U1","ts":"1.1","text":"","files":[{"id":"F1","name":"a.pdf"}]}`, false},
		{"edit that kept the links (an unfurl)", noFiles, `{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2",
			"message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>","attachments":[{"original_url":"https://example.com/a","title":"A"}]},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>"}}`, false},
		{"edit that removed the links (the card changes)", noFiles, `{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2",
			"message":{"type":"message","user":"U1","ts":"1.1","text":"never mind"},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>"}}`, true},
		{"edit that added a link", noFiles, `{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2",
			"message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>"},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"hello"}}`, true},
		// Issue 25: edits compared on the full message, both versions read
		// from the event's JSON (message_blocks included).
		{"permalink unfurled: the shared message's link is new (message_blocks)", noFiles, permalinkUnfurl, true},
		{"link unfurl repeating the message's link", noFiles, `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C1","channel_type":"channel","ts":"1.3",
			"message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>",
				"blocks":[{"type":"rich_text","block_id":"q","elements":[{"type":"rich_text_section","elements":[{"type":"link","url":"https://example.com/a"}]}]}],
				"attachments":[{"id":1,"service_name":"example.com","title":"Example Domain","title_link":"https://example.com/a","text":"An example",
					"fallback":"example.com: Example Domain","original_url":"https://example.com/a","from_url":"https://example.com/a"}]},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"<https://example.com/a>",
				"blocks":[{"type":"rich_text","block_id":"q","elements":[{"type":"rich_text_section","elements":[{"type":"link","url":"https://example.com/a"}]}]}]}}`, false},
		{"edit that only reorders and respaces the links", noFiles, `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C1","channel_type":"channel","ts":"1.3",
			"message":{"type":"message","user":"U1","ts":"1.1","edited":{"user":"U1","ts":"1.2"},"text":"<https://b.example/y>  and\n<https://a.example/x>",
				"blocks":[{"type":"rich_text","block_id":"q","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://b.example/y"},{"type":"text","text":"  and\n"},{"type":"link","url":"https://a.example/x"}]}]}]},
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"<https://a.example/x> and <https://b.example/y>",
				"blocks":[{"type":"rich_text","block_id":"q","elements":[{"type":"rich_text_section","elements":[
					{"type":"link","url":"https://a.example/x"},{"type":"text","text":" and "},{"type":"link","url":"https://b.example/y"}]}]}]}}`, false},
		{"an app's edit that only changes the fallback text of its blocks", noFiles, `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C1","channel_type":"channel","ts":"1.3",
			"message":{"type":"message","subtype":"bot_message","bot_id":"BOTHER","ts":"1.1","text":"Alert 7 (updated) https://fallback-only.example/7",
				"blocks":[{"type":"section","block_id":"s","text":{"type":"mrkdwn","text":"Alert <https://alerts.example/7|7>"}}]},
			"previous_message":{"type":"message","subtype":"bot_message","bot_id":"BOTHER","ts":"1.1","text":"Alert 7",
				"blocks":[{"type":"section","block_id":"s","text":{"type":"mrkdwn","text":"Alert <https://alerts.example/7|7>"}}]}}`, false},
		{"our own card updated", noFiles, `{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2",
			"message":{"type":"message","user":"UBOT","bot_id":"BBOT","ts":"1.1","text":"<https://example.com/b>"},
			"previous_message":{"type":"message","user":"UBOT","bot_id":"BBOT","ts":"1.1","text":"<https://example.com/a>"}}`, false},
		{"deletion (the message may have a card)", noFiles, `{"type":"message","subtype":"message_deleted","channel":"C1","ts":"1.2","deleted_ts":"1.1",
			"previous_message":{"type":"message","user":"U1","ts":"1.1","text":"hello"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev slackevents.MessageEvent
			if err := json.Unmarshal([]byte(tc.event), &ev); err != nil {
				t.Fatal(err)
			}
			if got := tc.m.NeedsWork(&ev, json.RawMessage(tc.event)); got != tc.want {
				t.Fatalf("NeedsWork = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilesNeedsWork(t *testing.T) {
	f := &Files{Messages: &Messages{Self: func() bot.Identity { return bot.Identity{UserID: "UBOT"} }}}
	if !f.NeedsWork(&slackevents.FileSharedEvent{UserID: "U1", FileID: "F1"}) {
		t.Error("a person's file needs work")
	}
	if f.NeedsWork(&slackevents.FileSharedEvent{UserID: "UBOT", FileID: "F2"}) {
		t.Error("our own upload (a screenshot) needs none")
	}
}

// permalinkUnfurl is the message_changed event Slack sends when it unfurls
// the permalink Alice posted in C1 (1700000100.000100): an is_msg_unfurl
// attachment whose shared message (an app's alert in C2) has its link only
// in its blocks, attachments[].message_blocks[].message.blocks, which
// slack-go does not decode; the attachment's text is that message's
// fallback.
const permalinkUnfurl = `{"type":"message","subtype":"message_changed","hidden":true,"channel":"C1","channel_type":"channel",
	"ts":"1700000160.000300","event_ts":"1700000160.000300",
	"message":{"type":"message","user":"U1","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10","team":"T1","ts":"1700000100.000100",
		"text":"vendor update: <https://acme.slack.com/archives/C2/p1700000050000200>",
		"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"vendor update: "},{"type":"link","url":"https://acme.slack.com/archives/C2/p1700000050000200"}]}]}],
		"attachments":[{"ts":"1700000050.000200","channel_id":"C2","channel_team":"T1","is_msg_unfurl":true,"is_share":true,
			"message_blocks":[{"team":"T1","channel":"C2","ts":"1700000050.000200","message":{"blocks":[
				{"type":"rich_text","block_id":"Ab3","elements":[{"type":"rich_text_section","elements":[
					{"type":"text","text":"The vendor portal moved to "},{"type":"link","url":"https://vendor-portal.example.net/login","text":"the new portal"}]}]}]}}],
			"id":1,"original_url":"https://acme.slack.com/archives/C2/p1700000050000200",
			"fallback":"[November 14th, 2023 10:14 PM] vendor-bot: The vendor portal moved","text":"The vendor portal moved",
			"author_name":"vendor-bot","mrkdwn_in":["text"],"color":"D0D0D0",
			"from_url":"https://acme.slack.com/archives/C2/p1700000050000200","footer":"Posted in #vendors"}]},
	"previous_message":{"type":"message","user":"U1","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10","team":"T1","ts":"1700000100.000100",
		"text":"vendor update: <https://acme.slack.com/archives/C2/p1700000050000200>",
		"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"vendor update: "},{"type":"link","url":"https://acme.slack.com/archives/C2/p1700000050000200"}]}]}]}}`
