package commands_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
)

const (
	adminGroupID = "S0ADMINS01"
	methodGroup  = "usergroups.users.list"
	uAlice       = "U0ALICE001"
	uBob         = "U0BOB00001"
	uCarol       = "U0CAROL001"
)

// newAdminGroup returns an AdminGroup on a real *slack.Client pointed at a
// fake Slack that has the group with alice and bob, and its log.
func newAdminGroup(t *testing.T, refresh time.Duration) (*commands.AdminGroup, *slackfake.Server, *testutil.SyncBuffer) {
	t.Helper()
	f := slackfaketest.Start(t)
	f.AddUserGroup(adminGroupID, "secops-admins", uAlice, uBob)
	logger, logs := testutil.Logger(slog.LevelInfo)
	g := &commands.AdminGroup{
		Group:   adminGroupID,
		API:     slack.New(f.BotToken(), slack.OptionAPIURL(f.APIURL())),
		Refresh: refresh,
		Timeout: 5 * time.Second,
		Log:     logger,
	}
	t.Cleanup(g.Stop)
	return g, f, logs
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits until cond holds, or fails after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantMembers(t *testing.T, g *commands.AdminGroup, in, out []string) {
	t.Helper()
	for _, u := range in {
		if !g.IsMember(u) {
			t.Errorf("IsMember(%s) = false, want true", u)
		}
	}
	for _, u := range out {
		if g.IsMember(u) {
			t.Errorf("IsMember(%s) = true, want false", u)
		}
	}
}

func TestAdminGroupResolvesMembersAtStart(t *testing.T) {
	t.Parallel()
	g, f, _ := newAdminGroup(t, time.Hour)
	wantMembers(t, g, nil, []string{uAlice}) // nothing before Start
	if err := g.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	wantMembers(t, g, []string{uAlice, uBob}, []string{uCarol, ""})

	calls := f.Calls(methodGroup)
	if len(calls) != 1 {
		t.Fatalf("%d calls of %s at start, want 1", len(calls), methodGroup)
	}
	if got := calls[0].Params.Get("usergroup"); got != adminGroupID {
		t.Errorf("usergroup = %q, want %q", got, adminGroupID)
	}
	if calls[0].TokenKind != slackfake.TokenBot {
		t.Errorf("called with a %v token, want the bot token", calls[0].TokenKind)
	}

	// IsMember reads the cache: a click never waits on Slack.
	for range 100 {
		g.IsMember(uAlice)
		g.IsMember(uCarol)
	}
	if n := len(f.Calls(methodGroup)); n != 1 {
		t.Errorf("IsMember called Slack: %d calls, want 1", n)
	}

	access := &commands.Access{Admins: []string{uCarol}, IsGroupAdmin: g.IsMember}
	if !access.IsAdmin(uAlice) || !access.IsAdmin(uCarol) || access.IsAdmin("U0MALLORY1") {
		t.Error("Access does not combine VERDICTBOT_ADMINS and the group")
	}
	if !access.CanReport(uBob, "restore") {
		t.Error("a group member may not restore")
	}
}

func TestAdminGroupRefreshesInTheBackground(t *testing.T) {
	t.Parallel()
	g, f, logs := newAdminGroup(t, 20*time.Millisecond)
	if err := g.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	wantMembers(t, g, []string{uAlice, uBob}, []string{uCarol})

	f.AddUserGroup(adminGroupID, "secops-admins", uAlice, uCarol) // bob leaves, carol joins
	eventually(t, "the change is picked up", func() bool { return g.IsMember(uCarol) && !g.IsMember(uBob) })
	wantMembers(t, g, []string{uAlice, uCarol}, []string{uBob})
	if !strings.Contains(logs.String(), "admin group members changed") || !strings.Contains(logs.String(), "removed=["+uBob+"]") {
		t.Errorf("the change is not logged with who left:\n%s", logs)
	}

	// Stop ends the goroutine: no lookup after it returns. A request the
	// cancelled lookup had already sent may still reach the fake (and be
	// counted) just after Stop returns, so the count is taken once that
	// has settled; a loop still running would look up every 20 ms.
	g.Stop()
	time.Sleep(50 * time.Millisecond)
	n := len(f.Calls(methodGroup))
	time.Sleep(100 * time.Millisecond)
	if m := len(f.Calls(methodGroup)); m != n {
		t.Errorf("%d lookups after Stop", m-n)
	}
	g.Stop() // twice is fine
	wantMembers(t, g, []string{uAlice, uCarol}, nil)
}

func TestAdminGroupKeepsMembersOnError(t *testing.T) {
	t.Parallel()
	g, f, logs := newAdminGroup(t, time.Hour)
	ctx := testContext(t)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.AddUserGroup(adminGroupID, "secops-admins", uCarol)
	f.Fail(methodGroup, 0, "internal_error") // until ClearFaults
	for range 3 {
		err := g.Lookup(ctx)
		if err == nil || !strings.Contains(err.Error(), "internal_error") {
			t.Fatalf("Lookup during an outage: %v, want internal_error", err)
		}
		wantMembers(t, g, []string{uAlice, uBob}, []string{uCarol})
	}
	if n := strings.Count(logs.String(), "admin group lookup failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logs)
	}

	f.ClearFaults()
	if err := g.Lookup(ctx); err != nil {
		t.Fatal(err)
	}
	wantMembers(t, g, []string{uCarol}, []string{uAlice, uBob})
	if !strings.Contains(logs.String(), "admin group lookup works again") {
		t.Errorf("the recovery is not logged:\n%s", logs)
	}

	// A new outage is logged again.
	f.Fail(methodGroup, 1, "service_unavailable")
	if err := g.Lookup(ctx); err == nil {
		t.Fatal("Lookup succeeded during an outage")
	}
	if n := strings.Count(logs.String(), "admin group lookup failed"); n != 2 {
		t.Errorf("a second outage was logged %d times in all, want 2:\n%s", n, logs)
	}
	wantMembers(t, g, []string{uCarol}, nil)
}

// A group deleted (or disabled) in Slack grants nothing any more: keeping
// its last members would ignore a revocation.
func TestAdminGroupGoneRevokes(t *testing.T) {
	t.Parallel()
	g, f, logs := newAdminGroup(t, time.Hour)
	ctx := testContext(t)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.Fail(methodGroup, 2, "no_such_subteam")
	for range 2 {
		if err := g.Lookup(ctx); err == nil || !strings.Contains(err.Error(), "no_such_subteam") {
			t.Fatalf("Lookup of a deleted group: %v, want no_such_subteam", err)
		}
		wantMembers(t, g, nil, []string{uAlice, uBob})
	}
	if n := strings.Count(logs.String(), "admin group not found"); n != 1 {
		t.Errorf("the missing group was logged %d times, want once:\n%s", n, logs)
	}
	if err := g.Lookup(ctx); err != nil { // back
		t.Fatal(err)
	}
	wantMembers(t, g, []string{uAlice, uBob}, nil)
}

func TestAdminGroupStartRefusesAWrongGroup(t *testing.T) {
	t.Parallel()
	g, f, _ := newAdminGroup(t, 20*time.Millisecond)
	g.Group = "S0NOSUCHGR"
	err := g.Start(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "no_such_subteam") || !strings.Contains(err.Error(), "S0NOSUCHGR") {
		t.Fatalf("Start with a wrong group id: %v, want an error naming the group and no_such_subteam", err)
	}
	time.Sleep(60 * time.Millisecond)
	if n := len(f.Calls(methodGroup)); n != 1 {
		t.Errorf("%d lookups after a refused Start, want only the first", n)
	}

	g2, f2, _ := newAdminGroup(t, time.Hour)
	f2.Fail(methodGroup, 1, "missing_scope")
	if err := g2.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "missing_scope") {
		t.Fatalf("Start without usergroups:read: %v, want missing_scope", err)
	}
}

