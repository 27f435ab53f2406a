package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"time"
)

// Envelope types, as in the "type" field of a Socket Mode envelope.
const (
	EnvelopeEventsAPI     = "events_api"
	EnvelopeSlashCommands = "slash_commands"
	EnvelopeInteractive   = "interactive"
	// EnvelopeRaw marks a frame sent with DeliverRaw whose type could not be read.
	EnvelopeRaw = "raw"
)

// Channel is a conversation the fake knows. Channels are registered with
// AddChannel or, implicitly, by delivering an event that happens in them.
type Channel struct {
	ID        string
	Name      string
	Private   bool // private channel ("group" channel_type)
	IM        bool // direct message with IMUser
	MPIM      bool // multi-person direct message
	Archived  bool // posting fails with is_archived
	NotMember bool // the bot is not in it: posting fails with not_in_channel
	IMUser    string
	Members   []string
	// Teams are the workspaces of the organisation (WithOrg) the
	// conversation belongs to: two or more make a channel shared between
	// workspaces of the org, still one channel with one history; empty is
	// the default workspace (for a DM, its user's workspaces).
	Teams []string
	// ExternalTeam and ExternalEnterprise make it a Slack Connect channel
	// shared with another organisation, whose people (User.HomeTeam) post
	// in it: events from it say is_ext_shared_channel.
	ExternalTeam       string
	ExternalEnterprise string
}

// ChannelType is the channel_type Slack puts on message events in c.
func (c Channel) ChannelType() string {
	switch {
	case c.IM:
		return "im"
	case c.MPIM:
		return "mpim"
	case c.Private:
		return "group"
	}
	return "channel"
}

// User is a workspace member the fake knows (users.info). Users are
// registered with AddUser or implicitly by appearing in a delivered event.
type User struct {
	ID           string
	Name         string
	RealName     string
	DisplayName  string
	Email        string
	TZ           string
	IsAdmin      bool
	IsOwner      bool
	IsBot        bool
	IsRestricted bool
	Deleted      bool
	// Teams are the workspaces of the organisation (WithOrg) the user is
	// a member of; empty is the default workspace. Grid user ids may
	// start with W.
	Teams []string
	// HomeTeam and Enterprise are an external user's team and enterprise
	// id: a person of another organisation in a Slack Connect channel.
	// Their messages carry that team (Message.Team).
	HomeTeam   string
	Enterprise string
}

// File is a file hosted by the fake: registered with AddFile (a user's
// upload) or created by the bot's files.completeUploadExternal.
type File struct {
	ID       string
	Name     string
	Title    string
	Mimetype string // from the name's extension, else sniffed from Content
	Filetype string // the extension, e.g. "png", "pdf"
	User     string
	Content  []byte
	// IsExternal marks a remote file (Google Drive…): url_private is
	// ExternalURL, which slack-go refuses to send the token to.
	IsExternal  bool
	ExternalURL string
	Channels    []string
	// Team is the uploader's team when it is another organisation's.
	Team    string
	Created time.Time
	Deleted bool // files.info answers file_deleted

	// Set by the fake.
	URLPrivate         string
	URLPrivateDownload string
	Permalink          string
}

// Size is the file's size in bytes.
func (f File) Size() int { return len(f.Content) }

// MessageVersion is one state of a message: as posted, then after each update.
type MessageVersion struct {
	At          time.Time
	Via         string // the method that produced it: chat.postMessage, chat.update, response_url…
	Text        string
	Blocks      json.RawMessage
	Attachments json.RawMessage
}

