package slackfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TopLevel is HistoryMessage.ReplyTo for a message that is not a reply.
const TopLevel = -1

// HistoryMessage is a message SeedHistory puts in a channel's history, as
// if it had been posted before the test: a user's (User), an
// integration's (SubType "bot_message", BotID, Username), or the bot's own
// (User the bot's user id: Message.Bot, with its bot_id and app_id).
type HistoryMessage struct {
	User string
	Text string // as Slack stores it: <https://x|label>, &amp; escaped
	// At is when it was posted; its ts is At to the microsecond, moved
	// on by a microsecond or more where it would not be unique. Zero is
	// now. It must lie between 2001-09-09 and 2286-11-20, where a ts has
	// ten digits of seconds.
	At time.Time
	// ReplyTo makes the message a reply in a thread: the index in msgs
	// of the thread's root (a top-level message of the same call, posted
	// before it), or TopLevel (-1) for a message that is not a reply.
	// The zero value, 0, makes every message but msgs[0] a reply to
	// msgs[0]: set TopLevel on each top-level message.
	ReplyTo int
	// ThreadTS, if set, makes the message a reply to a top-level message
	// already in the channel (a message delivered earlier, or seeded by an
	// earlier call); ReplyTo is then ignored.
	ThreadTS string
	// Files are hosted (as AddFile does; ID, URLs filled in) and shared
	// in the message, which embeds them as Slack does. Set SubType
	// "file_share" for a user's upload, as DeliverMessage wants it.
	Files []File
	// Attachments are legacy attachments, such as the link previews
	// (unfurls) Slack adds to a message with links.
	Attachments json.RawMessage
	// Blocks default to the rich_text block a Slack client attaches to a
	// user's text (as DeliverMessage's do); NoBlocks leaves them out.
	Blocks   json.RawMessage
	NoBlocks bool
	// SubType: "" (a plain message), "bot_message", "thread_broadcast" (a
	// reply also sent to the channel: it shows in history too),
	// "file_share", "channel_join"…
	SubType  string
	BotID    string
	Username string
	// Edited, if set, is when the message was last edited (its
	// "edited": {"user", "ts"}).
	Edited time.Time
}

// Where a ts has ten digits of seconds, so that the fake's ordering of
// timestamps as strings holds.
var (
	minSeedTime = time.Unix(1_000_000_000, 0)
	maxSeedTime = time.Unix(9_999_999_999, 0)
)