// An outage at start-up does not stop the bot: Start returns, nobody is a
// group admin yet, and the background lookups retry sooner than a full
// period.
func TestAdminGroupStartsDuringAnOutage(t *testing.T) {
	t.Parallel()
	g, f, _ := newAdminGroup(t, 20*time.Millisecond)
	f.Fail(methodGroup, 2, "service_unavailable")
	if err := g.Start(testContext(t)); err != nil {
		t.Fatalf("Start during an outage: %v, want nil", err)
	}
	wantMembers(t, g, nil, []string{uAlice})
	eventually(t, "a later lookup succeeds", func() bool { return g.IsMember(uAlice) })
	if n := len(f.Calls(methodGroup)); n < 3 {
		t.Errorf("%d lookups, want at least 3 (two failed, one worked)", n)
	}
}

func TestAdminGroupStartErrors(t *testing.T) {
	t.Parallel()
	if err := (&commands.AdminGroup{}).Start(t.Context()); err == nil {
		t.Error("Start without a group id or client: nil error")
	}
	g, _, _ := newAdminGroup(t, time.Hour)
	if err := g.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(testContext(t)); err == nil {
		t.Error("a second Start: nil error")
	}
	var nilGroup *commands.AdminGroup
	if nilGroup.IsMember(uAlice) {
		t.Error("a nil AdminGroup has members")
	}
	(&commands.AdminGroup{}).Stop() // Stop before Start is fine
}

