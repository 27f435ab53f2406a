package slackfake_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// The organisation of the Grid tests: three workspaces, a partner
// organisation for Slack Connect, and people with Grid W… ids.
const (
	orgID       = "E0ACME0001"
	wsEng       = "T0ENG00001"
	wsSales     = "T0SALES001"
	wsOps       = "T0OPS00001"
	partnerTeam = "T0PARTNER1"
	partnerOrg  = "E0PARTNER1"

	chanEng     = "C0ENG00001" // workspace Eng
	chanSales   = "C0SALES001" // workspace Sales
	chanOps     = "C0OPS00001" // workspace Ops
	chanShared  = "C0SHARED01" // shared by Eng and Sales
	chanConnect = "C0CONNECT1" // Sales, shared with the partner organisation

	gridAlice = "W0ALICE001" // Sales
	gridBob   = "W0BOB00001" // Eng and Sales
	gridAdmin = "W0ADMIN001" // Eng, org admin
	outsider  = "U0OUTSIDE1" // the partner's
	adminTok  = "xoxp-grid-admin-token"
)

func acmeOrg(granted ...string) slackfake.Org {
	return slackfake.Org{
		ID: orgID, Name: "Acme Corp",
		Workspaces: []slackfake.Workspace{{ID: wsEng, Name: "Acme Eng"}, {ID: wsSales, Name: "Acme Sales"}, {ID: wsOps, Name: "Acme Ops"}},
		Granted:    granted,
	}
}

// startGrid starts a fake of the Acme organisation with the app granted
// the given workspaces (none given: all), its conversations and people.
func startGrid(t *testing.T, granted []string, opts ...slackfake.Option) *slackfake.Server {
	t.Helper()
	f := slackfaketest.Start(t, append([]slackfake.Option{
		slackfake.WithOrg(acmeOrg(granted...)),
		slackfake.WithUserToken(slackfake.UserToken{Token: adminTok, User: gridAdmin, Scopes: []string{"chat:write", "files:write"}}),
	}, opts...)...)
	f.AddUser(slackfake.User{ID: gridAlice, Name: "alice", Teams: []string{wsSales}})
	f.AddUser(slackfake.User{ID: gridBob, Name: "bob", Teams: []string{wsEng, wsSales}})
	f.AddUser(slackfake.User{ID: gridAdmin, Name: "admin", Teams: []string{wsEng}, IsAdmin: true})
	f.AddUser(slackfake.User{ID: outsider, Name: "olga", HomeTeam: partnerTeam, Enterprise: partnerOrg})
	f.AddChannel(slackfake.Channel{ID: chanEng, Name: "eng", Teams: []string{wsEng}, Members: []string{gridBob, gridAdmin}})
	f.AddChannel(slackfake.Channel{ID: chanSales, Name: "sales", Teams: []string{wsSales}, Members: []string{gridAlice, gridBob}})
	f.AddChannel(slackfake.Channel{ID: chanOps, Name: "ops", Teams: []string{wsOps}, Members: []string{gridBob}})
	f.AddChannel(slackfake.Channel{ID: chanShared, Name: "all-hands", Teams: []string{wsEng, wsSales}, Members: []string{gridAlice, gridBob}})
	f.AddChannel(slackfake.Channel{ID: chanConnect, Name: "partner", Teams: []string{wsSales},
		ExternalTeam: partnerTeam, ExternalEnterprise: partnerOrg, Members: []string{gridAlice, outsider}})
	return f
}

