package slackfake

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// verificationToken is the deprecated "token" field Slack still puts in
// payloads; slack-go's socketmode client does not check it.
const verificationToken = "fakeVerificationToken0000"

// Delivery identifies what a Deliver call sent.
type Delivery struct {
	EnvelopeID string // the first attempt's envelope_id; retries: EventEnvelopes(EventID)
	EventID    string // events_api only
	TS         string // the message ts, for message events
	// ResponseURL and TriggerID of a slash command or interaction.
	ResponseURL string
	TriggerID   string
	// Withheld is set, and nothing delivered, when the event happened in a
	// conversation none of whose workspaces the org-wide app is granted
	// (WithOrg): see State.Withheld.
	Withheld bool
}

// eventCallback is the events_api payload, fields in Slack's order.
// enterprise_id, context_team_id and context_enterprise_id are sent under
// an Org only (WithOrg), so a fake without one sends what it always did.
// Slack's event reference pages do not show the context fields; payloads
// captured from Slack do (token, team_id, context_team_id,
// context_enterprise_id, api_app_id…: Bolt's test fixtures, and
// learn.microsoft.com's Slack EventEnvelope.context_team_id, "the
// workspace through which the app receives this event").
type eventCallback struct {
	Token               string          `json:"token"`
	TeamID              *string         `json:"team_id"` // null for an organisation-level event
	EnterpriseID        string          `json:"enterprise_id,omitempty"`
	ContextTeamID       string          `json:"context_team_id,omitempty"`
	ContextEnterpriseID string          `json:"context_enterprise_id,omitempty"`
	APIAppID            string          `json:"api_app_id"`
	Event               json.RawMessage `json:"event"`
	Type                string          `json:"type"`
	EventID             string          `json:"event_id"`
	EventTime           int64           `json:"event_time"`
	Authorizations      []authorization `json:"authorizations"`
	IsExtSharedChannel  bool            `json:"is_ext_shared_channel"`
	EventContext        string          `json:"event_context"`
}

type authorization struct {
	EnterpriseID        *string `json:"enterprise_id"`
	TeamID              *string `json:"team_id"`
	UserID              string  `json:"user_id"`
	IsBot               bool    `json:"is_bot"`
	IsEnterpriseInstall bool    `json:"is_enterprise_install"`
}

