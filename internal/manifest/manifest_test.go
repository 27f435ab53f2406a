package manifest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/slack-go/slack"
	"go.yaml.in/yaml/v3"

	"github.com/verdictbot/verdictbot"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/manifest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/triage"
)

const (
	// repoRoot is the module root, seen from this package's directory.
	repoRoot     = "../.."
	manifestFile = repoRoot + "/manifest.yaml"
	// schemaFile is Slack's public schema for manifests of major version 1
	// (slackapi/manifest-schema, schemas/manifest.schema.1.0.0.json, MIT
	// licence), copied into testdata/ (see testdata/README.md).
	schemaFile = "testdata/manifest.schema.1.0.0.json"
)

// ---- the schema ------------------------------------------------------------

// compileSchema compiles Slack's manifest schema from testdata, offline.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	abs, err := filepath.Abs(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("Slack's manifest schema must be in the repository: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7) // the file says draft-07 too
	c.UseRegexpEngine(compileSchemaRegexp)
	c.UseLoader(offlineLoader{local: abs})
	sch, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("compiling %s: %v", abs, err)
	}
	return sch
}

// offlineLoader loads the schema's $refs without the network. The 1.0.0
// file only refers to itself (#/definitions/…); the entry point of
// slackapi/manifest-schema (manifest.schema.json) refers to the versioned
// files on raw.githubusercontent.com, so a
// remote reference to a file of the same name is mapped to the local copy.
// Any other remote reference fails, naming itself, rather than being
// fetched.
type offlineLoader struct{ local string }

func (l offlineLoader) Load(url string) (any, error) {
	switch {
	case strings.HasPrefix(url, "file:"):
		return jsonschema.FileLoader{}.Load(url)
	case path.Base(strings.SplitN(url, "#", 2)[0]) == filepath.Base(l.local):
		return jsonschema.FileLoader{}.Load("file://" + filepath.ToSlash(l.local))
	}
	return nil, fmt.Errorf("the manifest schema refers to %s, which is not available offline: copy it into the shared docs and map it in offlineLoader", url)
}

// schemaRegexp is a pattern of the schema compiled for Go.
type schemaRegexp struct {
	src string
	// not, when set, must not match at the start of the string.
	not  *regexp.Regexp
	rest *regexp.Regexp
}

func (r *schemaRegexp) MatchString(s string) bool {
	if r.not != nil && r.not.MatchString(s) {
		return false
	}
	return r.rest.MatchString(s)
}

func (r *schemaRegexp) String() string { return r.src }

// compileSchemaRegexp compiles the schema's patterns (ECMA-262 syntax) with
// Go's regexp (RE2). One construct of the schema is not RE2: a leading
// negative lookahead, "^(?![\.\-])([-a-z0-9\.])+([a-z0-9])$" for
// unfurl_domains and outgoing_domains (a domain may not start with "." or
// "-"). "^(?!X)R" at the start of a pattern means "X does not match at the
// start, and ^R matches", which is how it is matched here. Any other
// construct RE2 lacks fails to compile, so a new one is noticed.
func compileSchemaRegexp(src string) (jsonschema.Regexp, error) {
	r := &schemaRegexp{src: src}
	rest := src
	if strings.HasPrefix(src, "^(?!") {
		end := closingParen(src, len("^"))
		if end < 0 {
			return nil, fmt.Errorf("pattern %q: unbalanced lookahead", src)
		}
		not, err := regexp.Compile("^(?:" + src[len("^(?!"):end] + ")")
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", src, err)
		}
		r.not, rest = not, "^"+src[end+1:]
	}
	re, err := regexp.Compile(rest)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	r.rest = re
	return r, nil
}