// rawCall posts a Web API call and returns its decoded body.
func rawCall(t *testing.T, f *slackfake.Server, token, method string, v url.Values) map[string]any {
	t.Helper()
	if v == nil {
		v = url.Values{}
	}
	v.Set("token", token)
	resp, err := http.PostForm(f.APIURL()+method, v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

func slackErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestGridAuthTestOrgTokenAndUserToken(t *testing.T) {
	t.Parallel()
	f := startGrid(t, nil)
	ctx := testCtx(t)

	if f.EnterpriseID() != orgID || f.TeamID() != wsEng {
		t.Errorf("EnterpriseID %q TeamID %q", f.EnterpriseID(), f.TeamID())
	}
	org, ok := f.Org()
	if !ok || org.Domain != "acme-corp" || org.Workspaces[1].Domain != "acme-sales" ||
		!slices.Equal(org.Granted, []string{wsEng, wsOps, wsSales}) {
		t.Errorf("Org() = %+v, %v", org, ok)
	}

	at, err := newAPI(f).AuthTestContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at.TeamID != orgID || at.EnterpriseID != orgID || at.Team != "Acme Corp" || at.UserID != f.BotUserID() ||
		at.BotID != f.BotID() || at.URL != "https://acme-corp.enterprise.slack.com/" {
		t.Errorf("auth.test with the org token = %+v", at)
	}
	if body := rawCall(t, f, f.BotToken(), "auth.test", nil); body["is_enterprise_install"] != true {
		t.Errorf("auth.test with the org token: is_enterprise_install = %v", body["is_enterprise_install"])
	}

	admin := slack.New(adminTok, slack.OptionAPIURL(f.APIURL()))
	at, err = admin.AuthTestContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at.TeamID != wsEng || at.EnterpriseID != orgID || at.Team != "Acme Eng" || at.UserID != gridAdmin || at.BotID != "" ||
		at.URL != "https://acme-eng.enterprise.slack.com/" {
		t.Errorf("auth.test with the admin's user token = %+v", at)
	}
	if body := rawCall(t, f, adminTok, "auth.test", nil); body["is_enterprise_install"] != false {
		t.Errorf("auth.test with a user token: is_enterprise_install = %v", body["is_enterprise_install"])
	}

	// Without an Org nothing of this shows.
	plain := slackfaketest.Start(t)
	if body := rawCall(t, plain, plain.BotToken(), "auth.test", nil); body["is_enterprise_install"] != false ||
		body["enterprise_id"] != nil || body["team_id"] != slackfake.DefaultTeamID {
		t.Errorf("auth.test without an Org = %v", body)
	}
	if _, ok := plain.Org(); ok || plain.EnterpriseID() != "" {
		t.Error("a fake without WithOrg reports an Org")
	}
}

func TestWithOrgChecksTheOrg(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]slackfake.Org{
		"no id":            {Workspaces: []slackfake.Workspace{{ID: wsEng}}},
		"no workspace":     {ID: orgID},
		"workspace no id":  {ID: orgID, Workspaces: []slackfake.Workspace{{Name: "x"}}},
		"twice":            {ID: orgID, Workspaces: []slackfake.Workspace{{ID: wsEng}, {ID: wsEng}}},
		"granted unknown":  {ID: orgID, Workspaces: []slackfake.Workspace{{ID: wsEng}}, Granted: []string{wsOps}},
		"granted is other": {ID: orgID, Workspaces: []slackfake.Workspace{{ID: wsEng}}, Granted: []string{partnerTeam}},
	} {
		if s, err := slackfake.New(slackfake.WithOrg(o)); err == nil {
			_ = s.Close()
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
	// A non-nil empty Granted grants nothing.
	f := slackfaketest.Start(t, slackfake.WithOrg(slackfake.Org{ID: orgID, Workspaces: []slackfake.Workspace{{ID: wsEng}}, Granted: []string{}}))
	if got := f.GrantedTeams(); len(got) != 0 {
		t.Errorf("GrantedTeams = %v, want none", got)
	}
}

func TestGridAuthTeamsListPages(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng, wsOps})
	api := newAPI(f)
	ctx := testCtx(t)

	first, next, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].ID != wsEng || first[0].Name != "Acme Eng" || first[0].Icons != nil || next == "" {
		t.Fatalf("first page = %+v, next %q", first, next)
	}
	second, next, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 1, Cursor: next})
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 1 || second[0].ID != wsOps || next != "" {
		t.Fatalf("second page = %+v, next %q", second, next)
	}
	yes := true
	all, next, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{IncludeIcon: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Icons == nil || all[0].Icons.Image132 == "" || next != "" {
		t.Errorf("with include_icon = %+v, next %q", all, next)
	}
	if _, _, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{Cursor: "bogus"}); slackErr(err) != "invalid_cursor" {
		t.Errorf("a bad cursor: %v", err)
	}
	if _, _, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 1001}); slackErr(err) != "invalid_limit" {
		t.Errorf("limit 1001: %v", err)
	}
	if body := rawCall(t, f, f.BotToken(), "auth.teams.list", nil); body["ok"] != true {
		t.Errorf("raw auth.teams.list = %v", body)
	} else if md, _ := body["response_metadata"].(map[string]any); md == nil || md["next_cursor"] != "" {
		t.Errorf("response_metadata = %v", body["response_metadata"])
	}

	// The admin's user token lists its user's workspaces.
	mine, _, err := slack.New(adminTok, slack.OptionAPIURL(f.APIURL())).ListTeamsContext(ctx, slack.ListTeamsParameters{})
	if err != nil || len(mine) != 1 || mine[0].ID != wsEng {
		t.Errorf("auth.teams.list with the user token = %+v, %v", mine, err)
	}

	// A workspace token lists its one workspace.
	plain := slackfaketest.Start(t)
	teams, next, err := newAPI(plain).ListTeamsContext(ctx, slack.ListTeamsParameters{})
	if err != nil || len(teams) != 1 || teams[0].ID != slackfake.DefaultTeamID || teams[0].Name != slackfake.DefaultTeamName || next != "" {
		t.Errorf("auth.teams.list with a workspace token = %+v, %q, %v", teams, next, err)
	}
}