// DeliverEvent delivers an events_api envelope wrapping inner, the inner
// event: any value that marshals to a JSON object, or json.RawMessage,
// []byte or string holding one. An inner event slack-go cannot decode (an
// unknown "type", a malformed field) reaches the bot as error_bad_message
// and, unless the bot acks it from the raw frame, is redelivered.
func (s *Server) DeliverEvent(inner any) (Delivery, error) {
	raw, err := rawJSON(inner)
	if err != nil {
		return Delivery{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliverEventLocked(raw, false)
}

func rawJSON(v any) (json.RawMessage, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("slackfake: marshal event: %w", err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return nil, errors.New("slackfake: event is not valid JSON")
	}
	return raw, nil
}

func (s *Server) deliverEventLocked(inner json.RawMessage, echo bool) (Delivery, error) {
	if s.closed {
		return Delivery{}, ErrClosed
	}
	var head struct {
		Type    string `json:"type"`
		SubType string `json:"subtype"`
	}
	_ = json.Unmarshal(inner, &head)
	site := s.eventSiteLocked(head.Type, inner)
	if s.grid() && !site.org && site.ours == "" {
		s.withholdLocked(site, head.Type, head.SubType, inner, echo)
		return Delivery{Withheld: true}, nil
	}
	eventID := randomID("Ev", 10)
	team := s.cfg.teamID
	cb := eventCallback{
		Token: verificationToken, TeamID: &team, APIAppID: s.cfg.appID, Event: inner,
		Type: "event_callback", EventID: eventID, EventTime: time.Now().Unix(),
		Authorizations:     []authorization{{TeamID: &team, UserID: s.cfg.botUserID, IsBot: true}},
		IsExtSharedChannel: site.ext,
		EventContext:       "4-" + randomID("", 24),
	}
	if s.grid() {
		s.orgEnvelope(&cb, site)
	}
	payload, _ := json.Marshal(cb)
	env := &Envelope{
		ID: newUUID(), Type: EnvelopeEventsAPI, EventID: eventID, InnerType: head.Type, SubType: head.SubType,
		Echo: echo, Payload: payload, Created: time.Now(),
	}
	if err := s.routeLocked(env); err != nil {
		return Delivery{}, err
	}
	s.notifyLocked()
	return Delivery{EnvelopeID: env.ID, EventID: eventID}, nil
}

// MessageEvent is a message a user or an integration posts, delivered to
// the bot as a "message" event and stored in the channel.
type MessageEvent struct {
	Channel string // registered on first use; C… public, G… private, D… direct
	User    string // registered on first use
	// Team is the author's team id when it is another organisation's (a
	// Slack Connect channel): such a message cannot be deleted by this
	// workspace's admins. "" is this workspace, or for an external user
	// (User.HomeTeam) their team.
	Team     string
	Text     string // as Slack sends it: <https://x|label>, &amp; escaped
	TS       string // assigned when empty
	ThreadTS string // root ts, for a reply in a thread
	// SubType: "" (a new message), "bot_message", "thread_broadcast" (the
	// root is added as "root"), "file_share" (Files are embedded),
	// "me_message", "channel_join"… For edits, unfurls and deletions use
	// EditMessage, UnfurlMessage and DeleteMessage.
	SubType  string
	BotID    string // bot_message
	Username string // bot_message
	AppID    string
	// Blocks default to the rich_text block a Slack client attaches to a
	// user's text (links, mentions, unescaped text); NoBlocks sends none.
	Blocks      json.RawMessage
	NoBlocks    bool
	Attachments json.RawMessage
	Files       []string       // IDs of hosted files (AddFile), embedded as full file objects
	Extra       map[string]any // fields merged into the event last
}

// DeliverMessage stores a message and delivers its message event. It
// returns the message's ts in Delivery.TS. A message in a conversation
// the bot is not in (Channel.NotMember: someone else's DM, say) is stored
// but not delivered, as Slack sends an app the events of its own
// conversations only; a shortcut may still be used on it. With an Org, a
// message in a conversation none of whose workspaces is granted is stored
// and withheld (Delivery.Withheld, State.Withheld); one in a channel
// shared between several workspaces of the org is delivered once: Slack
// sends an org-wide install one event with one authorization, not one per
// workspace ("authorizations is truncated to one item",
// api.slack.com/enterprise/apps/reference).
func (s *Server) DeliverMessage(e MessageEvent) (Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := true
	switch e.SubType {
	case "message_changed", "message_deleted", "message_replied":
		stored = false // not a new message: deliver only
	}
	switch {
	case s.closed:
		return Delivery{}, ErrClosed
	case e.Channel == "":
		return Delivery{}, errors.New("slackfake: MessageEvent.Channel is required")
	case stored && e.TS != "" && s.st.message(e.Channel, e.TS) != nil:
		return Delivery{}, fmt.Errorf("slackfake: %s already has a message %s", e.Channel, e.TS)
	}
	for _, id := range e.Files {
		if s.st.files[id] == nil {
			return Delivery{}, fmt.Errorf("slackfake: no file %q (AddFile it first)", id)
		}
	}
	ch := s.ensureChannelLocked(e.Channel)
	if e.User != "" {
		s.ensureUserLocked(e.User)
		if !slices.Contains(ch.Members, e.User) {
			ch.Members = append(ch.Members, e.User)
		}
		if ch.IM && ch.IMUser == "" {
			ch.IMUser = e.User
		}
	}
	team := e.Team
	if u := s.st.users[e.User]; team == "" && s.isExternalLocked(u) {
		team = cmp.Or(u.HomeTeam, ch.ExternalTeam)
	}
	m := &Message{
		Channel: e.Channel, TS: e.TS, ThreadTS: e.ThreadTS, User: e.User, BotID: e.BotID, AppID: e.AppID,
		Username: e.Username, SubType: e.SubType, Team: team, Via: "event", Text: e.Text, Blocks: e.Blocks,
		Attachments: e.Attachments, Files: e.Files, PostedAt: time.Now(), Reactions: map[string][]string{},
	}
	if m.TS == "" {
		m.TS = s.nextTSLocked()
	}
	if m.Blocks == nil && !e.NoBlocks && e.User != "" && e.Text != "" && e.SubType != "bot_message" {
		m.Blocks, m.generatedBlocks = richTextBlocks(e.Text), true
	}
	if e.User != "" && e.SubType == "" || e.SubType == "thread_broadcast" || e.SubType == "file_share" {
		m.clientMsgID = newUUID()
	}
	m.Versions = []MessageVersion{{At: m.PostedAt, Via: "event", Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments}}
	for _, id := range e.Files {
		if f := s.st.files[id]; !slices.Contains(f.Channels, e.Channel) {
			f.Channels = append(f.Channels, e.Channel)
		}
	}
	if stored {
		s.st.addMessage(m)
	}

	ev := s.messageJSON(m)
	s.addEventFields(ev, m)
	if e.SubType == "thread_broadcast" {
		if root := s.st.message(m.Channel, m.ThreadTS); root != nil {
			ev["root"] = s.messageJSON(root)
		}
	}
	maps.Copy(ev, e.Extra)
	if ch.NotMember {
		s.notifyLocked()
		return Delivery{TS: m.TS}, nil
	}
	raw, _ := json.Marshal(ev)
	d, err := s.deliverEventLocked(raw, false)
	d.TS = m.TS
	return d, err
}

// addEventFields adds what a message event has beyond the message object.
func (s *Server) addEventFields(ev map[string]any, m *Message) {
	ev["channel"] = m.Channel
	ev["event_ts"] = m.TS
	ev["channel_type"] = s.ensureChannelLocked(m.Channel).ChannelType()
}

// EditMessage makes a user edit their message: the text (and its rich_text
// block) changes and a message_changed event is delivered with "edited",
// "message" and "previous_message".
func (s *Server) EditMessage(channel, ts, text string) (Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.userMessageLocked(channel, ts)
	if err != nil {
		return Delivery{}, err
	}
	prev := m.clone()
	m.Text = text
	if m.generatedBlocks {
		m.Blocks = richTextBlocks(text)
	}
	m.EditedTS = s.nextTSLocked()
	m.Versions = append(m.Versions, MessageVersion{At: time.Now(), Via: "edit", Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments})
	return s.deliverEventLocked(s.changedEventLocked(&prev, m), false)
}

// UnfurlMessage adds link previews (legacy attachments JSON) to a message,
// as Slack does after posting: a message_changed event without "edited".
func (s *Server) UnfurlMessage(channel, ts string, attachments json.RawMessage) (Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.st.message(channel, ts)
	if m == nil || m.Deleted {
		return Delivery{}, fmt.Errorf("slackfake: no message %s in %s", ts, channel)
	}
	prev := m.clone()
	m.Attachments = attachments
	m.Versions = append(m.Versions, MessageVersion{At: time.Now(), Via: "unfurl", Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments})
	return s.deliverEventLocked(s.changedEventLocked(&prev, m), false)
}

// DeleteMessage makes a user delete their message: message_deleted event.
func (s *Server) DeleteMessage(channel, ts string) (Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.userMessageLocked(channel, ts)
	if err != nil {
		return Delivery{}, err
	}
	m.Deleted = true
	return s.deliverEventLocked(s.deletedEventLocked(m), false)
}

func (s *Server) userMessageLocked(channel, ts string) (*Message, error) {
	m := s.st.message(channel, ts)
	switch {
	case m == nil || m.Deleted:
		return nil, fmt.Errorf("slackfake: no message %s in %s", ts, channel)
	case m.Bot:
		return nil, fmt.Errorf("slackfake: message %s in %s is the bot's", ts, channel)
	}
	return m, nil
}

// changedEventLocked renders message_changed: the new message, the previous
// one, hidden, with its own ts.
func (s *Server) changedEventLocked(prev, m *Message) json.RawMessage {
	ts := s.nextTSLocked()
	raw, _ := json.Marshal(map[string]any{
		"type": "message", "subtype": "message_changed", "hidden": true,
		"message": s.messageJSON(m), "previous_message": s.messageJSON(prev),
		"channel": m.Channel, "ts": ts, "event_ts": ts,
		"channel_type": s.ensureChannelLocked(m.Channel).ChannelType(),
	})
	return raw
}

func (s *Server) deletedEventLocked(m *Message) json.RawMessage {
	ts := s.nextTSLocked()
	prev := *m
	prev.Deleted = false
	raw, _ := json.Marshal(map[string]any{
		"type": "message", "subtype": "message_deleted", "hidden": true, "deleted_ts": m.TS,
		"previous_message": s.messageJSON(&prev),
		"channel":          m.Channel, "ts": ts, "event_ts": ts,
		"channel_type": s.ensureChannelLocked(m.Channel).ChannelType(),
	})
	return raw
}

// DeliverFileShared delivers a file_shared event (which carries only the
// file ID: the bot calls files.info).
func (s *Server) DeliverFileShared(channel, user, fileID string) (Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.files[fileID] == nil {
		return Delivery{}, fmt.Errorf("slackfake: no file %q", fileID)
	}
	s.ensureChannelLocked(channel)
	s.ensureUserLocked(user)
	return s.deliverEventLocked(s.fileSharedEventLocked(channel, user, fileID), false)
}

func (s *Server) fileSharedEventLocked(channel, user, fileID string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{
		"type": "file_shared", "channel_id": channel, "file_id": fileID, "user_id": user,
		"file": map[string]any{"id": fileID}, "event_ts": s.nextTSLocked(),
	})
	return raw
}

// ShareFile makes user share a hosted file in channel as Slack reports it:
// a message with subtype file_share carrying the file, then file_shared.
func (s *Server) ShareFile(channel, user, fileID, text string) ([]Delivery, error) {
	msg, err := s.DeliverMessage(MessageEvent{Channel: channel, User: user, Text: text, SubType: "file_share", Files: []string{fileID}})
	if err != nil {
		return nil, err
	}
	fs, err := s.DeliverFileShared(channel, user, fileID)
	return []Delivery{msg, fs}, err
}

// echoMessageLocked raises the message event of the bot's own message.
func (s *Server) echoMessageLocked(m *Message, subtype string) {
	if !s.cfg.echoOwn {
		return
	}
	ev := s.messageJSON(m)
	s.addEventFields(ev, m)
	if subtype != "" {
		ev["subtype"] = subtype
	}
	raw, _ := json.Marshal(ev)
	_, _ = s.deliverEventLocked(raw, true)
}

func (s *Server) echoChangedLocked(prev, m *Message) {
	if s.cfg.echoOwn {
		_, _ = s.deliverEventLocked(s.changedEventLocked(prev, m), true)
	}
}

func (s *Server) echoDeletedLocked(m *Message) {
	if s.cfg.echoOwn {
		_, _ = s.deliverEventLocked(s.deletedEventLocked(m), true)
	}
}

func (s *Server) echoFileSharedLocked(fileID, channel string) {
	if s.cfg.echoOwn {
		_, _ = s.deliverEventLocked(s.fileSharedEventLocked(channel, s.cfg.botUserID, fileID), true)
	}
}

// responseTarget is where a response_url (or a slash command's ack payload) lands.
type responseTarget struct {
	path       string
	kind       string
	envelopeID string
	channel    string
	user       string
	messageTS  string // the message an action came from
	ephemeral  bool
	uses       int
}

// newTargetLocked makes a response_url with Slack's shape:
// /commands/<team>/<n>/<secret> or /actions/<team>/<n>/<secret>, team the
// workspace the command or interaction comes from.
func (s *Server) newTargetLocked(kind, team, channel, user string) *responseTarget {
	seg := "commands"
	if kind == EnvelopeInteractive {
		seg = "actions"
	}
	return &responseTarget{
		path: "/" + seg + "/" + team + "/" + strconv.Itoa(1000000+s.nextSeqLocked()) + "/" + randomHex(12),
		kind: kind, channel: channel, user: user,
	}
}

func (s *Server) targetByEnvelope(id string) *responseTarget {
	for _, t := range s.targets {
		if t.envelopeID == id {
			return t
		}
	}
	return nil
}

func (s *Server) newTriggerIDLocked() string {
	return fmt.Sprintf("%d.%d.%s", s.nextSeqLocked()+1000000000000, time.Now().Unix(), randomHex(16))
}

// SlashCommand is a slash command a user runs.
type SlashCommand struct {
	Command     string // "/scan"
	Text        string
	UserID      string
	UserName    string // default: the registered user's name
	ChannelID   string
	ChannelName string // default: the registered channel's name
	// TeamID is the workspace the command is run from, with an Org: one
	// of the channel's granted workspaces, by default its first. Without
	// an Org it is ignored (the workspace).
	TeamID string
}

// DeliverSlashCommand delivers a slash_commands envelope
// (accepts_response_payload true). Its response_url points at the fake; an
// ack payload or a POST there is shown like Slack: ephemeral to the user by
// default, a channel message with response_type "in_channel". With an Org
// the payload names the workspace (team_id, team_domain) and the org
// (enterprise_id, enterprise_name, is_enterprise_install "true"); in a
// conversation with no granted workspace it fails with ErrNoAccess.
func (s *Server) DeliverSlashCommand(c SlashCommand) (Delivery, error) {
	if c.Command == "" || c.UserID == "" || c.ChannelID == "" {
		return Delivery{}, errors.New("slackfake: SlashCommand needs Command, UserID and ChannelID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.ensureChannelLocked(c.ChannelID)
	u := s.ensureUserLocked(c.UserID)
	team, err := s.interactionTeamLocked(ch, c.TeamID)
	if err != nil {
		return Delivery{}, err
	}
	t := s.newTargetLocked(EnvelopeSlashCommands, team, c.ChannelID, c.UserID)
	trigger := s.newTriggerIDLocked()
	p := map[string]any{
		"token": verificationToken, "team_id": s.cfg.teamID, "team_domain": s.cfg.teamName,
		"channel_id": c.ChannelID, "channel_name": cmp.Or(c.ChannelName, ch.Name),
		"user_id": c.UserID, "user_name": cmp.Or(c.UserName, u.Name),
		"command": c.Command, "text": c.Text, "api_app_id": s.cfg.appID,
		// Slack may send this one as a string ("false"); slack-go accepts both.
		"is_enterprise_install": "false",
		"response_url":          s.base + t.path, "trigger_id": trigger,
	}
	if o := s.cfg.org; o != nil {
		w, _ := s.workspace(team)
		p["team_id"], p["team_domain"] = w.ID, w.Domain
		p["enterprise_id"], p["enterprise_name"], p["is_enterprise_install"] = o.ID, o.Name, "true"
	}
	payload, _ := json.Marshal(p)
	env := &Envelope{ID: newUUID(), Type: EnvelopeSlashCommands, InnerType: c.Command,
		AcceptsResponsePayload: true, Payload: payload, Created: time.Now()}
	return s.routeInteractionLocked(env, t, trigger)
}

func (s *Server) routeInteractionLocked(env *Envelope, t *responseTarget, trigger string) (Delivery, error) {
	if err := s.routeLocked(env); err != nil {
		return Delivery{}, err
	}
	d := Delivery{EnvelopeID: env.ID, TriggerID: trigger}
	if t != nil {
		t.envelopeID = env.ID
		s.targets[t.path] = t
		d.ResponseURL = s.base + t.path
	}
	s.notifyLocked()
	return d, nil
}

// userObjectLocked is an interaction payload's "user"; its team_id is the
// user's home team with an Org.
func (s *Server) userObjectLocked(id string) map[string]any {
	u := s.ensureUserLocked(id)
	team := s.cfg.teamID
	if s.grid() {
		team = s.homeTeamLocked(u)
	}
	return map[string]any{"id": id, "username": u.Name, "name": u.Name, "team_id": team}
}

// BlockAction is a user's click on an interactive element of a message the
// fake holds (the bot's card, or an ephemeral the user sees).
type BlockAction struct {
	UserID    string
	Channel   string
	MessageTS string
	ActionID  string
	// BlockID, if set, picks the element in that block: a card's lines
	// carry the same action ids, one actions block each. Otherwise the
	// first element with ActionID is clicked.
	BlockID string
	// Value overrides the element's value; for a select it is the selected
	// option's value.
	Value string
	// Seen, if set, is the message's blocks as the clicker's client still
	// shows them: a click on a button the app has since removed (two
	// people pressing at once, a client not yet refreshed) comes from it.
	Seen json.RawMessage
	// TeamID is the workspace the click comes from, with an Org: one of
	// the channel's granted workspaces, by default its first.
	TeamID string
}

// DeliverBlockAction delivers the block_actions interaction Slack sends for
// a click: the element (type, text, value, style, block_id) comes from the
// message's current blocks, and the payload carries user, channel,
// container, message (not for ephemerals), state, response_url and
// trigger_id.
func (s *Server) DeliverBlockAction(a BlockAction) (Delivery, error) {
	if a.UserID == "" || a.ActionID == "" {
		return Delivery{}, errors.New("slackfake: BlockAction needs UserID and ActionID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var blocks json.RawMessage
	var threadTS string
	m := s.st.message(a.Channel, a.MessageTS)
	ephemeral := false
	switch {
	case m != nil && !m.Deleted:
		blocks, threadTS = m.Blocks, m.ThreadTS
	default:
		for _, e := range s.st.ephemerals {
			if e.Channel == a.Channel && e.TS == a.MessageTS && e.User == a.UserID && !e.Deleted {
				blocks, threadTS, ephemeral = e.Blocks, e.ThreadTS, true
			}
		}
		if !ephemeral {
			return Delivery{}, fmt.Errorf("slackfake: no message %s in %s (nor an ephemeral for %s)", a.MessageTS, a.Channel, a.UserID)
		}
	}
	if len(a.Seen) > 0 {
		blocks = a.Seen
	}
	blockID, el, ok := findElement(blocks, a.BlockID, a.ActionID)
	if !ok {
		return Delivery{}, fmt.Errorf("slackfake: message %s has no element with action_id %q", a.MessageTS, a.ActionID)
	}
	actionTS := s.nextTSLocked()
	act := map[string]any{"action_id": a.ActionID, "block_id": blockID, "type": str(el["type"]), "action_ts": actionTS}
	if len(el["text"]) > 0 {
		act["text"] = el["text"]
	}
	if st := str(el["style"]); st != "" {
		act["style"] = st
	}
	value := cmp.Or(a.Value, str(el["value"]))
	if strings.HasSuffix(str(el["type"]), "_select") {
		act["selected_option"] = map[string]any{"text": map[string]any{"type": "plain_text", "text": value}, "value": value}
	} else if value != "" {
		act["value"] = value
	}

	ch := s.ensureChannelLocked(a.Channel)
	team, err := s.interactionTeamLocked(ch, a.TeamID)
	if err != nil {
		return Delivery{}, err
	}
	t := s.newTargetLocked(EnvelopeInteractive, team, a.Channel, a.UserID)
	t.messageTS, t.ephemeral = a.MessageTS, ephemeral
	trigger := s.newTriggerIDLocked()
	container := map[string]any{"type": "message", "message_ts": a.MessageTS, "channel_id": a.Channel, "is_ephemeral": ephemeral}
	if threadTS != "" && threadTS != a.MessageTS {
		container["thread_ts"] = threadTS
	}
	p := map[string]any{
		"type": "block_actions", "user": s.userObjectLocked(a.UserID), "api_app_id": s.cfg.appID,
		"token": verificationToken, "container": container, "trigger_id": trigger,
		"team":         s.teamObjectLocked(team),
		"channel":      map[string]any{"id": a.Channel, "name": ch.Name},
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": s.base + t.path, "actions": []any{act},
	}
	s.enterpriseFieldsLocked(p)
	if !ephemeral {
		p["message"] = s.messageJSON(m)
	}
	payload, _ := json.Marshal(p)
	env := &Envelope{ID: newUUID(), Type: EnvelopeInteractive, InnerType: "block_actions",
		AcceptsResponsePayload: true, Payload: payload, Created: time.Now()}
	return s.routeInteractionLocked(env, t, trigger)
}

// findElement finds the interactive element with actionID in an actions
// block's elements or a section's accessory (in the block blockID, if not
// "").
func findElement(blocks json.RawMessage, blockID, actionID string) (string, map[string]json.RawMessage, bool) {
	var bs []struct {
		BlockID   string                       `json:"block_id"`
		Elements  []map[string]json.RawMessage `json:"elements"`
		Accessory map[string]json.RawMessage   `json:"accessory"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return "", nil, false
	}
	for _, b := range bs {
		if blockID != "" && b.BlockID != blockID {
			continue
		}
		for _, el := range append(b.Elements, b.Accessory) {
			if el != nil && str(el["action_id"]) == actionID {
				return b.BlockID, el, true
			}
		}
	}
	return "", nil, false
}

// MessageShortcut is a user running one of the app's message shortcuts
// on a message: CallbackID is the shortcut's callback id as the app's
// manifest declares it ("scan_message", "report_message"…), any string.
type MessageShortcut struct {
	CallbackID string
	UserID     string
	Channel    string
	MessageTS  string
}

// DeliverMessageShortcut delivers the message_action interaction for a
// message the fake holds (delivered, posted or seeded; a reply too), as
// Slack sends a message shortcut (docs.slack.dev reference "Shortcuts
// payloads"): type, callback_id, trigger_id, response_url, action_ts,
// team, user, channel {id, name}, message_ts and the whole message as
// history renders it (text, user, ts, thread_ts, blocks, attachments,
// files, a thread's summary on its root), with enterprise and
// is_enterprise_install. The response_url answers like a slash command's
// (ephemeral to the user by default).
func (s *Server) DeliverMessageShortcut(sc MessageShortcut) (Delivery, error) {
	if sc.UserID == "" || sc.CallbackID == "" {
		return Delivery{}, errors.New("slackfake: MessageShortcut needs UserID and CallbackID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.st.message(sc.Channel, sc.MessageTS)
	if m == nil || m.Deleted {
		return Delivery{}, fmt.Errorf("slackfake: no message %s in %s", sc.MessageTS, sc.Channel)
	}
	ch := s.ensureChannelLocked(sc.Channel)
	team, err := s.interactionTeamLocked(ch, "")
	if err != nil {
		return Delivery{}, err
	}
	t := s.newTargetLocked(EnvelopeInteractive, team, sc.Channel, sc.UserID)
	trigger := s.newTriggerIDLocked()
	p := map[string]any{
		"type": "message_action", "token": verificationToken, "action_ts": s.nextTSLocked(),
		"team": s.teamObjectLocked(team),
		"user": s.userObjectLocked(sc.UserID), "channel": map[string]any{"id": sc.Channel, "name": ch.Name},
		"callback_id": sc.CallbackID,
		"trigger_id":  trigger, "response_url": s.base + t.path, "message_ts": sc.MessageTS,
		"message": s.historyJSONLocked(m),
	}
	s.enterpriseFieldsLocked(p)
	payload, _ := json.Marshal(p)
	env := &Envelope{ID: newUUID(), Type: EnvelopeInteractive, InnerType: "message_action",
		AcceptsResponsePayload: true, Payload: payload, Created: time.Now()}
	return s.routeInteractionLocked(env, t, trigger)
}

// DeliverInteraction delivers an interactive envelope with any payload
// (view_submission, shortcut…), as given.
func (s *Server) DeliverInteraction(payload any) (Delivery, error) {
	raw, err := rawJSON(payload)
	if err != nil {
		return Delivery{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	env := &Envelope{ID: newUUID(), Type: EnvelopeInteractive, InnerType: str(jsonField(raw, "type")),
		AcceptsResponsePayload: true, Payload: raw, Created: time.Now()}
	return s.routeInteractionLocked(env, nil, "")
}

func jsonField(raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m[key]
}

// DeliverRaw writes frame as is on a connection: for frames slack-go cannot
// decode. If the frame is JSON with an envelope_id, acks of that ID are
// recorded against it (Envelope.Type EnvelopeRaw, InnerType the frame's own
// type); it is never redelivered.
func (s *Server) DeliverRaw(frame string) (Delivery, error) {
	var head struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	_ = json.Unmarshal([]byte(frame), &head)
	s.mu.Lock()
	defer s.mu.Unlock()
	env := &Envelope{Type: EnvelopeRaw, InnerType: head.Type, Frame: []byte(frame), Created: time.Now()}
	if head.EnvelopeID != "" && s.st.envByID[head.EnvelopeID] == nil {
		env.ID = head.EnvelopeID
	}
	if err := s.routeLocked(env); err != nil {
		return Delivery{}, err
	}
	s.notifyLocked()
	return Delivery{EnvelopeID: env.ID}, nil
}

// responseBody is what slack-go (and Slack) POST to a response_url.
type responseBody struct {
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
	Attachments     json.RawMessage `json:"attachments"`
	ResponseType    string          `json:"response_type"`
	ReplaceOriginal bool            `json:"replace_original"`
	DeleteOriginal  bool            `json:"delete_original"`
	ThreadTS        string          `json:"thread_ts"`
}

// maxResponseURLUses: a response_url works up to five times in 30 minutes
// (docs.slack.dev "Handling user interaction"); the fake's answer to a sixth
// use, used_url, is its own choice.
const maxResponseURLUses = 5

// handleResponseURL serves POSTs to response_urls.
func (s *Server) handleResponseURL(w http.ResponseWriter, r *http.Request) {
	call := &Call{Method: MethodResponseURL, HTTPMethod: r.Method, Path: r.URL.Path, Time: time.Now()}
	res, ok := s.applyFault(r, MethodResponseURL, call)
	if !ok {
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxAPIBody))
	call.JSON = body

	s.mu.Lock()
	if !res.set() {
		res = s.responseURLLocked(r.URL.Path, body, call.Time)
	}
	s.recordLocked(call, &res)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, r, res)
}

func (s *Server) responseURLLocked(path string, body []byte, at time.Time) apiResult {
	t := s.targets[path]
	if t == nil {
		return apiResult{status: http.StatusNotFound, raw: []byte("no_service"), contentType: "text/plain", errCode: "no_service"}
	}
	t.uses++
	if t.uses > maxResponseURLUses {
		return errResult("used_url")
	}
	var rb responseBody
	if err := json.Unmarshal(body, &rb); err != nil {
		return errResult("invalid_payload")
	}
	s.st.responses = append(s.st.responses, ResponsePost{
		URL: s.base + path, Kind: t.kind, EnvelopeID: t.envelopeID, At: at, Body: body,
		Text: rb.Text, Blocks: nilIfEmpty(rb.Blocks), ResponseType: rb.ResponseType,
		ReplaceOriginal: rb.ReplaceOriginal, DeleteOriginal: rb.DeleteOriginal, ThreadTS: rb.ThreadTS,
	})
	if code := s.applyResponseLocked(t, body, MethodResponseURL); code != "" {
		return errResult(code)
	}
	return okResult(nil)
}

func nilIfEmpty(raw json.RawMessage) json.RawMessage {
	if isEmptyJSONArray(raw) {
		return nil
	}
	return raw
}

// applyResponseLocked shows a response the way Slack does: delete_original
// or replace_original act on the message an action came from; otherwise
// response_type "in_channel" posts in the channel as the bot and anything
// else is ephemeral to the user. It returns an error code, or "".
func (s *Server) applyResponseLocked(t *responseTarget, body json.RawMessage, via string) string {
	var rb responseBody
	if err := json.Unmarshal(body, &rb); err != nil {
		return "invalid_payload"
	}
	blocks := nilIfEmpty(rb.Blocks)
	if blocks != nil {
		if code, _ := validateBlocks(blocks); code != "" {
			return code
		}
	}
	now := time.Now()
	if t.messageTS != "" && (rb.DeleteOriginal || rb.ReplaceOriginal) {
		if t.ephemeral {
			for _, e := range s.st.ephemerals {
				if e.Channel == t.channel && e.TS == t.messageTS && e.User == t.user {
					if rb.DeleteOriginal {
						e.Deleted = true
					} else {
						e.Text, e.Blocks, e.Attachments, e.Via = rb.Text, blocks, nilIfEmpty(rb.Attachments), via
					}
				}
			}
			return ""
		}
		m := s.st.message(t.channel, t.messageTS)
		if m == nil || m.Deleted || !m.Bot {
			return "message_not_found"
		}
		if rb.DeleteOriginal {
			m.Deleted = true
			s.echoDeletedLocked(m)
			return ""
		}
		prev := m.clone()
		s.updateMessageLocked(m, content{text: rb.Text, blocks: blocks, attachments: nilIfEmpty(rb.Attachments),
			hasText: true, hasBlocks: true, hasAtt: true}, via)
		s.echoChangedLocked(&prev, m)
		return ""
	}
	if rb.ResponseType == "in_channel" {
		m := &Message{
			Channel: t.channel, TS: s.nextTSLocked(), ThreadTS: rb.ThreadTS,
			User: s.cfg.botUserID, BotID: s.cfg.botID, AppID: s.cfg.appID, Bot: true, Via: via,
			Text: rb.Text, Blocks: blocks, Attachments: nilIfEmpty(rb.Attachments), PostedAt: now,
			Reactions: map[string][]string{},
		}
		m.Versions = []MessageVersion{{At: now, Via: via, Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments}}
		s.st.addMessage(m)
		s.echoMessageLocked(m, "")
		return ""
	}
	s.st.ephemerals = append(s.st.ephemerals, &Ephemeral{
		Channel: t.channel, User: t.user, TS: s.nextTSLocked(), ThreadTS: rb.ThreadTS, Via: via,
		Text: rb.Text, Blocks: blocks, Attachments: nilIfEmpty(rb.Attachments), At: now,
	})
	return ""
}
