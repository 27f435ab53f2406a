package app_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// Issue 21, item 3: every answer is scoped to what the asker may see. The
// moves of someone who wants to read what another conversation saw: ask
// /scan about its link, its task (or the next task id, and the next), its
// file by any hash, its channel's recent verdicts, and read who reported
// it. Each must answer as for a record that does not exist.

const (
	carol      = "U0CAROL"
	eicarMD5   = "44d88612fea8a8f36de82e1278abb02f"
	eicarSHA   = "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f"
	quietChan  = "C0QUIET"
	secretURL  = "https://secret-c2.phish.test/beacon"
	secretHost = "secret-c2[.]phish[.]test"
)

// seedScope registers the public channel (alice, bob and the admin), a
// private one (carol and the admin) and a public channel bob is in where
// nothing was posted.
func seedScope(f *slackfake.Server) {
	for _, u := range []slackfake.User{{ID: alice, Name: "alice"}, {ID: bob, Name: "bob"}, {ID: carol, Name: "carol"}, {ID: adminUser, Name: "admin"}} {
		f.AddUser(u)
	}
	f.AddChannel(slackfake.Channel{ID: secChannel, Name: "security", Members: []string{alice, bob, adminUser}})
	f.AddChannel(slackfake.Channel{ID: privChannel, Name: "incident-42", Private: true, Members: []string{carol, adminUser}})
	f.AddChannel(slackfake.Channel{ID: quietChan, Name: "quiet", Members: []string{bob}})
}

// startScopeBot runs the bot with both services and seedScope's channels.
// The services' budgets are lifted (fastBudgets, and the sandbox's 5
// reads a second): who sees what is the subject, not the vendors' pace.
func startScopeBot(t *testing.T, env map[string]string) *harness {
	t.Helper()
	settings := withEnv(fastBudgets, map[string]string{"SANDBOX_API_KEY": e2eKey,
		"VERDICTBOT_SANDBOX_RUN_RATE": "50", "VERDICTBOT_SANDBOX_REPORT_RATE": "500"})
	for k, v := range env {
		settings[k] = v
	}
	return startBotSeeded(t, settings, sim.Config{Profile: apptest.QuickSandbox()}, true, seedScope)
}

// postIn posts text as user in channel and waits for its card to say
// Malicious.
func (h *harness) postIn(channel, user, text string) slackfake.Delivery {
	h.T.Helper()
	d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: channel, User: user, Text: text})
	if err != nil {
		h.T.Fatal(err)
	}
	h.WaitCardIn(channel, d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	return d
}

