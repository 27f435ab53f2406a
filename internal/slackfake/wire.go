package slackfake

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// This file renders the fake's records in Slack's wire format.

const created = 1700000000 // a fixed creation time for channels, users and bots

// messageJSON renders m as Slack's message object (history, API answers,
// events, interaction payloads).
func (s *Server) messageJSON(m *Message) map[string]any {
	o := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	if m.User != "" {
		o["user"] = m.User
		o["team"] = s.messageTeamLocked(m)
		if m.Team != "" {
			o["user_team"], o["source_team"] = m.Team, m.Team
		}
	}
	if m.Bot {
		o["bot_id"], o["app_id"] = s.cfg.botID, s.cfg.appID
		o["bot_profile"] = map[string]any{
			"id": s.cfg.botID, "app_id": s.cfg.appID, "name": s.cfg.botName,
			"deleted": false, "team_id": s.cfg.teamID, "updated": created,
			"icons": map[string]any{"image_36": s.base + "/img/bot_36.png"},
		}
	} else {
		if m.BotID != "" {
			o["bot_id"] = m.BotID
		}
		if m.AppID != "" {
			o["app_id"] = m.AppID
		}
	}
	if m.Username != "" {
		o["username"] = m.Username
	}
	if m.SubType != "" {
		o["subtype"] = m.SubType
	}
	if m.ThreadTS != "" {
		o["thread_ts"] = m.ThreadTS
		if root := s.st.message(m.Channel, m.ThreadTS); m.IsReply() && root != nil && root.User != "" {
			o["parent_user_id"] = root.User
		}
	}
	if len(m.Blocks) > 0 {
		o["blocks"] = m.Blocks
	}
	if len(m.Attachments) > 0 {
		o["attachments"] = m.Attachments
	}
	if len(m.Files) > 0 {
		files := make([]any, 0, len(m.Files))
		for _, id := range m.Files {
			switch f := s.st.files[id]; {
			case f == nil:
			case f.Deleted:
				// A deleted file stays in its messages as a tombstone
				// (what conversations.history shows for it; not in the
				// method docs, widely observed).
				files = append(files, map[string]any{"id": f.ID, "mode": "tombstone"})
			default:
				files = append(files, s.fileJSON(f))
			}
		}
		o["files"], o["upload"], o["display_as_bot"] = files, true, false
	}
	if m.EditedTS != "" {
		o["edited"] = map[string]any{"user": cmp.Or(m.User, m.BotID), "ts": m.EditedTS}
	}
	if m.clientMsgID != "" {
		o["client_msg_id"] = m.clientMsgID
	}
	if len(m.Reactions) > 0 {
		var rs []any
		for _, name := range slices.Sorted(maps.Keys(m.Reactions)) {
			users := m.Reactions[name]
			rs = append(rs, map[string]any{"name": name, "users": users, "count": len(users)})
		}
		o["reactions"] = rs
	}
	return o
}

// messageTeamLocked is a message's "team": its author's team (see
// authorTeamLocked) with an Org, else the external author's team or the
// workspace.
func (s *Server) messageTeamLocked(m *Message) string {
	if s.cfg.org == nil {
		return cmp.Or(m.Team, s.cfg.teamID)
	}
	return s.authorTeamLocked(s.st.channels[m.Channel], m.User, m.Team)
}

// channelJSON renders a conversation. A channel shared between workspaces
// of the org (two or more Teams) is is_org_shared with shared_team_ids and
// internal_team_ids; a Slack Connect channel is is_ext_shared with the
// other team in shared_team_ids. With an Org, context_team_id is the
// workspace of ours it is seen from (its first granted one).
func (s *Server) channelJSON(ch *Channel, withMembers bool) map[string]any {
	o := map[string]any{
		"id": ch.ID, "created": created, "is_archived": ch.Archived, "is_org_shared": false,
		"is_shared": false, "is_ext_shared": false, "is_pending_ext_shared": false,
		"context_team_id": s.cfg.teamID, "updated": created * 1000,
	}
	ext := ch.ExternalTeam != "" || ch.ExternalEnterprise != ""
	if s.grid() || ext {
		teams := s.channelTeamsLocked(ch)
		orgShared := s.grid() && len(teams) > 1
		o["is_org_shared"], o["is_ext_shared"], o["is_shared"] = orgShared, ext, orgShared || ext
		if orgShared || ext {
			shared := slices.Clone(teams)
			if ch.ExternalTeam != "" {
				shared = append(shared, ch.ExternalTeam)
			}
			o["shared_team_ids"] = shared
		}
		if orgShared {
			o["internal_team_ids"] = slices.Clone(teams)
		}
		if s.grid() {
			o["context_team_id"] = cmp.Or(s.channelAccessLocked(ch), teams[0])
		}
	}
	if ch.IM {
		o["is_im"], o["is_open"], o["user"], o["is_user_deleted"], o["priority"] = true, true, ch.IMUser, false, 0
		return o
	}
	o["name"], o["name_normalized"] = ch.Name, ch.Name
	o["is_channel"] = !ch.Private && !ch.MPIM
	o["is_group"] = ch.Private && !ch.MPIM
	o["is_mpim"] = ch.MPIM
	o["is_im"] = false
	o["is_private"] = ch.Private || ch.MPIM
	o["is_general"] = false
	o["is_member"] = !ch.NotMember
	o["creator"] = ""
	o["topic"] = map[string]any{"value": "", "creator": "", "last_set": 0}
	o["purpose"] = map[string]any{"value": "", "creator": "", "last_set": 0}
	o["previous_names"] = []string{}
	if withMembers {
		o["num_members"] = len(ch.Members)
	}
	return o
}