// Message is a message in a channel: the bot's (Bot true) or one a test
// delivered as a user's.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // root ts for a thread reply; "" for a top-level message
	User     string
	BotID    string
	AppID    string
	Username string
	SubType  string
	// Team is the author's team when it is not this workspace's (a Slack
	// Connect channel shared with another organisation); "" for a member.
	Team string
	// Bot is true for messages this app posted (chat.postMessage, a
	// response_url or an ack payload, files.completeUploadExternal).
	Bot            bool
	Via            string
	Text           string
	Blocks         json.RawMessage // current blocks, exactly as the poster sent them
	Attachments    json.RawMessage
	Files          []string // IDs of the files shared in the message
	UnfurlLinks    *bool    // the unfurl_links parameter, nil when not sent
	UnfurlMedia    *bool    // the unfurl_media parameter, nil when not sent
	ReplyBroadcast bool
	// Truncated is set when the text was over 40,000 characters and Slack
	// truncated it (docs.slack.dev chat.postMessage "Truncating content").
	Truncated bool
	Params    url.Values // parameters of the post, token removed
	// Reactions maps an emoji name to the users who added it, in order.
	Reactions map[string][]string
	Versions  []MessageVersion // first = as posted
	PostedAt  time.Time
	EditedTS  string
	Deleted   bool

	generatedBlocks bool
	clientMsgID     string
}

// IsReply reports whether m is a reply in a thread.
func (m Message) IsReply() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// Updates is how many times the message changed after it was posted.
func (m Message) Updates() int { return max(0, len(m.Versions)-1) }

func (m *Message) clone() Message {
	c := *m
	c.Reactions = make(map[string][]string, len(m.Reactions))
	for k, v := range m.Reactions {
		c.Reactions[k] = slices.Clone(v)
	}
	c.Versions = slices.Clone(m.Versions)
	c.Files = slices.Clone(m.Files)
	c.Params = cloneValues(m.Params)
	return c
}

// Ephemeral is a message only one user sees (chat.postEphemeral, or a
// slash-command response).
type Ephemeral struct {
	Channel     string
	User        string
	TS          string
	ThreadTS    string
	Via         string
	Text        string
	Blocks      json.RawMessage
	Attachments json.RawMessage
	Params      url.Values
	At          time.Time
	Deleted     bool
}

// Upload is one file the bot uploaded through the v2 flow
// (files.getUploadURLExternal → POST → files.completeUploadExternal).
type Upload struct {
	FileID         string
	Filename       string
	Title          string
	AltText        string
	DeclaredLength int    // the length given to files.getUploadURLExternal
	Content        []byte // the bytes POSTed to the upload URL
	// ContentType is sniffed from Content (net/http.DetectContentType):
	// "image/png", "image/jpeg"…
	ContentType    string
	Uploaded       bool // the bytes arrived
	Completed      bool // files.completeUploadExternal shared it
	Channel        string
	ThreadTS       string
	InitialComment string
	MessageTS      string // the message that shares the file, if shared to a channel
	UploadedAt     time.Time
	CompletedAt    time.Time

	uploadID string
}

// Call is one request to the Web API, a file URL, the upload URL or a
// response_url.
type Call struct {
	Method     string // "chat.postMessage", or MethodFileDownload, MethodFileUpload, MethodResponseURL
	HTTPMethod string
	Path       string
	Time       time.Time
	Params     url.Values      // query and form parameters (JSON bodies flattened), token removed
	JSON       json.RawMessage // the body, when it was JSON
	// Token is the credential presented, from the Authorization header
	// (TokenSource "header") or the token parameter ("form").
	Token       string
	TokenSource string
	TokenKind   string // "bot", "app", "invalid" or "" (none)
	Status      int    // HTTP status answered
	Error       string // Slack error code answered, "" when ok
	Response    json.RawMessage
	Fault       bool // answered by an injected fault
}

// Ack is one frame the client sent over the socket to acknowledge an envelope.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage // nil when the ack had no payload
	At         time.Time
	ConnID     int
	Latency    time.Duration // from writing the envelope to receiving this ack
	Unknown    bool          // no envelope with this ID was sent
	Raw        json.RawMessage
}

// ClientFrame is a frame from the client that was not an ack.
type ClientFrame struct {
	At     time.Time
	ConnID int
	Data   []byte
	Reason string
}