// secretIncident has carol post a phishing link and share a malicious
// file in the private channel, and returns the link's URL task and the
// file's sandbox task.
func secretIncident(t *testing.T, h *harness) (urlTask, fileTask string) {
	t.Helper()
	h.postIn(privChannel, carol, "IOC <"+secretURL+">")
	f := h.Slack.AddFile(slackfake.File{Name: "dropper.exe", Content: []byte(apptest.Eicar)})
	ds, err := h.Slack.ShareFile(privChannel, carol, f.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	// Its screenshots posted too: no call to a service is left to make.
	h.WaitCardIn(privChannel, ds[0].TS, func(b string) bool {
		return strings.Contains(b, "Malicious") && strings.Contains(b, "dropper.exe") && strings.Contains(b, "3 screenshots")
	})
	tasks := h.Sim.URLTasks(secretURL)
	files := h.Sim.SandboxTasksFor(eicarSHA)
	if len(tasks) != 1 || len(files) != 1 {
		t.Fatalf("URL tasks %v, sandbox tasks %v; want one each", tasks, files)
	}
	return tasks[0], files[0]
}

// serviceCalls counts the requests both services received.
func serviceCalls(h *harness) int { return len(h.Sim.Requests()) }

// same fails unless two answers are the same once each one's own subject
// (a link's host, a task id, a hash) is replaced by a placeholder.
func same(t *testing.T, what, hidden, hiddenSubject, unknown, unknownSubject string) {
	t.Helper()
	h, u := hidden, unknown
	if hiddenSubject != "" {
		h = strings.ReplaceAll(h, hiddenSubject, "SUBJECT")
	}
	if unknownSubject != "" {
		u = strings.ReplaceAll(u, unknownSubject, "SUBJECT")
	}
	if h != u {
		t.Errorf("%s: a record of another conversation is answered unlike an unknown one:\nseen elsewhere: %q\nunknown:        %q", what, hidden, unknown)
	}
	if strings.Contains(hidden, "malicious") || strings.Contains(hidden, "Malicious") || strings.Contains(hidden, "<@") {
		t.Errorf("%s: the answer shows what the other conversation saw: %q", what, hidden)
	}
}

func TestScopedAnswersAreThoseOfAnUnknownTarget(t *testing.T) {
	t.Parallel()
	h := startScopeBot(t, nil)
	urlTask, fileTask := secretIncident(t, h)
	unknownTask := strings.Repeat("0f", 16)
	n, _ := strconv.Atoi(fileTask)
	unknownFile := strconv.Itoa(n + 100)

	// Bob is not in the private channel. Every question about what it
	// saw is answered as one about something never seen, and (but for
	// the MD5, which only the sandbox can turn into the SHA-256 files
	// are recorded by: one call, seen or not) no service is asked.
	type ask struct {
		what                  string
		hidden, hiddenSubject string
		unknown, unknownSubj  string
		calls                 int // service calls each answer may make
	}
	for _, a := range []ask{
		{"history of a link", "history " + secretURL, secretHost, "history https://never-seen.phish.test/beacon", "never-seen[.]phish[.]test", 0},
		{"history of a link without its scheme", "history secret-c2.phish.test/beacon", secretHost, "history never-seen.phish.test/beacon", "never-seen[.]phish[.]test", 0},
		{"history of a URL task", "history " + urlTask, urlTask, "history " + unknownTask, unknownTask, 0},
		{"history of a sandbox task", "history " + fileTask, fileTask, "history " + unknownFile, unknownFile, 0},
		{"status of a URL task", "status " + urlTask, urlTask, "status " + unknownTask, unknownTask, 0},
		{"status of a URL task in capitals", "status " + strings.ToUpper(urlTask), strings.ToUpper(urlTask), "status " + strings.ToUpper(unknownTask), strings.ToUpper(unknownTask), 0},
		{"status of a sandbox task", "status " + fileTask, fileTask, "status " + unknownFile, unknownFile, 0},
		{"hash by SHA-256", "hash " + eicarSHA, eicarSHA, "hash " + strings.Repeat("ab", 32), strings.Repeat("ab", 32), 0},
		{"hash by SHA-256 in capitals", "hash " + strings.ToUpper(eicarSHA), eicarSHA, "hash " + strings.Repeat("AB", 32), strings.Repeat("ab", 32), 0},
		{"hash by MD5", "hash " + eicarMD5, eicarMD5, "hash " + strings.Repeat("cd", 16), strings.Repeat("cd", 16), 1},
	} {
		before := serviceCalls(h)
		hidden := h.Slash(bob, a.hidden)
		hiddenCalls := serviceCalls(h) - before
		before = serviceCalls(h)
		unknown := h.Slash(bob, a.unknown)
		unknownCalls := serviceCalls(h) - before
		t.Logf("%s: %q", a.what, hidden)
		same(t, a.what, hidden, a.hiddenSubject, unknown, a.unknownSubj)
		if hiddenCalls != a.calls || unknownCalls != a.calls {
			t.Errorf("%s: %d service calls for the record seen elsewhere, %d for the unknown one; want %d each", a.what, hiddenCalls, unknownCalls, a.calls)
		}
	}
	// The channel's recent verdicts, asked from inside it: the same as a
	// channel without any.
	same(t, "recent in a channel bob is not in", h.SlashIn(privChannel, bob, "recent 20"), "", h.SlashIn(quietChan, bob, "recent 20"), "")

	// Carol, who is in the channel, and the admin see all of it, wherever
	// they ask from.
	for _, who := range []string{carol, adminUser} {
		in := secChannel
		if who == carol {
			in = privChannel
		}
		apptest.MustContain(t, h.SlashIn(in, who, "history "+secretURL), "*malicious* (scan, task `"+urlTask+"`)")
		apptest.MustContain(t, h.SlashIn(in, who, "history "+fileTask), "*malicious* (scan, task `"+fileTask+"`)", "malscore")
		apptest.MustContain(t, h.SlashIn(in, who, "status "+urlTask), "URL task `"+urlTask+"`: *completed*")
		apptest.MustContain(t, h.SlashIn(in, who, "status "+fileTask), "Sandbox task `"+fileTask+"`: *reported*")
		apptest.MustContain(t, h.SlashIn(in, who, "hash "+eicarMD5), eicarSHA, "malscore *10.0*/10")
		apptest.MustContain(t, h.SlashIn(in, who, "hash "+eicarSHA), eicarMD5, "`"+fileTask+"`")
	}
	apptest.MustContain(t, h.SlashIn(privChannel, carol, "recent"), "The last 2 verdict(s) in this channel", secretHost, "dropper[.]exe")
	apptest.MustContain(t, h.SlashIn(privChannel, adminUser, "recent"), "The last 2 verdict(s) in this channel")
	// Typing in the channel grants nothing: carol's question from the
	// public channel is answered from her membership, the same.
	apptest.MustContain(t, h.SlashIn(secChannel, carol, "history "+secretURL), "*malicious*")

	// Once the link is posted where bob is, he sees its verdicts: they
	// are what the service said of the link, which his channel now shows.
	h.postIn(secChannel, alice, "seen again <"+secretURL+">")
	apptest.MustContain(t, h.Slash(bob, "history "+secretURL), "*malicious* (scan, task `"+urlTask+"`)")
	apptest.MustContain(t, h.Slash(bob, "status "+urlTask), "*completed*")
}

func TestWalkingSequentialTaskIDsRevealsNothing(t *testing.T) {
	t.Parallel()
	h := startScopeBot(t, nil)
	_, fileTask := secretIncident(t, h)
	last, _ := strconv.Atoi(fileTask)
	before := serviceCalls(h)
	// The sandbox ids around the newest, as a person walking them would
	// (those before the first task, the private file's, those after it):
	// each answer is the unknown one's, with its own id.
	for id := last - 5; id <= last+3; id++ {
		s := strconv.Itoa(id)
		for _, cmd := range []string{"status", "history"} {
			got := h.Slash(bob, cmd+" "+s)
			if want := fmt.Sprintf("I have no record of task `%s` in your conversations.", s); got != want {
				t.Errorf("/scan %s %s by someone outside the private channel = %q, want %q", cmd, s, got, want)
			}
		}
	}
	if n := serviceCalls(h) - before; n != 0 {
		t.Errorf("walking the task ids made %d service calls; each would tell a task that exists from one that does not", n)
	}
	// Carol, in the channel, finds her file's task.
	apptest.MustContain(t, h.SlashIn(privChannel, carol, "status "+fileTask), "Sandbox task `"+fileTask+"`")
}

func TestDirectMessageCardsAreTheirPersonsOnly(t *testing.T) {
	t.Parallel()
	h := startScopeBot(t, nil)
	const url = "https://login.phish.test/dm-only"
	dm := h.Slack.IMWith(alice)
	d := h.postIn(dm, alice, "is this ok? <"+url+">")
	_ = d
	task := h.Sim.URLTasks(url)[0]
	apptest.MustContain(t, h.SlashIn(dm, alice, "history "+url), "*malicious* (scan, task `"+task+"`)")
	apptest.MustContain(t, h.SlashIn(dm, alice, "status "+task), "*completed*")
	apptest.MustContain(t, h.SlashIn(dm, alice, "recent"), "The last 1 verdict(s)", "login[.]phish[.]test")
	apptest.MustContain(t, h.Slash(adminUser, "history "+url), "*malicious*")

	// Bob shares every channel with alice, but not her DM with the bot.
	same(t, "history of a link sent to the bot", h.Slash(bob, "history "+url), "dm-only",
		h.Slash(bob, "history https://login.phish.test/never-seen"), "never-seen")
	same(t, "status of its task", h.Slash(bob, "status "+task), task,
		h.Slash(bob, "status "+strings.Repeat("1e", 16)), strings.Repeat("1e", 16))
	// Even with the DM's id in hand.
	same(t, "recent in alice's DM", h.SlashIn(dm, bob, "recent"), "", h.SlashIn(quietChan, bob, "recent"), "")
}

func TestDuplicateReportNamesOnlyReportersTheAskerMaySee(t *testing.T) {
	t.Parallel()
	h := startScopeBot(t, nil)
	const url = "https://login.phish.test/shared"
	// Neither reporter below posted the link: its poster may not report
	// it as a false positive (TestOwnLinkFalsePositiveIsRefused).
	priv := h.postIn(privChannel, adminUser, "<"+url+">")
	pub := h.postIn(secChannel, bob, "<"+url+">") // the same analysis, from the cache
	if tasks := h.Sim.URLTasks(url); len(tasks) != 1 {
		t.Fatalf("tasks %v, want the one analysis on both cards", tasks)
	}
	task := h.Sim.URLTasks(url)[0]
	click := func(channel, thread, user string) string {
		t.Helper()
		card := h.WaitCardIn(channel, thread, func(b string) bool { return strings.Contains(b, notify.ActionFalsePositive) })
		n := len(h.Slack.Ephemerals(channel, user))
		if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: user, Channel: channel, MessageTS: card.TS, ActionID: notify.ActionFalsePositive}); err != nil {
			t.Fatal(err)
		}
		eph, err := h.Slack.WaitEphemerals(h.Ctx(10*time.Second), channel, user, n+1)
		if err != nil {
			t.Fatalf("no answer to %s's click: %v", user, err)
		}
		return eph[len(eph)-1].Text
	}
	apptest.MustContain(t, click(privChannel, priv.TS, carol), "was reported to the URL service")

	// Alice, in the public channel only: told it was reported, not by whom.
	got := click(secChannel, pub.TS, alice)
	if want := "A false positive (phishing) was already reported for task `" + task + "`; it was not sent again."; got != want {
		t.Errorf("the duplicate answer to someone outside the reporter's channel = %q, want %q", got, want)
	}
	// /scan report goes the same way.
	got = h.Slash(alice, "report "+task+" phishing fp")
	if strings.Contains(got, carol) || !strings.Contains(got, "already reported") {
		t.Errorf("/scan report's duplicate answer = %q", got)
	}
	// Nor does her history of the link name carol.
	hist := h.Slash(alice, "history "+url)
	apptest.MustContain(t, hist, "*malicious*")
	if strings.Contains(hist, carol) {
		t.Errorf("alice's history names a reporter of the private channel:\n%s", hist)
	}
	// The admin, and carol herself, are told who.
	apptest.MustContain(t, click(secChannel, pub.TS, adminUser), "<@"+carol+"> already reported a false positive (phishing)")
	apptest.MustContain(t, h.SlashIn(privChannel, carol, "history "+url), "<@"+carol+"> reported a false positive (phishing)")
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpVerdictReport); n != 1 {
		t.Errorf("%d reports reached the service, want 1", n)
	}
	// A report made where alice is is named to her.
	h2 := h.Slash(bob, "report "+task+" phishing fn")
	apptest.MustContain(t, h2, "was reported")
	apptest.MustContain(t, h.Slash(alice, "report "+task+" phishing fn"), "<@"+bob+"> already reported a false negative (phishing)")
}

