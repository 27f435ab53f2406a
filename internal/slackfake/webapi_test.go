package slackfake_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

func TestAuthTestAndBotsInfo(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	api := newAPI(f)
	ctx := testCtx(t)

	at, err := api.AuthTestContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at.UserID != f.BotUserID() || at.BotID != f.BotID() || at.TeamID != f.TeamID() || at.URL != f.URL()+"/" ||
		at.User != slackfake.DefaultBotName || at.Team != slackfake.DefaultTeamName || at.Header.Get("X-OAuth-Scopes") == "" {
		t.Errorf("auth.test = %+v", at)
	}
	c := f.Calls("auth.test")[0]
	if c.Token != f.BotToken() || c.TokenSource != "form" || c.TokenKind != slackfake.TokenBot || c.Params.Has("token") {
		t.Errorf("auth.test call = %+v (slack-go sends the token as a form field)", c)
	}

	bot, err := api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: at.BotID})
	if err != nil {
		t.Fatal(err)
	}
	if bot.AppID != f.AppID() || bot.UserID != f.BotUserID() {
		t.Errorf("bots.info = %+v", bot)
	}
}

func TestAuthErrorsAndUnknownMethod(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	ctx := testCtx(t)

	wrong := slack.New("xoxb-not-the-bot", slack.OptionAPIURL(f.APIURL()))
	if _, err := wrong.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong token: %v", err)
	}
	appAsBot := slack.New(f.AppToken(), slack.OptionAPIURL(f.APIURL()))
	if _, err := appAsBot.AuthTestContext(ctx); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("app token on a bot method: %v", err)
	}
	post := func(method string, v url.Values) string {
		t.Helper()
		resp, err := http.PostForm(f.APIURL()+method, v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, %v", method, resp.StatusCode, err)
		}
		return body.Error
	}
	if got := post("auth.test", nil); got != "not_authed" {
		t.Errorf("no token: %q", got)
	}
	if got := post("no.such.method", url.Values{"token": {f.BotToken()}}); got != "unknown_method" {
		t.Errorf("unknown method: %q", got)
	}
	if c := f.Calls("no.such.method"); len(c) != 1 || c[0].Error != "unknown_method" {
		t.Errorf("unknown method call = %+v", c)
	}
	if got := post("auth.test", url.Values{"token": {"xoxb-wrong"}}); got != "invalid_auth" {
		t.Errorf("form token: %q", got)
	}
}

