package quarantine

import (
	"context"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"unicode"

	"github.com/slack-go/slack"
)

// A release re-posts a removed message as the bot, and the bot must not
// ping anyone for its author: every mention in what is re-posted — the
// header, the text, the blocks, the attachments — is shown as plain text,
// a name and not a ping.
//
// What notifies (docs.slack.dev/messaging/formatting-message-text, the
// text object's verbatim, chat.postMessage's parse and link_names):
// <@U…>/<@W…>, <!here>, <!channel>, <!everyone>, <!subteam^S…> (each with
// or without |label) in the text, in mrkdwn text objects and in
// attachments; rich_text user, usergroup and broadcast elements; a plain
// @here in a mrkdwn object that is not verbatim, or in the text with
// parse=full or link_names. The re-post is sent with parse=none and
// link_names=false, every mrkdwn object verbatim, and every sequence that
// starts with @ or ! replaced by its plain form: "@name" from users.info,
// "@handle" from usergroups.list, "@here", a date's fallback text. A
// sequence written with HTML entities (&lt;!channel&gt;) or with invisible
// characters inside it (zero-width spaces, joiners) is taken for the
// sequence itself: whether Slack would decode it is not documented, so it
// is made inert too. Channel links (<#C…>) notify nobody and stay, as do
// links.
//
// Interactive parts (buttons, menus, legacy attachment actions) are
// dropped: on the bot's own post their clicks would come to the bot, and
// a button of a released message must not press ours (a Release or Remove
// all with another message's value).

// maxNameLookups bounds the users.info calls of one release (Tier 4, 100+
// per minute): beyond it a mention shows its label or "@someone".
const maxNameLookups = 20

// Neutral names for a mention whose name is unknown.
const (
	someone   = "someone"
	someGroup = "a group"
)

// quieter renders a released message without mentions. It looks names up
// once per release.
type quieter struct {
	ctx     context.Context
	bot     BotAPI
	users   map[string]string // id → name ("" when unknown)
	groups  map[string]string // id → handle
	loaded  bool              // usergroups.list was called
	lookups int
	// teams are the workspaces of an org-wide install: usergroups.list
	// is asked in each (it needs a team_id with an org-level token).
	teams []string
}

// maxGroupTeams bounds the workspaces whose groups are listed to name the
// groups of one released message.
const maxGroupTeams = 20

func newQuieter(ctx context.Context, bot BotAPI, teams ...string) *quieter {
	return &quieter{ctx: ctx, bot: bot, users: map[string]string{}, teams: teams}
}

// plainName keeps what can be shown of a name: no angle brackets, no
// ampersand, no invisible characters, no leading @, at most 80 runes.
func plainName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '<' || r == '>' || r == '&' || r == '|':
			return -1
		case unicode.Is(unicode.Cf, r), unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "@"))
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80])
	}
	return s
}

// user is the plain name of a user id: the display name (else real name,
// else user name) from users.info, else the mention's label, else
// "someone".
func (qt *quieter) user(id, label string) string {
	name, known := qt.users[id]
	if !known && qt.bot != nil && qt.lookups < maxNameLookups && validID(id) {
		qt.lookups++
		if u, err := qt.bot.GetUserInfoContext(qt.ctx, id); err == nil && u != nil {
			name = plainName(firstNonEmpty(u.Profile.DisplayName, u.RealName, u.Profile.RealName, u.Name))
		}
		qt.users[id] = name
	}
	return "@" + firstNonEmpty(name, plainName(label), someone)
}