// closingParen returns the index of the ")" closing the group opened at
// src[open], skipping escapes and character classes; -1 if none.
func closingParen(src string, open int) int {
	depth, inClass := 0, false
	for i := open; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// instance turns YAML into the JSON value the validator expects (Slack
// accepts a manifest as YAML or JSON, the same structure either way).
func instance(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("manifest YAML: %v", err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("manifest as JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func readManifest(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func loadManifest(t *testing.T) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Load(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManifestMatchesSlackSchema(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	if err := sch.Validate(instance(t, readManifest(t))); err != nil {
		t.Fatalf("manifest.yaml does not match Slack's schema:\n%v", err)
	}
}

// TestSchemaRejectsBrokenManifests proves the validator bites: copies of
// manifest.yaml with one mistake each must fail, at the right place.
func TestSchemaRejectsBrokenManifests(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	orig := string(readManifest(t))
	for _, tc := range []struct {
		name     string
		old, new string
		// the leaf error expected: where, and what kind.
		at   string
		want func(jsonschema.ErrorKind) bool
	}{
		{
			name: "misspelled socket mode key",
			old:  "socket_mode_enabled: true", new: "socket_mode: true",
			at: "/settings",
			want: func(k jsonschema.ErrorKind) bool {
				ap, ok := k.(*kind.AdditionalProperties)
				return ok && slices.Equal(ap.Properties, []string{"socket_mode"})
			},
		},
		{
			name: "command without its slash",
			old:  "- command: /scan", new: "- command: scan",
			at: "/features/slash_commands/0/command",
			want: func(k jsonschema.ErrorKind) bool {
				p, ok := k.(*kind.Pattern)
				return ok && p.Got == "scan"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if strings.Count(orig, tc.old) != 1 {
				t.Fatalf("manifest.yaml should contain %q once; update this test", tc.old)
			}
			broken := strings.Replace(orig, tc.old, tc.new, 1)
			err := sch.Validate(instance(t, []byte(broken)))
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("validation of the broken copy: got %v, want a validation error", err)
			}
			found := false
			for _, leaf := range leaves(ve) {
				if "/"+strings.Join(leaf.InstanceLocation, "/") == tc.at && tc.want(leaf.ErrorKind) {
					found = true
				}
			}
			if !found {
				t.Errorf("the error does not point at %s as expected:\n%v", tc.at, err)
			}
		})
	}
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func TestSchemaRegexpLookahead(t *testing.T) {
	t.Parallel()
	const domain = `^(?![\.\-])([-a-z0-9\.])+([a-z0-9])$` // as in the schema
	re, err := compileSchemaRegexp(domain)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"example.com": true, "a-b.example": true, "ab": true,
		".example.com": false, "-example.com": false, "example.com.": false,
		"a": false, "Example.com": false, "": false,
	} {
		if got := re.MatchString(s); got != want {
			t.Errorf("%s matches %q: %v, want %v", domain, s, got, want)
		}
	}
	if _, err := compileSchemaRegexp(`^a(?=b)`); err == nil {
		t.Error("a lookahead elsewhere than at the start compiled; want an error")
	}
}

// ---- what the code needs ---------------------------------------------------

func TestManifestIsSocketMode(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	if m.Metadata.MajorVersion != 1 {
		t.Errorf("_metadata.major_version = %d, want 1 (schema 1.0.0)", m.Metadata.MajorVersion)
	}
	s := m.Settings
	if !s.SocketModeEnabled {
		t.Error("settings.socket_mode_enabled is not true: the bot only speaks Socket Mode")
	}
	if !s.Interactivity.IsEnabled {
		t.Error("settings.interactivity.is_enabled is not true: the card buttons and the shortcut need it")
	}
	// Org-wide installs on Enterprise Grid (issue 24); a single
	// workspace installs it as before.
	if !s.OrgDeployEnabled {
		t.Error("org_deploy_enabled is not true: an Org Admin could not install it org-wide on Enterprise Grid")
	}
	if s.TokenRotationEnabled {
		t.Error("token_rotation_enabled is true; the bot uses a long-lived xoxb token")
	}
	// The Home tab and the Messages tab, where people write to the bot.
	if h := m.Features.AppHome; !h.HomeTabEnabled || !h.MessagesTabEnabled || h.MessagesTabReadOnlyEnabled {
		t.Errorf("features.app_home = %+v, want the Home and Messages tabs on, Messages not read-only", h)
	}
	if m.Features.BotUser.DisplayName != "verdictbot" || !m.Features.BotUser.AlwaysOnline {
		t.Errorf("features.bot_user = %+v, want display_name verdictbot, always_online", m.Features.BotUser)
	}
	// Socket Mode apps have no public endpoint: any URL would be a leftover
	// of an HTTP set-up.
	var doc any
	if err := yaml.Unmarshal(readManifest(t), &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc, "", func(at string) {
		if k := path.Base(at); k == "request_url" || k == "url" || k == "message_menu_options_url" {
			t.Errorf("%s is set: a Socket Mode app has no request URL", at)
		}
	})
}

// walk calls fn with the path of every key of a decoded YAML document.
func walk(v any, at string, fn func(at string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			fn(at + "/" + k)
			walk(c, at+"/"+k, fn)
		}
	case []any:
		for i, c := range v {
			walk(c, fmt.Sprintf("%s/%d", at, i), fn)
		}
	}
}

