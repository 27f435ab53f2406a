package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
)

// GroupMembers lists the members of a Slack user group:
// usergroups.users.list (scope usergroups:read; Tier 2, 20+ calls a
// minute, Slack's Web API rate tiers). *slack.Client implements it.
type GroupMembers interface {
	GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error)
}

var _ GroupMembers = (*slack.Client)(nil)

// DefaultAdminGroupRefresh is how often AdminGroup looks the members up
// again: a change in Slack takes effect within this time.
const DefaultAdminGroupRefresh = 5 * time.Minute

// DefaultAdminGroupMaxStale is how long the members of the last successful
// lookup are trusted while lookups fail (three refresh periods): past it,
// nobody is an admin through the group until a lookup succeeds, so someone
// removed from the group during a Slack or network outage does not keep
// the rights for as long as the outage lasts. VERDICTBOT_ADMINS still are.
const DefaultAdminGroupMaxStale = 15 * time.Minute

const (
	// defaultGroupLookupTimeout bounds one usergroups.users.list call.
	defaultGroupLookupTimeout = 30 * time.Second
	// groupRetryAfterFailure is the wait before the next lookup after a
	// failed one (when shorter than the refresh period), so an outage at
	// start-up does not leave the group's admins out for a whole period.
	groupRetryAfterFailure = 30 * time.Second
)

// AdminGroup keeps the members of a Slack user group (VERDICTBOT_ADMIN_GROUP,
// an id "S…") in memory, for Access.IsGroupAdmin:
//
//	group := &commands.AdminGroup{Group: id, API: slackClient, Log: log}
//	if err := group.Start(ctx); err != nil { … } // first lookup
//	defer group.Stop()
//	access.IsGroupAdmin = group.IsMember
//
// IsMember reads the cached set only, so a click never waits on Slack. The
// set is looked up at Start and then every Refresh in a goroutine the
// AdminGroup owns. When a lookup fails the last known set is kept (the
// failure is logged once, and its end too) for MaxStale after the last
// successful lookup, then it expires: nobody is an admin through the group
// until a lookup succeeds (logged once; Expired says so, for a metric).
// When Slack says the group does not exist any more (no_such_subteam:
// deleted or disabled), nobody is an admin through the group at once,
// until it is back, so removing the group revokes the rights it gave.
type AdminGroup struct {
	// Group is the user group id (S…).
	Group string
	// API looks the members up.
	API GroupMembers
	// Refresh is the time between two lookups (default
	// DefaultAdminGroupRefresh).
	Refresh time.Duration
	// Timeout bounds one lookup (default 30s).
	Timeout time.Duration
	// MaxStale is how long the last members are kept while lookups fail
	// (default DefaultAdminGroupMaxStale).
	MaxStale time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
	// Teams, if set, returns the workspaces of an org-wide install
	// (Enterprise Grid): usergroups.users.list needs a team_id with an
	// org-level token, and the group lives in one workspace (or is an
	// org-wide group, listed in each). The workspace that knew the group
	// last is asked first; the group is gone when none knows it.
	Teams func() []string

	members atomic.Pointer[map[string]struct{}] // nil until a lookup succeeds
	// loadedAt is when members was last looked up successfully (unix ns).
	loadedAt atomic.Int64

	lookupMu sync.Mutex // one lookup at a time; guards failing, gone and team
	team     string     // the workspace that answered last (org-wide install)
	failing  bool       // the last lookup failed (and that was logged)
	gone     bool       // the last lookup said no_such_subteam (logged)
	expired  bool       // the members expired during this failure (logged)

	runMu   sync.Mutex // guards started, stop, done
	started bool
	stop    context.CancelFunc
	done    chan struct{}
}

// IsMember reports whether user is in the group, as of the last successful
// lookup. It never calls Slack. It is false for everyone before the first
// successful lookup, once that lookup is older than MaxStale (lookups have
// failed since), and on a nil AdminGroup.
func (g *AdminGroup) IsMember(user string) bool {
	if g == nil || user == "" {
		return false
	}
	set := g.members.Load()
	if set == nil || g.stale() {
		return false
	}
	_, ok := (*set)[user]
	return ok
}

// Expired reports whether the members are not trusted any more: lookups
// have failed for longer than MaxStale since the last successful one (not
// before the first). False on a nil AdminGroup.
func (g *AdminGroup) Expired() bool {
	return g != nil && g.members.Load() != nil && g.stale()
}

// stale reports whether the last successful lookup is older than MaxStale.
func (g *AdminGroup) stale() bool {
	return g.now().Sub(time.Unix(0, g.loadedAt.Load())) > g.maxStale()
}

func (g *AdminGroup) maxStale() time.Duration {
	if g.MaxStale > 0 {
		return g.MaxStale
	}
	return DefaultAdminGroupMaxStale
}

func (g *AdminGroup) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Start looks the members up once, then keeps refreshing them in the
// background until ctx ends or Stop is called.
//
// A lookup Slack refuses for good (a wrong group id: no_such_subteam; a
// token without usergroups:read: missing_scope; a revoked token) is
// returned, and nothing runs: a wrong setting should stop start-up. Any
// other failure (network, HTTP 5xx, rate limit, Slack's internal errors) is
// logged, Start returns nil, and the background lookups keep trying; until
// one succeeds IsMember is false for everyone.
func (g *AdminGroup) Start(ctx context.Context) error {
	if g.Group == "" || g.API == nil {
		return errors.New("admin group: no group id or no Slack client")
	}
	g.runMu.Lock()
	defer g.runMu.Unlock()
	if g.started {
		return fmt.Errorf("admin group %s: already started", g.Group)
	}
	err := g.Lookup(ctx)
	if err != nil && refusedForGood(err) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	ctx, g.stop = context.WithCancel(ctx)
	g.done = make(chan struct{})
	g.started = true
	go g.loop(ctx, g.delayAfter(err))
	return nil
}

