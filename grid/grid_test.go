package grid_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/grid"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// acme is an organisation of three workspaces, two granted to the app.
var acme = slackfake.Org{ID: "E0ACME", Name: "Acme Org", Workspaces: []slackfake.Workspace{
	{ID: "T0SALES", Name: "Acme Sales"}, {ID: "T0ENG", Name: "Acme Eng"}, {ID: "T0HR", Name: "Acme HR"}},
	Granted: []string{"T0SALES", "T0ENG"}}

// memStore is a grid.Store in memory, shared by the Directories of a
// test as the state layer is by replicas.
type memStore struct {
	mu    sync.Mutex
	teams map[string]grid.Team
	fail  error
}

func (m *memStore) LoadTeams() ([]grid.Team, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []grid.Team
	for _, t := range m.teams {
		out = append(out, t)
	}
	return out, m.fail
}

func (m *memStore) SaveTeams(ts []grid.Team) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.teams == nil {
		m.teams = map[string]grid.Team{}
	}
	for _, t := range ts {
		m.teams[t.ID] = t
	}
	return nil
}

// directory starts a Directory against fake as the bot does: auth.test,
// then Load.
func directory(t *testing.T, fake *slackfake.Server, st grid.Store) *grid.Directory {
	t.Helper()
	api := slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL()))
	at, err := api.AuthTestContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := grid.New(at, api, st, nil)
	if err := d.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

func ids(ts []grid.Team) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestOrgInstallKnowsItsGrantedWorkspaces: an org-level token is told
// apart by auth.test; the granted workspaces come from auth.teams.list
// (read page by page), with their names; envelopes of others are not
// admitted; methods acting on one workspace get its team_id.
func TestOrgInstallKnowsItsGrantedWorkspaces(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t, slackfake.WithOrg(acme))
	d := directory(t, fake, nil)
	org := d.Org()
	if !org.OrgInstall || org.EnterpriseID != "E0ACME" || org.EnterpriseName != "Acme Org" {
		t.Fatalf("Org() = %+v, want the org-wide install of E0ACME", org)
	}
	if got := ids(d.Teams()); !slices.Equal(got, []string{"T0ENG", "T0SALES"}) {
		t.Fatalf("Teams() = %v, want the two granted", got)
	}
	if tm, ok := d.Team("T0SALES"); !ok || tm.Name != "Acme Sales" || !tm.Granted {
		t.Errorf("Team(T0SALES) = %+v, %v", tm, ok)
	}
	for team, want := range map[string]bool{"T0SALES": true, "T0ENG": true, "T0HR": false, "": false, "T0OTHERORG": false} {
		if got := d.Granted(team); got != want {
			t.Errorf("Granted(%q) = %v, want %v", team, got, want)
		}
	}
	if p := d.TeamParam("T0ENG"); p != "T0ENG" {
		t.Errorf("TeamParam = %q, want the team under an org token", p)
	}
	if g, r := d.Counts(); g != 2 || r != 0 {
		t.Errorf("Counts = %d granted, %d revoked", g, r)
	}
	// Read page by page: a fake with more workspaces than a page.
	var many []slackfake.Workspace
	for i := range 450 {
		many = append(many, slackfake.Workspace{ID: fmt.Sprintf("T%04d", i)})
	}
	big := slackfaketest.Start(t, slackfake.WithOrg(slackfake.Org{ID: "E0BIG", Workspaces: many}))
	if n := len(directory(t, big, nil).Teams()); n != 450 {
		t.Errorf("%d workspaces read from auth.teams.list, want 450 (pages)", n)
	}
	if calls := big.Calls("auth.teams.list"); len(calls) < 3 {
		t.Errorf("auth.teams.list called %d times for 450 workspaces at 200 a page", len(calls))
	}
}

