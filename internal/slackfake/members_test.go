package slackfake_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// innerEvent returns the next events_api envelope's inner event as
// slack-go decodes it, acked.
func innerEvent(t *testing.T, b *sockBot, d slackfake.Delivery) any {
	t.Helper()
	ctx := testCtx(t)
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if ev.Request.EnvelopeID != d.EnvelopeID {
		t.Fatalf("got envelope %s, want %s", ev.Request.EnvelopeID, d.EnvelopeID)
	}
	_ = b.sm.Ack(*ev.Request)
	api, _ := eventsAPI(t, ev)
	return api.InnerEvent.Data
}

// rawInner is the inner event of an envelope as JSON fields.
func rawInner(t *testing.T, f *slackfake.Server, envelopeID string) map[string]any {
	t.Helper()
	env, ok := f.Envelope(envelopeID)
	if !ok {
		t.Fatalf("no envelope %s", envelopeID)
	}
	var p struct {
		Event map[string]any `json:"event"`
	}
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.Event
}

// TestDeliverReaction: reaction_added and reaction_removed reach the bot
// in Slack's shape, decoded by slack-go, and the message's reactions (as
// history shows them) follow.
func TestDeliverReaction(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithEchoOwnMessages(false))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	f.AddChannel(slackfake.Channel{ID: "C0ELSEWHR1", NotMember: true})
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	msg := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "see <https://x.example/>"}))
	_ = innerEvent(t, b, msg)

	d := must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: bob, Channel: chanSec, TS: msg.TS, Reaction: "rotating_light"}))
	added, ok := innerEvent(t, b, d).(*slackevents.ReactionAddedEvent)
	if !ok || added.Type != "reaction_added" || added.User != bob || added.Reaction != "rotating_light" || added.ItemUser != alice ||
		added.Item.Type != "message" || added.Item.Channel != chanSec || added.Item.Timestamp != msg.TS || added.EventTimestamp == "" {
		t.Fatalf("reaction_added = %#v", added)
	}
	if ev := rawInner(t, f, d.EnvelopeID); ev["item"].(map[string]any)["channel_type"] != "channel" {
		t.Errorf("item %v has no channel_type", ev["item"])
	}
	must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: alice, Channel: chanSec, TS: msg.TS, Reaction: "rotating_light"}))
	_ = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	r, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: chanSec})
	if err != nil || len(r.Messages) != 1 || len(r.Messages[0].Reactions) != 1 || r.Messages[0].Reactions[0].Count != 2 ||
		!slices.Equal(r.Messages[0].Reactions[0].Users, []string{bob, alice}) {
		t.Errorf("history after two reactions: %+v, %v", r, err)
	}

	d = must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: bob, Channel: chanSec, TS: msg.TS, Reaction: "rotating_light", Removed: true}))
	removed, ok := innerEvent(t, b, d).(*slackevents.ReactionRemovedEvent)
	if !ok || removed.User != bob || removed.Item.Timestamp != msg.TS || removed.ItemUser != alice {
		t.Fatalf("reaction_removed = %#v", removed)
	}
	if m, _ := f.Message(chanSec, msg.TS); !slices.Equal(m.Reactions["rotating_light"], []string{alice}) {
		t.Errorf("reactions after the removal: %v", m.Reactions)
	}

	for _, bad := range []slackfake.ReactionEvent{
		{User: alice, Channel: chanSec, TS: msg.TS, Reaction: "rotating_light"},    // already reacted
		{User: bob, Channel: chanSec, TS: msg.TS, Reaction: "eyes", Removed: true}, // nothing to remove
		{User: bob, Channel: chanSec, TS: "1.000001", Reaction: "eyes"},            // no such message
		{User: bob, Channel: chanSec, TS: msg.TS, Reaction: ":eyes:"},              // colons
		{User: bob, Channel: chanSec, TS: msg.TS},                                  // no reaction
		{User: bob, Channel: "C0NOWHERE1", TS: msg.TS, Reaction: "eyes"},           // no channel
	} {
		if _, err := f.DeliverReaction(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}

	// An integration's message has no item_user.
	hook := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, SubType: "bot_message", BotID: "B0HOOK0001", Text: "alert"}))
	_ = innerEvent(t, b, hook)
	d = must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: bob, Channel: chanSec, TS: hook.TS, Reaction: "eyes"}))
	_ = innerEvent(t, b, d)
	if _, has := rawInner(t, f, d.EnvelopeID)["item_user"]; has {
		t.Error("a reaction to a message without a user has item_user")
	}

	// Where the bot is not: recorded, not delivered.
	other := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: "C0ELSEWHR1", User: alice, Text: "elsewhere"}))
	d = must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: bob, Channel: "C0ELSEWHR1", TS: other.TS, Reaction: "eyes"}))
	if d.EnvelopeID != "" {
		t.Errorf("a reaction where the bot is not was delivered: %+v", d)
	}
	if m, _ := f.Message("C0ELSEWHR1", other.TS); !slices.Equal(m.Reactions["eyes"], []string{bob}) {
		t.Errorf("the reaction was not recorded: %v", m.Reactions)
	}
}