func TestChatLifecycle(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithEchoOwnMessages(false))
	f.AddChannel(slackfake.Channel{ID: chanSec, Name: "security"})
	api := newAPI(f)
	ctx := testCtx(t)

	header := slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "Verdict", false, false))
	section := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hxxps://evil[.]example is *malicious*", false, false), nil, nil)
	ch, ts, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionBlocks(header, section), slack.MsgOptionText("fallback", false),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if err != nil || ch != chanSec || ts == "" {
		t.Fatalf("post = %q %q %v", ch, ts, err)
	}
	m, _ := f.Message(chanSec, ts)
	want, _ := json.Marshal([]slack.Block{header, section})
	if !m.Bot || m.Text != "fallback" || string(m.Blocks) != string(want) || m.UnfurlLinks == nil || *m.UnfurlLinks ||
		m.UnfurlMedia == nil || *m.UnfurlMedia || m.User != f.BotUserID() {
		t.Errorf("stored message = %+v\nblocks %s\nwant   %s", m, m.Blocks, want)
	}

	newSection := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "rechecked: *clean*", false, false), nil, nil)
	if _, _, _, err := api.UpdateMessageContext(ctx, chanSec, ts, slack.MsgOptionBlocks(newSection), slack.MsgOptionText("updated", false)); err != nil {
		t.Fatal(err)
	}
	m, _ = f.Message(chanSec, ts)
	if m.Text != "updated" || m.Updates() != 1 || m.Versions[0].Text != "fallback" || !strings.Contains(string(m.Blocks), "rechecked") {
		t.Errorf("after update = %+v", m)
	}

	_, replyTS, reply, err := api.PostMessageWithResponseContext(ctx, chanSec, slack.MsgOptionText("in thread", false), slack.MsgOptionTS(ts))
	if err != nil || reply.ThreadTimestamp != ts || reply.BotID != f.BotID() {
		t.Fatalf("reply = %+v, %v", reply, err)
	}
	if got := f.Messages(chanSec, ts); len(got) != 1 || got[0].TS != replyTS {
		t.Errorf("thread = %+v", got)
	}
	if got := f.Messages(chanSec, ""); len(got) != 1 || got[0].TS != ts {
		t.Errorf("top level = %+v", got)
	}

	if _, err := api.PostEphemeralContext(ctx, chanSec, alice, slack.MsgOptionText("only you", false)); err == nil || err.Error() != "user_not_in_channel" {
		t.Errorf("ephemeral to an unknown user: %v", err)
	}
	f.AddUser(slackfake.User{ID: alice, Name: "alice"})
	if _, err := api.PostEphemeralContext(ctx, chanSec, alice, slack.MsgOptionText("only you", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatal(err)
	}
	if e := f.Ephemerals(chanSec, alice); len(e) != 1 || e[0].Text != "only you" || e[0].ThreadTS != ts {
		t.Errorf("ephemerals = %+v", e)
	}

	link, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: chanSec, Ts: replyTS})
	if err != nil || !strings.HasPrefix(link, f.URL()+"/archives/"+chanSec+"/p") || !strings.Contains(link, "thread_ts="+ts) {
		t.Errorf("permalink = %q, %v", link, err)
	}
	if c := f.Calls("chat.getPermalink")[0]; c.TokenSource != "header" || c.HTTPMethod != http.MethodGet {
		t.Errorf("getPermalink call = %+v", c)
	}

	if _, _, err := api.DeleteMessageContext(ctx, chanSec, replyTS); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Message(chanSec, replyTS); !m.Deleted {
		t.Error("reply not deleted")
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"update unknown", second(api.UpdateMessageContext(ctx, chanSec, "1.000001", slack.MsgOptionText("x", false))), "message_not_found"},
		{"post unknown channel", third(api.PostMessageContext(ctx, "C0NOWHERE1", slack.MsgOptionText("x", false))), "channel_not_found"},
		{"post nothing", third(api.PostMessageContext(ctx, chanSec)), "no_text"},
		{"delete deleted", third(api.DeleteMessageContext(ctx, chanSec, replyTS)), "message_not_found"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, tc.err, tc.want)
		}
	}
}

func second(_, _, _ string, err error) error { return err }
func third(_, _ string, err error) error     { return err }

func TestCannotTouchUsersMessages(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "mine"}))
	api := newAPI(f)
	ctx := testCtx(t)
	if _, _, _, err := api.UpdateMessageContext(ctx, chanSec, d.TS, slack.MsgOptionText("x", false)); err == nil || err.Error() != "cant_update_message" {
		t.Errorf("update a user's message: %v", err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, chanSec, d.TS); err == nil || err.Error() != "cant_delete_message" {
		t.Errorf("delete a user's message: %v", err)
	}
}

