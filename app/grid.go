package app

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/grid"
	"github.com/verdictbot/verdictbot/store"
)

// onAuth learns where the app is installed from auth.test (bot.Options.
// OnAuth, before the Socket Mode connection opens): one workspace, or an
// Enterprise Grid organisation whose granted workspaces auth.teams.list
// gives. Then the admin group's first lookup, which on an org-wide install
// needs the workspaces.
func (a *App) onAuth(ctx context.Context, at *slack.AuthTestResponse) error {
	d := grid.New(at, a.api, workspaceStore{db: a.db, enterprise: at.EnterpriseID}, a.log.With("component", "grid"))
	if d.OrgInstall() {
		var err error
		for attempt := range 3 {
			if err = d.Load(ctx); err == nil || ctx.Err() != nil {
				break
			}
			a.log.Warn("auth.teams.list failed; trying again", "attempt", attempt+1, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		if err != nil {
			return fmt.Errorf("org-wide install: the workspaces granted could not be listed: %w", err)
		}
	}
	a.grid.Store(d)
	// The workspaces' email domains are protected from lookalikes; the
	// bot does not wait for them.
	go a.learnDomains(ctx, d)
	if a.startAdminGroup != nil {
		return a.startAdminGroup()
	}
	return nil
}

// runGridRefresh reads, every grid.RefreshEvery, the workspace changes
// other replicas recorded.
func (a *App) runGridRefresh(ctx context.Context) {
	for a.grid.Load() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	a.grid.Load().RunRefresh(ctx)
}

// teams returns the granted workspaces of an org-wide install, for the
// methods that need a team_id with an org-level token (nil on a workspace
// install).
func (a *App) teams() []string {
	d := a.grid.Load()
	if !d.OrgInstall() {
		return nil
	}
	var ids []string
	for _, t := range d.Teams() {
		ids = append(ids, t.ID)
	}
	return ids
}

// admit tells whether an envelope delivered for team is handled (bot.
// Options.Admit): on an org-wide install, when the workspace is granted.
func (a *App) admit(team string) bool {
	d := a.grid.Load()
	return d == nil || d.Granted(team)
}

// ownTeam reports whether a message author's team is this install's: the
// workspace, or one of the organisation's workspaces (quarantine tells
// another organisation's messages apart in Slack Connect channels).
func (a *App) ownTeam(team string) bool {
	d := a.grid.Load()
	if d == nil {
		return team == a.bot.Identity().TeamID
	}
	if team == d.Org().EnterpriseID && team != "" {
		return true
	}
	_, ok := d.Team(team)
	return ok
}

// teamAccess applies team_access_granted / team_access_revoked.
func (a *App) teamAccess(ctx context.Context, granted bool, teams []string) {
	d := a.grid.Load()
	if d == nil {
		return
	}
	var err error
	if granted {
		err = d.Grant(ctx, teams)
	} else {
		err = d.Revoke(teams)
	}
	if err != nil {
		a.log.Error("workspace access change not recorded for the other replicas", "granted", granted, "error", err)
	}
}

// seenIn records which workspace a channel was reached through, for the
// findings made later (rechecks).
func (a *App) seenIn(channel, team string) {
	a.grid.Load().SeenIn(channel, team)
	a.teamEvents.Event(team)
}

// workspaceCounts returns how many workspaces are granted and revoked
// (verdictbot_workspaces).
func (a *App) workspaceCounts() (granted, revoked int) {
	d := a.grid.Load()
	if d == nil {
		return 0, 0
	}
	return d.Counts()
}

// teamOf names the workspace channel was reached through ("" when
// unknown or on a workspace install, where nothing needs it).
func (a *App) teamOf(channel string) string {
	d := a.grid.Load()
	if !d.OrgInstall() {
		return ""
	}
	return d.TeamOf(channel)
}

// workspace names where a finding was made (events.Emitter.Workspace): by
// its team, else the workspace its channel was last reached through, else
// (after a restart) the one its latest card recorded.
func (a *App) workspace(team, channel string) events.Workspace {
	d := a.grid.Load()
	if d == nil {
		return events.Workspace{}
	}
	if team == "" {
		team = d.TeamOf(channel)
	}
	if team == "" && channel != "" {
		if recs, err := a.db.RecentCards(channel, 1); err == nil && len(recs) > 0 {
			team = recs[0].TeamID
		}
	}
	org := d.Org()
	w := events.Workspace{EnterpriseID: org.EnterpriseID, EnterpriseName: org.EnterpriseName, TeamID: team}
	if t, ok := d.Team(team); ok {
		w.TeamName = t.Name
	}
	return w
}

// workspaceStore is the state layer as grid.Store: the workspaces kept for
// the replicas.
type workspaceStore struct {
	db         store.State
	enterprise string
}

func (w workspaceStore) LoadTeams() ([]grid.Team, error) {
	ws, err := w.db.Workspaces()
	if err != nil {
		return nil, err
	}
	out := make([]grid.Team, 0, len(ws))
	for _, x := range ws {
		out = append(out, grid.Team{ID: x.TeamID, Name: x.Name, Domain: x.Domain, Granted: x.Granted, Changed: x.Changed})
	}
	return out, nil
}

func (w workspaceStore) SaveTeams(ts []grid.Team) error {
	ws := make([]store.Workspace, 0, len(ts))
	for _, t := range ts {
		ws = append(ws, store.Workspace{TeamID: t.ID, EnterpriseID: w.enterprise, Name: t.Name, Domain: t.Domain, Granted: t.Granted, Changed: t.Changed})
	}
	return w.db.PutWorkspaces(ws)
}
