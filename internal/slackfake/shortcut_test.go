package slackfake_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// TestReportMessageShortcut: a message shortcut with any callback id
// (report_message) carries the whole message as slack-go decodes it
// (text, user, ts, blocks, files; thread_ts for a reply; the thread's
// summary on a root), the channel, the user, the team, a trigger_id and a
// response_url that answers the user.
func TestReportMessageShortcut(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithEchoOwnMessages(false))
	f.AddChannel(slackfake.Channel{ID: chanSec, Name: "security"})
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	file := slackfake.File{Name: "invoice.html", Content: []byte("<html>pay here</html>")}
	ts := f.SeedHistory(chanSec, []slackfake.HistoryMessage{
		{User: alice, Text: "pay this <https://pay.example/x|invoice>", At: time.Now().Add(-time.Hour), ReplyTo: slackfake.TopLevel,
			SubType: "file_share", Files: []slackfake.File{file}},
		{User: bob, Text: "looks odd", At: time.Now().Add(-time.Minute), ReplyTo: 0},
	})

	shortcut := func(msgTS string) slack.InteractionCallback {
		t.Helper()
		d := must[slackfake.Delivery](t)(f.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "report_message", UserID: carolID, Channel: chanSec, MessageTS: msgTS}))
		ev := b.next(t, ctx, socketmode.EventTypeInteractive)
		if ev.Request.EnvelopeID != d.EnvelopeID || !ev.Request.AcceptsResponsePayload {
			t.Fatalf("envelope %+v, want %s accepting a response payload", ev.Request, d.EnvelopeID)
		}
		_ = b.sm.Ack(*ev.Request)
		cb := ev.Data.(slack.InteractionCallback)
		if cb.TriggerID != d.TriggerID || cb.ResponseURL != d.ResponseURL {
			t.Errorf("trigger_id %q response_url %q; Delivery says %q %q", cb.TriggerID, cb.ResponseURL, d.TriggerID, d.ResponseURL)
		}
		return cb
	}

	cb := shortcut(ts[0])
	if cb.Type != slack.InteractionTypeMessageAction || cb.CallbackID != "report_message" || cb.MessageTs != ts[0] ||
		cb.User.ID != carolID || cb.Channel.ID != chanSec || cb.Channel.Name != "security" || cb.Team.ID != f.TeamID() ||
		cb.TriggerID == "" || cb.ActionTs == "" {
		t.Errorf("shortcut = %+v", cb)
	}
	m := cb.Message
	if m.Text != "pay this <https://pay.example/x|invoice>" || m.User != alice || m.Timestamp != ts[0] || m.SubType != "file_share" {
		t.Errorf("message %+v", m.Msg)
	}
	if len(m.Files) != 1 || m.Files[0].Name != "invoice.html" || m.Files[0].URLPrivateDownload == "" {
		t.Errorf("files %+v", m.Files)
	}
	if len(m.Blocks.BlockSet) != 1 || m.Blocks.BlockSet[0].BlockType() != slack.MBTRichText {
		t.Errorf("blocks %+v", m.Blocks)
	}
	if m.ReplyCount != 1 || m.ThreadTimestamp != ts[0] {
		t.Errorf("the root's thread summary: reply_count %d thread_ts %q", m.ReplyCount, m.ThreadTimestamp)
	}

	cb = shortcut(ts[1])
	if cb.Message.ThreadTimestamp != ts[0] || cb.Message.Text != "looks odd" || cb.Message.ParentUserId != alice {
		t.Errorf("reply in the shortcut %+v", cb.Message.Msg)
	}

	// The response_url answers the user privately.
	if _, _, err := api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(cb.ResponseURL, slack.ResponseTypeEphemeral),
		slack.MsgOptionText("Reported to security, thanks.", false)); err != nil {
		t.Fatal(err)
	}
	if e := f.Ephemerals(chanSec, carolID); len(e) != 1 || e[0].Text != "Reported to security, thanks." {
		t.Errorf("ephemerals %+v", e)
	}
}

// TestPermalinks: chat.getPermalink answers Slack's shape for a top-level
// message (/archives/<channel>/p<ts without its dot>) and for a reply,
// also one sent to the channel, with ?thread_ts=<root>&cid=<channel>;
// seeded messages included.
func TestPermalinks(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	t0 := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	ts := f.SeedHistory(chanSec, []slackfake.HistoryMessage{
		{User: alice, Text: "root", At: t0, ReplyTo: slackfake.TopLevel},
		{User: bob, Text: "reply", At: t0.Add(time.Second), ReplyTo: 0},
		{User: bob, Text: "broadcast", At: t0.Add(2 * time.Second), ReplyTo: 0, SubType: "thread_broadcast"},
	})
	delivered := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "later reply", ThreadTS: ts[0]}))
	p := func(ts string) string { return "p" + strings.Replace(ts, ".", "", 1) }
	for _, c := range []struct{ ts, want string }{
		{ts[0], f.URL() + "/archives/" + chanSec + "/" + p(ts[0])},
		{ts[1], f.URL() + "/archives/" + chanSec + "/" + p(ts[1]) + "?thread_ts=" + ts[0] + "&cid=" + chanSec},
		{ts[2], f.URL() + "/archives/" + chanSec + "/" + p(ts[2]) + "?thread_ts=" + ts[0] + "&cid=" + chanSec},
		{delivered.TS, f.URL() + "/archives/" + chanSec + "/" + p(delivered.TS) + "?thread_ts=" + ts[0] + "&cid=" + chanSec},
	} {
		link, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: chanSec, Ts: c.ts})
		if err != nil || link != c.want {
			t.Errorf("permalink of %s = %q, %v; want %q", c.ts, link, err, c.want)
		}
		if u, err := url.Parse(link); err != nil || u.Query().Get("thread_ts") != "" && u.Query().Get("cid") != chanSec {
			t.Errorf("permalink %q does not parse", link)
		}
	}
	if p(ts[0]) != "p1717243200000000" {
		t.Errorf("p-segment %s", p(ts[0]))
	}
	if _, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: chanSec, Ts: "1717243299.000000"}); errString(err) != "message_not_found" {
		t.Errorf("permalink of no message: %v", err)
	}
}
