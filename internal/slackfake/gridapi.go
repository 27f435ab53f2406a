package slackfake

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This file holds what the Web API does differently for an org-level token
// (WithOrg): team_id, access to workspaces and conversations, and
// auth.teams.list.

// orgAccessLocked answers what Slack answers an org-level bot token before
// the method runs (api.slack.com/enterprise/apps/changes-apis):
//
//   - a method that requires team_id with an org token, called without
//     it: missing_argument, the error those methods document for it
//     (users.conversations, usergroups.list, bots.info…; the
//     lyft/omnibot pull 44 and sgratzl/slack-cleaner issue 101 reports);
//   - any method naming a team_id the app is not granted (revoked, or not
//     a workspace of the org): team_access_not_granted ("The token used is
//     not granted the specific workspace access required to complete this
//     request");
//   - a conversation (channel, channel_id, channels) none of whose
//     workspaces is granted: channel_not_found, what Slack answers a token
//     that cannot see a conversation (as for a private channel the bot is
//     not in).
//
// A workspace token, or a user token, ignores team_id, as on Slack ("This
// field will be ignored if the API call is sent using a workspace-level
// token"); the admin's user token reaches every conversation of the org.
func (s *Server) orgAccessLocked(spec methodSpec, c *apiCall) apiResult {
	if s.cfg.org == nil || c.kind != TokenBot {
		return apiResult{}
	}
	team := c.params.Get("team_id")
	switch {
	case team == "" && spec.team != teamOptional:
		return errResult("missing_argument")
	case team == "":
	case spec.team == teamOrEnterprise && team == s.cfg.org.ID:
	case !s.granted[team]:
		return errResult("team_access_not_granted")
	}
	for _, id := range channelArgs(c.params) {
		if ch := s.st.channels[id]; ch != nil && !s.canSeeLocked(ch) {
			return errResult("channel_not_found")
		}
	}
	return apiResult{}
}

// channelArgs lists the conversations a call names.
func channelArgs(p url.Values) []string {
	var ids []string
	for _, id := range []string{p.Get("channel"), p.Get("channel_id")} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	for id := range strings.SplitSeq(p.Get("channels"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// orgTeamParam is the workspace an org-level bot token's call is limited
// to (its checked team_id), or "" for a workspace or user token.
func (s *Server) orgTeamParam(c *apiCall) string {
	if s.cfg.org == nil || c.kind != TokenBot {
		return ""
	}
	return c.params.Get("team_id")
}

// fileVisibleLocked reports whether a token of kind sees f: with an org
// token, a file shared only in conversations the app has no access to is
// file_not_found (files.info, downloads), as an unseen file is on Slack.
func (s *Server) fileVisibleLocked(f *File, kind string) bool {
	if s.cfg.org == nil || kind != TokenBot || len(f.Channels) == 0 {
		return true
	}
	for _, id := range f.Channels {
		if s.canSeeLocked(s.st.channels[id]) {
			return true
		}
	}
	return false
}

// apiAuthTeamsList lists the workspaces a token can access
// (docs.slack.dev auth.teams.list): for an org-level token the workspaces
// the org-wide app is granted, in the org's order; for a workspace token
// its one workspace ("Most tokens are tied to a single workspace"); for a
// user token on Grid the user's workspaces. Each team is {"id","name"},
// with "icon" when include_icon is true; cursor-paginated by limit
// (default 100, 1 to 1000, else invalid_limit) and cursor.
func (s *Server) apiAuthTeamsList(c *apiCall) apiResult {
	var ids []string
	switch {
	case s.cfg.org == nil:
		ids = []string{s.cfg.teamID}
	case c.kind == TokenUser:
		mine := s.userTeamsLocked(s.st.users[s.cfg.userTokens[c.token].User])
		for _, id := range s.workspaceIDs() {
			if slices.Contains(mine, id) {
				ids = append(ids, id)
			}
		}
	default:
		for _, id := range s.workspaceIDs() {
			if s.granted[id] {
				ids = append(ids, id)
			}
		}
	}
	if v, ok := c.params["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > 1000 {
			return errResult("invalid_limit")
		}
	}
	page, next, res := paginate(ids, c.params.Get("cursor"), c.params.Get("limit"), 100)
	if res.set() {
		return res
	}
	icon, _ := boolParam(c.params, "include_icon")
	teams := make([]any, 0, len(page))
	for _, id := range page {
		w, _ := s.workspace(id)
		t := map[string]any{"id": w.ID, "name": w.Name}
		if icon {
			t["icon"] = s.teamIcon(w.ID)
		}
		teams = append(teams, t)
	}
	return okResult(map[string]any{"teams": teams, "response_metadata": map[string]any{"next_cursor": next}})
}

// teamIcon is a workspace's icon object, the sizes of team.info's. The
// fake serves no images: the URLs only have the right shape.
func (s *Server) teamIcon(id string) map[string]any {
	icon := map[string]any{"image_default": true}
	for _, n := range []int{34, 44, 68, 88, 102, 132, 230} {
		icon["image_"+strconv.Itoa(n)] = s.base + "/img/team_" + id + "_" + strconv.Itoa(n) + ".png"
	}
	return icon
}