// TestWorkspaceInstallAnswersAsBefore: a workspace token is not an
// org-wide install: every team is admitted, the one workspace is the
// only team, and no team_id is passed.
func TestWorkspaceInstallAnswersAsBefore(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t)
	d := directory(t, fake, &memStore{})
	if d.OrgInstall() || d.Org().EnterpriseID != "" {
		t.Fatalf("Org() = %+v, want a workspace install", d.Org())
	}
	if !d.Granted(fake.TeamID()) || !d.Granted("") || !d.Granted("T0ANY") {
		t.Error("a workspace install must admit every envelope")
	}
	if got := ids(d.Teams()); !slices.Equal(got, []string{fake.TeamID()}) {
		t.Errorf("Teams() = %v, want the workspace", got)
	}
	if p := d.TeamParam(fake.TeamID()); p != "" {
		t.Errorf("TeamParam = %q, want none under a workspace token", p)
	}
	if n := len(fake.Calls("auth.teams.list")); n != 0 {
		t.Errorf("auth.teams.list called %d times on a workspace install", n)
	}
	if tm := d.TeamOf("C1"); tm != fake.TeamID() {
		t.Errorf("TeamOf = %q", tm)
	}
}

// TestRevocationReachesTheOtherReplicas: one replica receives
// team_access_revoked; the other, sharing the state layer, stops admitting
// the workspace at its next refresh; a grant comes back the same way, with
// the workspace's name from auth.teams.list. A replica starting later
// learns the revocation from auth.teams.list itself.
func TestRevocationReachesTheOtherReplicas(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t, slackfake.WithOrg(acme))
	st := &memStore{}
	a, b := directory(t, fake, st), directory(t, fake, st)
	if _, err := fake.RevokeTeams("T0ENG"); err != nil {
		t.Fatal(err)
	}
	if err := a.Revoke([]string{"T0ENG"}); err != nil {
		t.Fatal(err)
	}
	if a.Granted("T0ENG") {
		t.Fatal("the replica told of the revocation still admits the workspace")
	}
	if !b.Granted("T0ENG") {
		t.Fatal("the other replica knew before refreshing (test broken)")
	}
	if err := b.Refresh(); err != nil {
		t.Fatal(err)
	}
	if b.Granted("T0ENG") {
		t.Fatal("the other replica still admits the revoked workspace after a refresh")
	}
	if g, r := b.Counts(); g != 1 || r != 1 {
		t.Errorf("Counts = %d granted, %d revoked; want 1 and 1", g, r)
	}
	if c := directory(t, fake, &memStore{}); c.Granted("T0ENG") || !c.Granted("T0SALES") {
		t.Error("a replica starting after the revocation admits T0ENG")
	}
	// Granted back, and HR for the first time: named from auth.teams.list.
	if _, err := fake.GrantTeams("T0ENG", "T0HR"); err != nil {
		t.Fatal(err)
	}
	if err := b.Grant(context.Background(), []string{"T0ENG", "T0HR"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*grid.Directory{a, b} {
		if !d.Granted("T0ENG") || !d.Granted("T0HR") {
			t.Fatalf("after the grant: %v", ids(d.Teams()))
		}
		if tm, _ := d.Team("T0HR"); tm.Name != "Acme HR" {
			t.Errorf("T0HR named %q, want its name from auth.teams.list", tm.Name)
		}
	}
	// A store that fails: the change holds in this replica, the error says so.
	st.mu.Lock()
	st.fail = context.DeadlineExceeded
	st.mu.Unlock()
	if err := a.Revoke([]string{"T0HR"}); err == nil || a.Granted("T0HR") {
		t.Errorf("Revoke with a failing store: %v, granted %v; want an error and the revocation applied here", err, a.Granted("T0HR"))
	}
}

// TestChannelsRememberTheirWorkspace: findings made away from an
// envelope (a recheck) find the workspace the channel was last reached
// through.
func TestChannelsRememberTheirWorkspace(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t, slackfake.WithOrg(acme))
	d := directory(t, fake, nil)
	if tm := d.TeamOf("C0SALES"); tm != "" {
		t.Fatalf("TeamOf before any envelope = %q", tm)
	}
	d.SeenIn("C0SALES", "T0SALES")
	d.SeenIn("C0SHARED", "T0ENG")
	if d.TeamOf("C0SALES") != "T0SALES" || d.TeamOf("C0SHARED") != "T0ENG" {
		t.Errorf("TeamOf = %q, %q", d.TeamOf("C0SALES"), d.TeamOf("C0SHARED"))
	}
}
