package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestForwardedMessageLinksAreScanned: a forwarded message carries the
// shared message's blocks in attachments[].message_blocks, which slack-go's
// types drop; the bot reads them from the event JSON.
func TestForwardedMessageLinksAreScanned(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "fyi",
		Attachments: json.RawMessage(forwardedAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if b := apptest.BlocksText(card.Blocks); !strings.Contains(b, "shared-portal[.]evil[.]test") {
		t.Fatalf("card does not show the shared message's link:\n%s", b)
	}
	if tasks := h.Sim.URLTasks("https://shared-portal.evil.test/login"); len(tasks) != 1 {
		t.Fatalf("tasks for the shared link: %v", tasks)
	}
}

// forwardedAttachments is a forwarded message as Slack sends it: the
// shared message's blocks sit in message_blocks, which slack-go drops.
const forwardedAttachments = `[{"ts":"1699999999.000200","channel_id":"C0OTHER","channel_name":"vendors",
			"is_msg_unfurl":true,"is_share":true,"id":1,"color":"D0D0D0","fallback":"[Nov 14th] Bob: new portal",
			"text":"new portal","author_id":"U0BOB","author_name":"Bob","mrkdwn_in":["text"],"footer":"Posted in #vendors",
			"from_url":"https://acme.slack.com/archives/C0OTHER/p1699999999000200",
			"message_blocks":[{"team":"T0TEAM","channel":"C0OTHER","ts":"1699999999.000200","message":{"blocks":[
				{"type":"actions","block_id":"y","elements":[{"type":"button","action_id":"go",
					"text":{"type":"plain_text","text":"Open portal"},"url":"https://shared-portal.evil.test/login"}]}]}}]}]`

// TestScanThisMessageReadsAForwardedMessage: the shortcut's payload carries
// the message as Slack sent it, and its shared-message blocks are read too.
func TestScanThisMessageReadsAForwardedMessage(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "off"}, sim.Config{})
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "fyi",
		Attachments: json.RawMessage(forwardedAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: alice, Channel: secChannel, MessageTS: d.TS}); err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if b := apptest.BlocksText(card.Blocks); !strings.Contains(b, "shared-portal[.]evil[.]test") {
		t.Fatalf("card does not show the shared message's link:\n%s", b)
	}
}
