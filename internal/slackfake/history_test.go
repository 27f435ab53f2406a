package slackfake_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// tsAt is the ts of the n-th test message: one a second from 1700000000.
func tsAt(n int) string { return fmt.Sprintf("%d.000100", 1700000000+n) }

// readHistory pages through a channel's history with limit, returning the
// messages and the pages' sizes.
func readHistory(t *testing.T, api *slack.Client, channel string, limit int, oldest, latest string, inclusive bool) ([]slack.Message, []int) {
	t.Helper()
	ctx := testCtx(t)
	var msgs []slack.Message
	var sizes []int
	cursor := ""
	for range 100 {
		r, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Limit: limit, Cursor: cursor, Oldest: oldest, Latest: latest, Inclusive: inclusive})
		if err != nil {
			t.Fatalf("conversations.history (cursor %q): %v", cursor, err)
		}
		msgs = append(msgs, r.Messages...)
		sizes = append(sizes, len(r.Messages))
		if r.HasMore != (r.ResponseMetaData.NextCursor != "") {
			t.Fatalf("has_more %v with next_cursor %q", r.HasMore, r.ResponseMetaData.NextCursor)
		}
		if !r.HasMore {
			return msgs, sizes
		}
		cursor = r.ResponseMetaData.NextCursor
	}
	t.Fatal("more than 100 pages")
	return nil, nil
}

// TestHistoryPagesNewestFirst: conversations.history pages a channel
// newest first with Slack's cursor (base64 "next_ts:<µs>"), has_more and
// an empty next_cursor on the last page; replies stay out of it except one
// also sent to the channel; the root carries the thread's summary.
func TestHistoryPagesNewestFirst(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	for i := range 25 {
		must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: fmt.Sprint("top ", i), TS: tsAt(i * 10)}))
	}
	root := tsAt(50)
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: bob, Text: "r1", TS: tsAt(51), ThreadTS: root}))
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "r2", TS: tsAt(52), ThreadTS: root}))
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: bob, Text: "r3 also in channel", TS: tsAt(53), ThreadTS: root, SubType: "thread_broadcast"}))

	msgs, sizes := readHistory(t, api, chanSec, 10, "", "", false)
	if !slices.Equal(sizes, []int{10, 10, 6}) {
		t.Errorf("pages of %v, want 10, 10, 6 (25 messages and the broadcast reply)", sizes)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text)
	}
	want := []string{}
	for i := 24; i >= 0; i-- {
		want = append(want, fmt.Sprint("top ", i))
		if i == 5 {
			want = slices.Insert(want, len(want)-1, "r3 also in channel")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("history\n got %q\nwant %q", got, want)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Timestamp >= msgs[i-1].Timestamp {
			t.Fatalf("not newest first at %d: %s after %s", i, msgs[i].Timestamp, msgs[i-1].Timestamp)
		}
	}
	for _, m := range msgs {
		switch m.Timestamp {
		case root:
			if m.ReplyCount != 3 || m.ThreadTimestamp != root || m.LatestReply != tsAt(53) || !slices.Equal(m.ReplyUsers, []string{bob, alice}) {
				t.Errorf("root %+v: want reply_count 3, thread_ts, latest_reply and reply_users", m.Msg)
			}
		case tsAt(53):
			if m.SubType != "thread_broadcast" || m.ThreadTimestamp != root {
				t.Errorf("broadcast %+v", m.Msg)
			}
		default:
			if m.ReplyCount != 0 || m.ThreadTimestamp != "" {
				t.Errorf("%s has thread fields: %+v", m.Timestamp, m.Msg)
			}
		}
	}

	// The cursor is Slack's: base64 of next_ts and the next page's first ts.
	r, err := api.GetConversationHistoryContext(testCtx(t), &slack.GetConversationHistoryParameters{ChannelID: chanSec, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := base64.StdEncoding.DecodeString(r.ResponseMetaData.NextCursor)
	if string(dec) != "next_ts:"+strings.Replace(tsAt(210), ".", "", 1) {
		t.Errorf("next_cursor %q decodes to %q, want the 4th newest message's ts", r.ResponseMetaData.NextCursor, dec)
	}

	// No limit: 100. Calls are recorded.
	r, err = api.GetConversationHistoryContext(testCtx(t), &slack.GetConversationHistoryParameters{ChannelID: chanSec})
	if err != nil || len(r.Messages) != 26 || r.HasMore {
		t.Errorf("default limit: %d messages, has_more %v, %v", len(r.Messages), r.HasMore, err)
	}
	if n := len(f.Calls("conversations.history")); n != 5 {
		t.Errorf("%d conversations.history calls recorded, want 5", n)
	}
}

// TestHistoryOldestLatestInclusive: oldest and latest bound the pages,
// inclusive takes the bounds in; paging keeps the bounds.
func TestHistoryOldestLatestInclusive(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	for i := range 10 {
		must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: fmt.Sprint(i), TS: tsAt(i)}))
	}
	texts := func(msgs []slack.Message) string {
		var s []string
		for _, m := range msgs {
			s = append(s, m.Text)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		oldest, latest string
		inclusive      bool
		want           string
	}{
		{tsAt(2), tsAt(6), false, "5,4,3"},
		{tsAt(2), tsAt(6), true, "6,5,4,3,2"},
		{"", tsAt(3), false, "2,1,0"},
		{tsAt(7), "", true, "9,8,7"},
		{"1700000004", "1700000006.5", false, "6,5,4"}, // whole and fractional seconds
	} {
		msgs, _ := readHistory(t, api, chanSec, 2, c.oldest, c.latest, c.inclusive)
		if got := texts(msgs); got != c.want {
			t.Errorf("oldest %s latest %s inclusive %v: %s, want %s", c.oldest, c.latest, c.inclusive, got, c.want)
		}
	}
	// The one-message lookup: latest = oldest = ts, inclusive, limit 1.
	r, err := api.GetConversationHistoryContext(testCtx(t), &slack.GetConversationHistoryParameters{
		ChannelID: chanSec, Latest: tsAt(4), Oldest: tsAt(4), Inclusive: true, Limit: 1})
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Text != "4" || r.HasMore {
		t.Errorf("single message lookup: %+v, %v", r, err)
	}
}