// Envelope is one Socket Mode envelope: each delivery attempt of an event is
// its own envelope (new envelope_id, same event_id).
type Envelope struct {
	ID                     string
	Type                   string // EnvelopeEventsAPI, EnvelopeSlashCommands, EnvelopeInteractive, EnvelopeRaw
	EventID                string // events_api only
	InnerType              string // inner event type ("message", "file_shared") or interaction type ("block_actions")
	SubType                string // message subtype, if any
	RetryAttempt           int
	RetryReason            string
	AcceptsResponsePayload bool
	// Echo marks an event the fake raised because of the bot's own Web API
	// call (its message, update, delete or upload), as Slack does.
	Echo    bool
	Payload json.RawMessage
	Frame   json.RawMessage // the exact text frame
	Created time.Time
	SentAt  time.Time // zero until written to a socket
	ConnID  int       // the connection it was written to (Connection.ID); 0 until then
	Acks    []Ack
	// TimedOut is set when no ack came within the ack timeout.
	TimedOut bool
	// Undelivered is set on an event raised while no socket was open: Slack's
	// attempt failed and its retry waits for the next connection. It is also
	// set on a slash command or interaction that was queued on a connection
	// which closed before writing it: it is lost, never retried, and
	// WaitAcked without IDs no longer waits for it.
	Undelivered bool
	// Exhausted is set on the last attempt of an event that was never acked
	// after the maximum number of retries.
	Exhausted bool
}

// String summarises e for test failures.
func (e Envelope) String() string {
	s := fmt.Sprintf("envelope %s %s", e.ID, e.Type)
	if e.EventID != "" {
		s += " event " + e.EventID
	}
	if e.InnerType != "" {
		s += " (" + e.InnerType + ")"
	}
	s += fmt.Sprintf(" attempt %d", e.RetryAttempt)
	if e.RetryReason != "" {
		s += " " + e.RetryReason
	}
	switch {
	case e.Undelivered:
		s += ", undelivered"
	case e.SentAt.IsZero():
		s += ", not sent yet"
	default:
		s += fmt.Sprintf(", sent on connection %d", e.ConnID)
	}
	s += fmt.Sprintf(", %d acks", len(e.Acks))
	if e.TimedOut {
		s += ", timed out"
	}
	if e.Exhausted {
		s += ", retries exhausted"
	}
	return s
}

// Acked reports whether at least one ack arrived for e.
func (e Envelope) Acked() bool { return len(e.Acks) > 0 }

func (e *Envelope) clone() Envelope {
	c := *e
	c.Acks = slices.Clone(e.Acks)
	return c
}

// ResponsePost is one POST to a response_url the fake handed out.
type ResponsePost struct {
	URL             string
	Kind            string // "slash_commands" or "interactive"
	EnvelopeID      string // the envelope that carried the response_url
	At              time.Time
	Body            json.RawMessage
	Text            string
	Blocks          json.RawMessage
	ResponseType    string
	ReplaceOriginal bool
	DeleteOriginal  bool
	ThreadTS        string
}

// PaceViolation records a chat.postMessage to a channel less than a second
// after the previous one: Slack allows about one message per second per
// channel (docs.slack.dev "Rate limits", chat.postMessage is "special").
type PaceViolation struct {
	Channel string
	At      time.Time
	Gap     time.Duration // time since the previous post to the channel
}