// TestDeliverReactionGrid: with an Org the envelopes of a reaction and of
// a join carry the installation and the workspace, and a reaction in a
// workspace not granted is withheld.
func TestDeliverReactionGrid(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng, wsSales}, slackfake.WithEchoOwnMessages(false))
	msg := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "x"}))
	d := must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: gridBob, Channel: chanSales, TS: msg.TS, Reaction: "eyes"}))
	checkSite(t, "reaction in Sales", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsSales, false)
	ops := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanOps, User: gridBob, Text: "y"}))
	d = must[slackfake.Delivery](t)(f.DeliverReaction(slackfake.ReactionEvent{User: gridBob, Channel: chanOps, TS: ops.TS, Reaction: "eyes"}))
	if !d.Withheld {
		t.Errorf("reaction in Ops = %+v, want withheld", d)
	}
	w := f.Withheld()
	if last := w[len(w)-1]; last.Type != "reaction_added" || last.Channel != chanOps {
		t.Errorf("withheld %+v", last)
	}
	// A join in Sales: the person's workspace and the org in the event.
	d = must[slackfake.Delivery](t)(f.DeliverMemberJoined(chanSales, gridAdmin, gridAlice))
	checkSite(t, "join in Sales", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsSales, false)
	if ev := rawInner(t, f, d.EnvelopeID); ev["team"] != wsSales || ev["enterprise"] != orgID || ev["inviter"] != gridAlice {
		t.Errorf("member_joined_channel in the org = %v", ev)
	}
}

