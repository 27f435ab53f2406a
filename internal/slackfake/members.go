package slackfake

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ReactionEvent is a person adding an emoji reaction to a message, or
// (Removed) taking theirs off.
type ReactionEvent struct {
	User     string // who reacts; registered on first use
	Channel  string
	TS       string // the message's ts
	Reaction string // the emoji's name, without colons: "eyes", "rotating_light"
	Removed  bool   // reaction_removed instead of reaction_added
}

// DeliverReaction records a reaction on a message the fake holds (its
// Reactions, which conversations.history and .replies show) and delivers
// reaction_added, or reaction_removed, in Slack's shape
// (docs.slack.dev/reference/events/reaction_added): user, reaction,
// item_user (the message's author; absent for a message without a user,
// such as an integration's), item {"type":"message","channel","ts",
// "channel_type"} and event_ts. With an Org the envelope carries the Grid
// fields as any event's does, and a reaction in a conversation of no
// granted workspace is withheld. In a conversation the bot is not in
// (Channel.NotMember) the reaction is recorded and nothing delivered: Slack
// sends an app the events of its own conversations. Adding a reaction the
// user already made, or removing one they did not, is an error (Slack
// sends no event for either).
func (s *Server) DeliverReaction(r ReactionEvent) (Delivery, error) {
	if r.User == "" || r.Channel == "" || r.TS == "" || r.Reaction == "" {
		return Delivery{}, errors.New("slackfake: ReactionEvent needs User, Channel, TS and Reaction")
	}
	if strings.Contains(r.Reaction, ":") && !strings.Contains(r.Reaction, "::skin-tone-") {
		return Delivery{}, fmt.Errorf("slackfake: reaction %q: give the emoji's name without colons", r.Reaction)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Delivery{}, ErrClosed
	}
	m := s.st.message(r.Channel, r.TS)
	if m == nil || m.Deleted {
		return Delivery{}, fmt.Errorf("slackfake: no message %s in %s", r.TS, r.Channel)
	}
	users := m.Reactions[r.Reaction]
	i := slices.Index(users, r.User)
	typ := "reaction_added"
	switch {
	case !r.Removed && i >= 0:
		return Delivery{}, fmt.Errorf("slackfake: %s already reacted %s to %s", r.User, r.Reaction, r.TS)
	case !r.Removed:
		if m.Reactions == nil {
			m.Reactions = map[string][]string{}
		}
		m.Reactions[r.Reaction] = append(slices.Clone(users), r.User)
	case i < 0:
		return Delivery{}, fmt.Errorf("slackfake: %s has no %s reaction on %s", r.User, r.Reaction, r.TS)
	default:
		typ = "reaction_removed"
		if users = slices.Delete(slices.Clone(users), i, i+1); len(users) == 0 {
			delete(m.Reactions, r.Reaction)
		} else {
			m.Reactions[r.Reaction] = users
		}
	}
	s.ensureUserLocked(r.User)
	ch := s.ensureChannelLocked(r.Channel)
	ev := map[string]any{
		"type": typ, "user": r.User, "reaction": r.Reaction,
		"item":     map[string]any{"type": "message", "channel": r.Channel, "ts": r.TS, "channel_type": ch.ChannelType()},
		"event_ts": s.nextTSLocked(),
	}
	if m.User != "" {
		ev["item_user"] = m.User
	}
	if ch.NotMember {
		s.notifyLocked()
		return Delivery{}, nil
	}
	raw, _ := json.Marshal(ev)
	return s.deliverEventLocked(raw, false)
}

