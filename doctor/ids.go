package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"
)

// How to find each kind of id in Slack, for the fixes (README.md, "Setting
// it up in a Slack workspace", step 6, says the same).
const (
	findUserID    = "a person's member ID is in their profile: ⋮ (More) → Copy member ID"
	findChannelID = "a channel's ID is at the bottom of its details: click the channel's name at the top, then see the About tab"
	findGroupID   = "a user group's ID (S…) is in the address of its page in a browser (…/usergroups/S…), or in usergroups.list"
)

// ids checks the settings that name users, a user group and channels:
// each exists, and the bot is in the channels it posts to.
func (r *run) ids(ctx context.Context, in *install) []Result {
	var out []Result
	skipped := func(name, what string) {
		out = append(out, Result{Section: secIDs, Name: name, Status: Skip, Detail: what + ": not checked, the bot token did not work"})
	}
	if len(r.cfg.Admins) == 0 && r.cfg.AdminGroup == "" {
		out = append(out, Result{Section: secIDs, Name: "VERDICTBOT_ADMINS", Status: Warn,
			Detail: "neither VERDICTBOT_ADMINS nor VERDICTBOT_ADMIN_GROUP is set: nobody may restore a verdict or change a channel's settings",
			Fix:    "set VERDICTBOT_ADMINS to the member IDs of your security team (" + findUserID + "), or VERDICTBOT_ADMIN_GROUP to their user group's ID"})
	}
	for _, id := range r.cfg.Admins {
		if in == nil {
			skipped("VERDICTBOT_ADMINS", id)
			continue
		}
		out = append(out, r.user(ctx, in, id))
	}
	if g := r.cfg.AdminGroup; g != "" {
		if in == nil {
			skipped("VERDICTBOT_ADMIN_GROUP", g)
		} else {
			out = append(out, r.group(ctx, in, g))
		}
	}
	alert := r.cfg.AlertChannel
	switch {
	case alert == "":
		out = append(out, Result{Section: secIDs, Name: "VERDICTBOT_ALERT_CHANNEL", Status: Skip,
			Detail: "not set (optional): recheck changes and quarantine's questions are not posted anywhere"})
	case in == nil:
		skipped("VERDICTBOT_ALERT_CHANNEL", alert)
	default:
		out = append(out, r.channel(ctx, in, "VERDICTBOT_ALERT_CHANNEL", alert))
	}
	switch report := r.cfg.ReportChannel; {
	case report == "" && alert == "":
		out = append(out, Result{Section: secIDs, Name: "VERDICTBOT_REPORT_CHANNEL", Status: Skip,
			Detail: "not set, nor VERDICTBOT_ALERT_CHANNEL (optional): Report to security is off"})
	case report == "" || report == alert:
		out = append(out, Result{Section: secIDs, Name: "VERDICTBOT_REPORT_CHANNEL", Status: Skip,
			Detail: "reports go to VERDICTBOT_ALERT_CHANNEL (checked above)"})
	case in == nil:
		skipped("VERDICTBOT_REPORT_CHANNEL", report)
	default:
		out = append(out, r.channel(ctx, in, "VERDICTBOT_REPORT_CHANNEL", report))
	}
	return out
}

// user checks one id of VERDICTBOT_ADMINS with users.info.
func (r *run) user(ctx context.Context, in *install, id string) Result {
	res := Result{Section: secIDs, Name: "VERDICTBOT_ADMINS"}
	u, err := within(ctx, r, func(ctx context.Context) (*slack.User, error) { return in.bot.GetUserInfoContext(ctx, id) })
	switch {
	case slackCode(err) == "user_not_found":
		res.Status, res.Detail = Fail, id+": no such user in the workspace (users.info: user_not_found)"
		res.Fix = "correct the id in VERDICTBOT_ADMINS: " + findUserID
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s: users.info: %s", id, slackProblem(err)), slackFix(err, fixBotToken)
	case u.Deleted:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s: @%s is deactivated", id, u.Name), "remove "+id+" from VERDICTBOT_ADMINS"
	case u.IsBot:
		res.Status, res.Detail = Warn, fmt.Sprintf("%s: @%s is a bot, not a person", id, u.Name)
		res.Fix = "put people's member IDs in VERDICTBOT_ADMINS: " + findUserID
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: @%s%s", id, u.Name, realName(u))
	}
	return res
}

func realName(u *slack.User) string {
	if u.RealName == "" || u.RealName == u.Name {
		return ""
	}
	return " (" + u.RealName + ")"
}