// Stop ends the background lookups and waits for the one in progress, if
// any. It is safe to call before Start and more than once. The set stays
// as it was.
func (g *AdminGroup) Stop() {
	g.runMu.Lock()
	stop, done := g.stop, g.done
	g.runMu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

func (g *AdminGroup) loop(ctx context.Context, next time.Duration) {
	defer close(g.done)
	t := time.NewTimer(next)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(g.delayAfter(g.Lookup(ctx)))
	}
}

// list asks usergroups.users.list for the members: once without team_id
// (a workspace install), or workspace by workspace on an org-wide install
// until one knows the group. Called with lookupMu held.
func (g *AdminGroup) list(ctx context.Context) ([]string, error) {
	var teams []string
	if g.Teams != nil {
		teams = g.Teams()
	}
	if len(teams) == 0 {
		return g.API.GetUserGroupMembersContext(ctx, g.Group)
	}
	if i := slices.Index(teams, g.team); i > 0 {
		teams = append([]string{g.team}, slices.Delete(slices.Clone(teams), i, i+1)...)
	}
	var err error
	for _, team := range teams {
		var users []string
		users, err = g.API.GetUserGroupMembersContext(ctx, g.Group, slack.GetUserGroupMembersOptionTeamID(team))
		if err == nil {
			g.team = team
			return users, nil
		}
		if !groupGone(err) && !strings.Contains(err.Error(), "team_access_not_granted") {
			return nil, err
		}
	}
	return nil, err
}

// Lookup asks Slack for the members now and updates the set: replaced on
// success, emptied when the group is gone (no_such_subteam), kept on any
// other failure. It returns the lookup's error. Start calls it, then the
// background loop; a caller may too (to apply a change at once).
func (g *AdminGroup) Lookup(ctx context.Context) error {
	g.lookupMu.Lock()
	defer g.lookupMu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, g.timeout())
	users, err := g.list(lctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: not a failure of the group
		}
		err = fmt.Errorf("admin group %s: usergroups.users.list: %w", g.Group, err)
		if groupGone(err) {
			prev := g.members.Swap(&map[string]struct{}{})
			if !g.gone {
				g.logger().Error("admin group not found in Slack (deleted or disabled?): its members are admins no more",
					"group", g.Group, "members_before", setLen(prev), "error", err)
			}
			g.gone, g.failing = true, false
			return err
		}
		if !g.failing {
			g.logger().Warn("admin group lookup failed; keeping the last known members until a lookup succeeds, for "+g.maxStale().String()+" at most",
				"group", g.Group, "members", setLen(g.members.Load()), "error", err)
		}
		g.failing = true
		if g.Expired() && !g.expired {
			g.logger().Error("admin group members expired: lookups have failed since "+time.Unix(0, g.loadedAt.Load()).UTC().Format(time.RFC3339)+
				"; nobody is an admin through the group until one succeeds (VERDICTBOT_ADMINS still are)",
				"group", g.Group, "members_before", setLen(g.members.Load()), "max_stale", g.maxStale().String(), "error", err)
			g.expired = true
		}
		return err
	}
	set := make(map[string]struct{}, len(users))
	for _, u := range users {
		set[u] = struct{}{}
	}
	g.loadedAt.Store(g.now().UnixNano())
	prev := g.members.Swap(&set)
	if g.failing || g.gone {
		g.logger().Info("admin group lookup works again", "group", g.Group, "members", len(set))
	}
	g.failing, g.gone, g.expired = false, false, false
	switch added, removed := diffSets(prev, set); {
	case prev == nil:
		g.logger().Info("admin group loaded", "group", g.Group, "members", len(set))
	case len(added) > 0 || len(removed) > 0:
		g.logger().Info("admin group members changed", "group", g.Group, "added", added, "removed", removed)
	}
	return nil
}

// delayAfter is the wait before the next lookup, given how the last went.
func (g *AdminGroup) delayAfter(err error) time.Duration {
	every := g.Refresh
	if every <= 0 {
		every = DefaultAdminGroupRefresh
	}
	if err == nil || groupGone(err) {
		return every
	}
	wait := min(every, groupRetryAfterFailure)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		wait = max(wait, rl.RetryAfter)
	}
	return wait
}

func (g *AdminGroup) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return defaultGroupLookupTimeout
}

func (g *AdminGroup) logger() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

// groupGone reports whether Slack said the group does not exist (or is
// disabled: usergroups.users.list answers no_such_subteam for a disabled
// group unless include_disabled is set).
func groupGone(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && se.Err == "no_such_subteam"
}

// transientSlackErrors are the error codes with which Slack says "not now"
// rather than "no" (docs.slack.dev, the common errors of every method).
var transientSlackErrors = []string{"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}

// refusedForGood reports whether Slack answered the lookup with an error
// that retrying will not fix (a wrong id, a missing scope, a bad token).
func refusedForGood(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && !slices.Contains(transientSlackErrors, se.Err)
}

func setLen(set *map[string]struct{}) int {
	if set == nil {
		return 0
	}
	return len(*set)
}

// diffSets returns the members of cur not in prev and of prev not in cur,
// sorted.
func diffSets(prev *map[string]struct{}, cur map[string]struct{}) (added, removed []string) {
	var old map[string]struct{}
	if prev != nil {
		old = *prev
	}
	for u := range cur {
		if _, ok := old[u]; !ok {
			added = append(added, u)
		}
	}
	for u := range old {
		if _, ok := cur[u]; !ok {
			removed = append(removed, u)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}
