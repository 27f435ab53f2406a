package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// TestSeedHistory: seeded messages are in history and threads with what
// they carry, with ts from At (unique, in At's order), and no event is
// delivered for them.
func TestSeedHistory(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	earlier := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "delivered", TS: "1690000000.000000"}))
	envelopes := len(f.Envelopes())

	t0 := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	att := json.RawMessage(`[{"from_url":"https://example.com/","original_url":"https://example.com/","title":"Example"}]`)
	msgs := []slackfake.HistoryMessage{
		{User: alice, Text: "root <https://example.com/>", At: t0, ReplyTo: slackfake.TopLevel, Attachments: att},
		{User: bob, Text: "same instant", At: t0, ReplyTo: slackfake.TopLevel},
		{User: bob, Text: "reply", At: t0.Add(time.Minute), ReplyTo: 0},
		{User: alice, Text: "broadcast", At: t0.Add(2 * time.Minute), ReplyTo: 0, SubType: "thread_broadcast"},
		{User: carolID, Text: "the report", At: t0.Add(3 * time.Minute), ReplyTo: slackfake.TopLevel, SubType: "file_share",
			Files: []slackfake.File{{Name: "report.pdf", Content: []byte("%PDF-1.4 x")}}},
		{SubType: "bot_message", BotID: "B0FEEDS001", Username: "feeds", Text: "news", At: t0.Add(4 * time.Minute), ReplyTo: slackfake.TopLevel},
		{User: alice, Text: "fixed", At: t0.Add(5 * time.Minute), ReplyTo: slackfake.TopLevel, Edited: t0.Add(6 * time.Minute)},
		{User: f.BotUserID(), Text: "an old card", At: t0.Add(7 * time.Minute), ReplyTo: slackfake.TopLevel, NoBlocks: true},
		{User: bob, Text: "late reply to the delivered one", At: t0.Add(8 * time.Minute), ThreadTS: earlier.TS},
	}
	ts := f.SeedHistory(chanSec, msgs)
	if len(ts) != len(msgs) {
		t.Fatalf("%d ts for %d messages", len(ts), len(msgs))
	}
	if want := fmt.Sprintf("%d.000000", t0.Unix()); ts[0] != want || ts[1] != fmt.Sprintf("%d.000001", t0.Unix()) {
		t.Errorf("ts %s, %s: want %s and a microsecond later", ts[0], ts[1], want)
	}
	if n := len(f.Envelopes()); n != envelopes {
		t.Errorf("seeding delivered %d envelopes", n-envelopes)
	}

	hist, _ := readHistory(t, api, chanSec, 0, "", "", false)
	var texts []string
	for _, m := range hist {
		texts = append(texts, m.Text)
	}
	want := []string{"an old card", "fixed", "news", "the report", "broadcast", "same instant", "root <https://example.com/>", "delivered"}
	if !slices.Equal(texts, want) {
		t.Fatalf("history %q, want %q", texts, want)
	}
	byText := map[string]slack.Message{}
	for _, m := range hist {
		byText[m.Text] = m
	}
	if r := byText["root <https://example.com/>"]; r.ReplyCount != 2 || r.LatestReply != ts[3] || len(r.Attachments) != 1 || r.Attachments[0].FromURL != "https://example.com/" ||
		len(r.Blocks.BlockSet) != 1 || r.User != alice {
		t.Errorf("root %+v", r.Msg)
	}
	if r := byText["delivered"]; r.ReplyCount != 1 || r.LatestReply != ts[8] {
		t.Errorf("the delivered root %+v", r.Msg)
	}
	rep := byText["the report"]
	if rep.SubType != "file_share" || len(rep.Files) != 1 || rep.Files[0].Name != "report.pdf" || rep.Files[0].User != carolID {
		t.Fatalf("file share %+v", rep.Msg)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rep.Files[0].URLPrivateDownload, nil)
	req.Header.Set("Authorization", "Bearer "+f.BotToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "%PDF-1.4 x" {
		t.Errorf("the seeded file downloads as %q", body)
	}
	if b := byText["news"]; b.SubType != "bot_message" || b.BotID != "B0FEEDS001" || b.Username != "feeds" || b.User != "" {
		t.Errorf("bot message %+v", b.Msg)
	}
	if e := byText["fixed"]; e.Edited == nil || e.Edited.Timestamp != fmt.Sprintf("%d.000000", t0.Add(6*time.Minute).Unix()) {
		t.Errorf("edited %+v", e.Msg)
	}
	if c := byText["an old card"]; c.BotID != f.BotID() || c.User != f.BotUserID() || c.Blocks.BlockSet != nil {
		t.Errorf("the bot's message %+v", c.Msg)
	}
	if b := byText["broadcast"]; b.SubType != "thread_broadcast" || b.ThreadTimestamp != ts[0] {
		t.Errorf("broadcast %+v", b.Msg)
	}

	thread, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: ts[0]})
	if err != nil || len(thread) != 3 || thread[1].Text != "reply" || thread[2].Text != "broadcast" || thread[1].ParentUserId != alice {
		t.Errorf("thread %+v, %v", thread, err)
	}
	if m, ok := f.Message(chanSec, ts[7]); !ok || !m.Bot {
		t.Errorf("the bot's seeded message: %+v", m)
	}
	// The channel's members now include the authors.
	members, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: chanSec})
	if err != nil || !slices.Contains(members, carolID) {
		t.Errorf("members %v, %v", members, err)
	}
	// A post after seeding gets a newer ts.
	_, posted, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("new", false))
	if err != nil || posted <= ts[8] {
		t.Errorf("post after seeding: ts %s, %v", posted, err)
	}
}