func TestManifestSlashCommand(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	if n := len(m.Features.SlashCommands); n != 1 {
		t.Fatalf("%d slash commands, want exactly one, /scan", n)
	}
	c, ok := m.SlashCommand("/scan")
	if !ok {
		t.Fatalf("the slash command is %q, want /scan", m.Features.SlashCommands[0].Command)
	}
	if c.Description == "" || c.UsageHint == "" {
		t.Errorf("/scan needs a description and a usage_hint: %+v", c)
	}
	if c.ShouldEscape {
		t.Error("/scan has should_escape true; the parser takes both forms, and users should see back what they typed")
	}
}

func TestManifestShortcut(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	want := []manifest.Shortcut{{Name: "Scan this message", Type: "message", CallbackID: commands.ShortcutScanMessage},
		{Name: "Report to security", Type: "message", CallbackID: triage.ShortcutReport}}
	got := slices.Clone(m.Features.Shortcuts)
	for i := range got {
		if got[i].Description == "" {
			t.Errorf("shortcut %q has no description", got[i].CallbackID)
		}
		got[i].Description = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shortcuts = %+v, want %+v", got, want)
	}
}

func TestManifestBotEvents(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	// The events bot.Bot handles (slackevents.MessageEvent, FileSharedEvent,
	// AppHomeOpenedEvent, AppMentionEvent).
	want := []string{
		"app_home_opened",       // the Home tab is published for whoever opens it
		"app_mention",           // @verdictbot: help, or scan the thread's root
		"file_shared",           // files shared in a channel → the sandbox
		"member_joined_channel", // VERDICTBOT_BACKFILL_ON_JOIN: the bot added to a channel checks its history
		"message.channels",      // messages in public channels the bot is in
		"message.groups",        // messages in private channels the bot is in
		"message.im",            // links and files sent to the bot in its Messages tab
		"reaction_added",        // VERDICTBOT_REPORT_EMOJI: a reaction reports a message to security
		"team_access_granted",   // Enterprise Grid: an Org Admin granted workspaces to the org-wide install
		"team_access_revoked",   // … or revoked them
	}
	got := sorted(m.Settings.EventSubscriptions.BotEvents)
	if !slices.Equal(got, want) {
		t.Errorf("settings.event_subscriptions.bot_events = %q, want %q (only DMs to the bot are read, on request: no message.mpim)", got, want)
	}
	if len(m.Settings.EventSubscriptions.UserEvents) > 0 {
		t.Errorf("user_events = %q; the app has no user token", m.Settings.EventSubscriptions.UserEvents)
	}
}

// wantBotScopes are the bot scopes, each with the calls or events that
// need it. Adding a scope means a reinstall for every workspace (events
// only arrive for the scopes granted): keep it exact.
var wantBotScopes = []string{
	"channels:history",  // message.channels; conversations.replies in public channels (cards.ThreadSearch finds a card after a crash)
	"groups:history",    // message.groups; conversations.replies in private channels
	"chat:write",        // chat.postMessage (cards, recheck replies, alerts), chat.update, chat.postEphemeral
	"reactions:write",   // reactions.add / reactions.remove (the clean reaction in quiet channels)
	"reactions:read",    // reaction_added: the VERDICTBOT_REPORT_EMOJI reaction reports a message
	"files:read",        // file_shared, files.info, downloading url_private_download with the bot token
	"files:write",       // files.getUploadURLExternal + files.completeUploadExternal (screenshots in the thread)
	"commands",          // the /scan slash command and the "Scan this message" shortcut
	"usergroups:read",   // usergroups.users.list (VERDICTBOT_ADMIN_GROUP, commands.AdminGroup)
	"channels:read",     // users.conversations, conversations.members (the bot's channels and who is in them: what /scan and the Home show whom)
	"groups:read",       // the same for private channels
	"im:history",        // message.im: links and files sent to the bot in its Messages tab
	"app_mentions:read", // app_mention: @verdictbot in a channel
	"users:read",        // users.info: the admin token's user is an admin or owner (quarantine.Quarantine.Check)
	"team:read",         // team.info: the workspace's email domains, protected from lookalikes (app.learnDomains)
}

