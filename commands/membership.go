package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
)

// MembershipSlack is what Membership asks Slack (*slack.Client): the
// channels the bot is in (users.conversations, scopes channels:read and
// groups:read, Tier 2: 20+ calls a minute) and who is in one
// (conversations.members, the same scopes, Tier 4: 100+ a minute; Slack's
// per-method tiers as slackapi/java-slack-sdk's MethodsRateLimits lists
// them).
type MembershipSlack interface {
	GetConversationsForUserContext(ctx context.Context, p *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error)
	GetUsersInConversationContext(ctx context.Context, p *slack.GetUsersInConversationParameters) ([]string, string, error)
}

var _ MembershipSlack = (*slack.Client)(nil)

// DefaultMembershipTTL is how long Membership reuses the bot's channel list
// and a channel's member list. Someone removed from a channel keeps seeing
// its cards in /scan and the Home for at most this long; in exchange a
// command or a Home costs no Slack call while the lists are fresh, and
// the calls are one users.conversations and one conversations.members per
// channel (per page) a minute at most, whoever asks and however often:
// within Tier 2 and Tier 4.
const DefaultMembershipTTL = time.Minute

const (
	// membershipTimeout bounds one lookup (a channel's pages, or the
	// bot's channel list).
	membershipTimeout = 20 * time.Second
	// botChannelPages bounds the users.conversations pages read (200
	// channels a page): channels beyond 1,000 are not known to be the
	// bot's, so their cards are shown to admins only.
	botChannelPages = 5
	botChannelLimit = 200
	// memberPages bounds the conversations.members pages read for one
	// channel (1,000 members a page, Slack's largest): in a channel of
	// more than 10,000 members, those beyond are not found, and they do
	// not see its cards (admins do).
	memberPages = 10
	memberLimit = 1000
	// memberLookups is how many channels' members are read at once
	// when none are cached.
	memberLookups = 4
	// maxCachedChannels bounds the member lists kept (as many as the
	// bot's channels can be).
	maxCachedChannels = botChannelPages * botChannelLimit
)

// ErrAccessUnknown is the error of a scope that could not be learnt from
// Slack: the answer is then "could not check your access", never the
// records (fail closed).
var ErrAccessUnknown = errors.New("could not check which conversations you are in")

// AccessUnknownText is what a person is told when their scope could not
// be learnt.
const AccessUnknownText = "I could not check your access just now (Slack did not tell me which conversations you are in), so I show nothing; try again in a minute."

// Conversation is a channel the bot is in.
type Conversation struct {
	ID, Name string
	Private  bool
}

// Membership tells which of the bot's channels a person is a member of,
// from Slack: the bot's channels (users.conversations) and each channel's
// members (conversations.members), each list kept for TTL and shared by
// every person who asks, the App Home and the commands alike. It never
// takes membership from what a person typed.
//
// What it cannot read, it does not grant: a channel Slack will not list
// the members of (the bot was removed: channel_not_found, not_in_channel;
// or a missing scope) has no members here, and a lookup that fails for a
// while (network, 5xx, rate limit) is an error, never a yes. After HTTP
// 429 no call is made until Slack's Retry-After has passed.
type Membership struct {
	API MembershipSlack
	// TTL is how long a list is reused (default DefaultMembershipTTL).
	TTL time.Duration
	Log *slog.Logger
	// Now, if set, is the clock (tests).
	Now func() time.Time
	// Teams, if set, returns the workspaces of an org-wide install
	// (Enterprise Grid): users.conversations needs a team_id with an
	// org-level token, so the bot's channels are read workspace by
	// workspace and joined (a channel shared between two is listed once).
	// nil, or no team: one list, without team_id (a workspace install).
	Teams func() []string

	mu       sync.Mutex
	channels *botChannelList
	members  map[string]*channelMembers
	// locks make one lookup per key ("" for the channel list) at a time;
	// the others wait for it and read its result.
	locks   map[string]chan struct{}
	retryAt map[string]time.Time // per method, after a 429: no call before then
	refused map[string]bool
}

type botChannelList struct {
	list []Conversation
	at   time.Time
}

type channelMembers struct {
	users map[string]bool
	at    time.Time
}

func (m *Membership) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Membership) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return DefaultMembershipTTL
}

func (m *Membership) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

