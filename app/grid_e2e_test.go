package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// The organisation of the Grid scenario: three workspaces, the app
// granted two; a channel in each, one shared by Sales and Eng, one of HR
// (not granted), and a Slack Connect channel of Eng's with a partner
// organisation.
const (
	gridOrg    = "E0ACME"
	gridSales  = "T0SALES"
	gridEng    = "T0ENG"
	gridHR     = "T0HR"
	gridAdmin  = "W0ORGADMIN"
	gridAlice  = "W0ALICE"
	gridBob    = "W0BOB"
	gridCarol  = "W0CAROL"
	partner    = "U0PARTNER"
	cSales     = "C0SALES"
	cEng       = "C0ENG"
	cShared    = "C0SHARED"
	cHR        = "C0HR"
	cConnect   = "C0PARTNERS"
	partnerOrg = "E0PARTNER"
	partnerT   = "T0PARTNER"
)

func gridSeed(f *slackfake.Server) {
	f.AddUser(slackfake.User{ID: gridAdmin, Name: "orgadmin", IsAdmin: true, Teams: []string{gridSales, gridEng, gridHR}})
	f.AddUser(slackfake.User{ID: gridAlice, Name: "alice", Teams: []string{gridSales}})
	f.AddUser(slackfake.User{ID: gridBob, Name: "bob", Teams: []string{gridEng}})
	f.AddUser(slackfake.User{ID: gridCarol, Name: "carol", Teams: []string{gridHR}})
	f.AddUser(slackfake.User{ID: partner, Name: "partner", HomeTeam: partnerT, Enterprise: partnerOrg})
	f.AddChannel(slackfake.Channel{ID: cSales, Name: "sales", Teams: []string{gridSales}, Members: []string{gridAlice, gridAdmin}})
	f.AddChannel(slackfake.Channel{ID: cEng, Name: "eng", Teams: []string{gridEng}, Members: []string{gridBob, gridAdmin}})
	f.AddChannel(slackfake.Channel{ID: cShared, Name: "sales-eng", Teams: []string{gridSales, gridEng}, Members: []string{gridAlice, gridBob}})
	f.AddChannel(slackfake.Channel{ID: cHR, Name: "hr", Teams: []string{gridHR}, Members: []string{gridCarol}})
	f.AddChannel(slackfake.Channel{ID: cConnect, Name: "partners", Teams: []string{gridEng}, ExternalTeam: partnerT, ExternalEnterprise: partnerOrg,
		Members: []string{gridBob, partner}})
}