// wantUserScopes are the user scopes of SLACK_ADMIN_USER_TOKEN (quarantine
// only): chat.delete and files.delete as a workspace admin.
var wantUserScopes = []string{"chat:write", "files:write"}

func TestManifestScopes(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	got := m.OAuthConfig.Scopes.Bot
	if dup := duplicates(got); len(dup) > 0 {
		t.Errorf("oauth_config.scopes.bot lists %q more than once", dup)
	}
	if !slices.Equal(sorted(got), sorted(wantBotScopes)) {
		t.Errorf("oauth_config.scopes.bot = %q\nwant exactly %q", sorted(got), sorted(wantBotScopes))
	}
	if u := m.OAuthConfig.Scopes.User; !slices.Equal(sorted(u), sorted(wantUserScopes)) {
		t.Errorf("oauth_config.scopes.user = %q\nwant exactly %q (the admin token deletes messages and files, nothing more)", sorted(u), sorted(wantUserScopes))
	}
}

// TestEmbeddedIsTheFile: the manifest built into the binary (Embedded,
// which `verdictbot doctor` compares the granted scopes with) is
// manifest.yaml, and the fake Slack's bot token has its scopes by default.
func TestEmbeddedIsTheFile(t *testing.T) {
	t.Parallel()
	file, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, verdictbot.Manifest) {
		t.Fatal("verdictbot.Manifest differs from manifest.yaml")
	}
	m, err := manifest.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, loadManifest(t)) {
		t.Error("Embedded() differs from Load(manifest.yaml)")
	}
	if got, want := sorted(slackfake.DefaultBotScopes), sorted(m.OAuthConfig.Scopes.Bot); !slices.Equal(got, want) {
		t.Errorf("slackfake.DefaultBotScopes = %q\nwant manifest.yaml's bot scopes %q", got, want)
	}
}

// webAPIScopes are the bot scopes of the Slack Web API methods the code
// may call, by slack-go method (docs.slack.dev/reference/methods/<method>,
// "Required scopes"). conversations.* methods need the history scope of
// each conversation type they read: the bot reads public and private
// channels, and its own DMs (the Messages tab), never group DMs.
var webAPIScopes = map[string][]string{
	"AuthTestContext":                {},                                                   // auth.test
	"ListTeamsContext":               {},                                                   // auth.teams.list (no scope: an org-wide install's granted workspaces)
	"GetConversationRepliesContext":  {"channels:history", "groups:history", "im:history"}, // conversations.replies (a card's thread in a DM too)
	"GetConversationHistoryContext":  {"channels:history", "groups:history"},               // conversations.history
	"GetConversationInfoContext":     {"channels:read", "groups:read"},                     // conversations.info
	"PostMessageContext":             {"chat:write"},                                       // chat.postMessage
	"UpdateMessageContext":           {"chat:write"},                                       // chat.update
	"PostEphemeralContext":           {"chat:write"},                                       // chat.postEphemeral
	"DeleteMessageContext":           {"chat:write"},                                       // chat.delete
	"DeleteFileContext":              {"files:write"},                                      // files.delete (admin token)
	"GetPermalinkContext":            {},                                                   // chat.getPermalink
	"AddReactionContext":             {"reactions:write"},                                  // reactions.add
	"RemoveReactionContext":          {"reactions:write"},                                  // reactions.remove
	"GetFileInfoContext":             {"files:read"},                                       // files.info
	"GetFileContext":                 {"files:read"},                                       // download of url_private(_download)
	"UploadFileContext":              {"files:write"},                                      // files.getUploadURLExternal + files.completeUploadExternal
	"GetUserGroupMembersContext":     {"usergroups:read"},                                  // usergroups.users.list
	"GetUserInfoContext":             {"users:read"},                                       // users.info
	"GetTeamInfoContext":             {"team:read"},                                        // team.info (the email domains, protected from lookalikes)
	"GetOtherTeamInfoContext":        {"team:read"},                                        // team.info of a granted workspace (org-wide install)
	"GetBotInfoContext":              {"users:read"},                                       // bots.info
	"OpenViewContext":                {},                                                   // views.open (a trigger_id is the permission)
	"UpdateViewContext":              {},                                                   // views.update
	"GetUsersInConversationContext":  {"channels:read", "groups:read"},                     // conversations.members
	"JoinConversationContext":        {"channels:join"},                                    // conversations.join
	"SendAuthRevokeContext":          {},                                                   // auth.revoke
	"GetUserGroupsContext":           {"usergroups:read"},                                  // usergroups.list
	"GetConversationsForUserContext": {"channels:read", "groups:read"},                     // users.conversations
	"PublishViewContext":             {},                                                   // views.publish (no scope: the app's own Home)
	"StartSocketModeContext":         {},                                                   // apps.connections.open (verdictbot doctor): the app-level token's connections:write, no bot scope
}