// State is everything the fake knows and recorded. Read it inside Inspect or
// a WaitFor predicate, which hold the fake's lock; values returned by its
// methods are copies and stay valid afterwards.
type State struct {
	channels   map[string]*Channel
	users      map[string]*User
	usergroups map[string]*usergroup
	files      map[string]*File
	messages   map[string][]*Message // channel → messages in ts order
	msgIndex   map[msgKey]*Message
	threads    map[msgKey][]*Message // a thread's root → its replies in ts order
	ephemerals []*Ephemeral
	uploads    []*Upload
	calls      []*Call
	envelopes  []*Envelope
	envByID    map[string]*Envelope
	acks       []Ack
	frames     []ClientFrame
	responses  []ResponsePost
	pace       []PaceViolation
	limited    map[string]int       // WithRateLimits' 429s per method
	views      map[string]*HomeView // Home tabs by user (views.publish)
	withheld   []WithheldEvent      // WithOrg: events in conversations the app has no access to

	openConns  int
	totalConns int
	conns      []*Connection // every accepted connection, by ID (ID i+1 at i)
	refused    int

	ackTimeout time.Duration
	// eventAcked tells, per event ID, whether an attempt was acked;
	// outstanding counts the events and interactions still waiting for an
	// ack, so WaitAcked does not rescan every envelope on each change.
	eventAcked  map[string]bool
	outstanding int
}

type msgKey struct{ channel, ts string }

type usergroup struct {
	id, handle string
	team       string // the workspace; "" is the default one
	members    []string
	disabled   bool
}

func newState(ackTimeout time.Duration) *State {
	return &State{
		ackTimeout: ackTimeout,
		eventAcked: map[string]bool{},
		channels:   map[string]*Channel{},
		users:      map[string]*User{},
		usergroups: map[string]*usergroup{},
		files:      map[string]*File{},
		messages:   map[string][]*Message{},
		msgIndex:   map[msgKey]*Message{},
		threads:    map[msgKey][]*Message{},
		envByID:    map[string]*Envelope{},
		limited:    map[string]int{},
		views:      map[string]*HomeView{},
	}
}

func (st *State) addMessage(m *Message) {
	list := st.messages[m.Channel]
	// Timestamps come from one increasing clock, but a test may deliver a
	// message with its own ts: keep the list sorted.
	i := sort.Search(len(list), func(i int) bool { return list[i].TS > m.TS })
	st.messages[m.Channel] = slices.Insert(list, i, m)
	st.msgIndex[msgKey{m.Channel, m.TS}] = m
	if m.IsReply() {
		k := msgKey{m.Channel, m.ThreadTS}
		replies := st.threads[k]
		j := sort.Search(len(replies), func(j int) bool { return replies[j].TS > m.TS })
		st.threads[k] = slices.Insert(replies, j, m)
	}
}

// recordEnvelope stores a new envelope.
func (st *State) recordEnvelope(e *Envelope) {
	st.envelopes = append(st.envelopes, e)
	if e.ID != "" {
		st.envByID[e.ID] = e
	}
	switch e.Type {
	case EnvelopeRaw:
	case EnvelopeEventsAPI:
		if _, seen := st.eventAcked[e.EventID]; !seen {
			st.eventAcked[e.EventID] = false
			st.outstanding++
		}
	default:
		st.outstanding++
	}
}

// recordFirstAck accounts for the first ack of e.
func (st *State) recordFirstAck(e *Envelope) {
	switch e.Type {
	case EnvelopeRaw:
	case EnvelopeEventsAPI:
		if !st.eventAcked[e.EventID] {
			st.eventAcked[e.EventID] = true
			st.outstanding--
		}
	default:
		st.outstanding--
	}
}

// lose accounts for a slash command or interaction that never reached a
// socket: nobody can ack it.
func (st *State) lose(e *Envelope) {
	if e.Undelivered || len(e.Acks) > 0 {
		return
	}
	e.Undelivered = true
	if e.Type != EnvelopeRaw && e.Type != EnvelopeEventsAPI {
		st.outstanding--
	}
}

func (st *State) message(channel, ts string) *Message {
	return st.msgIndex[msgKey{channel, ts}]
}

// Messages returns the messages of a channel in ts order, deleted ones
// included (Deleted set). With threadTS "" it returns the top-level messages;
// otherwise the replies in that thread (the root excluded).
func (st *State) Messages(channel, threadTS string) []Message {
	var out []Message
	for _, m := range st.messages[channel] {
		if threadTS == "" && !m.IsReply() || threadTS != "" && m.IsReply() && m.ThreadTS == threadTS {
			out = append(out, m.clone())
		}
	}
	return out
}