// TestDeliverMemberJoined: member_joined_channel in Slack's shape; the bot
// joining a channel it was not in becomes a member and may read its
// history; another user's join where the bot is not is not delivered.
func TestDeliverMemberJoined(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithEchoOwnMessages(false))
	f.AddChannel(slackfake.Channel{ID: chanSec})
	f.AddChannel(slackfake.Channel{ID: "C0ELSEWHR1", Name: "random", NotMember: true})
	f.AddChannel(slackfake.Channel{ID: "G0OLDPRIV1", Private: true, NotMember: true})
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d := must[slackfake.Delivery](t)(f.DeliverMemberJoined(chanSec, bob, alice))
	j, ok := innerEvent(t, b, d).(*slackevents.MemberJoinedChannelEvent)
	if !ok || j.Type != "member_joined_channel" || j.User != bob || j.Channel != chanSec || j.ChannelType != "C" ||
		j.Team != f.TeamID() || j.Inviter != alice || j.EventTimestamp == "" {
		t.Fatalf("member_joined_channel = %#v", j)
	}
	d = must[slackfake.Delivery](t)(f.DeliverMemberJoined(chanSec, carolID))
	if ev := rawInner(t, f, d.EnvelopeID); ev["inviter"] != nil {
		t.Errorf("inviter %v on a join without one", ev["inviter"])
	}
	_ = innerEvent(t, b, d)

	// Someone joining where the bot is not: not heard of.
	seeded := f.SeedHistory("C0ELSEWHR1", []slackfake.HistoryMessage{{User: alice, Text: "before the bot", ReplyTo: slackfake.TopLevel}})
	if d := must[slackfake.Delivery](t)(f.DeliverMemberJoined("C0ELSEWHR1", bob)); d.EnvelopeID != "" {
		t.Errorf("a join where the bot is not was delivered: %+v", d)
	}
	if _, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C0ELSEWHR1"}); errString(err) != "not_in_channel" {
		t.Fatalf("history before the bot joined: %v", err)
	}
	// The bot joins: it is told, and reads the history.
	d = must[slackfake.Delivery](t)(f.DeliverMemberJoined("C0ELSEWHR1", f.BotUserID(), alice))
	if j, ok := innerEvent(t, b, d).(*slackevents.MemberJoinedChannelEvent); !ok || j.User != f.BotUserID() || j.Channel != "C0ELSEWHR1" {
		t.Fatalf("the bot's join = %#v", j)
	}
	r, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C0ELSEWHR1"})
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Timestamp != seeded[0] {
		t.Errorf("history after the bot joined: %+v, %v", r, err)
	}
	info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0ELSEWHR1"})
	if err != nil || !info.IsMember {
		t.Errorf("conversations.info after joining: %+v, %v", info, err)
	}
	members, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "C0ELSEWHR1"})
	if err != nil || !slices.Contains(members, f.BotUserID()) || !slices.Contains(members, bob) {
		t.Errorf("members %v, %v", members, err)
	}

	// An old private channel (G… id): channel_type G.
	d = must[slackfake.Delivery](t)(f.DeliverMemberJoined("G0OLDPRIV1", f.BotUserID()))
	if j, ok := innerEvent(t, b, d).(*slackevents.MemberJoinedChannelEvent); !ok || j.ChannelType != "G" {
		t.Errorf("join of a G… private channel = %#v", j)
	}
	if _, err := f.DeliverMemberJoined("D0DIRECT01", bob); err == nil {
		t.Error("a join of a direct message: no error")
	}
}

// TestConversationsJoin: the bot joins a public channel with
// conversations.join (and hears of it when its own actions are echoed);
// again is a warning; private conversations refuse it.
func TestConversationsJoin(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: "C0ELSEWHR1", Name: "random", NotMember: true})
	f.AddChannel(slackfake.Channel{ID: "G0PRIV0001", Private: true})
	f.AddChannel(slackfake.Channel{ID: "G0HIDDEN01", Private: true, NotMember: true})
	f.AddChannel(slackfake.Channel{ID: "C0ARCHIVE1", Archived: true, NotMember: true})
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ch, warning, _, err := api.JoinConversationContext(ctx, "C0ELSEWHR1")
	if err != nil || !ch.IsMember || warning != "" {
		t.Fatalf("conversations.join = %+v, %q, %v", ch, warning, err)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	apiEv, _ := eventsAPI(t, ev)
	if j, ok := apiEv.InnerEvent.Data.(*slackevents.MemberJoinedChannelEvent); !ok || j.User != f.BotUserID() {
		t.Errorf("echo of the join = %#v", apiEv.InnerEvent.Data)
	}
	if env, _ := f.Envelope(ev.Request.EnvelopeID); !env.Echo {
		t.Error("the join's event is not marked Echo")
	}
	if _, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C0ELSEWHR1"}); err != nil {
		t.Errorf("history after joining: %v", err)
	}
	_, warning, warnings, err := api.JoinConversationContext(ctx, "C0ELSEWHR1")
	if err != nil || warning != "already_in_channel" || !slices.Equal(warnings, []string{"already_in_channel"}) {
		t.Errorf("joining again: %q %v %v", warning, warnings, err)
	}
	for id, want := range map[string]string{
		"G0PRIV0001": "method_not_supported_for_channel_type",
		"G0HIDDEN01": "channel_not_found",
		"C0ARCHIVE1": "is_archived",
		"C0NOWHERE1": "channel_not_found",
	} {
		if _, _, _, err := api.JoinConversationContext(ctx, id); errString(err) != want {
			t.Errorf("join %s: %v, want %s", id, err, want)
		}
	}
}