func TestReactions(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "<https://ok.example>"}))
	api := newAPI(f)
	ctx := testCtx(t)
	ref := slack.NewRefToMessage(chanSec, d.TS)

	steps := []struct {
		op   func() error
		want string
	}{
		{func() error { return api.AddReactionContext(ctx, "mag", ref) }, ""},
		{func() error { return api.AddReactionContext(ctx, "mag", ref) }, "already_reacted"},
		{func() error { return api.RemoveReactionContext(ctx, "mag", ref) }, ""},
		{func() error { return api.RemoveReactionContext(ctx, "mag", ref) }, "no_reaction"},
		{func() error { return api.AddReactionContext(ctx, "white_check_mark", ref) }, ""},
		{func() error { return api.AddReactionContext(ctx, ":x:", ref) }, "invalid_name"},
		{func() error { return api.AddReactionContext(ctx, "x", slack.NewRefToMessage(chanSec, "1.000001")) }, "message_not_found"},
	}
	for i, s := range steps {
		err := s.op()
		if got := errString(err); got != s.want {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
	m, _ := f.Message(chanSec, d.TS)
	if len(m.Reactions) != 1 || !slices.Equal(m.Reactions["white_check_mark"], []string{f.BotUserID()}) {
		t.Errorf("reactions = %v", m.Reactions)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestConversationsUsersUsergroups(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: "G0PRIV0001", Name: "incident", Private: true, Members: []string{alice, bob}})
	f.AddUser(slackfake.User{ID: alice, Name: "alice", RealName: "Alice Adams", Email: "alice@example.com", IsAdmin: true})
	f.AddUserGroup("S0SECTEAM1", "secteam", alice, bob)
	api := newAPI(f)
	ctx := testCtx(t)

	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "G0PRIV0001", IncludeNumMembers: true})
	if err != nil || !ch.IsPrivate || ch.Name != "incident" || ch.NumMembers != 2 || !ch.IsMember || ch.IsIM {
		t.Errorf("conversations.info = %+v, %v", ch, err)
	}
	u, err := api.GetUserInfoContext(ctx, alice)
	if err != nil || u.RealName != "Alice Adams" || u.Profile.Email != "alice@example.com" || !u.IsAdmin || u.TeamID != f.TeamID() {
		t.Errorf("users.info = %+v, %v", u, err)
	}
	me, err := api.GetUserInfoContext(ctx, f.BotUserID())
	if err != nil || !me.IsBot || me.Profile.BotID != f.BotID() {
		t.Errorf("users.info(bot) = %+v, %v", me, err)
	}
	members, err := api.GetUserGroupMembersContext(ctx, "S0SECTEAM1")
	if err != nil || !slices.Equal(members, []string{alice, bob}) {
		t.Errorf("usergroups.users.list = %v, %v", members, err)
	}
	if _, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0NOWHERE1"}); errString(err) != "channel_not_found" {
		t.Errorf("unknown channel: %v", err)
	}
	if _, err := api.GetUserInfoContext(ctx, "U0NOBODY01"); errString(err) != "user_not_found" {
		t.Errorf("unknown user: %v", err)
	}
	if _, err := api.GetUserGroupMembersContext(ctx, "S0NOTHING1"); errString(err) != "no_such_subteam" {
		t.Errorf("unknown group: %v", err)
	}

	// History and replies read the same store.
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: "G0PRIV0001", User: alice, Text: "root"}))
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: "G0PRIV0001", User: bob, Text: "reply", ThreadTS: root.TS}))
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "G0PRIV0001", Timestamp: root.TS})
	if err != nil || len(msgs) != 2 || msgs[1].Text != "reply" || msgs[1].ParentUserId != alice {
		t.Errorf("conversations.replies = %+v, %v", msgs, err)
	}
	hist, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "G0PRIV0001"})
	if err != nil || len(hist.Messages) != 1 || hist.Messages[0].Text != "root" {
		t.Errorf("conversations.history = %+v, %v", hist, err)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	post := func() error {
		_, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("x", false))
		return err
	}

	f.RateLimit("chat.postMessage", 1, 2*time.Second)
	var rl *slack.RateLimitedError
	if err := post(); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("rate limited post: %v", err)
	}
	if err := post(); err != nil {
		t.Fatalf("post after the fault: %v", err)
	}
	c := f.Calls("chat.postMessage")[0]
	if c.Status != http.StatusTooManyRequests || !c.Fault || c.Error != "ratelimited" || !strings.Contains(string(c.Response), `"ratelimited"`) {
		t.Errorf("rate-limited call = %+v", c)
	}

	f.Fail("auth.test", 2, "account_inactive")
	for range 2 {
		if _, err := api.AuthTestContext(ctx); errString(err) != "account_inactive" {
			t.Errorf("failed auth.test: %v", err)
		}
	}
	if _, err := api.AuthTestContext(ctx); err != nil {
		t.Errorf("auth.test after the fault: %v", err)
	}

	f.InjectFault(slackfake.Fault{Method: "users.info", Times: 1, Status: http.StatusServiceUnavailable})
	var sc slack.StatusCodeError
	if _, err := api.GetUserInfoContext(ctx, f.BotUserID()); !errors.As(err, &sc) || sc.Code != http.StatusServiceUnavailable {
		t.Errorf("5xx: %v", err)
	}

	f.SlowDown("auth.test", 1, 300*time.Millisecond)
	start := time.Now()
	if _, err := api.AuthTestContext(ctx); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("slow auth.test took %v: %v", time.Since(start), err)
	}

	f.RateLimit("chat.update", 0, time.Second) // until cleared
	f.ClearFaults()
	if err := post(); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}
}

