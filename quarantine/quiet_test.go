package quarantine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// names is a BotAPI that knows some users and groups (the rest of BotAPI
// is not used by the quieter).
type names struct {
	BotAPI
	users  map[string]slack.User
	groups []slack.UserGroup
	calls  int
}

func (n *names) GetUserInfoContext(_ context.Context, id string, _ ...slack.GetUserInfoOption) (*slack.User, error) {
	n.calls++
	if u, ok := n.users[id]; ok {
		return &u, nil
	}
	return nil, errors.New("user_not_found")
}

func (n *names) GetUserGroupsContext(context.Context, ...slack.GetUserGroupsOption) ([]slack.UserGroup, error) {
	return n.groups, nil
}

func knownNames() *names {
	return &names{
		users: map[string]slack.User{
			"U0ALICE":  {ID: "U0ALICE", Name: "alice", Profile: slack.UserProfile{DisplayName: "Alice"}},
			"W0GRID":   {ID: "W0GRID", Name: "gridder", RealName: "Grid User"},
			"U0TRICKY": {ID: "U0TRICKY", Profile: slack.UserProfile{DisplayName: "<!channel> & co"}},
			"U0LOOP":   {ID: "U0LOOP", Profile: slack.UserProfile{DisplayName: "U0ALICE"}},
		},
		groups: []slack.UserGroup{{ID: "S0SEC", Handle: "secteam"}},
	}
}

// TestQuietText: every mention form becomes a plain name, however it is
// written; links and channel links stay.
func TestQuietText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"<!channel> look", "@channel look"},
		{"<!here> <!here|here> <!everyone>", "@here @here @everyone"},
		{"ping <!subteam^S0SEC>", "ping @secteam"},
		{"ping <!subteam^S0SEC|@secteam>", "ping @secteam"},
		{"ping <!subteam^S0GONE|@ghosts>", "ping @ghosts"},
		{"ping <!subteam^S0GONE>", "ping a group"},
		{"hi <@U0ALICE>", "hi @Alice"},
		{"hi <@U0ALICE|alice>", "hi @Alice"},
		{"hi <@W0GRID>", "hi @Grid User"},
		{"hi <@U0NOBODY|bob>", "hi @bob"},
		{"hi <@U0NOBODY>", "hi @someone"},
		{"name with brackets <@U0TRICKY>", "name with brackets @!channel  co"},
		{"&lt;!channel&gt; &amp;lt;!here&amp;gt; &#60;@U0ALICE&#62;", "@channel @here @Alice"},
		{"<!\u200bchannel> <\u2060@U0ALICE>", "@channel @Alice"},
		{"<<!here>U0ALICE>", "@someone"},
		{"<<@U0LOOP>>", "@Alice"},
		{"<!date^1392734382^{date_num}|2014-02-18> <!foo>", "2014-02-18 foo"},
		{"see <https://x.test/a?b=1&amp;c=2|the page> in <#C0GEN|general> a &lt; b &gt; c", "see <https://x.test/a?b=1&amp;c=2|the page> in <#C0GEN|general> a &lt; b &gt; c"},
	}
	for _, c := range cases {
		qt := newQuieter(t.Context(), knownNames())
		got := qt.text(c.in)
		if got != c.want {
			t.Errorf("text(%q) = %q, want %q", c.in, got, c.want)
		}
		if m := (slackfake.Message{Text: got}).Mentions(); len(m) > 0 {
			t.Errorf("text(%q) = %q still notifies %v", c.in, got, m)
		}
	}
}

// TestQuietNameLookupsAreBounded: a message naming many people costs at
// most maxNameLookups users.info calls, each id once.
func TestQuietNameLookupsAreBounded(t *testing.T) {
	n := knownNames()
	qt := newQuieter(t.Context(), n)
	var b strings.Builder
	for i := range 3 * maxNameLookups {
		b.WriteString("<@U0X" + strings.Repeat("A", i%40+1) + "> <@U0ALICE> ")
	}
	out := qt.text(b.String())
	if n.calls > maxNameLookups {
		t.Errorf("%d users.info calls, want at most %d", n.calls, maxNameLookups)
	}
	if m := (slackfake.Message{Text: out}).Mentions(); len(m) > 0 {
		t.Errorf("still notifies %v", m)
	}
}