// userJSON renders a user. With an Org, team_id (and profile.team) is
// the user's home team and an org member has enterprise_user: the org and
// the workspaces they are in (docs.slack.dev user object "enterprise_user").
func (s *Server) userJSON(u *User) map[string]any {
	display := cmp.Or(u.DisplayName, u.Name)
	realName := cmp.Or(u.RealName, u.Name)
	tz := cmp.Or(u.TZ, "Europe/London")
	team := s.cfg.teamID
	if s.grid() || u.HomeTeam != "" {
		team = s.homeTeamLocked(u)
	}
	profile := map[string]any{
		"real_name": realName, "real_name_normalized": realName,
		"display_name": display, "display_name_normalized": display,
		"email": u.Email, "team": team,
	}
	if u.IsBot && u.ID == s.cfg.botUserID {
		profile["bot_id"] = s.cfg.botID
		profile["api_app_id"] = s.cfg.appID
	}
	o := map[string]any{
		"id": u.ID, "team_id": team, "name": u.Name, "deleted": u.Deleted,
		"real_name": realName, "tz": tz, "tz_label": tz, "tz_offset": 0,
		"is_admin": u.IsAdmin, "is_owner": u.IsOwner, "is_primary_owner": false,
		"is_restricted": u.IsRestricted, "is_ultra_restricted": false,
		"is_bot": u.IsBot, "is_app_user": false, "updated": created,
		"profile": profile,
	}
	if org := s.cfg.org; org != nil && !s.isExternalLocked(u) {
		o["enterprise_user"] = map[string]any{
			"id": u.ID, "enterprise_id": org.ID, "enterprise_name": org.Name,
			"is_admin": u.IsAdmin, "is_owner": u.IsOwner, "is_primary_owner": false,
			"teams": slices.Clone(s.userTeamsLocked(u)),
		}
	}
	return o
}

func (s *Server) fileJSON(f *File) map[string]any {
	mode := "hosted"
	if f.IsExternal {
		mode = "external"
	}
	o := map[string]any{
		"id": f.ID, "created": f.Created.Unix(), "timestamp": f.Created.Unix(),
		"name": f.Name, "title": f.Title, "mimetype": f.Mimetype, "filetype": f.Filetype,
		"pretty_type": strings.ToUpper(f.Filetype), "user": f.User, "user_team": s.cfg.teamID,
		"editable": false, "size": len(f.Content), "mode": mode, "is_external": f.IsExternal,
		"external_type": "", "is_public": false, "public_url_shared": false, "display_as_bot": false,
		"username": "", "url_private": f.URLPrivate, "url_private_download": f.URLPrivateDownload,
		"permalink": f.Permalink, "comments_count": 0, "has_rich_preview": false, "file_access": "visible",
	}
	if f.IsExternal {
		o["external_type"], o["external_url"] = "gdrive", f.ExternalURL
	}
	var chans, groups, ims []string
	public, private := map[string]any{}, map[string]any{}
	for _, id := range f.Channels {
		ch := s.st.channels[id]
		switch {
		case ch != nil && ch.IM:
			ims = append(ims, id)
		case ch != nil && (ch.Private || ch.MPIM):
			groups = append(groups, id)
		default:
			chans = append(chans, id)
		}
		var shares []any
		for _, m := range s.st.messages[id] {
			if slices.Contains(m.Files, f.ID) && !m.Deleted {
				sh := map[string]any{"ts": m.TS, "reply_users": []string{}, "reply_users_count": 0,
					"reply_count": 0, "team_id": s.cfg.teamID, "share_user_id": m.User}
				if ch != nil {
					sh["channel_name"] = ch.Name
				}
				if m.IsReply() {
					sh["thread_ts"] = m.ThreadTS
				}
				shares = append(shares, sh)
			}
		}
		if len(shares) == 0 {
			continue
		}
		if ch != nil && (ch.Private || ch.IM || ch.MPIM) {
			private[id] = shares
		} else {
			public[id] = shares
		}
	}
	o["channels"], o["groups"], o["ims"] = nonNilStrings(chans), nonNilStrings(groups), nonNilStrings(ims)
	shares := map[string]any{}
	if len(public) > 0 {
		shares["public"] = public
	}
	if len(private) > 0 {
		shares["private"] = private
	}
	o["shares"] = shares
	return o
}

func nonNilStrings(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// ensureChannelLocked registers a channel first seen in an event. Its type
// follows Slack's ID prefixes: C public, G private, D direct message.
func (s *Server) ensureChannelLocked(id string) *Channel {
	if ch := s.st.channels[id]; ch != nil {
		return ch
	}
	ch := &Channel{ID: id, Name: strings.ToLower(id), Private: strings.HasPrefix(id, "G"), IM: strings.HasPrefix(id, "D")}
	s.st.channels[id] = ch
	return ch
}

// ensureUserLocked registers a user first seen in an event.
func (s *Server) ensureUserLocked(id string) *User {
	if u := s.st.users[id]; u != nil {
		return u
	}
	u := &User{ID: id, Name: strings.ToLower(id)}
	s.st.users[id] = u
	return u
}