func TestWebAPIScopesNameRealMethods(t *testing.T) {
	t.Parallel()
	api := reflect.TypeFor[*slack.Client]()
	for method := range webAPIScopes {
		if _, ok := api.MethodByName(method); !ok {
			t.Errorf("webAPIScopes: *slack.Client has no method %s", method)
		}
	}
}

// eventScopes are the bot scopes each event subscription needs
// (docs.slack.dev/reference/events/<event>, "Required scopes").
var eventScopes = map[string][]string{
	"message.channels": {"channels:history"},
	"message.groups":   {"groups:history"},
	"message.im":       {"im:history"},
	"message.mpim":     {"mpim:history"},
	"file_shared":      {"files:read"},
	"app_mention":      {"app_mentions:read"},
	"reaction_added":   {"reactions:read"},
	// member_joined_channel: "channels:read, groups:read" (either).
	"member_joined_channel": {"channels:read"},
	// Sent to org-wide installs (Enterprise Grid) when an Org Admin adds
	// or removes a workspace; no scope ("Required scopes: none").
	"team_access_granted": {},
	"team_access_revoked": {},
	"app_home_opened":     {}, // no scope (docs.slack.dev/reference/events/app_home_opened)
}

// TestScopesFollowTheCode derives the scopes from the code: the Web API
// methods of *slack.Client called anywhere in the program (not tests), the
// events subscribed to, and the slash command and shortcut. A new call
// without its scope, or a scope no call needs any more, fails here.
func TestScopesFollowTheCode(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	calls := slackCalls(t)
	for _, method := range sortedKeys(calls) {
		t.Logf("%s: %s", method, strings.Join(calls[method], " "))
	}
	need := map[string][]string{} // scope → why
	for method, where := range calls {
		scopes, ok := webAPIScopes[method]
		if !ok {
			t.Errorf("%s calls (*slack.Client).%s, which has no entry in webAPIScopes: add its scopes (docs.slack.dev, the method's \"Required scopes\") there and to manifest.yaml", where[0], method)
			continue
		}
		for _, s := range scopes {
			need[s] = append(need[s], method)
		}
	}
	for _, ev := range m.Settings.EventSubscriptions.BotEvents {
		scopes, ok := eventScopes[ev]
		if !ok {
			t.Errorf("bot event %s has no entry in eventScopes", ev)
		}
		for _, s := range scopes {
			need[s] = append(need[s], "event "+ev)
		}
	}
	if len(m.Features.SlashCommands) > 0 || len(m.Features.Shortcuts) > 0 {
		need["commands"] = append(need["commands"], "slash command / shortcut")
	}
	have := m.OAuthConfig.Scopes.Bot
	for _, s := range sortedKeys(need) {
		if !slices.Contains(have, s) {
			t.Errorf("the code needs %s (for %s) but manifest.yaml does not request it", s, strings.Join(need[s], ", "))
		}
	}
	for _, s := range have {
		if _, ok := need[s]; !ok {
			t.Errorf("manifest.yaml requests %s but no call, event or feature of the code needs it", s)
		}
	}
	// The scan must have found the calls we know of, or it is broken.
	for _, known := range []string{"PostMessageContext", "GetConversationRepliesContext", "GetFileInfoContext", "UploadFileContext"} {
		if _, ok := calls[known]; !ok {
			t.Errorf("found no call of %s in the code; the source scan is broken (or the code changed: update this list)", known)
		}
	}
}