const carolID = "U0CAROL001"

// TestSeedHistoryRefusesMistakes: a reply without a root, a root that is
// a reply, a reply before its root and the zero ReplyTo on msgs[0] panic,
// and nothing is stored.
func TestSeedHistoryRefusesMistakes(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	t0 := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	for name, msgs := range map[string][]slackfake.HistoryMessage{
		"zero ReplyTo":     {{User: alice, Text: "a", At: t0}},
		"out of range":     {{User: alice, Text: "a", At: t0, ReplyTo: 3}},
		"reply to a reply": {{User: alice, Text: "a", At: t0, ReplyTo: -1}, {User: alice, Text: "b", At: t0.Add(time.Second), ReplyTo: 0}, {User: alice, Text: "c", At: t0.Add(2 * time.Second), ReplyTo: 1}},
		"before its root":  {{User: alice, Text: "a", At: t0, ReplyTo: -1}, {User: alice, Text: "b", At: t0.Add(-time.Second), ReplyTo: 0}},
		"unknown ThreadTS": {{User: alice, Text: "a", At: t0, ThreadTS: "1700000000.000001"}},
		"At out of range":  {{User: alice, Text: "a", At: time.Unix(1000, 0), ReplyTo: -1}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f.SeedHistory(chanSec, msgs)
		}()
	}
	if n := len(f.Messages(chanSec, "")); n != 0 {
		t.Errorf("%d messages stored by refused seeds", n)
	}
}

// seedBig builds n top-level messages over 14 days, every 5th with a link
// (and every 10th of those with its unfurl), and replies to every 50th.
func seedBig(n, replies int) []slackfake.HistoryMessage {
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	step := 14 * 24 * time.Hour / time.Duration(n)
	msgs := make([]slackfake.HistoryMessage, 0, n+replies)
	users := []string{alice, bob, carolID}
	for i := range n {
		m := slackfake.HistoryMessage{User: users[i%3], At: start.Add(time.Duration(i) * step), ReplyTo: slackfake.TopLevel,
			Text: fmt.Sprintf("message %d", i)}
		if i%5 == 0 {
			u := fmt.Sprintf("https://site-%d.example/path/%d?q=%d", i%97, i, i)
			m.Text = fmt.Sprintf("look at <%s|this> (message %d)", u, i)
			if i%50 == 0 {
				m.Attachments = json.RawMessage(fmt.Sprintf(`[{"from_url":%q,"original_url":%q,"title":"Site %d"}]`, u, u, i%97))
			}
		}
		msgs = append(msgs, m)
	}
	for r := range replies {
		root := (r * 50) % n
		msgs = append(msgs, slackfake.HistoryMessage{User: bob, At: msgs[root].At.Add(time.Second), ReplyTo: root,
			Text: fmt.Sprintf("reply %d to %d", r, root)})
	}
	return msgs
}