func TestPostPacing(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	t.Run("recorded", func(t *testing.T) {
		f := slackfaketest.Start(t)
		f.AddChannel(slackfake.Channel{ID: chanSec})
		f.AddChannel(slackfake.Channel{ID: "C0OTHER001"})
		api := newAPI(f)
		for _, ch := range []string{chanSec, chanSec, "C0OTHER001"} {
			if _, _, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText("x", false)); err != nil {
				t.Fatal(err)
			}
		}
		v := f.PaceViolations()
		if len(v) != 1 || v[0].Channel != chanSec || v[0].Gap >= time.Second {
			t.Errorf("violations = %+v", v)
		}
	})
	t.Run("enforced", func(t *testing.T) {
		f := slackfaketest.Start(t, slackfake.WithPostPacing(true))
		f.AddChannel(slackfake.Channel{ID: chanSec})
		api := newAPI(f)
		if _, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("x", false)); err != nil {
			t.Fatal(err)
		}
		var rl *slack.RateLimitedError
		if _, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("y", false)); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
			t.Errorf("second post: %v", err)
		}
	})
}

func TestInvalidBlocks(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	text := func(n int) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("a", n), false, false)
	}
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	for _, tc := range []struct {
		name   string
		blocks []slack.Block
		msg    string
	}{
		{"section text", []slack.Block{slack.NewSectionBlock(text(3001), nil, nil)}, "must be less than 3001 characters [json-pointer:/blocks/0/text/text]"},
		{"too many", many, "no more than 50 items"},
		{"button value", []slack.Block{slack.NewActionBlock("a", slack.NewButtonBlockElement("fp", strings.Repeat("v", 2001),
			slack.NewTextBlockObject(slack.PlainTextType, "FP", false, false)))}, "/blocks/0/elements/0/value"},
		{"duplicate block_id", []slack.Block{slack.NewDividerBlock(), slack.NewSectionBlock(text(5), nil, nil, slack.SectionBlockOptionBlockID("x")),
			slack.NewSectionBlock(text(5), nil, nil, slack.SectionBlockOptionBlockID("x"))}, "duplicate block_id"},
	} {
		_, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionBlocks(tc.blocks...))
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || se.Err != "invalid_blocks" || !strings.Contains(strings.Join(se.ResponseMetadata.Messages, "\n"), tc.msg) {
			t.Errorf("%s: %v %+v", tc.name, err, se.ResponseMetadata)
		}
	}
	if got := f.Messages(chanSec, ""); len(got) != 0 {
		t.Errorf("invalid posts were stored: %+v", got)
	}
}

