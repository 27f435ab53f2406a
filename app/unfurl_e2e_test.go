package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestUnfurledPermalinkIsScannedFallbackTextIsNot (issue 25, item 3), on
// the real wiring:
//
//   - Alice posts a permalink to a message in another channel (a Slack
//     address: listed on the card, not sent). Slack then unfurls it, a
//     message_changed whose attachment carries the shared message's blocks
//     (message_blocks, which slack-go does not decode), and the link in
//     them is clickable in this channel from then on: it is submitted and
//     the card shows its verdict. Alice then edits her message to add a
//     link: only that one is submitted, the unfurled one is not again.
//   - A message with blocks whose fallback text holds a URL the blocks do
//     not: the URL is neither submitted nor on the card.
func TestUnfurledPermalinkIsScannedFallbackTextIsNot(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})

	const (
		permalink = "https://acme.slack.com/archives/C0VENDORS/p1700000050000200"
		shared    = "https://portal.evil.test/vendors"
		added     = "https://second.evil.test/added"
	)
	d := h.Post("vendor update: <" + permalink + ">")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "acme[.]slack[.]com") })

	// The preview Slack adds for a message link: is_msg_unfurl, the
	// shared message's text as the attachment's, its blocks in
	// message_blocks (here an app's message: the link only in its blocks).
	unfurl := `[{"ts":"1700000050.000200","channel_id":"C0VENDORS","channel_team":"T0TEAM","is_msg_unfurl":true,"is_share":true,
		"message_blocks":[{"team":"T0TEAM","channel":"C0VENDORS","ts":"1700000050.000200","message":{"blocks":[
			{"type":"rich_text","block_id":"Ab3","elements":[{"type":"rich_text_section","elements":[
				{"type":"text","text":"The vendor portal moved to "},{"type":"link","url":"` + shared + `","text":"the new portal"}]}]}]}}],
		"id":1,"original_url":"` + permalink + `","from_url":"` + permalink + `",
		"fallback":"[November 14th, 2023 10:14 PM] vendor-bot: The vendor portal moved","text":"The vendor portal moved",
		"author_name":"vendor-bot","mrkdwn_in":["text"],"color":"D0D0D0","footer":"Posted in #vendors"}]`
	if _, err := h.Slack.UnfurlMessage(secChannel, d.TS, json.RawMessage(unfurl)); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "portal[.]evil[.]test") && strings.Contains(b, "Malicious") && !strings.Contains(b, "Scanning")
	})
	if n := len(h.Sim.URLTasks(shared)); n != 1 {
		t.Fatalf("%d tasks for the unfurled link, want 1", n)
	}

	// An edit that adds a second link (the unfurl stays): the card is
	// rescanned, and only the new link is submitted.
	if _, err := h.Slack.EditMessage(secChannel, d.TS, "vendor update: <"+permalink+"> and <"+added+">"); err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "second[.]evil[.]test") && strings.Contains(b, "portal[.]evil[.]test") && !strings.Contains(b, "Scanning")
	})
	if n, m := len(h.Sim.URLTasks(added)), len(h.Sim.URLTasks(shared)); n != 1 || m != 1 {
		t.Fatalf("tasks: %d for the added link, %d for the unfurled one; want 1 and still 1", n, m)
	}
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards, want the one card updated in place", n)
	}

	// Blocks, and a fallback text with one more URL: only the blocks count.
	const shown, fallbackOnly = "https://example.com/shown", "https://fallback-only.evil.test/x"
	fb, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice,
		Text: "see <" + shown + "> (mirror: <" + fallbackOnly + ">)",
		Blocks: json.RawMessage(`[{"type":"rich_text","block_id":"q1","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"see "},{"type":"link","url":"` + shown + `"}]}]}]`)})
	if err != nil {
		t.Fatal(err)
	}
	card := h.WaitCard(fb.TS, func(b string) bool {
		return strings.Contains(b, "example[.]com/shown") && strings.Contains(b, "Clean") && !strings.Contains(b, "Scanning")
	})
	if tasks := h.Sim.URLTasks(fallbackOnly); len(tasks) != 0 {
		t.Fatalf("the fallback text's URL was submitted: tasks %v", tasks)
	}
	if b := apptest.BlocksText(card.Blocks); strings.Contains(b, "fallback-only") {
		t.Fatalf("the card lists the fallback text's URL:\n%s", b)
	}
}