// everyForm is a message with every mention form, in its text, its
// rich_text and mrkdwn blocks and its attachments, plus a button of ours
// and a link preview.
var everyForm = store.Quarantined{
	Channel: "C0SEC", User: "U0ALICE",
	Text: "<!channel> <!here> <!everyone> <!subteam^S0SEC> <!subteam^S0SEC|@secteam> <@U0ALICE> <@U0ALICE|alice> <@W0GRID> &lt;!channel&gt; <!\u200bhere> see <https://login.phish.test/verify>",
	Blocks: json.RawMessage(`[
		{"type":"rich_text","block_id":"r1","elements":[{"type":"rich_text_section","elements":[
			{"type":"broadcast","range":"channel"},{"type":"broadcast","range":"here"},{"type":"broadcast","range":"everyone"},
			{"type":"usergroup","usergroup_id":"S0SEC"},{"type":"user","user_id":"U0ALICE"},{"type":"user","user_id":"W0GRID"},
			{"type":"text","text":" see "},{"type":"link","url":"https://login.phish.test/verify"}]}]},
		{"type":"section","block_id":"s1","text":{"type":"mrkdwn","text":"@here <!channel> <@U0ALICE>"},
			"accessory":{"type":"button","action_id":"quarantine_release","value":"1700000000.000100","text":{"type":"plain_text","text":"Acknowledge"}}},
		{"type":"context","block_id":"c1","elements":[{"type":"mrkdwn","text":"@everyone <!subteam^S0SEC>"}]},
		{"type":"actions","block_id":"a1","elements":[{"type":"button","action_id":"quarantine_remove_all","value":"x","text":{"type":"plain_text","text":"OK"}}]}
	]`),
	Attachments: json.RawMessage(`[
		{"fallback":"<!channel>","text":"<!here> from the gateway <@U0ALICE>","pretext":"<!subteam^S0SEC>","fields":[{"title":"<!everyone>","value":"<@W0GRID>"}],
			"callback_id":"cb","actions":[{"name":"x","type":"button","text":"Do it"}],"mrkdwn_in":["text","pretext"]},
		{"from_url":"https://login.phish.test/verify","original_url":"https://login.phish.test/verify","title":"Sign in","text":"<!channel> preview"}
	]`),
	Level: "malicious", RemovedAt: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC),
}

// TestReleaseRepostNotifiesNobody: the re-post of a message with every
// mention form, through the real client against the fake Slack, notifies
// nobody — header included — shows the names instead, carries no button
// and no link preview, and is sent with parse=none and link_names=false.
func TestReleaseRepostNotifiesNobody(t *testing.T) {
	q, fake, db, _ := quarantineAgainstFake(t)
	fake.AddUser(slackfake.User{ID: "W0GRID", Name: "gridder", RealName: "Grid User"})
	fake.AddUserGroup("S0SEC", "secteam", "U0ALICE")
	q.IsAdmin = func(u string) bool { return u == "U0ADMIN" }
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: "C0SEC", User: "U0ALICE", Text: "placeholder"})
	if err != nil {
		t.Fatal(err)
	}
	rec := everyForm
	rec.TS = d.TS
	if err := db.PutQuarantined(rec); err != nil {
		t.Fatal(err)
	}
	c := maliciousCard("C0SEC", d.TS)
	c.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: rec.RemovedAt}
	q.Cards = &oneCard{c: c}

	answer := q.Release(t.Context(), "C0SEC", d.TS, "U0ADMIN")
	if !strings.HasPrefix(answer, "Released") {
		t.Fatalf("release: %q", answer)
	}
	var repost *slackfake.Message
	for _, m := range fake.Messages("C0SEC", "") {
		if m.Bot && strings.Contains(m.Text, "Released from quarantine") {
			repost = &m
		}
	}
	if repost == nil {
		t.Fatal("no re-post")
	}
	if got := repost.Mentions(); len(got) > 0 {
		t.Errorf("the re-post notifies %v\ntext: %s\nblocks: %s\nattachments: %s", got, repost.Text, repost.Blocks, repost.Attachments)
	}
	for _, want := range []string{"by @secadmin", "from @alice", "@channel", "@here", "@everyone", "@secteam", "@gridder"} {
		if !strings.Contains(repost.Text, want) {
			t.Errorf("the re-post's text lacks %q: %s", want, repost.Text)
		}
	}
	all := repost.Text + string(repost.Blocks) + string(repost.Attachments)
	for _, gone := range []string{"quarantine_release", "quarantine_remove_all", `"actions"`, "callback_id", "preview"} {
		if strings.Contains(all, gone) {
			t.Errorf("the re-post carries %q: %s", gone, all)
		}
	}
	if !strings.Contains(string(repost.Blocks), "https://login.phish.test/verify") || !strings.Contains(string(repost.Attachments), "from the gateway @alice") {
		t.Errorf("the re-post lost the content: %s %s", repost.Blocks, repost.Attachments)
	}
	if p := repost.Params; p.Get("parse") != "none" || p.Get("link_names") != "false" {
		t.Errorf("parse=%q link_names=%q, want none and false", p.Get("parse"), p.Get("link_names"))
	}
}