// TestSeedTenThousandAndPageUnderTierLimits: 10,000 messages with 2,000
// links over 14 days (and 200 replies) are seeded in well under a second;
// reading the channel back with limit 1500 gives pages of 999 (Slack's
// maximum) newest first, the 11th call of the burst is answered 429 with
// Retry-After, and after waiting it (on the limiter's clock) the rest
// comes: every top-level message once, no reply, the links intact.
func TestSeedTenThousandAndPageUnderTierLimits(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := slackfaketest.Start(t, slackfake.WithTierLimits(true), slackfake.WithRateLimitClock(clock.Now))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	// Reading 10,000 messages back takes a few seconds under the race
	// detector, more on a loaded machine: more than testCtx's 20 s.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const n, nReplies = 10000, 200
	msgs := seedBig(n, nReplies)

	began := time.Now()
	ts := f.SeedHistory(chanSec, msgs)
	took := time.Since(began)
	t.Logf("seeded %d messages in %v", len(msgs), took)
	// About 0.1 s; the race detector makes that 0.5 to 1 s, and more on a
	// loaded machine.
	if budget := map[bool]time.Duration{false: time.Second, true: 10 * time.Second}[raceDetector]; took > budget {
		t.Errorf("seeding %d messages took %v (budget %v)", len(msgs), took, budget)
	}
	if len(ts) != n+nReplies {
		t.Fatalf("%d ts", len(ts))
	}
	links := 0
	for _, m := range msgs[:n] {
		if strings.Contains(m.Text, "<https://") {
			links++
		}
	}
	if links != 2000 {
		t.Fatalf("%d messages with links, want 2,000", links)
	}

	var got []slack.Message
	var sizes []int
	cursor, limited, calls := "", 0, 0
	for calls < 40 {
		calls++
		r, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: chanSec, Limit: 1500, Cursor: cursor})
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			limited++
			if calls != slackfake.Tier3Burst+1 || rl.RetryAfter != 2*time.Second {
				t.Errorf("429 on call %d with Retry-After %v, want it on call %d with 2s", calls, rl.RetryAfter, slackfake.Tier3Burst+1)
			}
			clock.Advance(rl.RetryAfter)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Messages...)
		sizes = append(sizes, len(r.Messages))
		if !r.HasMore {
			break
		}
		cursor = r.ResponseMetaData.NextCursor
	}
	if limited != 1 {
		t.Errorf("%d calls refused, want 1 (the 11th)", limited)
	}
	if want := []int{999, 999, 999, 999, 999, 999, 999, 999, 999, 999, 10}; !slices.Equal(sizes, want) {
		t.Errorf("pages of %v, want %v", sizes, want)
	}
	if len(got) != n {
		t.Fatalf("read %d messages, want %d", len(got), n)
	}
	withLinks, roots := 0, 0
	for i, m := range got {
		if m.Timestamp != ts[n-1-i] {
			t.Fatalf("message %d is %s, want %s (newest first)", i, m.Timestamp, ts[n-1-i])
		}
		if m.Text != msgs[n-1-i].Text {
			t.Fatalf("message %s text %q, want %q", m.Timestamp, m.Text, msgs[n-1-i].Text)
		}
		if strings.Contains(m.Text, "<https://") {
			withLinks++
		}
		if m.ReplyCount > 0 {
			roots++
		}
	}
	if withLinks != 2000 || roots != nReplies {
		t.Errorf("%d messages with links, %d thread roots; want 2,000 and %d", withLinks, roots, nReplies)
	}
	if c := f.Calls("conversations.history"); len(c) != 12 || c[0].Params.Get("limit") != "1500" {
		t.Errorf("%d calls recorded", len(c))
	}
}

func BenchmarkSeedHistory(b *testing.B) {
	f := slackfaketest.Start(b)
	msgs := seedBig(10000, 200)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		f.SeedHistory(fmt.Sprintf("C0BENCH%04d", i), msgs)
	}
}
