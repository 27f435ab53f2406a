package slackfake_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

// TestMentions: every form that notifies someone is found, in the text,
// blocks and attachments; plain @here counts only where Slack parses it;
// code, entities and invisible characters do not hide a sequence.
func TestMentions(t *testing.T) {
	cases := []struct {
		name string
		m    slackfake.Message
		want []string
	}{
		{"text forms", slackfake.Message{Text: "<!channel> <!here|here> <!everyone> <!subteam^S0SEC|@sec> <@U0A> <@W0B|bob> <#C0X|general> <https://x.test|@here>"},
			[]string{"channel", "everyone", "here", "subteam:S0SEC", "user:U0A", "user:W0B"}},
		{"plain @here in text without parse", slackfake.Message{Text: "@here and @channel"}, nil},
		{"plain @here in text with link_names", slackfake.Message{Text: "hi @here", Params: url.Values{"link_names": {"true"}}}, []string{"here"}},
		{"plain @everyone with parse=full", slackfake.Message{Text: "@everyone", Params: url.Values{"parse": {"full"}}}, []string{"everyone"}},
		{"entities and zero-width", slackfake.Message{Text: "&lt;!channel&gt; &amp;lt;!here&amp;gt; <!\u200beveryone> &#60;@U0Z&#62;"},
			[]string{"channel", "everyone", "here", "user:U0Z"}},
		{"rich_text", slackfake.Message{Blocks: json.RawMessage(`[{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[
			{"type":"broadcast","range":"channel"},{"type":"user","user_id":"U0A"},{"type":"usergroup","usergroup_id":"S0G"},{"type":"text","text":"<!here>"}]}]}]`)},
			[]string{"channel", "subteam:S0G", "user:U0A"}},
		{"mrkdwn, verbatim or not", slackfake.Message{Blocks: json.RawMessage(`[
			{"type":"section","text":{"type":"mrkdwn","text":"@here"}},
			{"type":"context","elements":[{"type":"mrkdwn","text":"@channel <@U0C>","verbatim":true}]},
			{"type":"section","text":{"type":"plain_text","text":"<!everyone>"}}]`)},
			[]string{"here", "user:U0C"}},
		{"attachments", slackfake.Message{Attachments: json.RawMessage(`[{"text":"<!here>","pretext":"<@U0P>","fields":[{"title":"t","value":"<!subteam^S0F>"}],
			"blocks":[{"type":"section","text":{"type":"mrkdwn","text":"<!channel>"}}]}]`)},
			[]string{"channel", "here", "subteam:S0F", "user:U0P"}},
		{"nothing", slackfake.Message{Text: "see <https://x.test> in <#C0X>", Blocks: json.RawMessage(`[{"type":"section","text":{"type":"mrkdwn","text":"@here","verbatim":true}}]`)}, nil},
	}
	for _, c := range cases {
		if got := c.m.Mentions(); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUsergroupsList: usergroups.list names each group by id and handle;
// a disabled group only with include_disabled.
func TestUsergroupsList(t *testing.T) {
	ctx := testCtx(t)
	f, err := slackfake.New()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.AddUserGroup("S0SECTEAM1", "secteam", alice)
	f.AddUserGroup("S0ONCALL01", "oncall", bob)
	groups, err := newAPI(f).GetUserGroupsContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, g := range groups {
		got[g.ID] = g.Handle
	}
	if len(got) != 2 || got["S0SECTEAM1"] != "secteam" || got["S0ONCALL01"] != "oncall" {
		t.Errorf("usergroups.list = %+v", groups)
	}
	if _, err := newAPI(f).GetUserGroupsContext(ctx, slack.GetUserGroupsOptionIncludeDisabled(true)); err != nil {
		t.Error(err)
	}
}