// TestHistoryErrors: Slack's errors for a bad cursor or timestamp, and for
// a conversation the bot is not in.
func TestHistoryErrors(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	f.AddChannel(slackfake.Channel{ID: "C0ELSEWHR1", NotMember: true})
	f.AddChannel(slackfake.Channel{ID: "G0HIDDEN01", Private: true, NotMember: true})
	api := newAPI(f)
	ctx := testCtx(t)
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "x"}))
	for _, c := range []struct {
		p    slack.GetConversationHistoryParameters
		want string
	}{
		{slack.GetConversationHistoryParameters{ChannelID: chanSec, Cursor: "bm90IGEgY3Vyc29y"}, "invalid_cursor"},
		{slack.GetConversationHistoryParameters{ChannelID: chanSec, Cursor: "%%%"}, "invalid_cursor"},
		{slack.GetConversationHistoryParameters{ChannelID: chanSec, Latest: "yesterday"}, "invalid_ts_latest"},
		{slack.GetConversationHistoryParameters{ChannelID: chanSec, Oldest: "-1"}, "invalid_ts_oldest"},
		{slack.GetConversationHistoryParameters{ChannelID: "C0ELSEWHR1"}, "not_in_channel"},
		{slack.GetConversationHistoryParameters{ChannelID: "G0HIDDEN01"}, "channel_not_found"},
		{slack.GetConversationHistoryParameters{ChannelID: "C0NOWHERE1"}, "channel_not_found"},
	} {
		if _, err := api.GetConversationHistoryContext(ctx, &c.p); errString(err) != c.want {
			t.Errorf("%+v: %v, want %s", c.p, err, c.want)
		}
	}
	if _, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C0ELSEWHR1", Timestamp: root.TS}); errString(err) != "not_in_channel" {
		t.Errorf("replies where the bot is not: %v", err)
	}
	if _, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: root.TS, Cursor: "eA=="}); errString(err) != "invalid_cursor" {
		t.Errorf("replies with a bad cursor: %v", err)
	}
}