func TestListenOnAllInterfacesHandsOutDialableURLs(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithAddr("0.0.0.0:0"))
	if !strings.HasPrefix(f.APIURL(), "http://127.0.0.1:") {
		t.Fatalf("APIURL = %q", f.APIURL())
	}
	if _, err := newAPI(f).AuthTestContext(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// WithRateLimits answers 429 with Retry-After once a channel's posting
// bucket or the workspace's chat.update bucket is empty; other channels
// and refused calls take nothing from the buckets.
func TestRateLimitsEnforced(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	f := slackfaketest.Start(t, slackfake.WithRateLimits(slackfake.RateLimits{PostInterval: 10 * time.Second, PostBurst: 2,
		UpdatesPerMinute: 6, UpdateBurst: 2}))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	f.AddChannel(slackfake.Channel{ID: "C0OTHER001"})
	api := newAPI(f)
	var ts []string
	for range 2 {
		_, t1, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("x", false))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, t1)
	}
	var rl *slack.RateLimitedError
	if _, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("y", false)); !errors.As(err, &rl) || rl.RetryAfter < 9*time.Second || rl.RetryAfter > 10*time.Second {
		t.Errorf("third post in one channel: %v, want a 429 with Retry-After 10", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C0OTHER001", slack.MsgOptionText("z", false)); err != nil {
		t.Errorf("a post in another channel: %v", err)
	}
	for i := range 2 {
		if _, _, _, err := api.UpdateMessageContext(ctx, chanSec, ts[i], slack.MsgOptionText("u", false)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, chanSec, ts[0], slack.MsgOptionText("v", false)); !errors.As(err, &rl) || rl.RetryAfter != 10*time.Second {
		t.Errorf("third update: %v, want a 429 with Retry-After 10", err)
	}
	if got := f.RateLimited(); got["chat.postMessage"] != 1 || got["chat.update"] != 1 {
		t.Errorf("RateLimited() = %v", got)
	}
	if n := len(f.Messages(chanSec, "")); n != 2 {
		t.Errorf("%d messages in the channel, want the 2 admitted", n)
	}
	for _, c := range f.Calls("chat.update") {
		if c.Error == "ratelimited" && c.Status != 429 {
			t.Errorf("a refused call recorded with status %d", c.Status)
		}
	}
}

// TestRepliesOfAThreadWhoseParentWasDeleted: as in Slack, a thread whose
// parent was deleted keeps a placeholder parent (subtype tombstone, "This
// message was deleted.", by Slackbot, nothing of the original) followed by
// its replies; a deleted parent without replies is gone.
func TestRepliesOfAThreadWhoseParentWasDeleted(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec})
	api := newAPI(f)
	ctx := testCtx(t)
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: "U0ALICE", Text: "secret <https://x.test/>"}))
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: "U0BOB", Text: "reply", ThreadTS: root.TS}))
	lonely := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: "U0ALICE", Text: "alone"}))
	must[slackfake.Delivery](t)(f.DeleteMessage(chanSec, root.TS))
	must[slackfake.Delivery](t)(f.DeleteMessage(chanSec, lonely.TS))

	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: root.TS})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("conversations.replies = %+v, %v", msgs, err)
	}
	if p := msgs[0]; p.SubType != "tombstone" || p.Timestamp != root.TS || p.Text != "This message was deleted." || p.User != "USLACKBOT" || strings.Contains(p.Text, "secret") {
		t.Errorf("parent %+v", p.Msg)
	}
	if msgs[1].Text != "reply" {
		t.Errorf("reply %+v", msgs[1].Msg)
	}
	if _, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSec, Timestamp: lonely.TS}); errString(err) != "thread_not_found" {
		t.Errorf("a deleted message without replies: %v", err)
	}
}

// TestScopesHeader: every Web API answer to a valid token names its
// scopes in X-OAuth-Scopes, as Slack's do: the bot token's
// (DefaultBotScopes, or WithBotScopes'), a user token's, the app
// token's; an invalid token's answer names none.
func TestScopesHeader(t *testing.T) {
	t.Parallel()
	const userToken = "xoxp-1-2-scopesheadertoken"
	f := slackfaketest.Start(t, slackfake.WithBotScopes("chat:write", "users:read"),
		slackfake.WithUserToken(slackfake.UserToken{Token: userToken, User: alice, Scopes: []string{"chat:write", "files:write"}}))
	f.AddUser(slackfake.User{ID: alice})
	scopes := func(method, token string, v url.Values) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.APIURL()+method, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-OAuth-Scopes")
	}
	for _, tc := range []struct {
		method, token string
		params        url.Values
		want          string
	}{
		{"auth.test", f.BotToken(), nil, "chat:write,users:read"},
		{"users.info", f.BotToken(), url.Values{"user": {alice}}, "chat:write,users:read"},
		{"conversations.info", f.BotToken(), url.Values{"channel": {"C0NONE"}}, "chat:write,users:read"}, // an error answer too
		{"auth.test", userToken, nil, "chat:write,files:write"},
		{"users.info", userToken, url.Values{"user": {alice}}, "chat:write,files:write"},
		{"apps.connections.open", f.AppToken(), nil, "connections:write"},
		{"auth.test", "xoxb-not-a-token", nil, ""},
	} {
		if got := scopes(tc.method, tc.token, tc.params); got != tc.want {
			t.Errorf("%s with %.6s…: X-OAuth-Scopes %q, want %q", tc.method, tc.token, got, tc.want)
		}
	}
	// The default is the manifest's (internal/manifest holds them equal).
	d := slackfaketest.Start(t)
	at, err := newAPI(d).AuthTestContext(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := at.Header.Get("X-OAuth-Scopes"); got != strings.Join(slackfake.DefaultBotScopes, ",") {
		t.Errorf("default X-OAuth-Scopes %q", got)
	}
}