func TestGridMethodsWantATeamID(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng, wsSales})
	f.AddUserGroupInTeam(wsEng, "S0ENGADMIN", "eng-admins", gridAdmin, gridBob)
	f.AddUserGroupInTeam(wsSales, "S0SALESADM", "sales-admins", gridAlice)
	f.AddUserGroup("S0DEFAULT1", "default-group", gridBob) // the default workspace: Eng
	api := newAPI(f)
	ctx := testCtx(t)

	convs := func(team, user string) ([]string, error) {
		chs, _, err := api.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{
			UserID: user, TeamID: team, Types: []string{"public_channel", "private_channel"}})
		var ids []string
		for _, c := range chs {
			ids = append(ids, c.ID)
			if c.ContextTeamID != team {
				t.Errorf("users.conversations in %s: %s has context_team_id %q", team, c.ID, c.ContextTeamID)
			}
		}
		slices.Sort(ids)
		return ids, err
	}
	if _, err := convs("", gridBob); slackErr(err) != "missing_argument" {
		t.Errorf("users.conversations without team_id: %v", err)
	}
	if _, err := convs(wsOps, gridBob); slackErr(err) != "team_access_not_granted" {
		t.Errorf("users.conversations in a workspace not granted: %v", err)
	}
	if _, err := convs("T0NOSUCH01", gridBob); slackErr(err) != "team_access_not_granted" {
		t.Errorf("users.conversations in an unknown workspace: %v", err)
	}
	if got, err := convs(wsEng, gridBob); err != nil || !slices.Equal(got, []string{chanEng, chanShared}) {
		t.Errorf("bob's conversations in Eng = %v, %v", got, err)
	}
	if got, err := convs(wsSales, gridBob); err != nil || !slices.Equal(got, []string{chanSales, chanShared}) {
		t.Errorf("bob's conversations in Sales = %v, %v", got, err)
	}
	if got, err := convs(wsSales, gridAlice); err != nil || !slices.Equal(got, []string{chanConnect, chanSales, chanShared}) {
		t.Errorf("alice's conversations in Sales = %v, %v", got, err)
	}

	groups := func(opts ...slack.GetUserGroupsOption) ([]string, error) {
		gs, err := api.GetUserGroupsContext(ctx, opts...)
		var ids []string
		for _, g := range gs {
			ids = append(ids, g.ID+"@"+g.TeamID)
		}
		return ids, err
	}
	if _, err := groups(); slackErr(err) != "missing_argument" {
		t.Errorf("usergroups.list without team_id: %v", err)
	}
	if _, err := groups(slack.GetUserGroupsOptionTeamID(wsOps)); slackErr(err) != "team_access_not_granted" {
		t.Errorf("usergroups.list in a workspace not granted: %v", err)
	}
	if got, err := groups(slack.GetUserGroupsOptionTeamID(wsEng)); err != nil ||
		!slices.Equal(got, []string{"S0DEFAULT1@" + wsEng, "S0ENGADMIN@" + wsEng}) {
		t.Errorf("usergroups.list in Eng = %v, %v", got, err)
	}
	if got, err := groups(slack.GetUserGroupsOptionTeamID(wsSales)); err != nil || !slices.Equal(got, []string{"S0SALESADM@" + wsSales}) {
		t.Errorf("usergroups.list in Sales = %v, %v", got, err)
	}

	if _, err := api.GetUserGroupMembersContext(ctx, "S0ENGADMIN"); slackErr(err) != "missing_argument" {
		t.Errorf("usergroups.users.list without team_id: %v", err)
	}
	if _, err := api.GetUserGroupMembersContext(ctx, "S0ENGADMIN", slack.GetUserGroupMembersOptionTeamID(wsOps)); slackErr(err) != "team_access_not_granted" {
		t.Errorf("usergroups.users.list in a workspace not granted: %v", err)
	}
	if _, err := api.GetUserGroupMembersContext(ctx, "S0ENGADMIN", slack.GetUserGroupMembersOptionTeamID(wsSales)); slackErr(err) != "no_such_subteam" {
		t.Errorf("usergroups.users.list of Eng's group in Sales: %v", err)
	}
	if got, err := api.GetUserGroupMembersContext(ctx, "S0ENGADMIN", slack.GetUserGroupMembersOptionTeamID(wsEng)); err != nil ||
		!slices.Equal(got, []string{gridAdmin, gridBob}) {
		t.Errorf("usergroups.users.list in Eng = %v, %v", got, err)
	}

	if _, err := api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: f.BotID()}); slackErr(err) != "missing_argument" {
		t.Errorf("bots.info without team_id: %v", err)
	}
	for _, team := range []string{orgID, wsSales} {
		if bot, err := api.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: f.BotID(), TeamID: team}); err != nil || bot.AppID != f.AppID() {
			t.Errorf("bots.info with team_id %s: %+v, %v", team, bot, err)
		}
	}

	// A method that does not need team_id still refuses one not granted.
	if body := rawCall(t, f, f.BotToken(), "conversations.info", url.Values{"channel": {chanEng}, "team_id": {wsOps}}); body["error"] != "team_access_not_granted" {
		t.Errorf("conversations.info naming a workspace not granted = %v", body)
	}
	// The admin's user token is not an org token: team_id is ignored.
	if body := rawCall(t, f, adminTok, "auth.test", url.Values{"team_id": {wsOps}}); body["ok"] != true {
		t.Errorf("auth.test with the user token and a team_id not granted = %v", body)
	}

	// With a workspace token, team_id is accepted and ignored.
	plain := slackfaketest.Start(t)
	plain.AddChannel(slackfake.Channel{ID: chanSec, Members: []string{alice}})
	plain.AddUserGroup("S0PLAIN001", "plain", alice)
	papi := newAPI(plain)
	if chs, _, err := papi.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{TeamID: "T0WHATEVER"}); err != nil || len(chs) != 1 {
		t.Errorf("users.conversations with a workspace token and a team_id = %v, %v", chs, err)
	}
	if _, _, err := papi.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{}); err != nil {
		t.Errorf("users.conversations with a workspace token, no team_id: %v", err)
	}
	if gs, err := papi.GetUserGroupsContext(ctx); err != nil || len(gs) != 1 || gs[0].TeamID != slackfake.DefaultTeamID {
		t.Errorf("usergroups.list with a workspace token = %+v, %v", gs, err)
	}
	if _, err := papi.GetUserGroupMembersContext(ctx, "S0PLAIN001", slack.GetUserGroupMembersOptionTeamID("T0WHATEVER")); err != nil {
		t.Errorf("usergroups.users.list with a workspace token and a team_id: %v", err)
	}
}

