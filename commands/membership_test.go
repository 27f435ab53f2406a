package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
)

// memberAPI is a hand-written MembershipSlack with pages, errors and call
// counts, safe for concurrent use.
type memberAPI struct {
	mu       sync.Mutex
	channels []slack.Channel
	members  map[string][]string
	errs     map[string]error // by channel; "" for users.conversations
	calls    map[string]int   // by method
	pageSize int              // members per page (0: all at once)
}

func (a *memberAPI) count(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[method]
}

func (a *memberAPI) GetConversationsForUserContext(_ context.Context, p *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls["users.conversations"]++
	if p.UserID != "" {
		return nil, "", errors.New("the membership source must not ask for a user's conversations")
	}
	if err := a.errs[""]; err != nil {
		return nil, "", err
	}
	return a.channels, "", nil
}

func (a *memberAPI) GetUsersInConversationContext(_ context.Context, p *slack.GetUsersInConversationParameters) ([]string, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls["conversations.members"]++
	if err := a.errs[p.ChannelID]; err != nil {
		return nil, "", err
	}
	all := a.members[p.ChannelID]
	if a.pageSize == 0 {
		return all, "", nil
	}
	off, _ := strconv.Atoi(p.Cursor)
	end := min(off+a.pageSize, len(all))
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	return all[off:end], next, nil
}

// clock is a settable clock for Membership.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newMembership(api *memberAPI) (*Membership, *clock) {
	c := &clock{t: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	return &Membership{API: api, Now: c.now}, c
}

func TestMembershipIsSharedCachedAndExpires(t *testing.T) {
	api := &memberAPI{
		channels: []slack.Channel{channelOf("C1", "general", false), channelOf("G1", "incident", true)},
		members:  map[string][]string{"C1": {"U1", "U2"}, "G1": {"U1"}},
	}
	m, clk := newMembership(api)
	ctx := t.Context()
	in, err := m.Of(ctx, "U1")
	if err != nil || !in["C1"] || !in["G1"] {
		t.Fatalf("U1 is in %v (%v), want C1 and G1", in, err)
	}
	in, err = m.Of(ctx, "U2")
	if err != nil || !in["C1"] || in["G1"] {
		t.Fatalf("U2 is in %v (%v), want C1 only", in, err)
	}
	// Two people asked: one list of channels, one member list per channel.
	if uc, cm := api.count("users.conversations"), api.count("conversations.members"); uc != 1 || cm != 2 {
		t.Fatalf("%d users.conversations and %d conversations.members calls, want 1 and 2 (shared, cached)", uc, cm)
	}

	// U1 leaves the private channel: still in it for the cache's minute,
	// out of it after.
	api.mu.Lock()
	api.members["G1"] = nil
	api.mu.Unlock()
	clk.add(DefaultMembershipTTL - time.Second)
	if in, _ := m.Of(ctx, "U1"); !in["G1"] {
		t.Fatal("the member list was read again before its TTL")
	}
	clk.add(time.Second)
	if in, err := m.Of(ctx, "U1"); err != nil || in["G1"] {
		t.Fatalf("U1 still sees the channel they left once the TTL passed: %v (%v)", in, err)
	}
}

func TestMembershipFailsClosed(t *testing.T) {
	api := &memberAPI{
		channels: []slack.Channel{channelOf("C1", "general", false), channelOf("G1", "incident", true), channelOf("G2", "left", true)},
		members:  map[string][]string{"C1": {"U1"}, "G1": {"U1"}, "G2": {"U1"}},
		errs: map[string]error{
			"G1": errors.New("connection reset"), // may work on a retry
			"G2": slack.SlackErrorResponse{Err: "channel_not_found"},
		},
	}
	m, _ := newMembership(api)
	access := &Access{Admins: []string{"UADMIN"}, Members: m}

	in, err := m.Of(t.Context(), "U1")
	if err == nil || !in["C1"] || in["G1"] || in["G2"] {
		t.Fatalf("Of = %v, %v; want C1 only and an error naming G1", in, err)
	}
	// The commands take no partial answer: Scope fails.
	if sc, err := access.Scope(t.Context(), "U1"); !errors.Is(err, ErrAccessUnknown) || sc != nil {
		t.Fatalf("Scope = %v, %v; want ErrAccessUnknown", sc, err)
	}
	// A channel Slack refuses for good is nobody's; that is not a failure.
	api.mu.Lock()
	delete(api.errs, "G1")
	api.mu.Unlock()
	sc, err := access.Scope(t.Context(), "U1")
	if err != nil || !sc.Channel("C1") || !sc.Channel("G1") || sc.Channel("G2") {
		t.Fatalf("Scope = %+v, %v; want C1 and G1, not G2 (channel_not_found)", sc, err)
	}
	// The admin needs no lookup; without a membership source nobody else
	// sees anything.
	if sc, err := access.Scope(t.Context(), "UADMIN"); err != nil || !sc.All() {
		t.Fatalf("admin scope = %+v, %v", sc, err)
	}
	if _, err := (&Access{}).Scope(t.Context(), "U1"); !errors.Is(err, ErrAccessUnknown) {
		t.Fatalf("no membership source: %v, want ErrAccessUnknown", err)
	}
	// The channel list failing fails everything.
	api2 := &memberAPI{errs: map[string]error{"": slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}}}
	m2, _ := newMembership(api2)
	if _, err := (&Access{Members: m2}).Scope(t.Context(), "U1"); !errors.Is(err, ErrAccessUnknown) {
		t.Fatalf("users.conversations failing: %v, want ErrAccessUnknown", err)
	}
}

