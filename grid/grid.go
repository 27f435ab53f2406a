// Package grid knows where the app is installed: one workspace, or an
// Enterprise Grid organisation where an Org Admin installed it org-wide and
// granted it some of the organisation's workspaces.
//
// On an org-wide install the bot token is an org-level token: auth.test
// answers with the enterprise id as team_id, auth.teams.list lists the
// workspaces granted, and team_access_granted / team_access_revoked events
// change that set. Every envelope names the workspace it was delivered for
// in authorizations[0] (the outer team_id is the poster's, which in a Slack
// Connect channel is another organisation's), and the Web API methods that
// act on one workspace (users.conversations, usergroups.*) need its
// team_id. A Directory holds what the bot knows of this; on a
// single-workspace install it knows the one team and every question has
// today's answer.
//
// The granted set is shared by the replicas through the state layer: the
// replica that receives a team_access_revoked records it, and the others
// read it on their next refresh (Refresh, every RefreshEvery).
package grid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"
)

// Team is one workspace the app knows.
type Team struct {
	ID, Name, Domain string
	// Granted is false once the app's access to it was revoked.
	Granted bool
	// Changed is when Granted last changed.
	Changed time.Time
}

// Org names where the app is installed: EnterpriseID is "" for a
// workspace (not Grid) install; on a workspace install inside a Grid org
// it is set and OrgInstall is false.
type Org struct {
	EnterpriseID, EnterpriseName string
	OrgInstall                   bool
}

// API is the part of the Web API the Directory calls.
type API interface {
	ListTeamsContext(ctx context.Context, params slack.ListTeamsParameters) ([]slack.Team, string, error)
}

// Store keeps the teams for the replicas (nil: this process only).
type Store interface {
	LoadTeams() ([]Team, error)
	SaveTeams(ts []Team) error
}

// RefreshEvery is how often a replica reads the teams the others
// recorded (Refresh).
const RefreshEvery = 30 * time.Second

// Directory is what the bot knows of its install. Its methods are safe for
// concurrent use; the zero value is not: use New.
type Directory struct {
	api   API
	store Store
	log   *slog.Logger
	now   func() time.Time

	mu    sync.RWMutex
	org   Org
	home  Team // the single workspace (workspace install)
	teams map[string]Team
	// channels remembers the workspace each channel was last reached
	// through (for findings made away from an envelope: rechecks).
	channels *gocache.Cache
}

// New returns the Directory of the install auth.test described.
func New(at *slack.AuthTestResponse, api API, st Store, log *slog.Logger) *Directory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Directory{api: api, store: st, log: log, now: time.Now, teams: map[string]Team{},
		channels: gocache.New(7*24*time.Hour, time.Hour)}
	d.org.EnterpriseID = at.EnterpriseID
	// An org-level token's auth.test names the organisation itself as
	// its team: team_id is the enterprise id (Slack, "Enterprise Grid
	// and your app": org-wide apps).
	d.org.OrgInstall = at.EnterpriseID != "" && at.TeamID == at.EnterpriseID
	if d.org.OrgInstall {
		d.org.EnterpriseName = at.Team
	} else {
		d.home = Team{ID: at.TeamID, Name: at.Team, Domain: domainOf(at.URL), Granted: true}
	}
	return d
}

// domainOf returns name of https://name.slack.com/.
func domainOf(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	name, _, _ := strings.Cut(u, ".")
	return name
}

// Org returns the install's organisation.
func (d *Directory) Org() Org {
	if d == nil {
		return Org{}
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.org
}

// OrgInstall reports whether the app is installed org-wide.
func (d *Directory) OrgInstall() bool { return d.Org().OrgInstall }

// Load learns the granted workspaces of an org-wide install from
// auth.teams.list (all pages) and records them; teams recorded before
// but not listed now are marked revoked. A workspace install has nothing
// to load.
func (d *Directory) Load(ctx context.Context) error {
	if !d.OrgInstall() {
		return nil
	}
	listed, err := d.listTeams(ctx)
	if err != nil {
		return err
	}
	if d.store != nil {
		if err := d.Refresh(); err != nil {
			d.log.Warn("the workspaces other replicas recorded could not be read", "error", err)
		}
	}
	now := d.now()
	d.mu.Lock()
	seen := map[string]bool{}
	var changed []Team
	for _, t := range listed {
		seen[t.ID] = true
		old, had := d.teams[t.ID]
		nt := Team{ID: t.ID, Name: t.Name, Domain: t.Domain, Granted: true, Changed: old.Changed}
		if !had || !old.Granted {
			nt.Changed = now
		}
		if !had || old != nt {
			changed = append(changed, nt)
		}
		d.teams[t.ID] = nt
	}
	for id, t := range d.teams {
		if !seen[id] && t.Granted {
			t.Granted, t.Changed = false, now
			d.teams[id] = t
			changed = append(changed, t)
		}
	}
	n := len(listed)
	d.mu.Unlock()
	d.log.Info("installed org-wide on Enterprise Grid", "enterprise_id", d.Org().EnterpriseID, "workspaces_granted", n)
	if n == 0 {
		d.log.Warn("no workspace is granted to the app yet: an Org Admin must add it to workspaces (see docs/grid.md, \"Installing on Enterprise Grid\")")
	}
	return d.save(changed)
}

// listTeams reads every page of auth.teams.list: the workspaces the
// org-wide install is granted.
func (d *Directory) listTeams(ctx context.Context) ([]slack.Team, error) {
	var listed []slack.Team
	cursor := ""
	for page := 0; ; page++ {
		if page == 1000 {
			return nil, errors.New("auth.teams.list: more than 1,000 pages")
		}
		ts, next, err := d.api.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 200, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("auth.teams.list: %w", err)
		}
		listed = append(listed, ts...)
		if next == "" {
			return listed, nil
		}
		cursor = next
	}
}