func TestGridUsersInfo(t *testing.T) {
	t.Parallel()
	f := startGrid(t, nil)
	api := newAPI(f)
	ctx := testCtx(t)

	alice, err := api.GetUserInfoContext(ctx, gridAlice)
	if err != nil {
		t.Fatal(err)
	}
	if alice.ID != gridAlice || alice.TeamID != wsSales || alice.Profile.Team != wsSales || alice.Enterprise.EnterpriseID != orgID ||
		alice.Enterprise.EnterpriseName != "Acme Corp" || !slices.Equal(alice.Enterprise.Teams, []string{wsSales}) {
		t.Errorf("users.info of alice = %+v", alice)
	}
	bob, err := api.GetUserInfoContext(ctx, gridBob)
	if err != nil || bob.TeamID != wsEng || !slices.Equal(bob.Enterprise.Teams, []string{wsEng, wsSales}) {
		t.Errorf("users.info of bob = %+v, %v", bob, err)
	}
	admin, err := api.GetUserInfoContext(ctx, gridAdmin)
	if err != nil || !admin.IsAdmin || !admin.Enterprise.IsAdmin {
		t.Errorf("users.info of the admin = %+v, %v", admin, err)
	}
	olga, err := api.GetUserInfoContext(ctx, outsider)
	if err != nil || olga.TeamID != partnerTeam || olga.Enterprise.EnterpriseID != "" {
		t.Errorf("users.info of the partner's user = %+v, %v", olga, err)
	}
	// A user first seen in an event is in the default workspace.
	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanEng, User: "W0NEW00001", Text: "hi"}))
	nu, err := api.GetUserInfoContext(ctx, "W0NEW00001")
	if err != nil || nu.TeamID != wsEng || !slices.Equal(nu.Enterprise.Teams, []string{wsEng}) {
		t.Errorf("users.info of an implicit W user = %+v, %v", nu, err)
	}
}

// outer is an events_api payload as JSON, for the fields slack-go does not
// decode (context_team_id, context_enterprise_id, null team_id).
type outer struct {
	TeamID              *string `json:"team_id"`
	EnterpriseID        *string `json:"enterprise_id"`
	ContextTeamID       *string `json:"context_team_id"`
	ContextEnterpriseID *string `json:"context_enterprise_id"`
	IsExtSharedChannel  bool    `json:"is_ext_shared_channel"`
	Authorizations      []struct {
		EnterpriseID        *string `json:"enterprise_id"`
		TeamID              *string `json:"team_id"`
		UserID              string  `json:"user_id"`
		IsBot               bool    `json:"is_bot"`
		IsEnterpriseInstall bool    `json:"is_enterprise_install"`
	} `json:"authorizations"`
	Event struct {
		Type     string   `json:"type"`
		Team     string   `json:"team"`
		UserTeam string   `json:"user_team"`
		TeamIDs  []string `json:"team_ids"`
	} `json:"event"`
}

