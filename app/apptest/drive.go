package apptest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

// Share uploads f to the fake Slack and shares it in channel as Alice
// with text, and returns the file and the events delivered for it.
func (h *Harness) Share(channel string, f slackfake.File, text string) (slackfake.File, []slackfake.Delivery) {
	h.T.Helper()
	f = h.Slack.AddFile(f)
	ds, err := h.Slack.ShareFile(channel, Alice, f.ID, text)
	if err != nil {
		h.T.Fatal(err)
	}
	return f, ds
}

// Shortcut delivers "Scan this message" on the message at ts in Channel,
// by user.
func (h *Harness) Shortcut(user, ts string) {
	h.T.Helper()
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: user, Channel: Channel, MessageTS: ts}); err != nil {
		h.T.Fatal(err)
	}
}

// Answers waits for user's n-th private answer in Channel and returns
// them all.
func (h *Harness) Answers(user string, n int) []slackfake.Ephemeral {
	h.T.Helper()
	eph, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), Channel, user, n)
	if err != nil {
		h.T.Fatalf("%s got no answer #%d: %v\nlogs:\n%s", user, n, err, h.Logs.String())
	}
	return eph
}

// Slash runs /scan text as user in Channel and returns what the user was
// told: the ack's payload text and every response_url post for it,
// joined.
func (h *Harness) Slash(user, text string) string {
	h.T.Helper()
	return h.SlashIn(Channel, user, text)
}

// SlashIn is Slash, run in channel.
func (h *Harness) SlashIn(channel, user, text string) string {
	h.T.Helper()
	d, err := h.Slack.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: text, UserID: user, ChannelID: channel})
	if err != nil {
		h.T.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
		h.T.Fatal(err)
	}
	var ackText string
	for _, a := range h.Slack.Acks() {
		if a.EnvelopeID == d.EnvelopeID && a.Payload != nil {
			var p struct{ Text string }
			json.Unmarshal(a.Payload, &p)
			ackText = p.Text
			if len(a.Payload) > 20_000 {
				h.T.Fatalf("ack payload of %d bytes", len(a.Payload))
			}
		}
	}
	// The rest of the answer, if any, comes through the response_url.
	deadline := time.Now().Add(8 * time.Second)
	var posts []string
	for time.Now().Before(deadline) {
		posts = nil
		for _, p := range h.Slack.ResponsePosts() {
			if p.EnvelopeID == d.EnvelopeID {
				posts = append(posts, p.Text)
			}
		}
		if len(posts) > 0 || (ackText != "" && !strings.HasPrefix(ackText, "Checking")) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.TrimSpace(ackText + "\n" + strings.Join(posts, "\n"))
}