// TestGridOrgWideInstall runs the bot on an org-wide install of an
// Enterprise Grid organisation (issue 24): links in two workspaces and in
// a channel shared by both, a slash command and a click in each,
// quarantine in both (with an Org Admin's token) and not of a partner
// organisation's message in Slack Connect, the Home tab across
// workspaces, the events naming organisation and workspace, then a
// workspace revoked mid-run. Every message gets one card, no URL is
// submitted twice, and every call Slack needs a team_id for has one.
func TestGridOrgWideInstall(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a whole organisation of workspaces (about 10 s)")
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	org := slackfake.Org{ID: gridOrg, Name: "Acme Org", Workspaces: []slackfake.Workspace{
		{ID: gridSales, Name: "Acme Sales"}, {ID: gridEng, Name: "Acme Eng"}, {ID: gridHR, Name: "Acme HR"}},
		Granted: []string{gridSales, gridEng}}
	env := apptest.QuarantineSettings(map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose", "VERDICTBOT_EVENTS_FILE": eventsFile,
		"VERDICTBOT_ADMINS": gridAdmin})
	h := &harness{apptest.StartBotFull(t, env, sim.Config{}, false, gridSeed, apptest.QuickPolling(),
		apptest.WithAdminToken(gridAdmin), slackfake.WithOrg(org))}
	if !strings.Contains(h.Logs.String(), "installed org-wide on Enterprise Grid") {
		t.Fatalf("the org-wide install was not recognised:\n%s", h.Logs.String())
	}
	if got := h.Metric(`verdictbot_workspaces{state="granted"}`); got != "2" {
		t.Errorf(`verdictbot_workspaces{state="granted"} = %q, want 2`, got)
	}

	post := func(channel, user, text string) slackfake.Delivery {
		t.Helper()
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: channel, User: user, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	type posted struct {
		channel string
		d       slackfake.Delivery
		url     string
	}
	var all []posted
	// Links in each workspace, the shared channel, and one URL in both
	// workspaces.
	for _, p := range []struct{ channel, user, url string }{
		{cSales, gridAlice, "https://example.com/sales"},
		{cEng, gridBob, "https://example.com/eng"},
		{cShared, gridAlice, "https://example.com/shared"},
		{cSales, gridAlice, "https://example.com/both"},
		{cEng, gridBob, "https://example.com/both"},
	} {
		all = append(all, posted{p.channel, post(p.channel, p.user, "see <"+p.url+">"), p.url})
	}
	cards := map[string]slackfake.Message{}
	for _, p := range all {
		cards[p.channel+"/"+p.d.TS] = h.WaitCardIn(p.channel, p.d.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	}
	// Quarantine in both workspaces: the Org Admin's token removes them.
	for _, p := range []struct{ channel, user, url string }{
		{cSales, gridAlice, "https://login.phish.test/sales"},
		{cEng, gridBob, "https://login.phish.test/eng"},
	} {
		d := post(p.channel, p.user, "urgent: <"+p.url+">")
		all = append(all, posted{p.channel, d, p.url})
		err := h.Slack.WaitFor(h.Ctx(15*time.Second), func(st *slackfake.State) bool {
			m, ok := st.Message(p.channel, d.TS)
			return ok && m.Deleted
		})
		if err != nil {
			t.Fatalf("%s in %s not removed: %v\nlogs:\n%s", p.url, p.channel, err, h.Logs.String())
		}
		h.WaitCardIn(p.channel, d.TS, func(b string) bool { return strings.Contains(b, "Quarantined:") })
	}
	// A partner organisation's phish in the Slack Connect channel: checked,
	// not removable by our admin.
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: cConnect, User: partner, Text: "from us: <https://secure-login.phish.test/partner>"})
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, posted{cConnect, d, "https://secure-login.phish.test/partner"})
	h.WaitCardIn(cConnect, d.TS, func(b string) bool {
		return strings.Contains(b, "Not quarantined:") && strings.Contains(b, "another organisation")
	})

	// A slash command in each workspace, answered there with a card in
	// the channel.
	for _, c := range []struct{ channel, user, url string }{
		{cSales, gridAlice, "https://example.org/slash-sales"},
		{cEng, gridBob, "https://example.org/slash-eng"},
	} {
		if got := h.SlashIn(c.channel, c.user, c.url); !strings.Contains(got, "Scanning 1 link") {
			t.Errorf("/scan in %s answered %q", c.channel, got)
		}
		defanged := strings.NewReplacer("https", "hxxps", ".", "[.]").Replace(c.url)
		err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(st *slackfake.State) bool {
			for _, m := range st.BotMessages(c.channel, "") {
				if strings.Contains(apptest.BlocksText(m.Blocks), defanged) && strings.Contains(apptest.BlocksText(m.Blocks), "Clean") {
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Errorf("/scan in %s: no card for %s in the channel: %v", c.channel, defanged, err)
		}
	}
	// A click in each workspace: a false negative reported on a clean card.
	for i, p := range all[:2] {
		card := cards[p.channel+"/"+p.d.TS]
		user := map[string]string{cSales: gridAlice, cEng: gridBob}[p.channel]
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: p.channel, MessageTS: card.TS,
			ActionID: notify.ActionFalseNegative}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), p.channel, user, 1); err != nil {
			t.Errorf("click %d in %s: no answer: %v", i, p.channel, err)
		}
	}

	// Bob's Home lists his channels of every workspace granted (Eng, the
	// shared one, the partners'), not Alice's Sales.
	hd, err := h.Slack.DeliverAppHomeOpened(gridBob, "home")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), hd.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	v, err := h.Slack.WaitHomeView(h.Ctx(10*time.Second), gridBob, 1)
	if err != nil {
		t.Fatalf("no Home for Bob: %v\nlogs:\n%s", err, h.Logs.String())
	}
	home := homeText(v.Blocks)
	for _, want := range []string{cEng, cShared, cConnect} {
		if !strings.Contains(home, "<#"+want+">") {
			t.Errorf("Bob's Home does not list <#%s>:\n%s", want, home)
		}
	}
	if strings.Contains(home, "<#"+cSales+">") {
		t.Errorf("Bob's Home shows Sales, which he is not in:\n%s", home)
	}

	// HR is not granted: its messages never reach the bot (Slack withholds
	// them); one that does anyway (an envelope whose installation is HR) is
	// acked and dropped.
	post(cHR, gridCarol, "hr: <https://example.com/hr>")
	if len(h.Slack.Withheld()) == 0 {
		t.Error("the fake delivered HR's message")
	}
	raw := fmt.Sprintf(`{"envelope_id":"env-hr-1","type":"events_api","accepts_response_payload":false,"retry_attempt":0,"retry_reason":"",
		"payload":{"type":"event_callback","team_id":%q,"enterprise_id":%q,"api_app_id":%q,"event_id":"EvHR0001","event_time":%d,
		"authorizations":[{"enterprise_id":%q,"team_id":%q,"user_id":%q,"is_bot":true,"is_enterprise_install":true}],
		"event":{"type":"message","channel":%q,"channel_type":"channel","user":%q,"text":"<https://example.com/hr-smuggled>","ts":"1700000000.000100"}}}`,
		gridHR, gridOrg, h.Slack.AppID(), time.Now().Unix(), gridOrg, gridHR, h.Slack.BotUserID(), cHR, gridCarol)
	rd, err := h.Slack.DeliverRaw(strings.Join(strings.Fields(raw), " "))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), rd.EnvelopeID); err != nil {
		t.Fatalf("the HR envelope was not acked: %v", err)
	}
	// The drop is counted just after the ack (bot.handle acks first).
	const drops = `verdictbot_envelopes_dropped_total{kind="events_api",reason="workspace_not_granted"}`
	got := h.Metric(drops)
	for deadline := time.Now().Add(5 * time.Second); got == "" && time.Now().Before(deadline); got = h.Metric(drops) {
		time.Sleep(20 * time.Millisecond)
	}
	if got != "1" {
		t.Errorf("workspace_not_granted drops = %q, want 1", got)
	}

	// The same message of the shared channel reaching the bot a second
	// time through the other workspace (another event id, Eng's
	// installation): still one card, one submission.
	dup := post(cShared, gridAlice, "twice: <https://example.com/shared-twice>")
	all = append(all, posted{cShared, dup, "https://example.com/shared-twice"})
	h.WaitCardIn(cShared, dup.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	again := fmt.Sprintf(`{"envelope_id":"env-dup-1","type":"events_api","accepts_response_payload":false,"retry_attempt":0,"retry_reason":"",
		"payload":{"type":"event_callback","team_id":%q,"enterprise_id":%q,"api_app_id":%q,"event_id":"EvDUP0001","event_time":%d,
		"authorizations":[{"enterprise_id":%q,"team_id":%q,"user_id":%q,"is_bot":true,"is_enterprise_install":true}],
		"event":{"type":"message","channel":%q,"channel_type":"channel","user":%q,"text":"twice: <https://example.com/shared-twice>","ts":%q}}}`,
		gridSales, gridOrg, h.Slack.AppID(), time.Now().Unix(), gridOrg, gridEng, h.Slack.BotUserID(), cShared, gridAlice, dup.TS)
	ad, err := h.Slack.DeliverRaw(strings.Join(strings.Fields(again), " "))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), ad.EnvelopeID); err != nil {
		t.Fatalf("the second delivery was not acked: %v", err)
	}

	// Eng is revoked mid-run: the bot stops handling it; the shared
	// channel still reaches it through Sales.
	if _, err := h.Slack.RevokeTeams(gridEng); err != nil {
		t.Fatal(err)
	}
	if err := waitMetric(h, `verdictbot_workspaces{state="revoked"}`, "1"); err != nil {
		t.Fatal(err)
	}
	post(cEng, gridBob, "after: <https://example.com/eng-after>")
	sd := post(cShared, gridBob, "shared after: <https://example.com/shared-after>")
	all = append(all, posted{cShared, sd, "https://example.com/shared-after"})
	h.WaitCardIn(cShared, sd.TS, func(b string) bool { return strings.Contains(b, "Clean") })

	// Every delivered message has one card; nothing was submitted twice.
	for _, p := range all {
		var n int
		h.Slack.Inspect(func(st *slackfake.State) { n = len(st.BotMessages(p.channel, p.d.TS)) })
		if n != 1 {
			t.Errorf("%s in %s: %d bot messages in its thread, want one card", p.url, p.channel, n)
		}
	}
	for _, u := range []string{"https://example.com/both", "https://example.com/shared", "https://login.phish.test/eng", "https://example.com/shared-twice"} {
		if n := len(h.Sim.URLTasks(u)); n != 1 {
			t.Errorf("%s submitted %d times, want once", u, n)
		}
	}
	for _, u := range []string{"https://example.com/hr", "https://example.com/hr-smuggled", "https://example.com/eng-after"} {
		if n := len(h.Sim.URLTasks(u)); n != 0 {
			t.Errorf("%s, of a workspace not granted, was submitted %d times", u, n)
		}
	}
	// The calls Slack requires a team_id for under an org token had one.
	for _, method := range []string{"users.conversations", "usergroups.list", "usergroups.users.list", "conversations.list", "users.list"} {
		for _, c := range h.Slack.Calls(method) {
			if c.Params.Get("team_id") == "" || c.Error != "" {
				t.Errorf("%s called with team_id %q: error %q", method, c.Params.Get("team_id"), c.Error)
			}
		}
	}
	if len(h.Slack.Calls("users.conversations")) == 0 {
		t.Error("the Home did not read the bot's channels")
	}

	// The events name the organisation and the workspace.
	b, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // channel → workspace of its verdict events
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Cloud struct {
				Account struct {
					UID string `json:"uid"`
				} `json:"account"`
				Org struct {
					OUUID string `json:"ou_uid"`
				} `json:"org"`
			} `json:"cloud"`
			Unmapped struct {
				Kind    string `json:"kind"`
				Channel string `json:"channel"`
			} `json:"unmapped"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Cloud.Account.UID != gridOrg {
			t.Errorf("event %s in %s: cloud.account.uid %q, want %s", ev.Unmapped.Kind, ev.Unmapped.Channel, ev.Cloud.Account.UID, gridOrg)
		}
		if ev.Unmapped.Kind == "verdict" {
			seen[ev.Unmapped.Channel] = ev.Cloud.Org.OUUID
		}
	}
	for ch, want := range map[string]string{cSales: gridSales, cEng: gridEng, cConnect: gridEng} {
		if seen[ch] != want {
			t.Errorf("verdict events of %s name workspace %q, want %s", ch, seen[ch], want)
		}
	}
}

// waitMetric waits until a sample of /metrics reads want.
func waitMetric(h *harness, sample, want string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := h.Metric(sample)
		if got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s = %q, want %s", sample, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGridRevokedWorkspacesPendingWorkEnds: a workspace revoked while its
// message is being analysed: the analysis finishes, the card Slack no
// longer lets the bot edit is given up with a log line (no retries
// without end, no crash), and the other workspaces go on.
func TestGridRevokedWorkspacesPendingWorkEnds(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a workspace revoked mid-analysis (about 10 s)")
	org := slackfake.Org{ID: gridOrg, Name: "Acme Org", Workspaces: []slackfake.Workspace{
		{ID: gridSales, Name: "Acme Sales"}, {ID: gridEng, Name: "Acme Eng"}, {ID: gridHR, Name: "Acme HR"}},
		Granted: []string{gridSales, gridEng}}
	slow := sim.Config{Profile: sim.Profile{Name: "slow", URLPending: time.Second, URLProcessing: 2 * time.Second}}
	h := &harness{apptest.StartBotFull(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose", "VERDICTBOT_ADMINS": gridAdmin},
		slow, false, gridSeed, apptest.QuickPolling(), slackfake.WithOrg(org))}
	const url = "https://example.com/eng-pending"
	if _, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: cEng, User: gridBob, Text: "<" + url + ">"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Slack.WaitFor(h.Ctx(10*time.Second), func(*slackfake.State) bool { return len(h.Sim.URLTasks(url)) == 1 }); err != nil {
		t.Fatalf("not submitted: %v", err)
	}
	if _, err := h.Slack.RevokeTeams(gridEng); err != nil {
		t.Fatal(err)
	}
	if err := waitMetric(h, `verdictbot_workspaces{state="revoked"}`, "1"); err != nil {
		t.Fatal(err)
	}
	// The analysis ends (about 3 s); its card cannot be shown any more.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(h.Logs.String(), "channel_not_found") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line says the card could not be shown:\n%s", h.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, line := range strings.Split(h.Logs.String(), "\n") {
		if strings.Contains(line, "channel_not_found") {
			t.Logf("logged: %s", line)
			break
		}
	}
	// Sales goes on.
	s, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: cSales, User: gridAlice, Text: "<https://example.com/sales-after>"})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCardIn(cSales, s.TS, func(b string) bool { return strings.Contains(b, "Clean") })
	// The Eng card's calls stop: none in the last seconds.
	time.Sleep(3 * time.Second)
	var late int
	for _, c := range h.Slack.Calls("chat.update") {
		if c.Params.Get("channel") == cEng && time.Since(c.Time) < 2*time.Second {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d chat.update calls in the revoked workspace's channel in the last 2 s: retried without end", late)
	}
	if n := len(h.Sim.URLTasks(url)); n != 1 {
		t.Errorf("%s submitted %d times", url, n)
	}
}