func outerOf(t *testing.T, f *slackfake.Server, envelopeID string) outer {
	t.Helper()
	env, ok := f.Envelope(envelopeID)
	if !ok {
		t.Fatalf("no envelope %s", envelopeID)
	}
	var o outer
	if err := json.Unmarshal(env.Payload, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// checkSite checks where an envelope says its event comes from (outer
// team_id and enterprise_id) and which workspace of ours receives it.
func checkSite(t *testing.T, what string, o outer, team, enterprise, ours string, ext bool) {
	t.Helper()
	if str(o.TeamID) != team || str(o.EnterpriseID) != enterprise || str(o.ContextTeamID) != ours ||
		str(o.ContextEnterpriseID) != orgID || o.IsExtSharedChannel != ext {
		t.Errorf("%s: team_id %s enterprise_id %s context_team_id %s context_enterprise_id %s ext %v; want %s %s %s %s %v", what,
			str(o.TeamID), str(o.EnterpriseID), str(o.ContextTeamID), str(o.ContextEnterpriseID), o.IsExtSharedChannel,
			team, enterprise, ours, orgID, ext)
	}
	if len(o.Authorizations) != 1 {
		t.Fatalf("%s: authorizations = %+v", what, o.Authorizations)
	}
	a := o.Authorizations[0]
	if str(a.EnterpriseID) != orgID || str(a.TeamID) != ours || a.UserID != slackfake.DefaultBotUserID || !a.IsBot || !a.IsEnterpriseInstall {
		t.Errorf("%s: authorization = enterprise %s team %s user %s bot %v org-wide %v; want %s %s", what,
			str(a.EnterpriseID), str(a.TeamID), a.UserID, a.IsBot, a.IsEnterpriseInstall, orgID, ours)
	}
}

func TestGridEnvelopesCarryTheInstallation(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng, wsSales}, slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	next := func(d slackfake.Delivery) {
		t.Helper()
		ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
		if ev.Request.EnvelopeID != d.EnvelopeID {
			t.Fatalf("got envelope %s, want %s", ev.Request.EnvelopeID, d.EnvelopeID)
		}
		_ = b.sm.Ack(*ev.Request)
		api, cb := eventsAPI(t, ev)
		// What slack-go decodes agrees with the payload.
		o := outerOf(t, f, d.EnvelopeID)
		if api.TeamID != str(o.TeamID) || api.EnterpriseID != str(o.EnterpriseID) || cb.IsExtSharedChannel != o.IsExtSharedChannel ||
			len(cb.Authorizations) != 1 || cb.Authorizations[0].TeamID != str(o.Authorizations[0].TeamID) ||
			!cb.Authorizations[0].IsEnterpriseInstall {
			t.Errorf("slack-go decoded %+v / %+v", api, cb)
		}
	}

	// (a) A channel of workspace Sales.
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "hello"}))
	next(d)
	o := outerOf(t, f, d.EnvelopeID)
	checkSite(t, "message in Sales", o, wsSales, orgID, wsSales, false)
	if o.Event.Team != wsSales {
		t.Errorf("message in Sales: event team %q", o.Event.Team)
	}

	// (b) A channel shared by Eng and Sales: one event, delivered once,
	// from alice's workspace (Sales), for the first granted one (Eng).
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanShared, User: gridAlice, Text: "all hands"}))
	next(d)
	checkSite(t, "message in the shared channel", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsEng, false)
	marker := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanEng, User: gridBob, Text: "marker"}))
	next(marker) // the next envelope is the marker: the shared message came once
	n := 0
	for _, e := range f.Envelopes() {
		if e.InnerType == "message" && json.Valid(e.Payload) && slices.Contains(messageTSs(t, e.Payload), d.TS) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the message in the shared channel was delivered %d times", n)
	}
	checkSite(t, "message in Eng", outerOf(t, f, marker.EnvelopeID), wsEng, orgID, wsEng, false)

	// (c) A Slack Connect channel, posted in by the partner's user: the
	// event comes from the other organisation; the authorization is ours.
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanConnect, User: outsider, Text: "hi from the partner"}))
	next(d)
	o = outerOf(t, f, d.EnvelopeID)
	checkSite(t, "external message in the Slack Connect channel", o, partnerTeam, partnerOrg, wsSales, true)
	if o.Event.Team != partnerTeam || o.Event.UserTeam != partnerTeam {
		t.Errorf("external message: event team %q user_team %q", o.Event.Team, o.Event.UserTeam)
	}
	if m, _ := f.Message(chanConnect, d.TS); m.Team != partnerTeam {
		t.Errorf("stored external message has Team %q", m.Team)
	}
	// The same channel, posted in by one of ours.
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanConnect, User: gridAlice, Text: "welcome"}))
	next(d)
	checkSite(t, "member's message in the Slack Connect channel", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsSales, true)

	// (d) A channel of Ops, not granted: nothing is delivered.
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanOps, User: gridBob, Text: "unheard"}))
	if !d.Withheld || d.EnvelopeID != "" || d.TS == "" {
		t.Errorf("message in Ops = %+v, want withheld", d)
	}
	w := f.Withheld()
	if len(w) != 1 || w[0].Channel != chanOps || w[0].Type != "message" || w[0].User != gridBob || !slices.Equal(w[0].Teams, []string{wsOps}) {
		t.Errorf("Withheld = %+v", w)
	}
	if _, ok := f.Message(chanOps, d.TS); !ok {
		t.Error("the withheld message was not stored")
	}
	// A raw event placed by its item.channel is withheld too.
	d = must[slackfake.Delivery](t)(f.DeliverEvent(map[string]any{"type": "reaction_added", "user": gridBob, "reaction": "eyes",
		"item": map[string]any{"type": "message", "channel": chanOps, "ts": "1.000001"}, "event_ts": "1.000002"}))
	if !d.Withheld || len(f.Withheld()) != 2 {
		t.Errorf("reaction in Ops = %+v, withheld %d", d, len(f.Withheld()))
	}
	marker = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanEng, User: gridBob, Text: "marker 2"}))
	next(marker) // nothing from Ops came in between
}

