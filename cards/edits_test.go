package cards

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/verdict"
)

// checkLog is a urlChecker that records the URLs it is asked to check.
type checkLog struct {
	urlChecker
	mu      sync.Mutex
	checked []string
}

func (c *checkLog) Check(ctx context.Context, url string, o scan.CheckOptions) scan.URLVerdict {
	c.mu.Lock()
	c.checked = append(c.checked, url)
	c.mu.Unlock()
	return c.urlChecker.Check(ctx, url, o)
}

func (c *checkLog) urls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.checked)
}

// handleRaw hands Handle a message event as the bot does (NeedsWork first,
// as the adapter runs it before the ack): decoded by slackevents, with its
// JSON in Meta.Raw. It reports whether NeedsWork let it through.
func (e *env) handleRaw(t *testing.T, js string) bool {
	t.Helper()
	var ev slackevents.MessageEvent
	if err := json.Unmarshal([]byte(js), &ev); err != nil {
		t.Fatalf("decode event: %v\n%s", err, js)
	}
	if !e.messages.NeedsWork(&ev, json.RawMessage(js)) {
		return false
	}
	e.messages.Handle(t.Context(), &ev, bot.Meta{EventID: "Ev-" + ev.TimeStamp, Raw: json.RawMessage(js), Done: func() {}})
	return true
}

// TestPermalinkUnfurlIsScannedForTheLinkItAdds (issue 25): Alice posts a
// permalink (a Slack address, allowlisted: listed, not sent); Slack then
// unfurls it with the shared message, whose link sits only in its blocks
// (attachments[].message_blocks). That message_changed is a change of
// links: the shared link is checked and the card shows it. Before, edits
// were compared without unfurls nor message_blocks, and the event was
// dropped with the link clickable in the channel and never scanned.
func TestPermalinkUnfurlIsScannedForTheLinkItAdds(t *testing.T) {
	t.Parallel()
	const shared = "https://vendor-portal.example.net/login"
	checker := &checkLog{urlChecker: urlChecker{levels: map[string]verdict.Level{shared: verdict.Malicious}}}
	e := newEnv(t, checker, ModeVerbose)
	const ts = "1700000100.000100"
	if _, err := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", TS: ts,
		Text: "vendor update: <https://acme.slack.com/archives/C2/p1700000050000200>"}); err != nil {
		t.Fatal(err)
	}
	posted := `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","client_msg_id":"5f1c7d9e-3a52-4a8b-9c1e-2b7f4e6a8d10",
		"team":"T1","ts":"1700000100.000100","event_ts":"1700000100.000100",
		"text":"vendor update: <https://acme.slack.com/archives/C2/p1700000050000200>",
		"blocks":[{"type":"rich_text","block_id":"Xy1z","elements":[{"type":"rich_text_section","elements":[
			{"type":"text","text":"vendor update: "},{"type":"link","url":"https://acme.slack.com/archives/C2/p1700000050000200"}]}]}]}`
	if !e.handleRaw(t, posted) {
		t.Fatal("the posted permalink needs no work: its card lists it as allowlisted")
	}
	e.messages.Wait()
	if got := checker.urls(); len(got) != 0 {
		t.Fatalf("checked %q before the unfurl: a permalink is not sent", got)
	}

	if !e.handleRaw(t, permalinkUnfurl) {
		t.Fatal("the unfurl that adds the shared message's link was dropped before the ack")
	}
	e.messages.Wait()
	if got := checker.urls(); !slices.Equal(got, []string{shared}) {
		t.Fatalf("checked %q, want only the shared link %s", got, shared)
	}
	rec := e.card(t, ts)
	if !rec.Card.Final || len(rec.Card.Lines) != 1 || rec.Card.Lines[0].Target != shared || rec.Card.Lines[0].Level != verdict.Malicious {
		t.Fatalf("card after the unfurl: %+v", rec.Card)
	}
	if len(rec.Card.Skipped) != 1 {
		t.Errorf("the permalink is no longer listed as skipped: %+v", rec.Card.Skipped)
	}
}