// lock takes the lookup lock of key, or returns ctx's error.
func (m *Membership) lock(ctx context.Context, key string) (unlock func(), err error) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]chan struct{}{}
	}
	l, ok := m.locks[key]
	if !ok {
		l = make(chan struct{}, 1)
		m.locks[key] = l
	}
	m.mu.Unlock()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errSlackWaiting is a lookup not made because Slack asked to wait.
var errSlackWaiting = errors.New("waiting out Slack's Retry-After (HTTP 429)")

// call runs one call of a Slack method unless Slack asked to wait, and
// remembers a Retry-After (Slack's limits are per method).
func (m *Membership) call(method string, fn func() error) error {
	m.mu.Lock()
	wait := m.retryAt[method].After(m.now())
	m.mu.Unlock()
	if wait {
		return fmt.Errorf("%s: %w", method, errSlackWaiting)
	}
	err := fn()
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		m.mu.Lock()
		if m.retryAt == nil {
			m.retryAt = map[string]time.Time{}
		}
		m.retryAt[method] = m.now().Add(max(rl.RetryAfter, time.Second))
		m.mu.Unlock()
	}
	return err
}

// Channels returns the public and private channels the bot is in (not
// archived), sorted by name.
func (m *Membership) Channels(ctx context.Context) ([]Conversation, error) {
	if l := m.freshChannels(); l != nil {
		return l, nil
	}
	unlock, err := m.lock(ctx, "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if l := m.freshChannels(); l != nil {
		return l, nil
	}
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	teams := []string{""}
	if m.Teams != nil {
		if ts := m.Teams(); len(ts) > 0 {
			teams = ts
		}
	}
	var out []Conversation
	seen := map[string]bool{}
	for _, team := range teams {
		cursor := ""
		for page := range botChannelPages {
			var chs []slack.Channel
			var next string
			err := m.call("users.conversations", func() (err error) {
				chs, next, err = m.API.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{
					Types: []string{"public_channel", "private_channel"}, ExcludeArchived: true, Limit: botChannelLimit, Cursor: cursor,
					TeamID: team})
				return err
			})
			if err != nil {
				if team != "" && len(teams) > 1 && strings.Contains(err.Error(), "team_access_not_granted") {
					// Revoked since the list of workspaces was read: its
					// channels are not the bot's any more.
					m.log().Info("users.conversations: workspace not granted; its channels are skipped", "team_id", team)
					break
				}
				return nil, fmt.Errorf("users.conversations: %w", err)
			}
			for _, c := range chs {
				if !seen[c.ID] {
					seen[c.ID] = true
					out = append(out, Conversation{ID: c.ID, Name: c.Name, Private: c.IsPrivate})
				}
			}
			if next == "" {
				break
			}
			if page == botChannelPages-1 {
				m.log().Warn("the bot is in more channels than are read; the others' cards are shown to admins only",
					"channels_read", len(out), "team_id", team)
			}
			cursor = next
		}
	}
	slices.SortFunc(out, func(a, b Conversation) int { return strings.Compare(a.Name, b.Name) })
	m.mu.Lock()
	m.channels = &botChannelList{list: out, at: m.now()}
	m.mu.Unlock()
	return slices.Clone(out), nil
}

func (m *Membership) freshChannels() []Conversation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.channels == nil || m.now().Sub(m.channels.at) >= m.ttl() {
		return nil
	}
	return slices.Clone(m.channels.list)
}

// cachedMember answers from a fresh member list: (member, true), or
// (false, false) when the list must be read.
func (m *Membership) cachedMember(channel, user string) (member, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml := m.members[channel]
	if ml == nil || m.now().Sub(ml.at) >= m.ttl() {
		return false, false
	}
	return ml.users[user], true
}