func TestFailedMembershipLookupFailsClosed(t *testing.T) {
	t.Parallel()
	h := startScopeBot(t, nil)
	d := h.Post("<https://login.phish.test/public>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	task := h.Sim.URLTasks("https://login.phish.test/public")[0]
	failsClosed := func(why string, queries ...string) {
		t.Helper()
		for _, q := range queries {
			if got := h.Slash(bob, q); got != commands.AccessUnknownText {
				t.Errorf("%s: /scan %s = %q, want %q", why, q, got, commands.AccessUnknownText)
			}
		}
	}

	// Slack cannot list the bot's channels: nothing is shown, not even
	// what bob's own channel saw.
	h.Slack.Fail("users.conversations", 0, "internal_error")
	failsClosed("users.conversations failing", "history https://login.phish.test/public", "status "+task)
	h.Slack.ClearFaults()

	// It lists them (kept a minute from now) but fails the members: a
	// 5xx, then its internal_error.
	h.Slack.InjectFault(slackfake.Fault{Method: "conversations.members", Status: 503})
	failsClosed("conversations.members failing", "history https://login.phish.test/public", "status "+task, "recent",
		"hash "+eicarSHA, "report "+task+" phishing fp")
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpVerdictReport); n != 0 {
		t.Errorf("a report was sent while the reporter's access was unknown")
	}
	h.Slack.ClearFaults()
	h.Slack.Fail("conversations.members", 0, "internal_error")
	failsClosed("conversations.members answering internal_error", "history https://login.phish.test/public")
	// The admin is not held up by it.
	apptest.MustContain(t, h.Slash(adminUser, "history https://login.phish.test/public"), "*malicious*")

	// Rate limited: the same, and no call until Slack's Retry-After.
	h.Slack.ClearFaults()
	h.Slack.RateLimit("conversations.members", 0, 30*time.Second)
	failsClosed("rate limited", "status "+task)
	calls := len(h.Slack.Calls("conversations.members"))
	failsClosed("rate limited", "status "+task, "recent", "history "+task)
	if n := len(h.Slack.Calls("conversations.members")) - calls; n != 0 {
		t.Errorf("%d conversations.members calls within Slack's Retry-After", n)
	}
	// The operators are told why.
	apptest.MustContain(t, h.Logs.String(), `"msg":"could not list the bot's channels: no channel is a person's"`,
		`"msg":"could not learn which channels a person is in: those not read are not theirs"`, `"component":"membership"`)
}
