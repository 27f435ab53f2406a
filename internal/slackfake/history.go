package slackfake

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file serves conversations.history and conversations.replies as
// docs.slack.dev/reference/methods/conversations.history and
// /conversations.replies describe them, with the cursor pagination of
// docs.slack.dev/apis/web-api/pagination.

// Page sizes of conversations.history and conversations.replies.
const (
	// HistoryDefaultLimit and HistoryMaxLimit: conversations.history's
	// limit "Default: 100", "Maximum of 999" (for internal and Marketplace
	// apps; Slack cut both to 15 for commercially distributed
	// non-Marketplace apps, which the fake does not model). Slack does not
	// document what a larger limit does; the fake clamps it to 999, as
	// "fewer than the requested number of items may be returned".
	HistoryDefaultLimit = 100
	HistoryMaxLimit     = 999
	// RepliesDefaultLimit and RepliesMaxLimit: conversations.replies'
	// limit defaults to 1000 (the method's argument table); no maximum is
	// documented, the fake clamps to the default.
	RepliesDefaultLimit = 1000
	RepliesMaxLimit     = 1000
)

// pageArgs are the paging arguments of a history read.
type pageArgs struct {
	limit                int
	cursor               int64 // the first ts (µs) of the page asked for, with hasCursor
	hasCursor            bool
	oldest, latest       int64 // µs
	hasOldest, hasLatest bool
	inclusive            bool
}

// readPage reads cursor, limit, oldest, latest and inclusive. A limit
// that is absent, not a number or not positive is the default; one above
// max is max. A cursor the fake did not hand out is invalid_cursor;
// latest and oldest that are not timestamps are invalid_ts_latest and
// invalid_ts_oldest (the errors both methods document).
func readPage(p url.Values, def, maxLimit int) (pageArgs, apiResult) {
	a := pageArgs{limit: def}
	if n, err := strconv.Atoi(p.Get("limit")); err == nil && n > 0 {
		a.limit = min(n, maxLimit)
	}
	if c := p.Get("cursor"); c != "" {
		us, ok := decodeCursor(c)
		if !ok {
			return a, errResult("invalid_cursor")
		}
		a.cursor, a.hasCursor = us, true
	}
	if v := p.Get("latest"); v != "" {
		us, ok := tsMicros(v)
		if !ok {
			return a, errResult("invalid_ts_latest")
		}
		a.latest, a.hasLatest = us, true
	}
	if v := p.Get("oldest"); v != "" {
		us, ok := tsMicros(v)
		if !ok {
			return a, errResult("invalid_ts_oldest")
		}
		a.oldest, a.hasOldest = us, true
	}
	a.inclusive, _ = boolParam(p, "inclusive")
	return a, apiResult{}
}

// within reports whether a message at us lies between oldest and latest.
func (a pageArgs) within(us int64) bool {
	if a.hasLatest && !(us < a.latest || a.inclusive && us == a.latest) {
		return false
	}
	return !a.hasOldest || us > a.oldest || a.inclusive && us == a.oldest
}

