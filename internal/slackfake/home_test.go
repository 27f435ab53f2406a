package slackfake_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

func homeView(n int) slack.HomeTabViewRequest {
	var blocks []slack.Block
	for i := range n {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("line %d", i), false, false), nil, nil))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

func TestViewsPublishStoresTheHomePerUser(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddUser(slackfake.User{ID: "U1"})
	api := newAPI(f)
	ctx := testCtx(t)

	resp, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView(100)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.View.Type != slack.VTHomeTab || resp.View.ID == "" || len(resp.View.Blocks.BlockSet) != 100 {
		t.Errorf("views.publish answered %+v", resp.View)
	}
	v, ok := f.HomeView("U1")
	if !ok || v.Published != 1 || v.ID != resp.View.ID {
		t.Fatalf("stored view %+v", v)
	}
	if _, ok := f.HomeView("U2"); ok {
		t.Error("a view for a user nobody published for")
	}
	// Slack's limits: 100 blocks in a Home, a known user, a home type, the
	// hash of the current view.
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView(101)}); err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("101 blocks: %v", err)
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U0NOBODY", View: homeView(1)}); err == nil || err.Error() != "user_not_found" {
		t.Errorf("unknown user: %v", err)
	}
	stale := "123.abc"
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView(1), Hash: &stale}); err == nil || err.Error() != "hash_conflict" {
		t.Errorf("stale hash: %v", err)
	}
	// A select whose initial option is not among its options is refused.
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, nil, "pick",
		slack.NewOptionBlockObject("a", slack.NewTextBlockObject(slack.PlainTextType, "a", false, false), nil))
	sel.InitialOption = slack.NewOptionBlockObject("z", slack.NewTextBlockObject(slack.PlainTextType, "z", false, false), nil)
	bad := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewActionBlock("b", sel)}}}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: bad}); err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("initial_option not among the options: %v", err)
	}
	if v, _ := f.HomeView("U1"); v.Published != 1 {
		t.Errorf("refused publishes were stored: %d", v.Published)
	}
}

func TestMembershipMethodsPaginate(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	var many []string
	for i := range 250 {
		many = append(many, fmt.Sprintf("U%04d", i))
	}
	f.AddChannel(slackfake.Channel{ID: "C1", Name: "general", Members: many})
	f.AddChannel(slackfake.Channel{ID: "G1", Name: "secret", Private: true, Members: []string{"U0001"}})
	f.AddChannel(slackfake.Channel{ID: "G2", Name: "not-ours", Private: true, NotMember: true, Members: []string{"U0001"}})
	f.AddChannel(slackfake.Channel{ID: "C2", Name: "archived", Archived: true})
	api := newAPI(f)
	ctx := testCtx(t)

	var members []string
	cursor := ""
	pages := 0
	for {
		ids, next, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "C1", Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		members, pages = append(members, ids...), pages+1
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(members) != 251 || !slices.Contains(members, f.BotUserID()) {
		t.Errorf("%d pages, %d members (bot included: %v), want 3 pages of 251", pages, len(members), slices.Contains(members, f.BotUserID()))
	}
	if _, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "G2"}); err == nil || err.Error() != "channel_not_found" {
		t.Errorf("a private channel the bot is not in: %v", err)
	}

	chs, next, err := api.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{
		Types: []string{"public_channel", "private_channel"}, ExcludeArchived: true, Limit: 200})
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	var ids []string
	for _, c := range chs {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"C1", "G1"}) {
		t.Errorf("the bot's channels = %q, want C1 G1 (not archived, not one it is not in)", ids)
	}
	if !chs[1].IsPrivate || chs[1].Name != "secret" {
		t.Errorf("private channel decoded as %+v", chs[1])
	}
}

func TestHomeEventsAndActionsDecodeInSlackGo(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddUser(slackfake.User{ID: "U1", Name: "alice"})
	b := runSocket(t, f)
	ctx := testCtx(t)
	b.next(t, ctx, socketmode.EventTypeHello)

	if _, err := f.DeliverAppHomeOpened("U1", "home"); err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	b.sm.Ack(*ev.Request)
	opened, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppHomeOpenedEvent)
	if !ok || opened.User != "U1" || opened.Tab != "home" || !strings.HasPrefix(opened.Channel, "D") || opened.View != nil {
		t.Fatalf("app_home_opened decoded as %+v", ev.Data)
	}

	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, slack.NewTextBlockObject(slack.PlainTextType, "Mode", false, false), "mode",
		slack.NewOptionBlockObject("quiet", slack.NewTextBlockObject(slack.PlainTextType, "quiet", false, false), nil),
		slack.NewOptionBlockObject("verbose", slack.NewTextBlockObject(slack.PlainTextType, "verbose", false, false), nil))
	view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewActionBlock("ch:C1", sel)}}}
	if _, err := newAPI(f).PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: view}); err != nil {
		t.Fatal(err)
	}
	// Opened again: the event carries the published view.
	if _, err := f.DeliverAppHomeOpened("U1", "home"); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	b.sm.Ack(*ev.Request)
	opened = ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppHomeOpenedEvent)
	if opened.View == nil || opened.View.Type != slack.VTHomeTab {
		t.Errorf("second app_home_opened carries view %+v", opened.View)
	}

	if _, err := f.DeliverHomeAction(slackfake.HomeAction{UserID: "U1", BlockID: "ch:C1", ActionID: "mode", Value: "nope"}); err == nil {
		t.Error("a value that is not an option was delivered")
	}
	if _, err := f.DeliverHomeAction(slackfake.HomeAction{UserID: "U1", BlockID: "ch:C1", ActionID: "mode", Value: "verbose"}); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeInteractive)
	b.sm.Ack(*ev.Request)
	cb := ev.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U1" || cb.View.Type != slack.VTHomeTab || cb.Container.Type != "view" ||
		cb.ResponseURL != "" || len(cb.ActionCallback.BlockActions) != 1 {
		t.Fatalf("home block_actions decoded as %+v", cb)
	}
	a := cb.ActionCallback.BlockActions[0]
	if a.ActionID != "mode" || a.BlockID != "ch:C1" || a.SelectedOption.Value != "verbose" || a.SelectedOption.Text.Text != "verbose" {
		t.Errorf("action = %+v", a)
	}

	// A mention: the message event, then app_mention with the same ts.
	f.AddChannel(slackfake.Channel{ID: "C1", Name: "general"})
	msg, men, err := f.Mention(slackfake.MessageEvent{Channel: "C1", User: "U1", ThreadTS: "", Text: "<@" + f.BotUserID() + "> scan"})
	if err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	b.sm.Ack(*ev.Request)
	if _, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent); !ok {
		t.Fatalf("first event %T, want the message", ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	b.sm.Ack(*ev.Request)
	am, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok || am.TimeStamp != msg.TS || men.TS != msg.TS || am.User != "U1" || am.Channel != "C1" || !strings.Contains(am.Text, "scan") {
		t.Fatalf("app_mention decoded as %+v", ev.Data)
	}
	raw, _ := json.Marshal(am)
	if !strings.Contains(string(raw), `"event_ts"`) {
		t.Errorf("app_mention lacks event_ts: %s", raw)
	}
}
