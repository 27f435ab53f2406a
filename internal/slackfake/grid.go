package slackfake

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file models an Enterprise Grid organisation where the app is
// installed org-wide (WithOrg): the workspaces, which of them the app has
// been granted, and where an event or a call happens in the organisation.
// The rules come from docs.slack.dev "Enterprise Grid and your app"
// (api.slack.com/enterprise/apps, /changes-apis, /reference); a choice the
// docs leave open is explained where it is made.

// Workspace is one workspace (team) of an Enterprise Grid organisation.
type Workspace struct {
	ID   string // "T…"
	Name string // default: the ID
	// Domain is the workspace's subdomain (team_domain of a slash command,
	// team.domain of an interaction). Default: the name, lower-cased, with
	// every run of other characters than letters and digits made one "-".
	Domain string
	// EmailDomain is team.info's email_domain: the domains whose
	// addresses may join, comma-separated ("" none).
	EmailDomain string
}

// Org makes the fake an Enterprise Grid organisation where the app is
// installed org-wide (the bot token is an org-level token).
type Org struct {
	ID   string // enterprise id, "E…"
	Name string // default: the ID
	// Domain is the organisation's subdomain: auth.test answers
	// https://<Domain>.enterprise.slack.com/ for the org token. Default:
	// made from the name as Workspace.Domain is.
	Domain     string
	Workspaces []Workspace // at least one; the first is the default workspace
	// Granted lists the workspaces the app has access to at start (nil:
	// all; a non-nil empty list: none). An org-wide install reaches only
	// the workspaces an admin added it to (api.slack.com/enterprise/apps:
	// "the app won't actually be added to any workspaces yet").
	Granted []string
}

// WithOrg makes the fake an Enterprise Grid organisation with the app
// installed org-wide. The default workspace (TeamID) becomes the org's
// first workspace, whatever WithTeam said. Without WithOrg the fake is a
// single workspace with a workspace token, exactly as before.
//
// With an Org: auth.test answers for an org-wide install; auth.teams.list
// lists the granted workspaces; the methods Slack lists as needing team_id
// with an org token answer missing_argument without it and
// team_access_not_granted for a workspace not granted (any method named
// with such a team_id does); a conversation none of whose workspaces is
// granted is channel_not_found to the bot token and its events are
// withheld (State.Withheld); every envelope carries enterprise_id,
// context_team_id, context_enterprise_id and an org-wide authorization;
// GrantTeams and RevokeTeams change the granted set and deliver
// team_access_granted / team_access_revoked.
func WithOrg(o Org) Option {
	return func(c *config) {
		oo := o
		oo.Workspaces = slices.Clone(o.Workspaces)
		oo.Granted = slices.Clone(o.Granted)
		if o.Granted != nil && oo.Granted == nil {
			oo.Granted = []string{}
		}
		c.org = &oo
	}
}

// ErrNoAccess is returned when a slash command or an interaction is
// delivered in a conversation none of whose workspaces the org-wide app is
// granted: nobody there can use the app.
var ErrNoAccess = errors.New("slackfake: the app is not granted any workspace of this conversation")

// normalize fills in the defaults of an Org and checks it.
func (o *Org) normalize() error {
	if o.ID == "" {
		return errors.New("slackfake: Org.ID is required")
	}
	if len(o.Workspaces) == 0 {
		return errors.New("slackfake: Org needs at least one workspace")
	}
	o.Name = cmp.Or(o.Name, o.ID)
	o.Domain = cmp.Or(o.Domain, slug(o.Name), strings.ToLower(o.ID))
	seen := map[string]bool{}
	for i := range o.Workspaces {
		w := &o.Workspaces[i]
		if w.ID == "" {
			return fmt.Errorf("slackfake: Org workspace %d has no ID", i)
		}
		if seen[w.ID] {
			return fmt.Errorf("slackfake: Org workspace %s is listed twice", w.ID)
		}
		seen[w.ID] = true
		w.Name = cmp.Or(w.Name, w.ID)
		w.Domain = cmp.Or(w.Domain, slug(w.Name), strings.ToLower(w.ID))
	}
	for _, id := range o.Granted {
		if !seen[id] {
			return fmt.Errorf("slackfake: Org.Granted names %s, not a workspace of the org", id)
		}
	}
	return nil
}