// messageTSs returns the ts of a message event payload.
func messageTSs(t *testing.T, payload json.RawMessage) []string {
	t.Helper()
	var p struct {
		Event struct {
			TS string `json:"ts"`
		} `json:"event"`
	}
	_ = json.Unmarshal(payload, &p)
	return []string{p.Event.TS}
}

func TestGridGrantAndRevokeTeams(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng}, slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	if d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "before"})); !d.Withheld {
		t.Errorf("message in Sales before the grant = %+v", d)
	}
	if _, _, err := api.PostMessageContext(ctx, chanSales, slack.MsgOptionText("x", false)); slackErr(err) != "channel_not_found" {
		t.Errorf("posting in Sales before the grant: %v", err)
	}

	// The grant: team_access_granted, as Slack sends it.
	d, err := f.GrantTeams(wsSales, wsEng) // Eng was granted already
	if err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	apiEv, cb := eventsAPI(t, ev)
	granted, ok := apiEv.InnerEvent.Data.(*slackevents.TeamAccessGrantedEvent)
	if !ok || ev.Request.EnvelopeID != d.EnvelopeID || !slices.Equal(granted.TeamIDs, []string{wsSales}) || granted.Type != "team_access_granted" ||
		apiEv.EnterpriseID != orgID || apiEv.TeamID != "" || len(cb.Authorizations) != 1 || !cb.Authorizations[0].IsEnterpriseInstall {
		t.Fatalf("team_access_granted = %+v / %#v", apiEv, apiEv.InnerEvent.Data)
	}
	o := outerOf(t, f, d.EnvelopeID)
	if o.TeamID != nil || str(o.EnterpriseID) != orgID || o.ContextTeamID != nil || o.Authorizations[0].TeamID != nil ||
		str(o.Authorizations[0].EnterpriseID) != orgID {
		t.Errorf("team_access_granted outer: team_id %s enterprise_id %s context_team_id %s authorization team %s",
			str(o.TeamID), str(o.EnterpriseID), str(o.ContextTeamID), str(o.Authorizations[0].TeamID))
	}
	if got := f.GrantedTeams(); !slices.Equal(got, []string{wsEng, wsSales}) {
		t.Errorf("GrantedTeams after the grant = %v", got)
	}
	if teams, _, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{}); err != nil || len(teams) != 2 || teams[1].ID != wsSales {
		t.Errorf("auth.teams.list after the grant = %+v, %v", teams, err)
	}
	if d, err := f.GrantTeams(wsSales); err != nil || d.EnvelopeID != "" {
		t.Errorf("granting again = %+v, %v (want nothing delivered)", d, err)
	}

	// Sales is reachable now.
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "after"}))
	if d.Withheld || d.EnvelopeID == "" {
		t.Fatalf("message in Sales after the grant = %+v", d)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	checkSite(t, "message in Sales after the grant", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsSales, false)
	_, posted, err := api.PostMessageContext(ctx, chanSales, slack.MsgOptionText("hello Sales", false))
	if err != nil {
		t.Fatal(err)
	}
	file := f.AddFile(slackfake.File{Name: "notes.txt", User: gridAlice, Content: []byte("notes"), Channels: []string{chanSales}})
	if _, _, _, err := api.GetFileInfoContext(ctx, file.ID, 0, 0); err != nil {
		t.Errorf("files.info of a file in Sales: %v", err)
	}

	// The revocation: team_access_revoked, then Sales is out of reach.
	d, err = f.RevokeTeams(wsSales)
	if err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	apiEv, _ = eventsAPI(t, ev)
	revoked, ok := apiEv.InnerEvent.Data.(*slackevents.TeamAccessRevokedEvent)
	if !ok || !slices.Equal(revoked.TeamIDs, []string{wsSales}) || apiEv.EnterpriseID != orgID {
		t.Fatalf("team_access_revoked = %+v / %#v", apiEv, apiEv.InnerEvent.Data)
	}
	if got := f.GrantedTeams(); !slices.Equal(got, []string{wsEng}) {
		t.Errorf("GrantedTeams after the revocation = %v", got)
	}
	if _, _, err := api.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{TeamID: wsSales}); slackErr(err) != "team_access_not_granted" {
		t.Errorf("users.conversations in Sales after the revocation: %v", err)
	}
	for what, err := range map[string]error{
		"chat.postMessage": func() error {
			_, _, err := api.PostMessageContext(ctx, chanSales, slack.MsgOptionText("x", false))
			return err
		}(),
		"chat.update": func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, chanSales, posted, slack.MsgOptionText("y", false))
			return err
		}(),
		"reactions.add": api.AddReactionContext(ctx, "eyes", slack.NewRefToMessage(chanSales, posted)),
		"chat.delete":   func() error { _, _, err := api.DeleteMessageContext(ctx, chanSales, posted); return err }(),
		"conversations.replies": func() error {
			_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: chanSales, Timestamp: posted})
			return err
		}(),
		"conversations.info": func() error {
			_, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: chanSales})
			return err
		}(),
	} {
		if slackErr(err) != "channel_not_found" {
			t.Errorf("%s in Sales after the revocation: %v", what, err)
		}
	}
	if _, _, _, err := api.GetFileInfoContext(ctx, file.ID, 0, 0); slackErr(err) != "file_not_found" {
		t.Errorf("files.info of a file only in Sales after the revocation: %v", err)
	}
	if d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "unheard"})); !d.Withheld {
		t.Errorf("message in Sales after the revocation = %+v", d)
	}
	// The channel shared with Eng stays reachable, without team_id.
	if _, _, err := api.PostMessageContext(ctx, chanShared, slack.MsgOptionText("still here", false)); err != nil {
		t.Errorf("posting in the channel shared with Eng: %v", err)
	}
	d = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanShared, User: gridAlice, Text: "heard"}))
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	checkSite(t, "message in the shared channel after the revocation", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsEng, false)

	// The org admin's user token deletes anywhere in the org, Sales too;
	// not the partner's content.
	admin := slack.New(adminTok, slack.OptionAPIURL(f.APIURL()))
	alices := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSales, User: gridAlice, Text: "bad link"}))
	if _, _, err := admin.DeleteMessageContext(ctx, chanSales, alices.TS); err != nil {
		t.Errorf("the admin deleting alice's message in revoked Sales: %v", err)
	}
	if m, _ := f.Message(chanSales, alices.TS); !m.Deleted {
		t.Error("alice's message was not deleted")
	}
	olgas := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanConnect, User: outsider, Text: "partner link"}))
	if _, _, err := admin.DeleteMessageContext(ctx, chanConnect, olgas.TS); slackErr(err) != "cant_delete_message" {
		t.Errorf("the admin deleting the partner's message: %v", err)
	}
	if _, err := f.RevokeTeams(wsSales); err != nil { // nothing to revoke: no event
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := f.GrantTeams("T0NOSUCH01"); err == nil {
		t.Error("GrantTeams accepted a workspace of no org")
	}
	if _, err := slackfaketest.Start(t).GrantTeams(slackfake.DefaultTeamID); err == nil {
		t.Error("GrantTeams worked without an Org")
	}
}