// group is the plain handle of a user group: from usergroups.list, else
// the mention's label, else "a group".
func (qt *quieter) group(id, label string) string {
	if !qt.loaded && qt.bot != nil {
		qt.loaded = true
		qt.groups = map[string]string{}
		teams := qt.teams
		if len(teams) == 0 {
			teams = []string{""}
		}
		for _, team := range teams[:min(len(teams), maxGroupTeams)] {
			opts := []slack.GetUserGroupsOption{slack.GetUserGroupsOptionIncludeDisabled(true)}
			if team != "" {
				opts = append(opts, slack.GetUserGroupsOptionTeamID(team))
			}
			if gs, err := qt.bot.GetUserGroupsContext(qt.ctx, opts...); err == nil {
				for _, g := range gs {
					qt.groups[g.ID] = plainName(firstNonEmpty(g.Handle, g.Name))
				}
			}
		}
	}
	if h := firstNonEmpty(qt.groups[id], plainName(label)); h != "" {
		return "@" + h
	}
	return someGroup
}

func validID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// sequenceRE matches a control sequence of Slack's formatting: an opening
// angle bracket, its content, and the closing one, each bracket either
// written out or as an HTML entity (&lt; &#60; &#x3c;, also escaped again
// as &amp;lt;).
var sequenceRE = regexp.MustCompile(`(?i)(?:<|&(?:amp;)*(?:lt|#0*60|#x0*3c);)((?:[^<>&]|&(?:amp;)*#?[a-z0-9]+;)*?)(?:>|&(?:amp;)*(?:gt|#0*62|#x0*3e);)`)

