package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// Secrets of the doctor tests: none may appear in doctor's output.
const (
	doctorEventsSecret = "doctor-events-secret-0123456789abcdef"
	doctorAdminGroup   = "S0SECTEAM"
)

// doctorWorld is a fake Slack, seeded with the admin, the admin group
// and the alert channel, and the simulator accepting only e2eKey; env
// points the program at both, as an operator's settings would.
type doctorWorld struct {
	fake *slackfake.Server
	env  map[string]string
}

func startDoctorWorld(t *testing.T, opts ...slackfake.Option) doctorWorld {
	t.Helper()
	fake := slackfaketest.Start(t, append([]slackfake.Option{apptest.WithAdminToken(adminUser)}, opts...)...)
	fake.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", RealName: "Sec Admin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: alice, Name: "alice"})
	fake.AddChannel(slackfake.Channel{ID: secChannel, Name: "security"})
	fake.AddUserGroup(doctorAdminGroup, "secteam", adminUser, alice)
	_, base := simtest.Start(t, sim.Config{Keys: []string{e2eKey}})
	return doctorWorld{fake: fake, env: map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"SLACK_ADMIN_USER_TOKEN": apptest.AdminToken,
		"REPUTATION_URL":         base, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": base, "SANDBOX_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR":      t.TempDir(),
		"VERDICTBOT_ADMINS":        adminUser,
		"VERDICTBOT_ADMIN_GROUP":   doctorAdminGroup,
		"VERDICTBOT_ALERT_CHANNEL": secChannel,
	}}
}

// runDoctorArgs runs `verdictbot doctor args…` with env, logs its whole
// output (to copy into a report) and fails the test if it shows any
// secret of env.
func runDoctorArgs(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	code, stdout, stderr = runMain(env, append([]string{"doctor", "--timeout", "5s"}, args...)...)
	t.Logf("verdictbot doctor %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	mustShowNoSecret(t, env, stdout+stderr)
	return code, stdout, stderr
}

// mustShowNoSecret fails if out holds a token, key, secret or password
// of env.
func mustShowNoSecret(t *testing.T, env map[string]string, out string) {
	t.Helper()
	for _, name := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_ADMIN_USER_TOKEN", "REPUTATION_API_KEY", "SANDBOX_API_KEY", "VERDICTBOT_EVENTS_SECRET"} {
		if v := env[name]; v != "" && strings.Contains(out, v) {
			t.Errorf("the output shows %s", name)
		}
	}
	if u, err := url.Parse(env["VERDICTBOT_DATABASE_URL"]); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && strings.Contains(out, p) {
			t.Error("the output shows the database password")
		}
	}
}

// checkLine returns the checklist's line of the check called name (and
// its fix line, if any), or "".
func checkLine(out, name string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		_, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		if !strings.HasPrefix(rest, name+"  ") {
			continue
		}
		if i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "fix: ") {
			return l + "\n" + lines[i+1]
		}
		return l
	}
	return ""
}

// mustHaveCheck fails unless the check called name has the mark and
// every want in its line (or fix).
func mustHaveCheck(t *testing.T, out, mark, name string, wants ...string) {
	t.Helper()
	line := checkLine(out, name)
	if !strings.HasPrefix(strings.TrimSpace(line), mark+" "+name+" ") {
		t.Errorf("check %q: want %s, got line %q", name, mark, line)
		return
	}
	for _, w := range wants {
		if !strings.Contains(line, w) {
			t.Errorf("check %q lacks %q:\n%s", name, w, line)
		}
	}
}