// TestRepliesPaged: conversations.replies gives the parent first, then the
// replies oldest first, limit counting the parent; the following pages
// hold replies only; any ts of the thread names it.
func TestRepliesPaged(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	root := tsAt(0)
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "root", TS: root}))
	for i := 1; i <= 5; i++ {
		must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: bob, Text: fmt.Sprint("r", i), TS: tsAt(i), ThreadTS: root}))
	}
	read := func(ts string, limit int, oldest, latest string, inclusive bool) (texts []string, pages int) {
		cursor := ""
		for pages < 20 {
			msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: chanSec, Timestamp: ts, Limit: limit, Cursor: cursor, Oldest: oldest, Latest: latest, Inclusive: inclusive})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, m := range msgs {
				texts = append(texts, m.Text)
			}
			if more != (next != "") {
				t.Fatalf("has_more %v, next_cursor %q", more, next)
			}
			if !more {
				return texts, pages
			}
			cursor = next
		}
		t.Fatalf("thread %s: more than 20 pages", ts)
		return nil, 0
	}
	all := "root,r1,r2,r3,r4,r5"
	if got, pages := read(root, 2, "", "", false); strings.Join(got, ",") != all || pages != 3 {
		t.Errorf("limit 2: %v in %d pages, want %s in 3", got, pages, all)
	}
	if got, pages := read(tsAt(3), 0, "", "", false); strings.Join(got, ",") != all || pages != 1 {
		t.Errorf("by a reply's ts: %v in %d pages", got, pages)
	}
	if got, _ := read(root, 0, tsAt(2), tsAt(4), true); strings.Join(got, ",") != "root,r2,r3,r4" {
		t.Errorf("oldest/latest inclusive: %v, want the parent then r2..r4", got)
	}
	// One reply by ts: the parent and it (limit 2).
	msgs, more, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: chanSec, Timestamp: root, Latest: tsAt(3), Oldest: tsAt(3), Inclusive: true, Limit: 2})
	if err != nil || len(msgs) != 2 || msgs[1].Text != "r3" || more {
		t.Errorf("one reply: %+v, more %v, %v", msgs, more, err)
	}
	// Limit 1: the parent alone, with the summary, and more to come.
	msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: root, Limit: 1})
	if err != nil || len(msgs) != 1 || msgs[0].Text != "root" || !more || next == "" {
		t.Fatalf("limit 1: %+v, more %v, %v", msgs, more, err)
	}
	if p := msgs[0]; p.ReplyCount != 5 || p.ThreadTimestamp != root || p.LatestReply != tsAt(5) || !slices.Equal(p.ReplyUsers, []string{bob}) {
		t.Errorf("parent %+v", p.Msg)
	}
	if r := f.Calls("conversations.replies"); r[len(r)-1].Params.Get("limit") != "1" {
		t.Errorf("the call was not recorded with its limit: %v", r[len(r)-1].Params)
	}
}

// TestHistoryKeepsWhatMessagesCarry: files, attachments, blocks, subtype,
// bot_id and edited come back from history as Slack renders them.
func TestHistoryKeepsWhatMessagesCarry(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	file := f.AddFile(slackfake.File{Name: "invoice.pdf", User: alice, Content: []byte("%PDF-1.4")})
	must[[]slackfake.Delivery](t)(f.ShareFile(chanSec, alice, file.ID, "the invoice"))
	att := json.RawMessage(`[{"title":"Example","title_link":"https://example.com/","from_url":"https://example.com/","original_url":"https://example.com/","text":"An example"}]`)
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, SubType: "bot_message", BotID: "B0OTHER001", Username: "feeds", Text: "news", Attachments: att}))
	ed := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: bob, Text: "see <https://example.org/a>"}))
	must[slackfake.Delivery](t)(f.EditMessage(chanSec, ed.TS, "see <https://example.org/b>"))

	msgs, _ := readHistory(t, api, chanSec, 0, "", "", false)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	edited, bot, share := msgs[0], msgs[1], msgs[2]
	if share.SubType != "file_share" || len(share.Files) != 1 || share.Files[0].ID != file.ID || share.Files[0].URLPrivate == "" || !share.Upload {
		t.Errorf("file share %+v", share.Msg)
	}
	if bot.SubType != "bot_message" || bot.BotID != "B0OTHER001" || bot.Username != "feeds" || len(bot.Attachments) != 1 || bot.Attachments[0].FromURL != "https://example.com/" {
		t.Errorf("bot message %+v", bot.Msg)
	}
	if edited.Edited == nil || edited.Edited.Timestamp == "" || edited.Text != "see <https://example.org/b>" || len(edited.Blocks.BlockSet) != 1 {
		t.Errorf("edited message %+v", edited.Msg)
	}
}