// unescapeAll decodes HTML entities, again while that changes something
// (&amp;lt; too), and drops invisible format characters.
func unescapeAll(s string) string {
	for range 4 {
		d := html.UnescapeString(s)
		if d == s {
			break
		}
		s = d
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// text returns s with every mention sequence replaced by its plain form.
// s is mrkdwn as Slack stores it (or a rich_text element's literal text):
// a plain form never holds an angle bracket or an ampersand, so it cannot
// be read as a sequence again. Replacing can join what was around a
// sequence into a new one ("<" + "<@U1>" + ">"), so it runs until nothing
// changes; a text still not quiet after that loses its brackets.
func (qt *quieter) text(s string) string {
	for range 8 {
		out := sequenceRE.ReplaceAllStringFunc(s, func(seq string) string {
			inner := sequenceRE.FindStringSubmatch(seq)[1]
			plain, ok := qt.plain(unescapeAll(inner))
			if !ok {
				return seq // a link or a channel: no ping
			}
			return plain
		})
		if out == s {
			return s
		}
		s = out
	}
	return strings.NewReplacer("<", "", ">", "", "&lt;", "", "&gt;", "").Replace(s)
}

// plain is the plain form of a sequence's decoded content; ok is false
// for one that notifies nobody (a link, a channel).
func (qt *quieter) plain(inner string) (string, bool) {
	inner = strings.TrimSpace(inner)
	target, label, _ := strings.Cut(inner, "|")
	target = strings.TrimSpace(target)
	switch {
	case strings.HasPrefix(target, "@"):
		return qt.user(strings.ToUpper(strings.TrimSpace(target[1:])), label), true
	case strings.HasPrefix(target, "!"):
		cmd := strings.TrimSpace(target[1:])
		word, arg, _ := strings.Cut(cmd, "^")
		switch strings.ToLower(word) {
		case "here", "channel", "everyone":
			return "@" + strings.ToLower(word), true
		case "subteam":
			id, _, _ := strings.Cut(arg, "^")
			return qt.group(strings.ToUpper(strings.TrimSpace(id)), label), true
		case "date":
			return firstNonEmpty(plainName(label), "(a date)"), true
		}
		return firstNonEmpty(plainName(label), plainName(word), "(a mention)"), true
	}
	return "", false
}

// interactive are the block element types whose clicks come to the app
// that posted them.
var interactive = map[string]bool{
	"button": true, "static_select": true, "external_select": true, "users_select": true, "conversations_select": true,
	"channels_select": true, "multi_static_select": true, "multi_external_select": true, "multi_users_select": true,
	"multi_conversations_select": true, "multi_channels_select": true, "overflow": true, "datepicker": true,
	"timepicker": true, "datetimepicker": true, "checkboxes": true, "radio_buttons": true, "plain_text_input": true,
	"email_text_input": true, "url_text_input": true, "number_input": true, "workflow_button": true, "rich_text_input": true,
	"file_input": true,
}

// blocks returns the message's blocks made quiet (see the package
// comment of this file), as JSON values to post unchanged.
func (qt *quieter) blocks(raw json.RawMessage) []json.RawMessage {
	var list []any
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []json.RawMessage
	for _, b := range list {
		m, ok := b.(map[string]any)
		if !ok {
			continue
		}
		switch m["type"] {
		case "actions", "input":
			continue // only buttons, menus and fields: nothing to read
		}
		if acc, ok := m["accessory"].(map[string]any); ok && interactive[str(acc["type"])] {
			delete(m, "accessory")
		}
		if js, err := json.Marshal(qt.walk(m)); err == nil {
			out = append(out, js)
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// walk makes one part of a block (or attachment) quiet: mention elements
// become text, mrkdwn objects verbatim, every string's sequences plain,
// interactive elements dropped.
func (qt *quieter) walk(v any) any {
	switch x := v.(type) {
	case string:
		return qt.text(x)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if m, ok := e.(map[string]any); ok && interactive[str(m["type"])] {
				continue
			}
			out = append(out, qt.walk(e))
		}
		return out
	case map[string]any:
		switch str(x["type"]) {
		case "user":
			return textElement(qt.user(strings.ToUpper(str(x["user_id"])), ""), x["style"])
		case "usergroup":
			return textElement(qt.group(strings.ToUpper(str(x["usergroup_id"])), ""), x["style"])
		case "broadcast":
			word := strings.ToLower(plainName(str(x["range"])))
			return textElement("@"+firstNonEmpty(word, "here"), x["style"])
		case "mrkdwn":
			x["verbatim"] = true
		}
		for k, e := range x {
			x[k] = qt.walk(e)
		}
		return x
	}
	return v
}

func textElement(text string, style any) map[string]any {
	el := map[string]any{"type": "text", "text": text}
	if style != nil {
		el["style"] = style
	}
	return el
}

// attachments returns the message's attachments made quiet, without link
// previews (unfurls: from_url, original_url; re-posted with unfurls off,
// they are left out) and without legacy actions.
func (qt *quieter) attachments(raw json.RawMessage) []slack.Attachment {
	var list []map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []slack.Attachment
	for _, a := range list {
		if a["from_url"] != nil || a["original_url"] != nil || a["is_app_unfurl"] != nil || a["app_unfurl_url"] != nil {
			continue
		}
		delete(a, "actions")
		delete(a, "callback_id")
		if bl, ok := a["blocks"]; ok {
			js, _ := json.Marshal(bl)
			quiet := qt.blocks(js)
			arr := make([]any, 0, len(quiet))
			for _, q := range quiet {
				var v any
				if json.Unmarshal(q, &v) == nil {
					arr = append(arr, v)
				}
			}
			a["blocks"] = arr
		}
		for k, v := range a {
			if k != "blocks" {
				a[k] = qt.walk(v)
			}
		}
		js, err := json.Marshal(a)
		if err != nil {
			continue
		}
		var att slack.Attachment
		if json.Unmarshal(js, &att) == nil {
			out = append(out, att)
		}
	}
	return out
}

// rawBlock is a block posted as the JSON it holds.
type rawBlock json.RawMessage

func (b rawBlock) BlockType() slack.MessageBlockType {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &t)
	return slack.MessageBlockType(t.Type)
}

func (b rawBlock) ID() string {
	var t struct {
		ID string `json:"block_id"`
	}
	_ = json.Unmarshal(b, &t)
	return t.ID
}

// MarshalJSON returns the block as it is.
func (b rawBlock) MarshalJSON() ([]byte, error) { return b, nil }