// IsMember reports whether user is a member of channel, one of the bot's
// channels. An error means it could not be told; it is never a yes.
func (m *Membership) IsMember(ctx context.Context, channel, user string) (bool, error) {
	if yes, ok := m.cachedMember(channel, user); ok {
		return yes, nil
	}
	unlock, err := m.lock(ctx, "c:"+channel)
	if err != nil {
		return false, err
	}
	defer unlock()
	if yes, ok := m.cachedMember(channel, user); ok {
		return yes, nil
	}
	lctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	users := map[string]bool{}
	cursor := ""
	for page := range memberPages {
		var ids []string
		var next string
		err := m.call("conversations.members", func() (err error) {
			ids, next, err = m.API.GetUsersInConversationContext(lctx, &slack.GetUsersInConversationParameters{
				ChannelID: channel, Limit: memberLimit, Cursor: cursor})
			return err
		})
		if err != nil {
			if !refusedForGood(err) {
				return false, fmt.Errorf("conversations.members %s: %w", channel, err)
			}
			// Slack will not tell, now or on a retry: nobody is a member
			// as far as the bot knows (admins still see its cards).
			m.refusedOnce(channel, err)
			users = map[string]bool{}
			break
		}
		for _, id := range ids {
			users[id] = true
		}
		if next == "" {
			break
		}
		if page == memberPages-1 {
			m.log().Warn("channel larger than the members read; members beyond are not found and do not see its cards",
				"channel", channel, "members_read", len(users))
		}
		cursor = next
	}
	m.mu.Lock()
	if m.members == nil {
		m.members = map[string]*channelMembers{}
	}
	if len(m.members) >= maxCachedChannels {
		for id, ml := range m.members {
			if m.now().Sub(ml.at) >= m.ttl() {
				delete(m.members, id)
			}
		}
		if len(m.members) >= maxCachedChannels {
			clear(m.members)
		}
	}
	m.members[channel] = &channelMembers{users: users, at: m.now()}
	m.mu.Unlock()
	return users[user], nil
}

// refusedOnce logs, once per channel, that Slack refused its members.
func (m *Membership) refusedOnce(channel string, err error) {
	m.mu.Lock()
	if m.refused == nil {
		m.refused = map[string]bool{}
	}
	seen := m.refused[channel]
	m.refused[channel] = true
	m.mu.Unlock()
	if !seen {
		m.log().Warn("Slack refused a channel's members; its cards are shown to admins only", "channel", channel, "error", err)
	}
}

// Of returns the bot's channels user is a member of. Every channel's
// members are looked up (from the cache while fresh), whatever is asked
// afterwards, so what Slack is asked never depends on the record a person
// looks for. in holds what could be told; err is non-nil when the channel
// list or some channel's members could not be read (in then lacks them).
func (m *Membership) Of(ctx context.Context, user string) (in map[string]bool, err error) {
	chans, err := m.Channels(ctx)
	if err != nil {
		m.log().Warn("could not list the bot's channels: no channel is a person's", "user", user, "error", err)
		return map[string]bool{}, err
	}
	in = map[string]bool{}
	var (
		mu     sync.Mutex
		failed []string
		first  error
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, memberLookups)
	for _, c := range chans {
		if yes, ok := m.cachedMember(c.ID, user); ok {
			if yes {
				in[c.ID] = true
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			failed = append(failed, c.ID)
			first = cmpErr(first, ctx.Err())
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			yes, err := m.IsMember(ctx, c.ID, user)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, c.ID)
				first = cmpErr(first, err)
			case yes:
				in[c.ID] = true
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		slices.Sort(failed)
		err := fmt.Errorf("members of %d channel(s) (%s) unknown: %w", len(failed), strings.Join(failed, ", "), first)
		m.log().Warn("could not learn which channels a person is in: those not read are not theirs", "user", user, "error", err)
		return in, err
	}
	return in, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Scope is what one person may see of what the bot recorded: the cards,
// verdicts and reports of the conversations they are a member of; an
// admin's scope is everything. A direct message with the bot (D…) is
// its own person's only. Build one with Access.Scope.
type Scope struct {
	user string
	all  bool
	in   map[string]bool
}

// All reports whether the scope is everything (an admin's).
func (s *Scope) All() bool { return s != nil && s.all }

// Channel reports whether the person is a member of channel, one of the
// bot's channels (always true for an admin). A direct message is never
// such a channel: see Card.
func (s *Scope) Channel(channel string) bool {
	if s == nil {
		return false
	}
	return s.all || s.in[channel]
}

// Card reports whether the person may see c: an admin, any; otherwise a
// member of its channel, or, in a direct message (D…), its own person,
// who posted the message or asked for the scan there (only that person
// and the bot are in a DM with the bot, and the bot's own messages are
// never scanned).
func (s *Scope) Card(c *card.Card) bool {
	if s == nil || c == nil {
		return false
	}
	if s.all || s.in[c.Channel] {
		return true
	}
	return isDirect(c.Channel) && s.user != "" && (c.Poster == s.user || c.RequestedBy == s.user)
}

// isDirect reports whether channel is a direct message (D…), as
// cards.IsDirect.
func isDirect(channel string) bool { return strings.HasPrefix(channel, "D") }