// BotMessages is Messages restricted to the bot's messages that are not deleted.
func (st *State) BotMessages(channel, threadTS string) []Message {
	var out []Message
	for _, m := range st.Messages(channel, threadTS) {
		if m.Bot && !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

func (st *State) countBotMessages(channel, threadTS string) int {
	n := 0
	for _, m := range st.messages[channel] {
		if m.Bot && !m.Deleted && (threadTS == "" && !m.IsReply() || threadTS != "" && m.IsReply() && m.ThreadTS == threadTS) {
			n++
		}
	}
	return n
}

// AllMessages returns every message of every channel.
func (st *State) AllMessages() []Message {
	var out []Message
	for _, ch := range slices.Sorted(maps.Keys(st.messages)) {
		for _, m := range st.messages[ch] {
			out = append(out, m.clone())
		}
	}
	return out
}

// Message returns the message with ts in channel.
func (st *State) Message(channel, ts string) (Message, bool) {
	m := st.message(channel, ts)
	if m == nil {
		return Message{}, false
	}
	return m.clone(), true
}

// Ephemerals returns the ephemeral messages in channel for user; "" matches any.
func (st *State) Ephemerals(channel, user string) []Ephemeral {
	var out []Ephemeral
	for _, e := range st.ephemerals {
		if (channel == "" || e.Channel == channel) && (user == "" || e.User == user) {
			c := *e
			c.Params = cloneValues(e.Params)
			out = append(out, c)
		}
	}
	return out
}

// Uploads returns the completed uploads shared to channel in thread threadTS;
// "" matches any.
func (st *State) Uploads(channel, threadTS string) []Upload {
	var out []Upload
	for _, u := range st.uploads {
		if u.Completed && (channel == "" || u.Channel == channel) && (threadTS == "" || u.ThreadTS == threadTS) {
			out = append(out, *u)
		}
	}
	return out
}

// File returns a hosted file.
func (st *State) File(id string) (File, bool) {
	f, ok := st.files[id]
	if !ok {
		return File{}, false
	}
	return *f, true
}

// Calls returns the recorded calls of method, or all calls for "".
func (st *State) Calls(method string) []Call {
	var out []Call
	for _, c := range st.calls {
		if method == "" || c.Method == method {
			cc := *c
			cc.Params = cloneValues(c.Params)
			out = append(out, cc)
		}
	}
	return out
}

// Envelopes returns every envelope created, in order.
func (st *State) Envelopes() []Envelope {
	out := make([]Envelope, len(st.envelopes))
	for i, e := range st.envelopes {
		out[i] = e.clone()
	}
	return out
}

// Envelope returns the envelope with the given envelope_id.
func (st *State) Envelope(id string) (Envelope, bool) {
	e, ok := st.envByID[id]
	if !ok {
		return Envelope{}, false
	}
	return e.clone(), true
}

// EventEnvelopes returns the delivery attempts of one event, first first.
func (st *State) EventEnvelopes(eventID string) []Envelope {
	var out []Envelope
	for _, e := range st.envelopes {
		if e.EventID == eventID {
			out = append(out, e.clone())
		}
	}
	return out
}

// Acks returns every ack received, in order, including acks of unknown envelopes.
func (st *State) Acks() []Ack { return slices.Clone(st.acks) }

// ClientFrames returns the frames from clients that were not acks.
func (st *State) ClientFrames() []ClientFrame { return slices.Clone(st.frames) }

// ResponsePosts returns the POSTs to response_urls, in order.
func (st *State) ResponsePosts() []ResponsePost { return slices.Clone(st.responses) }

// PaceViolations returns the posts that broke one message per second per channel.
func (st *State) PaceViolations() []PaceViolation { return slices.Clone(st.pace) }

// OpenConnections is the number of Socket Mode connections open now.
func (st *State) OpenConnections() int { return st.openConns }

// TotalConnections is the number of Socket Mode connections accepted since start.
func (st *State) TotalConnections() int { return st.totalConns }

// Inspect runs fn with the fake's lock held. fn must not keep st nor call
// the Server's methods.
func (s *Server) Inspect(fn func(st *State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.st)
}

// WaitFor blocks until pred holds or ctx ends, re-evaluating pred after every
// change of the fake's state (no polling interval). pred runs with the lock
// held: it must be quick, must not keep st nor call the Server's methods.
func (s *Server) WaitFor(ctx context.Context, pred func(st *State) bool) error {
	for {
		s.mu.Lock()
		ok := pred(s.st)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}

// WaitMessages waits until the bot has at least n messages (not deleted) in
// channel, in the thread threadTS or at top level for "", and returns them.
// Messages sharing the bot's uploads count.
func (s *Server) WaitMessages(ctx context.Context, channel, threadTS string, n int) ([]Message, error) {
	err := s.WaitFor(ctx, func(st *State) bool { return st.countBotMessages(channel, threadTS) >= n })
	var got []Message
	s.Inspect(func(st *State) { got = st.BotMessages(channel, threadTS) })
	if err != nil {
		return got, fmt.Errorf("waiting for %d bot messages in %s thread %q (have %d): %w", n, channel, threadTS, len(got), err)
	}
	return got, nil
}

// WaitCalls waits until method was called at least n times and returns the calls.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	var got []Call
	err := s.WaitFor(ctx, func(st *State) bool {
		got = st.Calls(method)
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("waiting for %d calls of %s (have %d): %w", n, method, len(got), err)
	}
	return got, nil
}

// WaitEphemerals waits until user has at least n ephemerals in channel ("" any).
func (s *Server) WaitEphemerals(ctx context.Context, channel, user string, n int) ([]Ephemeral, error) {
	var got []Ephemeral
	err := s.WaitFor(ctx, func(st *State) bool {
		got = st.Ephemerals(channel, user)
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("waiting for %d ephemerals for %s in %s (have %d): %w", n, user, channel, len(got), err)
	}
	return got, nil
}

// WaitUploads waits until at least n uploads were shared to channel/threadTS ("" any).
func (s *Server) WaitUploads(ctx context.Context, channel, threadTS string, n int) ([]Upload, error) {
	var got []Upload
	err := s.WaitFor(ctx, func(st *State) bool {
		got = st.Uploads(channel, threadTS)
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("waiting for %d uploads in %s thread %q (have %d): %w", n, channel, threadTS, len(got), err)
	}
	return got, nil
}

// WaitConnected waits until the fake has accepted n Socket Mode connections
// in total since it started and one is open: WaitConnected(ctx, 1) for the
// first connection, WaitConnected(ctx, 2) for the reconnection after a
// Disconnect.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	err := s.WaitFor(ctx, func(st *State) bool { return st.totalConns >= n && st.openConns > 0 })
	if err != nil {
		open, total := s.Connections()
		return fmt.Errorf("waiting for connection #%d (open %d, total %d): %w", n, open, total, err)
	}
	return nil
}

// WaitAcked waits until every listed envelope has been acked. With no IDs
// it waits until the fake has nothing left unacknowledged: every event has
// an acked attempt (an attempt superseded by an acked retry does not count)
// and every slash command and interaction is acked. Raw frames are skipped.
func (s *Server) WaitAcked(ctx context.Context, envelopeIDs ...string) error {
	err := s.WaitFor(ctx, func(st *State) bool {
		if len(envelopeIDs) == 0 {
			return st.outstanding == 0
		}
		return st.firstUnacked(envelopeIDs) == ""
	})
	if err != nil {
		var missing string
		s.Inspect(func(st *State) { missing = st.firstUnacked(envelopeIDs) })
		return fmt.Errorf("waiting for the ack of envelope %s: %w", missing, err)
	}
	return nil
}

// firstUnacked returns an envelope ID WaitAcked is still waiting for.
func (st *State) firstUnacked(ids []string) string {
	for _, id := range ids {
		if e := st.envByID[id]; e == nil || len(e.Acks) == 0 {
			return id
		}
	}
	if len(ids) > 0 {
		return ""
	}
	acked := map[string]bool{}
	for _, e := range st.envelopes {
		if e.Type == EnvelopeEventsAPI && len(e.Acks) > 0 {
			acked[e.EventID] = true
		}
	}
	for _, e := range st.envelopes {
		switch {
		case e.Type == EnvelopeRaw || len(e.Acks) > 0:
		case e.Type == EnvelopeEventsAPI && acked[e.EventID]:
		case e.Type != EnvelopeEventsAPI && e.Undelivered:
		default:
			return e.ID
		}
	}
	return ""
}

// Messages returns the messages of channel at top level (threadTS "") or in
// a thread. See State.Messages.
func (s *Server) Messages(channel, threadTS string) (out []Message) {
	s.Inspect(func(st *State) { out = st.Messages(channel, threadTS) })
	return out
}

// Message returns one message.
func (s *Server) Message(channel, ts string) (m Message, ok bool) {
	s.Inspect(func(st *State) { m, ok = st.Message(channel, ts) })
	return m, ok
}

// Ephemerals returns ephemerals in channel for user ("" any).
func (s *Server) Ephemerals(channel, user string) (out []Ephemeral) {
	s.Inspect(func(st *State) { out = st.Ephemerals(channel, user) })
	return out
}

// Uploads returns completed uploads to channel/threadTS ("" any).
func (s *Server) Uploads(channel, threadTS string) (out []Upload) {
	s.Inspect(func(st *State) { out = st.Uploads(channel, threadTS) })
	return out
}

// Calls returns the recorded calls of method ("" all).
func (s *Server) Calls(method string) (out []Call) {
	s.Inspect(func(st *State) { out = st.Calls(method) })
	return out
}

// Envelopes returns every envelope created.
func (s *Server) Envelopes() (out []Envelope) {
	s.Inspect(func(st *State) { out = st.Envelopes() })
	return out
}

// Envelope returns one envelope by envelope_id.
func (s *Server) Envelope(id string) (e Envelope, ok bool) {
	s.Inspect(func(st *State) { e, ok = st.Envelope(id) })
	return e, ok
}

// EventEnvelopes returns the delivery attempts of one event.
func (s *Server) EventEnvelopes(eventID string) (out []Envelope) {
	s.Inspect(func(st *State) { out = st.EventEnvelopes(eventID) })
	return out
}

// Acks returns every ack received.
func (s *Server) Acks() (out []Ack) {
	s.Inspect(func(st *State) { out = st.Acks() })
	return out
}

// ResponsePosts returns the POSTs to response_urls.
func (s *Server) ResponsePosts() (out []ResponsePost) {
	s.Inspect(func(st *State) { out = st.ResponsePosts() })
	return out
}

// PaceViolations returns the posts that broke one message per second per channel.
func (s *Server) PaceViolations() (out []PaceViolation) {
	s.Inspect(func(st *State) { out = st.PaceViolations() })
	return out
}

// Connections returns how many Socket Mode connections are open and how
// many were accepted since start.
func (s *Server) Connections() (open, total int) {
	s.Inspect(func(st *State) { open, total = st.openConns, st.totalConns })
	return open, total
}

// File returns a hosted file.
func (s *Server) File(id string) (f File, ok bool) {
	s.Inspect(func(st *State) { f, ok = st.File(id) })
	return f, ok
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	c := make(url.Values, len(v))
	for k, vv := range v {
		c[k] = slices.Clone(vv)
	}
	return c
}