// group checks VERDICTBOT_ADMIN_GROUP with usergroups.users.list: on an
// org-wide install in each workspace granted to the app until one knows
// it (a group belongs to one workspace), as commands.AdminGroup does.
func (r *run) group(ctx context.Context, in *install, id string) Result {
	res := Result{Section: secIDs, Name: "VERDICTBOT_ADMIN_GROUP"}
	teams := []string{""}
	if in.orgWide() {
		var err error
		if teams, err = r.grantedTeams(ctx, in); err != nil {
			res.Status, res.Detail, res.Fix = Fail, id+": auth.teams.list: "+slackProblem(err), slackFix(err, fixBotToken)
			return res
		}
		if len(teams) == 0 {
			res.Status, res.Detail = Fail, id+": the org-wide install is granted no workspace yet, so no user group can be read"
			res.Fix = "an Org Admin must grant the app workspaces (docs/grid.md, \"Installing on Enterprise Grid\")"
			return res
		}
	}
	var members []string
	var err error
	for _, team := range teams {
		members, err = within(ctx, r, func(ctx context.Context) ([]string, error) {
			var opts []slack.GetUserGroupMembersOption
			if team != "" {
				opts = append(opts, slack.GetUserGroupMembersOptionTeamID(team))
			}
			return in.bot.GetUserGroupMembersContext(ctx, id, opts...)
		})
		if c := slackCode(err); c != "no_such_subteam" && c != "team_access_not_granted" {
			break
		}
	}
	switch {
	case slackCode(err) == "no_such_subteam" || slackCode(err) == "team_access_not_granted":
		res.Status, res.Detail = Fail, id+": no such user group (usergroups.users.list: no_such_subteam; a disabled group counts as none)"
		res.Fix = "correct VERDICTBOT_ADMIN_GROUP: " + findGroupID
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, id+": usergroups.users.list: "+slackProblem(err), slackFix(err, fixBotToken)
	case len(members) == 0:
		res.Status, res.Detail = Warn, id+": the group has no members: nobody is an admin through it"
		res.Fix = "add your security team to the group, or set VERDICTBOT_ADMINS"
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: %s", id, plural(len(members), "member"))
	}
	return res
}

// grantedTeams lists the workspaces an org-wide install is granted
// (auth.teams.list, every page; at most 50 pages of 200).
func (r *run) grantedTeams(ctx context.Context, in *install) ([]string, error) {
	var ids []string
	cursor := ""
	for range 50 {
		teams, next, err := within3(ctx, r, func(ctx context.Context) ([]slack.Team, string, error) {
			return in.bot.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 200, Cursor: cursor})
		})
		if err != nil {
			return nil, err
		}
		for _, t := range teams {
			ids = append(ids, t.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return ids, nil
}

// within3 is within for a call with two results.
func within3[A, B any](ctx context.Context, r *run, f func(context.Context) (A, B, error)) (A, B, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return f(ctx)
}

// channel checks a channel the bot posts to with conversations.info: it
// exists, is not archived, and the bot is a member.
func (r *run) channel(ctx context.Context, in *install, setting, id string) Result {
	res := Result{Section: secIDs, Name: setting}
	ch, err := within(ctx, r, func(ctx context.Context) (*slack.Channel, error) {
		return in.bot.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id})
	})
	switch {
	case slackCode(err) == "channel_not_found":
		res.Status = Fail
		res.Detail = id + ": no such channel for the bot (conversations.info: channel_not_found): a wrong id, or a private channel the bot was not invited to"
		res.Fix = fmt.Sprintf("check the id: %s; if the channel is private, type /invite @%s in it first", findChannelID, in.at.User)
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, id+": conversations.info: "+slackProblem(err), slackFix(err, fixBotToken)
	case ch.IsArchived:
		res.Status, res.Detail = Fail, fmt.Sprintf("%s (#%s) is archived: the bot cannot post there", id, ch.Name)
		res.Fix = "unarchive it, or set " + setting + " to another channel's ID: " + findChannelID
	case ch.IsIM || ch.IsMpIM:
		res.Status, res.Detail = Fail, id+" is a direct message, not a channel"
		res.Fix = "set " + setting + " to a channel's ID: " + findChannelID
	case !ch.IsMember:
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s (#%s): the bot is not a member, so it cannot post there", id, ch.Name)
		res.Fix = fmt.Sprintf("in #%s, type /invite @%s", ch.Name, in.at.User)
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s (#%s): the bot is a member", id, ch.Name)
	}
	return res
}

// slackCode is a Web API error's code ("channel_not_found"), "" for
// another error or none.
func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}