// TestDoctorAllGreen: against a fake Slack and the simulator set up as
// the install steps say, every check passes (or has nothing to check),
// and doctor exits 0. The Socket Mode connection it opened is closed, and
// the store file a running bot holds is left alone.
func TestDoctorAllGreen(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	running, err := bolt.Open(w.env["VERDICTBOT_DATA_DIR"], bolt.Options{}) // the bot's
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	code, out, errOut := runDoctorArgs(t, w.env)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, name := range []string{"settings", "bot token", "bot scopes", "Socket Mode", "admin token", "admin scopes",
		"reputation service", "sandbox service", "data directory", "store file", "VERDICTBOT_ADMINS", "VERDICTBOT_ADMIN_GROUP", "VERDICTBOT_ALERT_CHANNEL"} {
		mustHaveCheck(t, out, "✓", name)
	}
	mustHaveCheck(t, out, "✓", "bot token", "bot @verdictbot ("+slackfake.DefaultBotUserID+") in "+slackfake.DefaultTeamName)
	mustHaveCheck(t, out, "✓", "bot scopes", "all 15 bot scopes of manifest.yaml granted, no others")
	mustHaveCheck(t, out, "✓", "Socket Mode", "Slack said hello (app "+slackfake.DefaultAppID+"; 1 connection open")
	mustHaveCheck(t, out, "✓", "admin token", "@secadmin ("+adminUser+"), a workspace admin")
	mustHaveCheck(t, out, "✓", "reputation service", `accepted the key (status of an unknown task: "task not found"); no rate-limit headers`)
	mustHaveCheck(t, out, "✓", "sandbox service", `accepted the key (status of an unknown task: "Task does not exist")`)
	mustHaveCheck(t, out, "✓", "store file", "in use by a running verdictbot")
	mustHaveCheck(t, out, "✓", "VERDICTBOT_ADMIN_GROUP", doctorAdminGroup+": 2 members")
	mustHaveCheck(t, out, "✓", "VERDICTBOT_ALERT_CHANNEL", secChannel+" (#security): the bot is a member")
	mustHaveCheck(t, out, "-", "events", "not set")
	if strings.Contains(out, "  ✗ ") || strings.Contains(out, "fix:") || !strings.HasSuffix(out, " 0 failed, 0 warnings, 2 skipped: ready\n") {
		t.Errorf("not all green:\n%s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		open, total := w.fake.Connections()
		if open == 0 && total == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Socket Mode connections: %d open, %d in all; want the one doctor opened, closed", open, total)
		}
	}
	// --json says the same.
	code, out, _ = runDoctorArgs(t, w.env, "--json")
	var rep struct {
		OK     bool `json:"ok"`
		Failed int  `json:"failed"`
		Checks []struct{ Section, Name, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Failed != 0 || len(rep.Checks) < 15 {
		t.Fatalf("--json: exit %d, %v, %+v", code, err, rep)
	}
}

// TestDoctorBotTokenMissingAScope is the case: an install that
// did not grant one of manifest.yaml's scopes (team:read) gets a ✗ naming
// it, the fix "reinstall the app from manifest.yaml", and exit 1. Its
// output is the one the note shows.
func TestDoctorBotTokenMissingAScope(t *testing.T) {
	t.Parallel()
	granted := slices.DeleteFunc(slices.Clone(slackfake.DefaultBotScopes), func(s string) bool { return s == "team:read" })
	w := startDoctorWorld(t, slackfake.WithBotScopes(granted...))
	code, out, errOut := runDoctorArgs(t, w.env)
	if code != 1 || errOut != "verdictbot doctor: 1 of 15 checks failed\n" {
		t.Errorf("exit %d, stderr %q; want 1 and the count", code, errOut)
	}
	mustHaveCheck(t, out, "✗", "bot scopes", "missing team:read: Slack granted 14 of the 15 bot scopes manifest.yaml asks for",
		"fix: reinstall the app from manifest.yaml")
	if strings.Count(out, "  ✗ ") != 1 {
		t.Errorf("want exactly one failure:\n%s", out)
	}
	// A scope beyond the manifest's is a warning, and exit 0.
	w = startDoctorWorld(t, slackfake.WithBotScopes(append(slices.Clone(slackfake.DefaultBotScopes), "chat:write.public")...))
	code, out, _ = runDoctorArgs(t, w.env)
	mustHaveCheck(t, out, "!", "bot scopes", "also chat:write.public, which the bot does not use", "fix: remove them")
	if code != 0 {
		t.Errorf("an extra scope: exit %d, want 0", code)
	}
}

// TestDoctorWrongKeys: a key the service refuses is a ✗ with its fix,
// and neither the key (which the clients put in the URL's path) nor any
// other secret is printed, in text or JSON; a token Slack refuses too.
func TestDoctorWrongKeys(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	env := merged(w.env, map[string]string{
		"REPUTATION_API_KEY": "WrongRepKey-4f9e1c", "SANDBOX_API_KEY": "WrongSbKey-77ab20",
		"SLACK_ADMIN_USER_TOKEN": "xoxp-9-9-RefusedAdminToken"})
	for _, args := range [][]string{nil, {"--json"}} {
		code, out, _ := runDoctorArgs(t, env, args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if len(args) == 0 {
			mustHaveCheck(t, out, "✗", "reputation service", "refused the key: reputation status: invalid api key (HTTP 403)", "fix: check REPUTATION_API_KEY")
			mustHaveCheck(t, out, "✗", "sandbox service", "refused the key", "fix: check SANDBOX_API_KEY")
			mustHaveCheck(t, out, "✗", "admin token", "auth.test: invalid_auth")
			mustHaveCheck(t, out, "-", "admin scopes", "not checked")
		}
	}
	// A base URL with a path the service does not have (its 404 page
	// may echo the path, key included), and one nothing listens at: a
	// port bound and not listening, so that no other test's server takes
	// it (a port closed and freed was, once, by a parallel test's
	// simulator, which accepted the key).
	closed := "http://" + reservePort(t).addr
	env = merged(w.env, map[string]string{"REPUTATION_URL": w.env["REPUTATION_URL"] + "/no/such/prefix", "SANDBOX_URL": closed})
	code, out, _ := runDoctorArgs(t, env)
	if code != 1 {
		t.Errorf("wrong base URLs: exit %d", code)
	}
	mustHaveCheck(t, out, "✗", "reputation service", "no such path at the service", "fix: check the base URL")
	mustHaveCheck(t, out, "✗", "sandbox service", closed+": sandbox status: ", "connection refused", "fix: check the base URL")
	// A bot token Slack does not know: its checks fail, the ones that
	// need it are skipped, with no token shown.
	env = merged(w.env, map[string]string{"SLACK_BOT_TOKEN": "xoxb-9-9-UnknownBotToken"})
	code, out, _ = runDoctorArgs(t, env)
	if code != 1 {
		t.Errorf("unknown bot token: exit %d", code)
	}
	mustHaveCheck(t, out, "✗", "bot token", "auth.test: invalid_auth", "fix: copy the Bot User OAuth Token")
	mustHaveCheck(t, out, "-", "VERDICTBOT_ALERT_CHANNEL", "not checked, the bot token did not work")
}

// TestDoctorBotNotInTheAlertChannel: a channel the bot was not invited to
// is a ✗ whose fix is the /invite there; a channel id that does not exist
// is one too.
func TestDoctorBotNotInTheAlertChannel(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	w.fake.AddChannel(slackfake.Channel{ID: "C0ALERTS", Name: "sec-alerts", NotMember: true})
	env := merged(w.env, map[string]string{"VERDICTBOT_ALERT_CHANNEL": "C0ALERTS", "VERDICTBOT_REPORT_CHANNEL": "C0NOSUCH"})
	code, out, _ := runDoctorArgs(t, env)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	mustHaveCheck(t, out, "✗", "VERDICTBOT_ALERT_CHANNEL", "C0ALERTS (#sec-alerts): the bot is not a member", "fix: in #sec-alerts, type /invite @verdictbot")
	mustHaveCheck(t, out, "✗", "VERDICTBOT_REPORT_CHANNEL", "C0NOSUCH: no such channel", "fix: check the id: a channel's ID is at the bottom of its details")
}

// TestDoctorDatabaseUnreachable: a VERDICTBOT_DATABASE_URL nothing
// listens at is a ✗ with the fix, and its password is never printed.
func TestDoctorDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port
	env := merged(w.env, map[string]string{"VERDICTBOT_DATABASE_URL": "postgres://vb:DbPassNeverShown@" + addr + "/vb?sslmode=disable",
		"VERDICTBOT_DATA_DIR": filepath.Join(t.TempDir(), "not", "yet")})
	code, out, _ := runDoctorArgs(t, env)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	mustHaveCheck(t, out, "✗", "PostgreSQL", "postgres://vb@"+addr+"/vb", "fix: check that PostgreSQL runs and that this host reaches "+addr+";")
	mustHaveCheck(t, out, "✓", "data directory", "does not exist yet: the bot creates it at start")
	if strings.Contains(out, "DbPassNeverShown") {
		t.Error("the password shows")
	}
}

// TestDoctorPostgres: a reachable database with no schema yet passes; once
// a replica runs, doctor reads its schema version and the replica, and
// migrates nothing itself. Skipped without VERDICTBOT_TEST_DATABASE_URL.
func TestDoctorPostgres(t *testing.T) {
	t.Parallel()
	schema, dbURL := pgtest.Schema(t)
	w := startDoctorWorld(t)
	env := merged(w.env, map[string]string{"VERDICTBOT_DATABASE_URL": dbURL})
	code, out, _ := runDoctorArgs(t, env)
	mustHaveCheck(t, out, "✓", "PostgreSQL", "reachable, no schema yet")
	mustHaveCheck(t, out, "✓", "replicas", "none running now")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	db, err := pg.Open(t.Context(), pgtest.URL(t), pg.Options{Schema: schema, Replica: "replica-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	code, out, _ = runDoctorArgs(t, env)
	mustHaveCheck(t, out, "✓", "PostgreSQL", fmt.Sprintf("schema %d, this verdictbot's", pg.SchemaVersion))
	mustHaveCheck(t, out, "✓", "replicas", "1 replica alive: replica-a (up ")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestDoctorSendsASignedTestEvent: with --send-test-event doctor posts one
// test event, signed as the bot signs its events (the receiver's check
// from docs/siem.md accepts it), and requires a 2xx answer; without the
// flag it only asks with HEAD. The URL's path (which may hold a token)
// and the secret are never printed.
func TestDoctorSendsASignedTestEvent(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	var mu sync.Mutex
	var got []string
	answer := http.StatusAccepted
	recv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			err := events.VerifyTimestamped([]byte(doctorEventsSecret), body, r.Header.Get(events.SignatureHeader),
				r.Header.Get(events.TimestampHeader), time.Now(), events.DefaultReplayWindow)
			if err != nil {
				got = append(got, "POST with a bad signature: "+err.Error())
				rw.WriteHeader(http.StatusUnauthorized)
				return
			}
			got = append(got, "POST signed "+r.URL.Path)
			rw.WriteHeader(answer)
			return
		}
		got = append(got, r.Method+" "+r.URL.Path)
		rw.WriteHeader(http.StatusMethodNotAllowed)
	}))
	t.Cleanup(recv.Close)
	env := merged(w.env, map[string]string{"VERDICTBOT_EVENTS_URL": recv.URL + "/hook/PathTok3n", "VERDICTBOT_EVENTS_SECRET": doctorEventsSecret,
		"VERDICTBOT_EVENTS_FILE": filepath.Join(t.TempDir(), "events.jsonl")})
	code, out, _ := runDoctorArgs(t, env)
	mustHaveCheck(t, out, "✓", "events file", "events.jsonl: the bot creates it (its directory is writable)")
	mustHaveCheck(t, out, "✓", "events URL", recv.URL+" is reachable (it answered HEAD with HTTP 405)")
	mustHaveCheck(t, out, "-", "test event", "--send-test-event")
	code2, out2, _ := runDoctorArgs(t, env, "--send-test-event")
	mustHaveCheck(t, out2, "✓", "test event", "took a test event (signed with VERDICTBOT_EVENTS_SECRET) with HTTP 202")
	mu.Lock()
	want := []string{"HEAD /hook/PathTok3n", "HEAD /hook/PathTok3n", "POST signed /hook/PathTok3n"}
	if !slices.Equal(got, want) {
		t.Errorf("the receiver saw %q, want %q", got, want)
	}
	answer = http.StatusBadRequest
	mu.Unlock()
	code3, out3, _ := runDoctorArgs(t, env, "--send-test-event")
	mustHaveCheck(t, out3, "✗", "test event", "400 Bad Request", "fix: see the receiver's log")
	if code != 0 || code2 != 0 || code3 != 1 {
		t.Errorf("exits %d, %d, %d; want 0, 0, 1", code, code2, code3)
	}
	if all := out + out2 + out3; strings.Contains(all, "PathTok3n") {
		t.Error("the events URL's path shows")
	}
}

// TestDoctorOrgWideInstall: on an Enterprise Grid org-wide install the
// checks pass the team_id the methods need (the admin group is read in
// the granted workspace it belongs to).
func TestDoctorOrgWideInstall(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t, slackfake.WithOrg(slackfake.Org{ID: "E0ACME", Name: "Acme", Granted: []string{"T0ENG", "T0OPS"},
		Workspaces: []slackfake.Workspace{{ID: "T0ENG", Name: "Eng"}, {ID: "T0OPS", Name: "Ops"}}}))
	w.fake.AddUserGroupInTeam("T0OPS", "S0OPSSEC", "opssec", adminUser)
	env := merged(w.env, map[string]string{"VERDICTBOT_ADMIN_GROUP": "S0OPSSEC"})
	code, out, _ := runDoctorArgs(t, env)
	mustHaveCheck(t, out, "✓", "bot token", "installed org-wide in Acme (E0ACME)")
	mustHaveCheck(t, out, "✓", "Socket Mode", "Slack said hello")
	mustHaveCheck(t, out, "✓", "VERDICTBOT_ADMIN_GROUP", "S0OPSSEC: 1 member")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestDoctorReportsRateLimitHeaders: a service's rate-limit headers are
// shown on its line.
func TestDoctorReportsRateLimitHeaders(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	target, err := url.Parse(w.env["REPUTATION_URL"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		resp.Header.Set("X-RateLimit-Limit", "600")
		resp.Header.Set("X-RateLimit-Remaining", "599")
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	_, out, _ := runDoctorArgs(t, merged(w.env, map[string]string{"REPUTATION_URL": front.URL}))
	mustHaveCheck(t, out, "✓", "reputation service", "accepted the key", "; rate-limit headers: X-Ratelimit-Limit: 600, X-Ratelimit-Remaining: 599")
}

// TestDoctorGoesOnPastWrongSettings: wrong settings are the first check's
// failure, one problem each, and the other checks still run with the
// rest; an unset token fails its own check.
func TestDoctorGoesOnPastWrongSettings(t *testing.T) {
	t.Parallel()
	w := startDoctorWorld(t)
	env := merged(w.env, map[string]string{"VERDICTBOT_MAX_LINKS": "ten", "SLACK_APP_TOKEN": ""})
	code, out, _ := runDoctorArgs(t, env)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	mustHaveCheck(t, out, "✗", "settings", `VERDICTBOT_MAX_LINKS="ten": not a valid whole number; SLACK_APP_TOKEN is not set`, "fix: correct them (verdictbot config lists")
	mustHaveCheck(t, out, "✗", "Socket Mode", "SLACK_APP_TOKEN is not set", "fix: create an app-level token with the scope connections:write")
	mustHaveCheck(t, out, "✓", "bot token")
	mustHaveCheck(t, out, "✓", "reputation service")
}