// SeedHistory puts msgs in channel's history without delivering any
// event, as the history a channel had before the bot joined it, and
// returns each message's ts (msgs' order). The channel and users are
// registered on first use, the users as members. It takes one lock and
// one sort, so 10,000 messages take a few tens of milliseconds.
//
// A message's ts comes from its At (see HistoryMessage.At): the ts are
// unique in the channel and follow At, ties in msgs' order. A reply must
// come after its root. SeedHistory panics when msgs break these rules
// (ReplyTo out of range, naming itself, a reply or a later message;
// ThreadTS naming no top-level message; At out of range), as a test's
// mistake; nothing is stored then.
func (s *Server) SeedHistory(channel string, msgs []HistoryMessage) []string {
	if channel == "" {
		panic("slackfake: SeedHistory needs a channel")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	at := func(i int) time.Time {
		if msgs[i].At.IsZero() {
			return now
		}
		return msgs[i].At
	}
	for i, hm := range msgs {
		bad := func(format string, args ...any) {
			panic(fmt.Sprintf("slackfake: SeedHistory(%s): msgs[%d]: ", channel, i) + fmt.Sprintf(format, args...))
		}
		if t := at(i); t.Before(minSeedTime) || !t.Before(maxSeedTime) {
			bad("At %v is out of range", t)
		}
		switch {
		case hm.ThreadTS != "":
			if root := s.st.message(channel, hm.ThreadTS); root == nil || root.IsReply() {
				bad("ThreadTS %s names no top-level message of the channel", hm.ThreadTS)
			}
		case hm.ReplyTo == TopLevel:
		case hm.ReplyTo < 0 || hm.ReplyTo >= len(msgs):
			bad("ReplyTo %d is out of range (TopLevel is -1)", hm.ReplyTo)
		case hm.ReplyTo == i:
			bad("ReplyTo names the message itself (TopLevel is -1)")
		case msgs[hm.ReplyTo].ReplyTo != TopLevel || msgs[hm.ReplyTo].ThreadTS != "":
			bad("ReplyTo names msgs[%d], itself a reply", hm.ReplyTo)
		}
	}

	// Timestamps in At's order, unique in the channel.
	order := make([]int, len(msgs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return at(a).Compare(at(b)) })
	ts := make([]string, len(msgs))
	us := make([]int64, len(msgs))
	prev := int64(-1)
	for _, i := range order {
		u := max(at(i).UnixMicro(), prev+1)
		for s.st.msgIndex[msgKey{channel, microsTS(u)}] != nil {
			u++
		}
		prev, us[i], ts[i] = u, u, microsTS(u)
	}
	for i, hm := range msgs {
		root := hm.ThreadTS
		if root == "" && hm.ReplyTo != TopLevel {
			root = ts[hm.ReplyTo]
		}
		if r, _ := tsMicros(root); root != "" && r >= us[i] {
			panic(fmt.Sprintf("slackfake: SeedHistory(%s): msgs[%d] (at %s) replies to a later message (%s)", channel, i, ts[i], root))
		}
	}

	ch := s.ensureChannelLocked(channel)
	members := map[string]bool{}
	for _, id := range ch.Members {
		members[id] = true
	}
	added := make([]*Message, len(msgs))
	threads := map[msgKey]bool{}
	for i, hm := range msgs {
		m := &Message{
			Channel: channel, TS: ts[i], User: hm.User, BotID: hm.BotID, Username: hm.Username, SubType: hm.SubType,
			Via: "seed", Text: hm.Text, Blocks: hm.Blocks, Attachments: hm.Attachments, PostedAt: at(i),
		}
		switch {
		case hm.ThreadTS != "":
			m.ThreadTS = hm.ThreadTS
		case hm.ReplyTo != TopLevel:
			m.ThreadTS = ts[hm.ReplyTo]
		}
		if m.IsReply() {
			threads[msgKey{channel, m.ThreadTS}] = true
		}
		if hm.User != "" && hm.User == s.cfg.botUserID {
			m.Bot, m.BotID, m.AppID = true, s.cfg.botID, s.cfg.appID
		}
		if hm.User != "" {
			s.ensureUserLocked(hm.User)
			if !members[hm.User] {
				members[hm.User] = true
				ch.Members = append(ch.Members, hm.User)
			}
		}
		if m.Blocks == nil && !hm.NoBlocks && !m.Bot && hm.User != "" && hm.Text != "" && hm.SubType != "bot_message" {
			m.Blocks, m.generatedBlocks = richTextBlocks(hm.Text), true
		}
		if !m.Bot && (hm.User != "" && hm.SubType == "" || hm.SubType == "thread_broadcast" || hm.SubType == "file_share") {
			m.clientMsgID = newUUID()
		}
		for _, f := range hm.Files {
			f.User = cmp.Or(f.User, hm.User)
			if f.Created.IsZero() {
				f.Created = at(i)
			}
			if !slices.Contains(f.Channels, channel) {
				f.Channels = append(slices.Clone(f.Channels), channel)
			}
			m.Files = append(m.Files, s.addFileLocked(f).ID)
		}
		if !hm.Edited.IsZero() {
			m.EditedTS = microsTS(hm.Edited.UnixMicro())
		}
		m.Versions = []MessageVersion{{At: m.PostedAt, Via: m.Via, Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments}}
		added[i] = m
		s.st.msgIndex[msgKey{channel, m.TS}] = m
		if m.IsReply() {
			k := msgKey{channel, m.ThreadTS}
			s.st.threads[k] = append(s.st.threads[k], m)
		}
	}
	byTS := func(a, b *Message) int { return cmp.Compare(a.TS, b.TS) }
	list := append(s.st.messages[channel], added...)
	slices.SortFunc(list, byTS)
	s.st.messages[channel] = list
	for k := range threads {
		slices.SortFunc(s.st.threads[k], byTS)
	}
	s.lastTS = max(s.lastTS, prev)
	s.notifyLocked()
	return ts
}