func TestGridSlashCommandsAndInteractionsCarryTheTeam(t *testing.T) {
	t.Parallel()
	f := startGrid(t, []string{wsEng, wsSales}, slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	api := newAPI(f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d := must[slackfake.Delivery](t)(f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: "x", UserID: gridAlice, ChannelID: chanSales}))
	ev := b.next(t, ctx, socketmode.EventTypeSlashCommand)
	_ = b.sm.Ack(*ev.Request)
	cmd := ev.Data.(slack.SlashCommand)
	if cmd.TeamID != wsSales || cmd.TeamDomain != "acme-sales" || cmd.EnterpriseID != orgID || cmd.EnterpriseName != "Acme Corp" ||
		!cmd.IsEnterpriseInstall || cmd.UserID != gridAlice || cmd.ResponseURL != d.ResponseURL ||
		!strings.Contains(cmd.ResponseURL, "/commands/"+wsSales+"/") {
		t.Errorf("slash command in Sales = %+v", cmd)
	}
	if env, _ := f.Envelope(d.EnvelopeID); !json.Valid(env.Payload) || jsonField(t, env.Payload, "is_enterprise_install") != `"true"` {
		t.Errorf("is_enterprise_install = %s", jsonField(t, env.Payload, "is_enterprise_install"))
	}
	// In the shared channel: its first granted workspace, or the one given.
	for team, want := range map[string]string{"": wsEng, wsSales: wsSales} {
		must[slackfake.Delivery](t)(f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", UserID: gridBob, ChannelID: chanShared, TeamID: team}))
		ev = b.next(t, ctx, socketmode.EventTypeSlashCommand)
		_ = b.sm.Ack(*ev.Request)
		if got := ev.Data.(slack.SlashCommand); got.TeamID != want {
			t.Errorf("slash command in the shared channel with TeamID %q: team_id %s, want %s", team, got.TeamID, want)
		}
	}
	if _, err := f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", UserID: gridBob, ChannelID: chanOps}); !errors.Is(err, slackfake.ErrNoAccess) {
		t.Errorf("slash command in Ops (not granted): %v", err)
	}
	if _, err := f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", UserID: gridBob, ChannelID: chanSales, TeamID: wsEng}); err == nil {
		t.Error("slash command in Sales from Eng was delivered")
	}

	// A click on the bot's card in Sales.
	blocks := slack.MsgOptionBlocks(slack.NewActionBlock("verdict", slack.NewButtonBlockElement("rescan", "scan-1", slack.NewTextBlockObject("plain_text", "Rescan", false, false))))
	_, ts, err := api.PostMessageContext(ctx, chanSales, blocks, slack.MsgOptionText("card", false))
	if err != nil {
		t.Fatal(err)
	}
	must[slackfake.Delivery](t)(f.DeliverBlockAction(slackfake.BlockAction{UserID: gridAlice, Channel: chanSales, MessageTS: ts, ActionID: "rescan"}))
	ev = b.next(t, ctx, socketmode.EventTypeInteractive)
	_ = b.sm.Ack(*ev.Request)
	cb := ev.Data.(slack.InteractionCallback)
	if cb.Team.ID != wsSales || cb.Team.Domain != "acme-sales" || cb.Team.EnterpriseID != orgID || cb.Team.EnterpriseName != "Acme Corp" ||
		cb.User.ID != gridAlice || cb.User.TeamID != wsSales || cb.Enterprise.ID != orgID || cb.Enterprise.Name != "Acme Corp" ||
		!cb.IsEnterpriseInstall || len(cb.ActionCallback.BlockActions) != 1 {
		t.Errorf("block action in Sales = team %+v user %+v enterprise %+v org-wide %v", cb.Team, cb.User, cb.Enterprise, cb.IsEnterpriseInstall)
	}
	// A message shortcut on it.
	must[slackfake.Delivery](t)(f.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: gridBob, Channel: chanSales, MessageTS: ts}))
	ev = b.next(t, ctx, socketmode.EventTypeInteractive)
	_ = b.sm.Ack(*ev.Request)
	if cb := ev.Data.(slack.InteractionCallback); cb.Team.ID != wsSales || cb.User.TeamID != wsEng || cb.Enterprise.ID != orgID || !cb.IsEnterpriseInstall {
		t.Errorf("message shortcut in Sales = team %+v user %+v enterprise %+v", cb.Team, cb.User, cb.Enterprise)
	}

	// The Home tab: app_home_opened in alice's workspace, then a pick there.
	d = must[slackfake.Delivery](t)(f.DeliverAppHomeOpened(gridAlice, "home"))
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	checkSite(t, "app_home_opened", outerOf(t, f, d.EnvelopeID), wsSales, orgID, wsSales, false)
	view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewActionBlock("home_actions", slack.NewButtonBlockElement("refresh", "r", slack.NewTextBlockObject("plain_text", "Refresh", false, false))),
	}}}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: gridAlice, View: view}); err != nil {
		t.Fatal(err)
	}
	must[slackfake.Delivery](t)(f.DeliverHomeAction(slackfake.HomeAction{UserID: gridAlice, BlockID: "home_actions", ActionID: "refresh"}))
	ev = b.next(t, ctx, socketmode.EventTypeInteractive)
	_ = b.sm.Ack(*ev.Request)
	if cb := ev.Data.(slack.InteractionCallback); cb.Team.ID != wsSales || cb.Team.EnterpriseID != orgID || cb.User.TeamID != wsSales || !cb.IsEnterpriseInstall {
		t.Errorf("home action = team %+v user %+v", cb.Team, cb.User)
	}
	if _, err := f.RevokeTeams(wsSales); err != nil {
		t.Fatal(err)
	}
	if d := must[slackfake.Delivery](t)(f.DeliverAppHomeOpened(gridAlice, "home")); !d.Withheld {
		t.Errorf("app_home_opened for a user of revoked Sales = %+v", d)
	}
	if _, err := f.DeliverHomeAction(slackfake.HomeAction{UserID: gridAlice, BlockID: "home_actions", ActionID: "refresh"}); !errors.Is(err, slackfake.ErrNoAccess) {
		t.Errorf("home action of a user of revoked Sales: %v", err)
	}
	if _, err := f.DeliverBlockAction(slackfake.BlockAction{UserID: gridAlice, Channel: chanSales, MessageTS: ts, ActionID: "rescan"}); !errors.Is(err, slackfake.ErrNoAccess) {
		t.Errorf("block action in revoked Sales: %v", err)
	}
}

func jsonField(t *testing.T, raw json.RawMessage, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[key])
}
