package slackfake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file models the App Home (views.publish, app_home_opened, block
// actions in a published view), app mentions, and the membership methods a
// Home needs (users.conversations, conversations.members).

// maxViewBlocks is Slack's limit on blocks in a modal or Home tab view
// (docs.slack.dev/reference/block-kit/blocks; 50 in a message).
const maxViewBlocks = 100

// HomeView is the Home tab a user sees: the last view published for them.
type HomeView struct {
	ID     string
	User   string
	Blocks json.RawMessage
	Hash   string
	// Published counts views.publish calls accepted for this user.
	Published int
	At        time.Time
}

// HomeView returns the Home tab published for user.
func (st *State) HomeView(user string) (HomeView, bool) {
	v := st.views[user]
	if v == nil {
		return HomeView{}, false
	}
	return *v, true
}

// HomeView returns the Home tab published for user.
func (s *Server) HomeView(user string) (v HomeView, ok bool) {
	s.Inspect(func(st *State) { v, ok = st.HomeView(user) })
	return v, ok
}

// WaitHomeView waits until user's Home has been published at least n
// times and returns it.
func (s *Server) WaitHomeView(ctx context.Context, user string, n int) (HomeView, error) {
	var v HomeView
	err := s.WaitFor(ctx, func(st *State) bool {
		got, ok := st.HomeView(user)
		v = got
		return ok && got.Published >= n
	})
	return v, err
}

// apiViewsPublish stores the Home tab for user_id, as Slack does: the view
// must be of type "home" with at most 100 valid blocks; a hash that does
// not match the current view's answers hash_conflict.
func (s *Server) apiViewsPublish(c *apiCall) apiResult {
	p := c.params
	user := p.Get("user_id")
	if user == "" {
		return errResult("invalid_arguments")
	}
	if s.st.users[user] == nil {
		return errResult("user_not_found")
	}
	var view struct {
		Type   string          `json:"type"`
		Blocks json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(p.Get("view")), &view); err != nil {
		return errResultMessages("invalid_arguments", []string{"[ERROR] view: " + err.Error()})
	}
	if view.Type != "home" {
		return errResultMessages("invalid_arguments", []string{"[ERROR] must be home [json-pointer:/view/type]"})
	}
	if code, msgs := validateBlocksMax(view.Blocks, maxViewBlocks); code != "" {
		return errResultMessages(code, msgs)
	}
	cur := s.st.views[user]
	if h := p.Get("hash"); h != "" && cur != nil && h != cur.Hash {
		return errResult("hash_conflict")
	}
	if cur == nil {
		cur = &HomeView{ID: randomID("V", 10), User: user}
		s.st.views[user] = cur
	}
	cur.Blocks = append(json.RawMessage(nil), view.Blocks...)
	cur.Hash = strconv.FormatInt(time.Now().UnixNano(), 10) + "." + randomHex(8)
	cur.Published++
	cur.At = time.Now()
	return okResult(map[string]any{"view": s.viewJSON(cur)})
}

// viewJSON renders a Home view as Slack's view object.
func (s *Server) viewJSON(v *HomeView) map[string]any {
	return map[string]any{
		"id": v.ID, "team_id": s.cfg.teamID, "type": "home", "blocks": v.Blocks,
		"private_metadata": "", "callback_id": "", "state": map[string]any{"values": map[string]any{}},
		"hash": v.Hash, "title": map[string]any{"type": "plain_text", "text": "View Title", "emoji": true},
		"clear_on_close": false, "notify_on_close": false, "close": nil, "submit": nil,
		"previous_view_id": nil, "root_view_id": v.ID, "app_id": s.cfg.appID, "external_id": "",
		"app_installed_team_id": s.cfg.teamID, "bot_id": s.cfg.botID,
	}
}

// apiUsersConversations lists the conversations the bot is a member of
// (without "user"), or those of "user" that the bot can see: public
// channels, and private ones the bot is in too (docs.slack.dev
// users.conversations: "Non-public channels are restricted to those where
// the calling user shares membership"). Paginated by "limit" and "cursor".
// With an org token (WithOrg) only the conversations of the team_id
// workspace (a channel shared with it included), each with that
// context_team_id.
func (s *Server) apiUsersConversations(c *apiCall) apiResult {
	p := c.params
	types := strings.Split(cmp.Or(p.Get("types"), "public_channel"), ",")
	exclArchived, _ := boolParam(p, "exclude_archived")
	user := p.Get("user")
	team := s.orgTeamParam(c)
	var ids []string
	for id, ch := range s.st.channels {
		var typ string
		switch {
		case ch.IM:
			typ = "im"
		case ch.MPIM:
			typ = "mpim"
		case ch.Private:
			typ = "private_channel"
		default:
			typ = "public_channel"
		}
		if !slices.Contains(types, typ) || (exclArchived && ch.Archived) || ch.NotMember {
			continue
		}
		if user != "" && !slices.Contains(ch.Members, user) {
			continue
		}
		if team != "" && !slices.Contains(s.channelTeamsLocked(ch), team) {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	page, next, res := paginate(ids, p.Get("cursor"), p.Get("limit"), 100)
	if res.set() {
		return res
	}
	out := make([]any, 0, len(page))
	for _, id := range page {
		o := s.channelJSON(s.st.channels[id], false)
		if team != "" {
			o["context_team_id"] = team
		}
		out = append(out, o)
	}
	return okResult(map[string]any{"channels": out, "response_metadata": map[string]any{"next_cursor": next}})
}

// apiConversationsMembers lists a conversation's members, paginated. The
// bot must be able to see it: a private channel the bot is not in is
// channel_not_found, as on Slack.
func (s *Server) apiConversationsMembers(c *apiCall) apiResult {
	ch := s.st.channels[c.params.Get("channel")]
	if ch == nil || ((ch.Private || ch.MPIM || ch.IM) && ch.NotMember) {
		return errResult("channel_not_found")
	}
	members := slices.Clone(ch.Members)
	if !ch.NotMember && !slices.Contains(members, s.cfg.botUserID) {
		members = append(members, s.cfg.botUserID)
	}
	page, next, res := paginate(members, c.params.Get("cursor"), c.params.Get("limit"), 100)
	if res.set() {
		return res
	}
	return okResult(map[string]any{"members": nonNilStrings(page), "response_metadata": map[string]any{"next_cursor": next}})
}

// paginate cuts list at an opaque cursor (here "dXNlcj<offset>") with a
// page of limit items (default def, at most 1000 as Slack caps it).
func paginate(list []string, cursor, limit string, def int) ([]string, string, apiResult) {
	n := def
	if v, err := strconv.Atoi(limit); err == nil && v > 0 {
		n = min(v, 1000)
	}
	off := 0
	if cursor != "" {
		v, err := strconv.Atoi(strings.TrimPrefix(cursor, "dXNlcj"))
		if err != nil || v < 0 || v > len(list) || !strings.HasPrefix(cursor, "dXNlcj") {
			return nil, "", errResult("invalid_cursor")
		}
		off = v
	}
	end := min(off+n, len(list))
	next := ""
	if end < len(list) {
		next = "dXNlcj" + strconv.Itoa(end)
	}
	return list[off:end], next, apiResult{}
}

// DeliverAppHomeOpened delivers app_home_opened for user opening the
// app's tab ("home" or "messages"), with the view last published for them
// if any, as Slack sends it. The event's channel is the user's DM with the
// app (registered as D…). With an Org the event is in the user's first
// granted workspace (the DM's workspaces are the user's), and withheld
// when none is granted.
func (s *Server) DeliverAppHomeOpened(user, tab string) (Delivery, error) {
	if user == "" {
		return Delivery{}, errors.New("slackfake: DeliverAppHomeOpened needs a user")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUserLocked(user)
	dm := s.imWithLocked(user)
	ev := map[string]any{"type": "app_home_opened", "user": user, "channel": dm.ID, "tab": cmp.Or(tab, "home"),
		"event_ts": s.nextTSLocked()}
	if v := s.st.views[user]; v != nil && ev["tab"] == "home" {
		ev["view"] = s.viewJSON(v)
	}
	raw, _ := json.Marshal(ev)
	return s.deliverEventLocked(raw, false)
}

// imWithLocked returns the app's DM with user, registering it.
func (s *Server) imWithLocked(user string) *Channel {
	for _, ch := range s.st.channels {
		if ch.IM && ch.IMUser == user {
			return ch
		}
	}
	id := "D" + strings.ToUpper(strings.TrimPrefix(user, "U")) // a Grid W… user's DM is DW…
	ch := &Channel{ID: id, Name: strings.ToLower(id), IM: true, IMUser: user, Members: []string{user}}
	s.st.channels[id] = ch
	return ch
}

// IMWith returns the ID of the app's direct message with user (the
// Messages tab), registering it.
func (s *Server) IMWith(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUserLocked(user)
	return s.imWithLocked(user).ID
}

// Mention posts a user's message that mentions the bot: the message is
// stored and delivered as a message event, then as app_mention, as Slack
// sends both to an app subscribed to message.channels and app_mention. The
// text should contain <@BOT_USER_ID> (BotUserID).
func (s *Server) Mention(e MessageEvent) (message, mention Delivery, err error) {
	message, err = s.DeliverMessage(e)
	if err != nil {
		return message, Delivery{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.st.message(e.Channel, message.TS)
	if m == nil {
		return message, Delivery{}, fmt.Errorf("slackfake: message %s vanished", message.TS)
	}
	ev := map[string]any{"type": "app_mention", "user": m.User, "text": m.Text, "ts": m.TS,
		"channel": m.Channel, "event_ts": m.TS, "team": s.cfg.teamID}
	if s.grid() {
		ev["team"] = s.messageTeamLocked(m)
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if len(m.Blocks) > 0 {
		ev["blocks"] = m.Blocks
	}
	if m.clientMsgID != "" {
		ev["client_msg_id"] = m.clientMsgID
	}
	raw, _ := json.Marshal(ev)
	mention, err = s.deliverEventLocked(raw, false)
	mention.TS = m.TS
	return message, mention, err
}

// HomeAction is a user's pick in an element of their Home tab.
type HomeAction struct {
	UserID   string
	BlockID  string // the element's block
	ActionID string
	// Value is the selected option's value (a select) or overrides the
	// element's value (a button).
	Value string
}

// DeliverHomeAction delivers the block_actions payload Slack sends for an
// interaction in a published Home tab: container type "view", the whole
// view, no channel and no response_url. The element must be in the view
// the user has, and a select's value must be one of its options. With an
// Org the team is the user's first granted workspace (ErrNoAccess if
// none).
func (s *Server) DeliverHomeAction(a HomeAction) (Delivery, error) {
	if a.UserID == "" || a.ActionID == "" {
		return Delivery{}, errors.New("slackfake: HomeAction needs UserID and ActionID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.st.views[a.UserID]
	if v == nil {
		return Delivery{}, fmt.Errorf("slackfake: no Home view published for %s", a.UserID)
	}
	el, ok := findBlockElement(v.Blocks, a.BlockID, a.ActionID)
	if !ok {
		return Delivery{}, fmt.Errorf("slackfake: %s's Home has no element %q in block %q", a.UserID, a.ActionID, a.BlockID)
	}
	act := map[string]any{"action_id": a.ActionID, "block_id": a.BlockID, "type": str(el["type"]), "action_ts": s.nextTSLocked()}
	if strings.HasSuffix(str(el["type"]), "_select") {
		opt, ok := findOption(el["options"], a.Value)
		if !ok {
			return Delivery{}, fmt.Errorf("slackfake: select %q has no option %q", a.ActionID, a.Value)
		}
		act["selected_option"] = opt
		if len(el["placeholder"]) > 0 {
			act["placeholder"] = el["placeholder"]
		}
	} else {
		if len(el["text"]) > 0 {
			act["text"] = el["text"]
		}
		if value := cmp.Or(a.Value, str(el["value"])); value != "" {
			act["value"] = value
		}
	}
	team := s.cfg.teamID
	if s.grid() {
		mine := s.userTeamsLocked(s.st.users[a.UserID])
		if team = s.firstGrantedLocked(mine); team == "" {
			return Delivery{}, fmt.Errorf("%w: %s's workspaces %v", ErrNoAccess, a.UserID, mine)
		}
	}
	trigger := s.newTriggerIDLocked()
	p := map[string]any{
		"type": "block_actions", "user": s.userObjectLocked(a.UserID), "api_app_id": s.cfg.appID,
		"token": verificationToken, "container": map[string]any{"type": "view", "view_id": v.ID},
		"trigger_id": trigger, "team": s.teamObjectLocked(team),
		"view": s.viewJSON(v), "actions": []any{act},
	}
	s.enterpriseFieldsLocked(p)
	payload, _ := json.Marshal(p)
	env := &Envelope{ID: newUUID(), Type: EnvelopeInteractive, InnerType: "block_actions",
		AcceptsResponsePayload: true, Payload: payload, Created: time.Now()}
	return s.routeInteractionLocked(env, nil, trigger)
}

// findBlockElement finds the element with actionID in the block blockID
// (an actions block's elements or a section's accessory).
func findBlockElement(blocks json.RawMessage, blockID, actionID string) (map[string]json.RawMessage, bool) {
	var bs []struct {
		BlockID   string                       `json:"block_id"`
		Elements  []map[string]json.RawMessage `json:"elements"`
		Accessory map[string]json.RawMessage   `json:"accessory"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return nil, false
	}
	for _, b := range bs {
		if b.BlockID != blockID {
			continue
		}
		for _, el := range append(b.Elements, b.Accessory) {
			if el != nil && str(el["action_id"]) == actionID {
				return el, true
			}
		}
	}
	return nil, false
}

// findOption returns the option of a select whose value is value.
func findOption(options json.RawMessage, value string) (json.RawMessage, bool) {
	var opts []json.RawMessage
	_ = json.Unmarshal(options, &opts)
	for _, o := range opts {
		var v struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(o, &v) == nil && v.Value == value {
			return o, true
		}
	}
	return nil, false
}