// DeliverMemberJoined makes user join channel and delivers
// member_joined_channel in Slack's shape
// (docs.slack.dev/reference/events/member_joined_channel): user, channel,
// channel_type, team (the user's), event_ts and, when given, inviter (who
// added them); with an Org, enterprise too. channel_type is a single
// letter which, as that page explains it, follows the channel id's prefix:
// "G" for a private channel with a G… id (made before March 2021), "C"
// for any other, public or private (conversations.info tells which).
//
// When user is the bot, the bot becomes a member (Channel.NotMember false):
// from then on it reads the channel's history and gets its events.
// Another user's joining a conversation the bot is not in is recorded (the
// channel's members) and not delivered, as Slack sends the event only
// "when a new member joins a channel your bot or app is already a member
// of". A direct message has no such event: an error.
func (s *Server) DeliverMemberJoined(channel, user string, inviter ...string) (Delivery, error) {
	if channel == "" || user == "" {
		return Delivery{}, errors.New("slackfake: DeliverMemberJoined needs a channel and a user")
	}
	if len(inviter) > 1 {
		return Delivery{}, errors.New("slackfake: DeliverMemberJoined takes one inviter")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Delivery{}, ErrClosed
	}
	ch := s.ensureChannelLocked(channel)
	if ch.IM {
		return Delivery{}, fmt.Errorf("slackfake: %s is a direct message: nobody joins it", channel)
	}
	by := ""
	if len(inviter) == 1 {
		by = inviter[0]
	}
	notHeard := ch.NotMember && user != s.cfg.botUserID
	raw := s.joinLocked(ch, user, by)
	if notHeard {
		s.notifyLocked()
		return Delivery{}, nil
	}
	return s.deliverEventLocked(raw, false)
}

// joinLocked adds user to ch's members (the bot: NotMember false) and
// returns the member_joined_channel event.
func (s *Server) joinLocked(ch *Channel, user, inviter string) json.RawMessage {
	u := s.ensureUserLocked(user)
	if !slices.Contains(ch.Members, user) {
		ch.Members = append(ch.Members, user)
	}
	if user == s.cfg.botUserID {
		ch.NotMember = false
	}
	ctype := "C"
	if (ch.Private || ch.MPIM) && strings.HasPrefix(ch.ID, "G") {
		ctype = "G"
	}
	team := s.cfg.teamID
	switch {
	case s.grid():
		team = s.authorTeamLocked(ch, user, "")
	case s.isExternalLocked(u):
		team = cmp.Or(u.HomeTeam, ch.ExternalTeam, team)
	}
	ev := map[string]any{"type": "member_joined_channel", "user": user, "channel": ch.ID, "channel_type": ctype,
		"team": team, "event_ts": s.nextTSLocked()}
	if inviter != "" {
		s.ensureUserLocked(inviter)
		ev["inviter"] = inviter
	}
	if s.grid() {
		if e := s.enterpriseOfLocked(team, u, ch); e != "" {
			ev["enterprise"] = e
		}
	}
	raw, _ := json.Marshal(ev)
	return raw
}

// apiConversationsJoin lets the bot join a public channel
// (docs.slack.dev/reference/methods/conversations.join): it becomes a
// member and, with WithEchoOwnMessages, hears of it as member_joined_channel
// like any join. Joining again answers ok with the warning
// already_in_channel; a private conversation or a direct message answers
// method_not_supported_for_channel_type (channel_not_found when the bot
// cannot see it), an archived channel is_archived.
func (s *Server) apiConversationsJoin(c *apiCall) apiResult {
	ch := s.st.channels[c.params.Get("channel")]
	switch {
	case ch == nil, (ch.Private || ch.MPIM || ch.IM) && ch.NotMember:
		return errResult("channel_not_found")
	case ch.Private || ch.MPIM || ch.IM:
		return errResult("method_not_supported_for_channel_type")
	case ch.Archived:
		return errResult("is_archived")
	case !ch.NotMember:
		return okResult(map[string]any{"channel": s.channelJSON(ch, false), "warning": "already_in_channel",
			"response_metadata": map[string]any{"warnings": []string{"already_in_channel"}}})
	}
	raw := s.joinLocked(ch, s.cfg.botUserID, "")
	if s.cfg.echoOwn {
		_, _ = s.deliverEventLocked(raw, true)
	}
	return okResult(map[string]any{"channel": s.channelJSON(ch, false)})
}