// Refresh reads the teams the replicas recorded (a revocation another
// replica received). A workspace install has none.
func (d *Directory) Refresh() error {
	if d.store == nil || !d.OrgInstall() {
		return nil
	}
	ts, err := d.store.LoadTeams()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range ts {
		if old, ok := d.teams[t.ID]; ok && old.Changed.After(t.Changed) {
			continue // this replica learnt something newer
		}
		if old, ok := d.teams[t.ID]; ok && old.Granted != t.Granted {
			d.log.Info("workspace access changed (recorded by another replica)", "team_id", t.ID, "granted", t.Granted)
		}
		d.teams[t.ID] = t
	}
	return nil
}

// RunRefresh calls Refresh every RefreshEvery until ctx ends.
func (d *Directory) RunRefresh(ctx context.Context) {
	if d.store == nil || !d.OrgInstall() {
		return
	}
	t := time.NewTicker(RefreshEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.Refresh(); err != nil {
				d.log.Warn("reading the workspaces failed", "error", err)
			}
		}
	}
}

// Grant records that the app was granted teams (team_access_granted);
// their names come from auth.teams.list.
func (d *Directory) Grant(ctx context.Context, ids []string) error {
	if !d.OrgInstall() {
		return nil
	}
	names := map[string]slack.Team{}
	listed, err := d.listTeams(ctx)
	if err != nil {
		d.log.Warn("auth.teams.list failed: the workspaces granted are known by id only for now", "error", err)
	}
	for _, t := range listed {
		names[t.ID] = t
	}
	now := d.now()
	d.mu.Lock()
	var changed []Team
	for _, id := range ids {
		t := d.teams[id]
		t.ID, t.Granted, t.Changed = id, true, now
		if n, ok := names[id]; ok {
			t.Name, t.Domain = n.Name, n.Domain
		}
		d.teams[id] = t
		changed = append(changed, t)
	}
	d.mu.Unlock()
	d.log.Info("workspaces granted to the app", "team_ids", strings.Join(ids, ","))
	return d.save(changed)
}

// Revoke records that the app's access to teams was revoked
// (team_access_revoked): their envelopes are dropped from now on.
func (d *Directory) Revoke(ids []string) error {
	if !d.OrgInstall() {
		return nil
	}
	now := d.now()
	d.mu.Lock()
	var changed []Team
	for _, id := range ids {
		t := d.teams[id]
		t.ID, t.Granted, t.Changed = id, false, now
		d.teams[id] = t
		changed = append(changed, t)
	}
	d.mu.Unlock()
	d.log.Warn("workspaces revoked from the app: their messages are no longer checked, their pending work finishes or fails", "team_ids", strings.Join(ids, ","))
	return d.save(changed)
}

func (d *Directory) save(ts []Team) error {
	if d.store == nil || len(ts) == 0 {
		return nil
	}
	if err := d.store.SaveTeams(ts); err != nil {
		return fmt.Errorf("recording the workspaces: %w", err)
	}
	return nil
}

// Granted reports whether envelopes of team are to be handled: on a
// workspace install always; on an org-wide install when team is granted
// ("" is not).
func (d *Directory) Granted(team string) bool {
	if !d.OrgInstall() {
		return true
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.teams[team].Granted
}

// Teams returns the granted workspaces, by id (the one workspace on a
// workspace install).
func (d *Directory) Teams() []Team {
	if d == nil {
		return nil
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.org.OrgInstall {
		if d.home.ID == "" {
			return nil
		}
		return []Team{d.home}
	}
	var out []Team
	for _, t := range d.teams {
		if t.Granted {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Team) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Counts returns how many workspaces are granted and revoked (1 and 0 on
// a workspace install).
func (d *Directory) Counts() (granted, revoked int) {
	if d == nil {
		return 0, 0
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.org.OrgInstall {
		return 1, 0
	}
	for _, t := range d.teams {
		if t.Granted {
			granted++
		} else {
			revoked++
		}
	}
	return granted, revoked
}

// Team returns what is known of team id (granted or not).
func (d *Directory) Team(id string) (Team, bool) {
	if d == nil {
		return Team{}, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.org.OrgInstall {
		return d.home, id == "" || id == d.home.ID
	}
	t, ok := d.teams[id]
	return t, ok
}

// TeamParam is the team_id to pass to a method that acts on one
// workspace: team under an org-level token, "" under a workspace token
// (where Slack ignores it anyway).
func (d *Directory) TeamParam(team string) string {
	if !d.OrgInstall() {
		return ""
	}
	return team
}

// SeenIn records that channel was reached through team.
func (d *Directory) SeenIn(channel, team string) {
	if d == nil || channel == "" || team == "" || !d.OrgInstall() {
		return
	}
	d.channels.SetDefault(channel, team)
}

// TeamOf returns the workspace channel was last reached through ("" when
// unknown); on a workspace install, the workspace.
func (d *Directory) TeamOf(channel string) string {
	if d == nil {
		return ""
	}
	if !d.OrgInstall() {
		d.mu.RLock()
		defer d.mu.RUnlock()
		return d.home.ID
	}
	if t, ok := d.channels.Get(channel); ok {
		return t.(string)
	}
	return ""
}
