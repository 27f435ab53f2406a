package slackfake_test

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

const (
	adminToken = "xoxp-1000000001-3000000003-fakeadminusertoken"
	plainToken = "xoxp-1000000001-3000000004-fakeplainusertoken"
	bareToken  = "xoxp-1000000001-3000000005-fakenoscopetoken0"
	carol      = "U0CAROL001"
)

// TestDeletionRules: a bot token deletes only the app's own posts; an
// admin's user token deletes members' messages and files but not another
// organisation's (Slack Connect); an ordinary user's token deletes only
// their own; a token without the scope gets missing_scope.
func TestDeletionRules(t *testing.T) {
	ctx := testCtx(t)
	f, err := slackfake.New(
		slackfake.WithUserToken(slackfake.UserToken{Token: adminToken, User: alice, Scopes: []string{"chat:write", "files:write"}}),
		slackfake.WithUserToken(slackfake.UserToken{Token: plainToken, User: carol, Scopes: []string{"chat:write", "files:write"}}),
		slackfake.WithUserToken(slackfake.UserToken{Token: bareToken, User: alice}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.AddUser(slackfake.User{ID: alice, Name: "alice", IsAdmin: true})
	f.AddUser(slackfake.User{ID: carol, Name: "carol"})
	bot := newAPI(f)
	admin := slack.New(adminToken, slack.OptionAPIURL(f.APIURL()))
	plain := slack.New(plainToken, slack.OptionAPIURL(f.APIURL()))
	bare := slack.New(bareToken, slack.OptionAPIURL(f.APIURL()))

	post := func(user, team string) string {
		t.Helper()
		d, err := f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: user, Team: team, Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		return d.TS
	}
	del := func(api *slack.Client, ts string) string {
		t.Helper()
		if _, _, err := api.DeleteMessageContext(ctx, chanSec, ts); err != nil {
			return err.Error()
		}
		return "ok"
	}

	bobs := post(bob, "")
	if got := del(bot, bobs); got != "cant_delete_message" {
		t.Errorf("bot token on a member's message: %s, want cant_delete_message", got)
	}
	if got := del(plain, bobs); got != "cant_delete_message" {
		t.Errorf("ordinary user's token on another's message: %s, want cant_delete_message", got)
	}
	if got := del(bare, bobs); got != "missing_scope" {
		t.Errorf("admin token without chat:write: %s, want missing_scope", got)
	}
	if got := del(admin, bobs); got != "ok" {
		t.Errorf("admin token on a member's message: %s, want ok", got)
	}
	if m, _ := f.Message(chanSec, bobs); !m.Deleted {
		t.Error("the message was not deleted")
	}
	if got := del(admin, bobs); got != "message_not_found" {
		t.Errorf("deleting again: %s, want message_not_found", got)
	}
	if got := del(plain, post(carol, "")); got != "ok" {
		t.Errorf("a user deleting their own message: %s, want ok", got)
	}
	if got := del(admin, post("U0EXTERN01", "T0OTHERORG")); got != "cant_delete_message" {
		t.Errorf("admin token on another organisation's message: %s, want cant_delete_message", got)
	}
	_, ts, _, err := bot.SendMessageContext(ctx, chanSec, slack.MsgOptionText("card", false))
	if err != nil {
		t.Fatal(err)
	}
	if got := del(bot, ts); got != "ok" {
		t.Errorf("bot token on its own post: %s, want ok", got)
	}

	// files.delete follows the same rules.
	file := f.AddFile(slackfake.File{Name: "a.pdf", User: bob, Content: []byte("%PDF-1.4")})
	foreign := f.AddFile(slackfake.File{Name: "b.pdf", User: "U0EXTERN01", Team: "T0OTHERORG", Content: []byte("%PDF-1.4")})
	if err := bot.DeleteFileContext(ctx, file.ID); err == nil || err.Error() != "cant_delete_file" {
		t.Errorf("bot token on a member's file: %v, want cant_delete_file", err)
	}
	if err := admin.DeleteFileContext(ctx, foreign.ID); err == nil || err.Error() != "cant_delete_file" {
		t.Errorf("admin token on another organisation's file: %v, want cant_delete_file", err)
	}
	if err := admin.DeleteFileContext(ctx, file.ID); err != nil {
		t.Errorf("admin token on a member's file: %v", err)
	}
	if _, _, _, err := bot.GetFileInfoContext(ctx, file.ID, 0, 0); err == nil || err.Error() != "file_deleted" {
		t.Errorf("files.info after files.delete: %v, want file_deleted", err)
	}

	// auth.test answers as the user; a method for bots refuses the token.
	at, err := admin.AuthTestContext(ctx)
	if err != nil || at.UserID != alice || at.BotID != "" {
		t.Errorf("auth.test with the admin token: %+v %v", at, err)
	}
	if _, _, err := admin.PostMessageContext(ctx, chanSec, slack.MsgOptionText("x", false)); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("chat.postMessage with a user token: %v, want not_allowed_token_type", err)
	}
}