// slug lower-cases s and turns every run of other characters than letters
// and digits into one "-".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// grid reports whether the fake is an Enterprise Grid organisation.
func (s *Server) grid() bool { return s.cfg.org != nil }

// EnterpriseID is the organisation's id, "" without an Org.
func (s *Server) EnterpriseID() string {
	if s.cfg.org == nil {
		return ""
	}
	return s.cfg.org.ID
}

// Org returns the organisation (its defaults filled in, Granted as it is
// now, sorted) and true, or false without an Org.
func (s *Server) Org() (Org, bool) {
	if s.cfg.org == nil {
		return Org{}, false
	}
	o := *s.cfg.org
	o.Workspaces = slices.Clone(o.Workspaces)
	o.Granted = s.GrantedTeams()
	return o, true
}

// GrantedTeams returns the workspaces the app is granted now, sorted
// (without an Org: the one workspace).
func (s *Server) GrantedTeams() []string {
	if s.cfg.org == nil {
		return []string{s.cfg.teamID}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.granted))
	for id, ok := range s.granted {
		if ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// GrantTeams grants the app the workspaces (an admin adds the org-wide app
// to them) and delivers team_access_granted with the ones that were not
// granted yet, in Slack's wire format (api.slack.com/events/
// team_access_granted): an organisation-level event, outer team_id null,
// enterprise_id the org, inner {"type","team_ids","event_ts"}. Nothing is
// delivered when every workspace was granted already (Delivery is zero).
// Events of the workspaces' conversations are delivered again from now on.
func (s *Server) GrantTeams(teamIDs ...string) (Delivery, error) {
	return s.changeAccess(true, teamIDs)
}

// RevokeTeams takes the workspaces from the app (an admin removes the
// org-wide app from them) and delivers team_access_revoked with the ones
// that were granted (api.slack.com/events/team_access_revoked). From now
// on a call naming such a team_id answers team_access_not_granted, a
// conversation of those workspaces only is channel_not_found to the bot
// token, and its events are withheld.
func (s *Server) RevokeTeams(teamIDs ...string) (Delivery, error) {
	return s.changeAccess(false, teamIDs)
}

func (s *Server) changeAccess(grant bool, ids []string) (Delivery, error) {
	name := "team_access_granted"
	if !grant {
		name = "team_access_revoked"
	}
	if s.cfg.org == nil {
		return Delivery{}, fmt.Errorf("slackfake: %s needs an Org (WithOrg)", name)
	}
	if len(ids) == 0 {
		return Delivery{}, errors.New("slackfake: no workspace given")
	}
	for _, id := range ids {
		if _, ok := s.workspace(id); !ok {
			return Delivery{}, fmt.Errorf("slackfake: %s is not a workspace of %s", id, s.cfg.org.ID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Delivery{}, ErrClosed
	}
	var changed []string
	for _, id := range ids {
		if s.granted[id] != grant && !slices.Contains(changed, id) {
			changed = append(changed, id)
			s.granted[id] = grant
		}
	}
	if len(changed) == 0 {
		s.notifyLocked()
		return Delivery{}, nil
	}
	raw, _ := json.Marshal(map[string]any{"type": name, "team_ids": changed, "event_ts": s.nextTSLocked()})
	return s.deliverEventLocked(raw, false)
}

// workspace returns the org's workspace with id.
func (s *Server) workspace(id string) (Workspace, bool) {
	if s.cfg.org == nil {
		if id == s.cfg.teamID {
			return Workspace{ID: s.cfg.teamID, Name: s.cfg.teamName, Domain: s.cfg.teamName, EmailDomain: s.cfg.emailDomain}, true
		}
		return Workspace{}, false
	}
	for _, w := range s.cfg.org.Workspaces {
		if w.ID == id {
			return w, true
		}
	}
	return Workspace{}, false
}

// workspaceIDs lists the org's workspaces in their order.
func (s *Server) workspaceIDs() []string {
	if s.cfg.org == nil {
		return []string{s.cfg.teamID}
	}
	out := make([]string, len(s.cfg.org.Workspaces))
	for i, w := range s.cfg.org.Workspaces {
		out[i] = w.ID
	}
	return out
}

// isOrgTeam reports whether team is one of ours: a workspace of the org,
// or without an Org the workspace.
func (s *Server) isOrgTeam(team string) bool {
	_, ok := s.workspace(team)
	return ok
}

// grantedLocked reports whether the app may act in team.
func (s *Server) grantedLocked(team string) bool {
	if s.cfg.org == nil {
		return team == s.cfg.teamID
	}
	return s.granted[team]
}

// firstGrantedLocked returns the first of teams the app is granted, or "".
func (s *Server) firstGrantedLocked(teams []string) string {
	for _, t := range teams {
		if s.grantedLocked(t) {
			return t
		}
	}
	return ""
}

// isExternalLocked reports whether u belongs to another organisation (a
// Slack Connect partner): their home team or enterprise is not ours.
func (s *Server) isExternalLocked(u *User) bool {
	if u == nil {
		return false
	}
	return u.HomeTeam != "" && !s.isOrgTeam(u.HomeTeam) || u.Enterprise != "" && u.Enterprise != s.EnterpriseID()
}

// userTeamsLocked lists the workspaces of ours u is a member of: Teams, or
// the default workspace; the bot user is in every workspace of the org; an
// external user is in none.
func (s *Server) userTeamsLocked(u *User) []string {
	switch {
	case u != nil && len(u.Teams) > 0:
		return u.Teams
	case u != nil && u.ID == s.cfg.botUserID:
		return s.workspaceIDs()
	case s.isExternalLocked(u):
		return nil
	}
	return []string{s.cfg.teamID}
}

// homeTeamLocked is u's home team: users.info team_id, an interaction's
// user.team_id. For an external user their HomeTeam, else HomeTeam if it
// is one of ours, else their first workspace.
func (s *Server) homeTeamLocked(u *User) string {
	if u != nil && u.HomeTeam != "" {
		return u.HomeTeam
	}
	if teams := s.userTeamsLocked(u); len(teams) > 0 {
		return teams[0]
	}
	return s.cfg.teamID
}

// channelTeamsLocked lists the workspaces of ours a conversation belongs
// to: Teams, else for a DM its user's workspaces, else the default one.
func (s *Server) channelTeamsLocked(ch *Channel) []string {
	switch {
	case ch == nil:
		return []string{s.cfg.teamID}
	case len(ch.Teams) > 0:
		return ch.Teams
	case ch.IM && ch.IMUser != "" && s.cfg.org != nil:
		if teams := s.userTeamsLocked(s.st.users[ch.IMUser]); len(teams) > 0 {
			return teams
		}
	}
	return []string{s.cfg.teamID}
}

// channelAccessLocked is the workspace of ours an event in ch is delivered
// for (authorizations[0].team_id, context_team_id): the first granted one
// among the conversation's workspaces; "" when the app has none there.
func (s *Server) channelAccessLocked(ch *Channel) string {
	return s.firstGrantedLocked(s.channelTeamsLocked(ch))
}

// canSeeLocked reports whether the bot token sees ch. Without an Org it
// always does (membership aside); with one, ch must be in a granted
// workspace.
func (s *Server) canSeeLocked(ch *Channel) bool {
	return s.cfg.org == nil || s.channelAccessLocked(ch) != ""
}

// authorTeamLocked is the team a message's author posted from (the
// message's "team", an event's outer team_id): msgTeam if the message
// names one (an external author's), the bot's workspace for the bot, an
// external user's home team, else the first of the conversation's
// workspaces the author is a member of, else the conversation's first.
// Slack does not document which team a member of several workspaces
// posts from in a channel shared between them; the first is the fake's
// choice.
func (s *Server) authorTeamLocked(ch *Channel, userID, msgTeam string) string {
	if msgTeam != "" {
		return msgTeam
	}
	teams := s.channelTeamsLocked(ch)
	if userID == s.cfg.botUserID {
		return cmp.Or(s.channelAccessLocked(ch), teams[0])
	}
	u := s.st.users[userID]
	if s.isExternalLocked(u) {
		if u.HomeTeam != "" {
			return u.HomeTeam
		}
		if ch != nil && ch.ExternalTeam != "" {
			return ch.ExternalTeam
		}
	}
	mine := s.userTeamsLocked(u)
	for _, t := range teams {
		if slices.Contains(mine, t) {
			return t
		}
	}
	return teams[0]
}

// enterpriseOfLocked is the enterprise of team: ours for a workspace of
// the org, else an external user's or the Slack Connect channel's
// enterprise; "" when unknown (a team outside any Grid).
func (s *Server) enterpriseOfLocked(team string, u *User, ch *Channel) string {
	switch {
	case s.cfg.org != nil && s.isOrgTeam(team):
		return s.cfg.org.ID
	case u != nil && u.Enterprise != "" && (u.HomeTeam == "" || u.HomeTeam == team):
		return u.Enterprise
	case ch != nil && ch.ExternalTeam == team:
		return ch.ExternalEnterprise
	}
	return ""
}

// WithheldEvent is an event the fake did not deliver because the org-wide
// app is not granted any workspace of the conversation it happened in: on
// Slack the app does not hear of it.
type WithheldEvent struct {
	Type    string // inner event type
	SubType string
	Channel string
	User    string
	Teams   []string // the conversation's workspaces, none of them granted
	Echo    bool     // raised by the bot's own call
	Event   []byte   // the inner event
	At      time.Time
}

// Withheld returns the events withheld so far, in order.
func (st *State) Withheld() []WithheldEvent {
	out := make([]WithheldEvent, len(st.withheld))
	for i, w := range st.withheld {
		out[i] = w
		out[i].Teams = slices.Clone(w.Teams)
		out[i].Event = slices.Clone(w.Event)
	}
	return out
}

// Withheld returns the events withheld so far (see State.Withheld).
func (s *Server) Withheld() (out []WithheldEvent) {
	s.Inspect(func(st *State) { out = st.Withheld() })
	return out
}

// orgEvents are the organisation-level events: they concern the org-wide
// install, not a workspace, and Slack sends them with team_id null
// (api.slack.com/events/team_access_granted).
var orgEvents = map[string]bool{"team_access_granted": true, "team_access_revoked": true}

// eventSite is where an event happens, as its envelope tells it.
type eventSite struct {
	org        bool // an organisation-level event
	channel    string
	user       string
	teams      []string // the workspaces of ours it concerns
	team       string   // where it comes from: the outer team_id
	enterprise string   // the outer enterprise_id
	ours       string   // the workspace of ours it is delivered for; "" when none is granted
	ext        bool     // is_ext_shared_channel
}

// eventSiteLocked reads where an inner event happens from its own fields,
// so an event a test hands DeliverEvent is placed like the fake's own:
// the conversation from channel, channel_id or item.channel; the actor
// from user, user_id, or the user of message / previous_message (edits and
// deletions); the author's team from team or message.team.
func (s *Server) eventSiteLocked(typ string, inner json.RawMessage) eventSite {
	var f map[string]json.RawMessage
	_ = json.Unmarshal(inner, &f)
	site := eventSite{org: orgEvents[typ]}
	site.channel = cmp.Or(jsonString(f["channel"]), jsonString(f["channel_id"]), jsonString(jsonField(f["item"], "channel")))
	site.user = cmp.Or(jsonString(f["user"]), jsonString(f["user_id"]),
		jsonString(jsonField(f["message"], "user")), jsonString(jsonField(f["previous_message"], "user")))
	hint := cmp.Or(jsonString(f["team"]), jsonString(jsonField(f["message"], "team")),
		jsonString(jsonField(f["previous_message"], "team")))
	ch := s.st.channels[site.channel]
	u := s.st.users[site.user]
	site.ext = ch != nil && (ch.ExternalTeam != "" || ch.ExternalEnterprise != "")
	if site.org {
		return site
	}
	switch {
	case site.channel != "":
		site.teams = s.channelTeamsLocked(ch)
	case u != nil && len(s.userTeamsLocked(u)) > 0:
		site.teams = s.userTeamsLocked(u)
	default:
		site.teams = s.workspaceIDs()
	}
	site.ours = s.firstGrantedLocked(site.teams)
	if site.channel != "" {
		site.team = s.authorTeamLocked(ch, site.user, hint)
	} else {
		site.team = hint
		if s.isExternalLocked(u) {
			site.team = cmp.Or(site.team, u.HomeTeam)
		}
		site.team = cmp.Or(site.team, site.ours, site.teams[0])
	}
	site.enterprise = s.enterpriseOfLocked(site.team, u, ch)
	return site
}

// jsonString is raw's value if it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var v string
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v
}

// withholdLocked records an event the app has no access to.
func (s *Server) withholdLocked(site eventSite, typ, subtype string, inner json.RawMessage, echo bool) {
	s.st.withheld = append(s.st.withheld, WithheldEvent{
		Type: typ, SubType: subtype, Channel: site.channel, User: site.user,
		Teams: slices.Clone(site.teams), Echo: echo, Event: slices.Clone(inner), At: time.Now(),
	})
	s.logf("withheld %s in %s: no granted workspace among %v", typ, site.channel, site.teams)
	s.notifyLocked()
}

// orgEnvelope fills in what an events_api payload carries for an org-wide
// install: enterprise_id and team_id of where the event comes from (for a
// message the author's team, for an external Slack Connect author the
// other organisation's team and enterprise), context_team_id and
// context_enterprise_id of the workspace of ours that receives it, and
// one authorization for the org-wide installation.
//
// authorizations[0].team_id is the workspace of ours the event is in (the
// first granted workspace of the conversation), as in Slack's own sample
// of an org-wide install's event (api.slack.com/enterprise/apps/reference
// "Sample event payload": enterprise_id "E324567", team_id "T423567",
// is_enterprise_install true). Bolt's org-app fixtures
// (slackapi/bolt-python tests/scenario_tests/test_events_org_apps.py) have
// team_id null there instead: a bot should key an org-wide install on
// enterprise_id and is_enterprise_install, not on that team_id. The list
// is truncated to one installation, as on Slack ("authorizations is
// truncated to one item"); an organisation-level event has team_id null
// both outside and in its authorization.
func (s *Server) orgEnvelope(cb *eventCallback, site eventSite) {
	org := s.cfg.org.ID
	auth := authorization{EnterpriseID: &org, UserID: s.cfg.botUserID, IsBot: true, IsEnterpriseInstall: true}
	cb.EnterpriseID = org
	if site.org {
		cb.TeamID = nil
	} else {
		team, ours := site.team, site.ours
		cb.TeamID, auth.TeamID = &team, &ours
		cb.EnterpriseID = site.enterprise
		cb.ContextTeamID, cb.ContextEnterpriseID = ours, org
	}
	cb.Authorizations = []authorization{auth}
}

// interactionTeamLocked is the workspace a slash command or an interaction
// in ch comes from: team if given (it must be one of the conversation's
// workspaces, granted), else the conversation's first granted workspace.
// Without an Org, the workspace.
func (s *Server) interactionTeamLocked(ch *Channel, team string) (string, error) {
	if s.cfg.org == nil {
		return s.cfg.teamID, nil
	}
	teams := s.channelTeamsLocked(ch)
	switch {
	case team == "":
		if team = s.firstGrantedLocked(teams); team == "" {
			return "", fmt.Errorf("%w: %s (workspaces %v)", ErrNoAccess, ch.ID, teams)
		}
	case !slices.Contains(teams, team):
		return "", fmt.Errorf("slackfake: %s is not a workspace of %s (%v)", team, ch.ID, teams)
	case !s.grantedLocked(team):
		return "", fmt.Errorf("%w: %s in %s", ErrNoAccess, team, ch.ID)
	}
	return team, nil
}

// teamObjectLocked is an interaction payload's "team": the workspace, and
// with an Org its enterprise (the enterprise_id and enterprise_name a
// Grid workspace's team object carries; bolt-js types/actions/
// block-action.ts).
func (s *Server) teamObjectLocked(team string) map[string]any {
	if s.cfg.org == nil {
		return map[string]any{"id": s.cfg.teamID, "domain": s.cfg.teamName}
	}
	w, _ := s.workspace(team)
	return map[string]any{"id": w.ID, "domain": w.Domain, "enterprise_id": s.cfg.org.ID, "enterprise_name": s.cfg.org.Name}
}

// enterpriseFieldsLocked sets an interaction payload's "enterprise" and
// "is_enterprise_install": null and false for a workspace install, the
// org and true for an org-wide one.
func (s *Server) enterpriseFieldsLocked(p map[string]any) {
	p["enterprise"], p["is_enterprise_install"] = nil, false
	if o := s.cfg.org; o != nil {
		p["enterprise"], p["is_enterprise_install"] = map[string]any{"id": o.ID, "name": o.Name}, true
	}
}
