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