func TestMembershipWaitsOutSlacksRetryAfter(t *testing.T) {
	api := &memberAPI{
		channels: []slack.Channel{channelOf("C1", "general", false)},
		members:  map[string][]string{"C1": {"U1"}},
		errs:     map[string]error{"C1": &slack.RateLimitedError{RetryAfter: 20 * time.Second}},
	}
	m, clk := newMembership(api)
	if _, err := m.Of(t.Context(), "U1"); err == nil {
		t.Fatal("a 429 is not an answer")
	}
	api.mu.Lock()
	delete(api.errs, "C1")
	api.mu.Unlock()
	for range 5 {
		if _, err := m.Of(t.Context(), "U1"); err == nil {
			t.Fatal("answered within Slack's Retry-After")
		}
	}
	if n := api.count("conversations.members"); n != 1 {
		t.Fatalf("%d conversations.members calls within Retry-After, want the one that got 429", n)
	}
	clk.add(20 * time.Second)
	if in, err := m.Of(t.Context(), "U1"); err != nil || !in["C1"] {
		t.Fatalf("after Retry-After: %v, %v", in, err)
	}
}

func TestMembershipReadsBoundedPages(t *testing.T) {
	var huge []string
	for i := range memberPages*memberLimit + 5 {
		huge = append(huge, fmt.Sprintf("U%06d", i))
	}
	api := &memberAPI{channels: []slack.Channel{channelOf("C1", "everyone", false)}, members: map[string][]string{"C1": huge}, pageSize: memberLimit}
	m, _ := newMembership(api)
	if ok, err := m.IsMember(t.Context(), "C1", huge[0]); err != nil || !ok {
		t.Fatalf("first member: %v, %v", ok, err)
	}
	if n := api.count("conversations.members"); n != memberPages {
		t.Fatalf("%d pages read, want the bound %d", n, memberPages)
	}
	// Beyond the pages read: not found, so not shown (fail closed).
	if ok, err := m.IsMember(t.Context(), "C1", huge[len(huge)-1]); err != nil || ok {
		t.Fatalf("a member beyond the pages read: %v, %v; want false", ok, err)
	}
}

func TestScopeOfADirectMessageIsItsPersons(t *testing.T) {
	sc := &Scope{user: "U1", in: map[string]bool{"C1": true}}
	for _, tc := range []struct {
		c    card.Card
		want bool
	}{
		{card.Card{Channel: "C1"}, true},
		{card.Card{Channel: "G9", Poster: "U1"}, false}, // posting there is no membership
		{card.Card{Channel: "D0U1", Poster: "U1"}, true},
		{card.Card{Channel: "D0U1", RequestedBy: "U1"}, true},
		{card.Card{Channel: "D0U2", Poster: "U2"}, false},
		{card.Card{Channel: "D0U2"}, false},
	} {
		if got := sc.Card(&tc.c); got != tc.want {
			t.Errorf("Card(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
	if (&Scope{}).Card(&card.Card{Channel: "D0"}) || (*Scope)(nil).Channel("C1") {
		t.Error("an empty or nil scope sees something")
	}
	if !(&Scope{all: true}).Card(&card.Card{Channel: "D0U2", Poster: "U2"}) {
		t.Error("an admin's scope does not see a DM's card")
	}
}