// slackCalls finds the Web API methods of *slack.Client called in the
// program's Go files (tests, the fake Slack and the simulator excluded),
// by method name: a call x.Name(…) where *slack.Client has a method Name
// that ends in "Context", or whose "…Context" variant exists. It returns
// method (with "Context") → the positions of the calls.
func slackCalls(t *testing.T) map[string][]string {
	t.Helper()
	api := reflect.TypeFor[*slack.Client]()
	isAPI := func(name string) (string, bool) {
		if !strings.HasSuffix(name, "Context") {
			name += "Context"
		}
		_, ok := api.MethodByName(name)
		return name, ok
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	skipDirs := map[string]bool{"internal/slackfake": true, "sim": true, "testdata": true, "vendor": true}
	calls := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipDirs[rel] || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		// A call through an imported package (sort.Search) is a function,
		// not a method of *slack.Client.
		pkgs := map[string]bool{}
		for _, imp := range f.Imports {
			ip := strings.Trim(imp.Path.Value, `"`)
			name := path.Base(ip)
			if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
				name = path.Base(path.Dir(ip)) // math/rand/v2, github.com/jackc/pgx/v5
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			pkgs[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
						return true
					}
					if method, ok := isAPI(sel.Sel.Name); ok {
						pos := fset.Position(sel.Sel.Pos())
						calls[method] = append(calls[method], fmt.Sprintf("%s:%d", rel, pos.Line))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("scanning the code for Slack calls: %v", err)
	}
	return calls
}

// ---- the /scan registry ----------------------------------------------------

// TestUsageHintMatchesTheRegistry holds the usage_hint of /scan to the
// registry the bot serves: the same subcommands (CheckRegistry), and for
// each named subcommand the same arguments as its Usage. The bare form is
// shortened in the hint ("[url…]").
func TestUsageHintMatchesTheRegistry(t *testing.T) {
	t.Parallel()
	reg := commands.NewScanRegistry(nil)
	c, ok := loadManifest(t).SlashCommand(reg.Slash)
	if !ok {
		t.Fatalf("manifest.yaml has no %s, the registry's command", reg.Slash)
	}
	manifest.CheckRegistry(t, reg.Names(), c.UsageHint)
	for alt := range strings.SplitSeq(c.UsageHint, " | ") {
		name := manifest.HintSubcommands(alt)[0]
		cmd, ok := reg.Lookup(name)
		if !ok || name == "" {
			continue // reported by CheckRegistry, or the bare form
		}
		if got, want := reg.Slash+" "+strings.TrimSpace(alt), reg.UsageOf(cmd); got != want {
			t.Errorf("usage_hint says %q, the registry %q", got, want)
		}
	}
}

func TestHintSubcommands(t *testing.T) {
	t.Parallel()
	const hint = "[url…] | status <task_id> | hash <md5|sha1|sha256> | allow add|remove|list [domain] | help"
	want := []string{"", "status", "hash", "allow", "help"}
	if got := manifest.HintSubcommands(hint); !slices.Equal(got, want) {
		t.Errorf("HintSubcommands(%q) = %q, want %q", hint, got, want)
	}
}

// recorder is a testing.TB that keeps what CheckRegistry reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckRegistry(t *testing.T) {
	t.Parallel()
	const hint = "[url…] | status <task_id> | hash <md5|sha1|sha256> | help"
	for _, tc := range []struct {
		name  string
		names []string
		hint  string
		want  []string // substrings, one per reported error
	}{
		{"same", []string{"", "hash", "status"}, hint, nil},
		{"help registered", []string{"", "hash", "help", "status"}, hint, nil},
		{"registered, not in the hint", []string{"", "hash", "recent", "status"}, hint,
			[]string{`registry has subcommand "recent"`}},
		{"bare form not in the hint", []string{"", "status"}, "status <task_id>",
			[]string{"registry has the bare form"}},
		{"in the hint, not registered", []string{"", "status"}, hint,
			[]string{`names subcommand "hash" but the registry has no such command`}},
		{"bare form not registered", []string{"status"}, "[url…] | status <task_id>",
			[]string{"names the bare form (/scan <url>…) but the registry"}},
		{"named twice", []string{"status"}, "status <id> | status", []string{`names subcommand "status" twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			manifest.CheckRegistry(r, tc.names, tc.hint)
			if len(r.errs) != len(tc.want) {
				t.Fatalf("errors %q, want %d matching %q", r.errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(r.errs[i], w) {
					t.Errorf("error %q does not say %q", r.errs[i], w)
				}
			}
		})
	}
}

// ---- helpers ---------------------------------------------------------------

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func duplicates(s []string) []string {
	seen := map[string]int{}
	var dup []string
	for _, v := range s {
		if seen[v]++; seen[v] == 2 {
			dup = append(dup, v)
		}
	}
	return dup
}