// A lookup that keeps failing does not keep the last members forever:
// 15 minutes (DefaultAdminGroupMaxStale) after the last lookup that
// worked, nobody is an admin through the group, whether or not a lookup
// ran since; VERDICTBOT_ADMINS still are. The expiry is logged once and
// Expired says so (the metric); a lookup that works restores the group.
func TestAdminGroupMembersExpireWhileLookupsFail(t *testing.T) {
	t.Parallel()
	g, f, logs := newAdminGroup(t, time.Hour)
	clock := testutil.NewClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	g.Now = clock.Now
	ctx := testContext(t)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	access := &commands.Access{Admins: []string{uCarol}, IsGroupAdmin: g.IsMember}
	f.Fail(methodGroup, 0, "internal_error") // until ClearFaults

	clock.Advance(10 * time.Minute)
	if err := g.Lookup(ctx); err == nil {
		t.Fatal("Lookup succeeded during the outage")
	}
	wantMembers(t, g, []string{uAlice, uBob}, nil) // within 15 min: kept
	if g.Expired() {
		t.Error("expired after 10 minutes")
	}

	// 15 minutes after the last good lookup, with no lookup since: gone.
	clock.Advance(5*time.Minute + time.Second)
	wantMembers(t, g, nil, []string{uAlice, uBob})
	if !g.Expired() || access.IsAdmin(uAlice) || !access.IsAdmin(uCarol) {
		t.Errorf("expired %v; alice admin %v (want false), carol (VERDICTBOT_ADMINS) admin %v (want true)",
			g.Expired(), access.IsAdmin(uAlice), access.IsAdmin(uCarol))
	}
	if access.CanReport(uBob, "restore") {
		t.Error("an expired group member may still restore")
	}
	for range 3 {
		if err := g.Lookup(ctx); err == nil {
			t.Fatal("Lookup succeeded during the outage")
		}
	}
	if n := strings.Count(logs.String(), "admin group members expired"); n != 1 {
		t.Errorf("the expiry was logged %d times, want once:\n%s", n, logs)
	}

	f.ClearFaults()
	if err := g.Lookup(ctx); err != nil {
		t.Fatal(err)
	}
	wantMembers(t, g, []string{uAlice, uBob}, nil)
	if g.Expired() {
		t.Error("still expired after a lookup that worked")
	}
	// The 15 minutes count from the newest good lookup.
	clock.Advance(14 * time.Minute)
	wantMembers(t, g, []string{uAlice}, nil)

	var nilGroup *commands.AdminGroup
	if nilGroup.Expired() {
		t.Error("a nil AdminGroup is expired")
	}
}