// encodeCursor is Slack's cursor shape: base64 of "next_ts:<ts in µs>",
// the ts of the first message of the next page (the docs' example
// next_cursor "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz" is
// "next_ts:1512085861000543").
func encodeCursor(us int64) string {
	return base64.StdEncoding.EncodeToString([]byte("next_ts:" + strconv.FormatInt(us, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(b), "next_ts:")
	if !ok {
		return 0, false
	}
	us, err := strconv.ParseInt(digits, 10, 64)
	return us, err == nil && us >= 0
}

// tsMicros reads a message timestamp ("seconds.micros", or whole or
// fractional seconds) as microseconds.
func tsMicros(ts string) (int64, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/1_000_000-1 {
		return 0, false
	}
	if len(frac) > 6 {
		frac = frac[:6]
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil || f < 0 {
			return 0, false
		}
	}
	return n*1e6 + f, true
}

// microsTS formats microseconds as a message timestamp.
func microsTS(us int64) string { return fmt.Sprintf("%d.%06d", us/1e6, us%1e6) }

// msgMicros is m's ts in µs (0 for a ts that is not one).
func msgMicros(m *Message) int64 {
	us, _ := tsMicros(m.TS)
	return us
}

// readableChannelLocked returns the conversation whose history the bot
// token may read, or the error Slack answers: channel_not_found for an
// unknown one or a private conversation the bot is not in (it does not
// exist for the bot, as for conversations.info), not_in_channel for a
// public channel the bot is not in (a bot token reads "any conversation
// the relevant bot is a member of", conversations.history "Usage info").
func (s *Server) readableChannelLocked(id string) (*Channel, apiResult) {
	ch := s.st.channels[id]
	switch {
	case ch == nil:
		return nil, errResult("channel_not_found")
	case ch.NotMember && (ch.Private || ch.MPIM || ch.IM):
		return nil, errResult("channel_not_found")
	case ch.NotMember:
		return nil, errResult("not_in_channel")
	}
	return ch, apiResult{}
}

// inHistory reports whether m shows in conversations.history: top-level
// messages and replies also sent to the channel (thread_broadcast), not
// the other replies nor deleted messages.
func inHistory(m *Message) bool {
	return !m.Deleted && (!m.IsReply() || m.ReplyBroadcast || m.SubType == "thread_broadcast")
}

// apiConversationsHistory answers a page of a conversation's history,
// newest first: thread roots carry their thread's summary (thread_ts,
// reply_count, reply_users_count, reply_users, latest_reply), replies are
// left out except those also sent to the channel (thread_broadcast).
// When more messages are in range it says has_more and hands out
// response_metadata.next_cursor. A deleted message is left out even when
// replies remain (Slack shows a tombstone there; conversations.replies
// does too).
func (s *Server) apiConversationsHistory(c *apiCall) apiResult {
	ch, res := s.readableChannelLocked(c.params.Get("channel"))
	if ch == nil {
		return res
	}
	a, res := readPage(c.params, HistoryDefaultLimit, HistoryMaxLimit)
	if res.set() {
		return res
	}
	list := s.st.messages[ch.ID]
	upper := int64(math.MaxInt64)
	if a.hasCursor {
		upper = a.cursor
	}
	if a.hasLatest {
		upper = min(upper, a.latest)
	}
	// The newest message at or before upper, then older ones.
	i := sort.Search(len(list), func(i int) bool { return msgMicros(list[i]) > upper }) - 1
	out := make([]any, 0, min(a.limit, i+1))
	next := ""
	for ; i >= 0; i-- {
		m := list[i]
		us := msgMicros(m)
		if a.hasOldest && us < a.oldest {
			break
		}
		if !inHistory(m) || !a.within(us) {
			continue
		}
		if len(out) == a.limit {
			next = encodeCursor(us)
			break
		}
		out = append(out, s.historyJSONLocked(m))
	}
	return okResult(map[string]any{"messages": out, "has_more": next != "", "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": next}})
}

// historyJSONLocked renders m as history and replies show it: a thread's
// root with the thread's summary, a reply also sent to the channel with
// subtype thread_broadcast.
func (s *Server) historyJSONLocked(m *Message) map[string]any {
	o := s.messageJSON(m)
	if m.IsReply() {
		if m.ReplyBroadcast && m.SubType == "" {
			o["subtype"] = "thread_broadcast"
		}
		return o
	}
	s.threadSummaryLocked(o, m)
	return o
}

// threadSummaryLocked adds to a root's rendering what Slack shows on a
// thread's parent (conversations.replies' example): thread_ts (its own
// ts), reply_count, reply_users_count, reply_users (who replied, first
// reply first; a bot's id for a bot message without a user, as the
// method's docs warn), latest_reply, subscribed and is_locked. A message
// without replies gets none of them.
func (s *Server) threadSummaryLocked(o map[string]any, root *Message) {
	n, latest := 0, ""
	var users []string
	for _, r := range s.st.threads[msgKey{root.Channel, root.TS}] {
		if r.Deleted {
			continue
		}
		n, latest = n+1, r.TS
		if u := cmp.Or(r.User, r.BotID); u != "" && !slices.Contains(users, u) {
			users = append(users, u)
		}
	}
	if n == 0 {
		return
	}
	o["thread_ts"], o["reply_count"], o["reply_users_count"] = root.TS, n, len(users)
	o["reply_users"], o["latest_reply"] = users, latest
	o["subscribed"], o["is_locked"] = false, false
}

// apiConversationsReplies answers a page of a thread: on the first page
// the parent first, then the replies oldest first; the following pages
// (cursor) hold replies only. The parent counts toward limit. ts may name
// the parent or any message of the thread ("ts must be the timestamp of
// an existing message"; a message without replies is returned alone).
// oldest, latest and inclusive select replies; the parent is on the first
// page whatever they say (Slack does not document whether they can leave
// it out; the fake's choice). A thread whose parent was deleted keeps a
// placeholder parent, as Slack shows it: subtype tombstone, "This message
// was deleted.", posted by Slackbot, with nothing of the original; a
// deleted message without replies is thread_not_found.
func (s *Server) apiConversationsReplies(c *apiCall) apiResult {
	ch, res := s.readableChannelLocked(c.params.Get("channel"))
	if ch == nil {
		return res
	}
	a, res := readPage(c.params, RepliesDefaultLimit, RepliesMaxLimit)
	if res.set() {
		return res
	}
	root := s.st.message(ch.ID, c.params.Get("ts"))
	if root != nil && root.IsReply() {
		if r := s.st.message(ch.ID, root.ThreadTS); r != nil {
			root = r
		}
	}
	if root == nil {
		return errResult("thread_not_found")
	}
	all := s.st.threads[msgKey{ch.ID, root.TS}]
	live := 0
	for _, r := range all {
		if !r.Deleted {
			live++
		}
	}
	if root.Deleted && live == 0 {
		return errResult("thread_not_found")
	}
	out := make([]any, 0, min(a.limit, live+1))
	if !a.hasCursor {
		first := s.historyJSONLocked(root)
		if root.Deleted {
			first = map[string]any{"type": "message", "subtype": "tombstone", "hidden": true, "ts": root.TS, "thread_ts": root.TS,
				"user": "USLACKBOT", "text": "This message was deleted.", "reply_count": live}
		}
		out = append(out, first)
	}
	next := ""
	for _, r := range all {
		us := msgMicros(r)
		if r.Deleted || a.hasCursor && us < a.cursor || !a.within(us) {
			continue
		}
		if len(out) >= a.limit {
			next = encodeCursor(us)
			break
		}
		out = append(out, s.historyJSONLocked(r))
	}
	return okResult(map[string]any{"messages": out, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}})
}
