package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/cards"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestBackfillChecksAChannelsHistoryQuietly: an admin's /scan channel
// backfill 14d reads 10 days of history (300 messages, threads included)
// under Tier 3 limits, checks each message's links once, posts cards only
// for what is not clean (saying they come from the history, events
// marked), leaves clean messages alone, keeps one progress message updated
// to a summary; a message the bot had checked live is not checked again,
// and a second backfill submits nothing new. Non-admins may not start one.
func TestBackfillChecksAChannelsHistoryQuietly(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "10 days of history under Tier 3 limits (about 20 s)")
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	o := apptest.QuickPolling()
	o.BackfillPerMinute = 600
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_EVENTS_FILE": eventsFile,
		"VERDICTBOT_REPUTATION_RUN_RATE": "50", "VERDICTBOT_REPUTATION_REPORT_RATE": "200"},
		sim.Config{}, false, nil, o, slackfake.WithTierLimits(true))}
	now := time.Now()
	var msgs []slackfake.HistoryMessage
	var phish []string
	for i := range 300 {
		at := now.Add(-10 * 24 * time.Hour).Add(time.Duration(i) * 48 * time.Minute)
		m := slackfake.HistoryMessage{User: alice, Text: fmt.Sprintf("note %d", i), At: at, ReplyTo: slackfake.TopLevel}
		switch {
		case i%50 == 7:
			u := fmt.Sprintf("https://login.phish.test/old/%d", i)
			phish = append(phish, u)
			m.Text = "sign in: <" + u + ">"
		case i%5 == 0:
			m.Text = fmt.Sprintf("see <https://example.com/old/%d>", i)
		}
		if i == 250 {
			// A forwarded message: its link is only in the shared
			// message's blocks (attachments[].message_blocks), which
			// slack-go does not decode: the history is read with its JSON.
			u := "https://login.phish.test/forwarded"
			phish = append(phish, u)
			m.Text = "fyi"
			m.Attachments = json.RawMessage(`[{"ts":"1699999999.000200","channel_id":"C0OTHER","is_msg_unfurl":true,"is_share":true,"id":1,
				"fallback":"[Nov 14th] Bob: new portal","text":"new portal","from_url":"https://acme.slack.com/archives/C0OTHER/p1699999999000200",
				"message_blocks":[{"team":"T01","channel":"C0OTHER","ts":"1699999999.000200","message":{"blocks":[
					{"type":"rich_text","block_id":"z","elements":[{"type":"rich_text_section","elements":[
						{"type":"text","text":"new "},{"type":"link","url":"` + u + `","text":"portal"}]}]}]}}]}]`)
		}
		if i%30 == 1 && i > 1 {
			m.ReplyTo = i - 1 // a reply in the previous message's thread
			if i == 121 {
				u := "https://login.phish.test/in-thread"
				phish = append(phish, u)
				m.Text = "reply: <" + u + ">"
			}
		}
		msgs = append(msgs, m)
	}
	tss := h.Slack.SeedHistory(secChannel, msgs)
	// One message was seen live: it has its card (quiet: a reaction).
	live := h.Post("live: <https://example.com/old/live>")
	if err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
		m, _ := st.Message(secChannel, live.TS)
		return len(m.Reactions) > 0
	}); err != nil {
		t.Fatalf("the live message was not checked: %v", err)
	}
	if got := h.Slash(alice, "channel backfill 14d"); !strings.Contains(got, "Only admins") {
		t.Errorf("a non-admin was answered %q", got)
	}
	if got := h.Slash(adminUser, "channel backfill 90d"); !strings.Contains(got, "VERDICTBOT_BACKFILL_MAX") {
		t.Errorf("90d was answered %q", got)
	}
	start := time.Now()
	if got := h.Slash(adminUser, "channel backfill 14d"); !strings.Contains(got, "Checking this channel's history, the last 14 days") {
		t.Fatalf("the admin was answered %q", got)
	}
	var summary string
	err := h.Slack.WaitFor(h.Ctx(60*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "Finished checking this channel's history") {
				summary = m.Text
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the backfill did not finish: %v\nlogs:\n%s", err, h.Logs.String())
	}
	took := time.Since(start)
	t.Logf("summary after %v: %s", took.Round(time.Millisecond), summary)
	if !strings.Contains(summary, "found not clean") || !strings.Contains(summary, fmt.Sprintf("%d found not clean", len(phish))) {
		t.Errorf("summary %q, want %d found", summary, len(phish))
	}
	var progress int
	h.Slack.Inspect(func(st *slackfake.State) {
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "this channel's history") {
				progress++
			}
		}
	})
	if progress != 1 {
		t.Errorf("%d progress messages, want one updated in place", progress)
	}
	// Cards only for the phish, in their threads, saying where they come from.
	for _, u := range phish {
		if n := len(h.Sim.URLTasks(u)); n != 1 {
			t.Errorf("%s submitted %d times, want once", u, n)
		}
	}
	var cardsPosted, reacted int
	h.Slack.Inspect(func(st *slackfake.State) {
		for _, ts := range tss {
			for _, m := range st.BotMessages(secChannel, ts) {
				if strings.Contains(apptest.BlocksText(m.Blocks), cards.HistoryNote) {
					cardsPosted++
				}
			}
			if m, ok := st.Message(secChannel, ts); ok && len(m.Reactions) > 0 {
				reacted++
			}
		}
	})
	if cardsPosted != len(phish) {
		t.Errorf("%d history cards, want %d (the phish only)", cardsPosted, len(phish))
	}
	if reacted != 0 {
		t.Errorf("%d old clean messages got a reaction; the history scan is quiet", reacted)
	}
	if n := len(h.Sim.URLTasks("https://example.com/old/live")); n != 1 {
		t.Errorf("the live message's link was submitted %d times", n)
	}
	calls := map[string]int{}
	for _, m := range []string{"conversations.history", "conversations.replies"} {
		calls[m] = len(h.Slack.Calls(m))
	}
	t.Logf("calls: %v", calls)
	// Again: nothing new is submitted.
	before := h.Sim.Count("reputation", sim.OpScan)
	if got := h.Slash(adminUser, "channel backfill 14d"); !strings.Contains(got, "Checking") {
		t.Fatalf("the second backfill: %q", got)
	}
	err = h.Slack.WaitFor(h.Ctx(60*time.Second), func(st *slackfake.State) bool {
		n := 0
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "Finished checking") {
				n++
			}
		}
		return n == 2
	})
	if err != nil {
		// What the bot says of it, and what it posted, for the log.
		var posted []string
		h.Slack.Inspect(func(st *slackfake.State) {
			for _, m := range st.BotMessages(secChannel, "") {
				if strings.Contains(m.Text, "history") {
					posted = append(posted, m.Text)
				}
			}
		})
		t.Fatalf("the second backfill did not finish: %v\n/scan channel: %s\nposted: %q\ncalls: %d history, %d replies",
			err, h.Slash(adminUser, "channel"), posted, len(h.Slack.Calls("conversations.history")), len(h.Slack.Calls("conversations.replies")))
	}
	if after := h.Sim.Count("reputation", sim.OpScan); after != before {
		t.Errorf("the second backfill submitted %d links again", after-before)
	}
	if got := h.Slash(alice, "channel"); !strings.Contains(got, "Finished checking this channel's history") {
		t.Errorf("/scan channel does not show the backfill: %q", got)
	}
	// The App Home shows it on the channel's line, to a member.
	hd, err := h.Slack.DeliverAppHomeOpened(alice, "home")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), hd.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	v, err := h.Slack.WaitHomeView(h.Ctx(10*time.Second), alice, 1)
	if err != nil {
		t.Fatalf("no Home for Alice: %v", err)
	}
	if home := homeText(v.Blocks); !strings.Contains(home, "Finished checking this channel's history") {
		t.Errorf("the Home does not show the channel's history scan:\n%s", home)
	}
	b, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"backfill":true`); n < len(phish) {
		t.Errorf("%d events marked backfill, want at least %d", n, len(phish))
	}
}

// TestBackfillOnJoin: with VERDICTBOT_BACKFILL_ON_JOIN, the bot added to a
// channel checks its history by itself; someone else joining starts
// nothing; a stop by an admin ends it and says so.
func TestBackfillOnJoin(t *testing.T) {
	t.Parallel()
	const newChannel = "C0NEWCHAN"
	o := apptest.QuickPolling()
	o.BackfillPerMinute = 600
	seed := func(f *slackfake.Server) {
		f.AddChannel(slackfake.Channel{ID: newChannel, Name: "new", NotMember: true})
	}
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_BACKFILL_ON_JOIN": "3d", "VERDICTBOT_REPUTATION_RUN_RATE": "50"},
		sim.Config{}, false, seed, o)}
	now := time.Now()
	h.Slack.SeedHistory(newChannel, []slackfake.HistoryMessage{
		{User: alice, Text: "old: <https://login.phish.test/joined>", At: now.Add(-2 * 24 * time.Hour), ReplyTo: slackfake.TopLevel},
		{User: alice, Text: "too old: <https://login.phish.test/too-old>", At: now.Add(-5 * 24 * time.Hour), ReplyTo: slackfake.TopLevel},
	})
	if _, err := h.Slack.DeliverMemberJoined(newChannel, bob); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Slack.DeliverMemberJoined(newChannel, h.Slack.BotUserID()); err != nil {
		t.Fatal(err)
	}
	err := h.Slack.WaitFor(h.Ctx(30*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(newChannel, "") {
			if strings.Contains(m.Text, "Finished checking this channel's history (the last 3 days)") && strings.Contains(m.Text, "1 found not clean") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("joining did not check the history: %v\nlogs:\n%s", err, h.Logs.String())
	}
	if n := len(h.Sim.URLTasks("https://login.phish.test/joined")); n != 1 {
		t.Errorf("the link within the window was submitted %d times", n)
	}
	if n := len(h.Sim.URLTasks("https://login.phish.test/too-old")); n != 0 {
		t.Errorf("the link older than the window was submitted %d times", n)
	}
	if got := h.SlashIn(newChannel, adminUser, "channel backfill stop"); !strings.Contains(got, "Finished") {
		t.Errorf("stop after the end answered %q", got)
	}
}

// TestBackfillResumesAfterARestart: the bot stops while a backfill of
// 2,500 messages (three pages) is under way; the next process carries on
// from the last page recorded, at once (the claim was given back), keeps
// the one progress message, and checks every link exactly once: the page
// under way is read again, and its messages that were checked (or begun)
// before the stop are not checked twice.
func TestBackfillResumesAfterARestart(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "2,500 messages of history and a restart (about 45 s)")
	o := apptest.QuickPolling()
	o.BackfillPerMinute = 600
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_REPUTATION_RUN_RATE": "50",
		"VERDICTBOT_REPUTATION_REPORT_RATE": "200"}, sim.Config{}, false, nil, o, slackfake.WithTierLimits(true))}
	now := time.Now()
	var msgs []slackfake.HistoryMessage
	var links []string
	for i := range 2500 {
		m := slackfake.HistoryMessage{User: alice, Text: fmt.Sprintf("note %d", i), At: now.Add(-10 * 24 * time.Hour).Add(time.Duration(i) * 5 * time.Minute),
			ReplyTo: slackfake.TopLevel}
		if i%25 == 3 {
			u := fmt.Sprintf("https://login.phish.test/resume/%d", i)
			if i%50 == 28 {
				u = fmt.Sprintf("https://example.com/resume/%d", i)
			}
			links = append(links, u)
			m.Text = "see <" + u + ">"
		}
		msgs = append(msgs, m)
	}
	h.Slack.SeedHistory(secChannel, msgs)
	if got := h.Slash(adminUser, "channel backfill 14d"); !strings.Contains(got, "Checking") {
		t.Fatalf("backfill: %q", got)
	}
	// Stop once the first page is recorded and the second is under way.
	err := h.Slack.WaitFor(h.Ctx(60*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "1 pages read") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the first page was not recorded: %v\nlogs:\n%s", err, h.Logs.String())
	}
	historyCalls := len(h.Slack.Calls("conversations.history"))
	stopped := time.Now()
	h2 := &harness{h.Restart(o)}
	var summary string
	err = h2.Slack.WaitFor(h2.Ctx(90*time.Second), func(st *slackfake.State) bool {
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "Finished checking this channel's history") {
				summary = m.Text
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the backfill did not finish after the restart: %v\nlogs:\n%s", err, h2.Logs.String())
	}
	t.Logf("finished %v after the restart: %s", time.Since(stopped).Round(time.Millisecond), summary)
	// Carried on from the recorded page: the first call after the
	// restart names a cursor.
	calls := h2.Slack.Calls("conversations.history")
	if len(calls) <= historyCalls {
		t.Fatalf("no history read after the restart (%d calls)", len(calls))
	}
	if c := calls[historyCalls]; c.Params.Get("cursor") == "" {
		t.Errorf("the first read after the restart started over (no cursor): %v", c.Params)
	}
	for _, u := range links {
		if n := len(h2.Sim.URLTasks(u)); n != 1 {
			t.Errorf("%s submitted %d times, want once", u, n)
		}
	}
	phish := 0
	for _, u := range links {
		if strings.Contains(u, "phish") {
			phish++
		}
	}
	if !strings.Contains(summary, "2500 messages") || !strings.Contains(summary, fmt.Sprintf("%d links", len(links))) ||
		!strings.Contains(summary, fmt.Sprintf("%d found not clean", phish)) {
		t.Errorf("summary %q, want 2500 messages, %d links, %d found", summary, len(links), phish)
	}
	progress := 0
	h2.Slack.Inspect(func(st *slackfake.State) {
		for _, m := range st.BotMessages(secChannel, "") {
			if strings.Contains(m.Text, "this channel's history") {
				progress++
			}
		}
	})
	if progress != 1 {
		t.Errorf("%d progress messages, want the one kept across the restart", progress)
	}
}
