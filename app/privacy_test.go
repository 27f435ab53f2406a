package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// Names in apptest.Hosts resolve to private addresses: they are
// withheld right before submission, through the real wiring (system
// resolver swapped for the table), and the card says why on their line.
func TestNameThatResolvesPrivateIsNeverSent(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("sso <https://sso.phish-intranet.test/login> dev <http://localtest.me:8080/admin> jira <https://jira.corp.example.com/browse/SEC-1> " +
		"and <https://evil.test/x> <https://public.phish-mixed.test/>")
	card := h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "Malicious") && strings.Count(b, "resolves to a private address") == 3 && !strings.Contains(b, "Scanning")
	})
	blocks := apptest.BlocksText(card.Blocks)
	for _, want := range []string{"sso[.]phish-intranet[.]test", "localtest[.]me", "jira[.]corp[.]example[.]com", "Not checked"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("card lacks %q:\n%s", want, blocks)
		}
	}
	for _, u := range []string{"https://sso.phish-intranet.test/login", "http://localtest.me:8080/admin", "https://jira.corp.example.com/browse/SEC-1"} {
		if n := len(h.Sim.URLTasks(u)); n != 0 {
			t.Errorf("%s was submitted %d times", u, n)
		}
	}
	// Only the public ones: evil.test (NXDOMAIN: fail open) and the host
	// with one public address among private ones.
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("%d submissions, want 2", n)
	}
	// Not cached as a verdict, not in the history.
	apptest.MustContain(t, h.Slash(alice, "history https://sso.phish-intranet.test/login"), "No verdicts recorded")

	// /scan answers at once, and sends nothing.
	got := h.Slash(alice, "https://sso.phish-intranet.test/reset 127.0.0.1.nip.io/x")
	apptest.MustContain(t, got, "Nothing to scan", "resolves to a private address")
	time.Sleep(300 * time.Millisecond)
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("/scan sent a name that resolves to a private address (%d submissions)", n)
	}
}

func TestResolveHostsFalseSendsTheName(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_RESOLVE_HOSTS": "false"}, sim.Config{})
	d := h.Post("<https://sso.phish-intranet.test/login>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if n := len(h.Sim.URLTasks("https://sso.phish-intranet.test/login")); n != 1 {
		t.Fatalf("%d submissions with resolution off, want 1", n)
	}
}

func TestURLQueryStripKeepsTheQueryInside(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_URL_QUERY": "strip"}, sim.Config{})
	d := h.Post("magic link <https://login.phish.test/verify?token=s3cr3t-1&amp;u=alice> and again <https://login.phish.test/verify?token=s3cr3t-2> docs <https://example.com/guide>")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "Clean") })
	blocks := apptest.BlocksText(card.Blocks)
	if strings.Contains(blocks, "s3cr3t") {
		t.Errorf("the card shows the query that was not sent:\n%s", blocks)
	}
	if n := strings.Count(blocks, "query not sent"); n != 1 {
		t.Errorf("%d lines say \"query not sent\", want 1 (the two magic links are one URL as sent):\n%s", n, blocks)
	}
	if n := len(h.Sim.URLTasks("https://login.phish.test/verify")); n != 1 {
		t.Fatalf("%d submissions of the stripped URL, want 1", n)
	}
	for _, u := range []string{"https://login.phish.test/verify?token=s3cr3t-1&u=alice", "https://login.phish.test/verify?token=s3cr3t-2"} {
		if n := len(h.Sim.URLTasks(u)); n != 0 {
			t.Fatalf("%s was sent with its query", u)
		}
	}
	if n := h.Sim.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("%d submissions, want 2", n)
	}
	// /scan history finds the link as it was sent, whether or not the
	// query is typed (the store records the verdict just after the card).
	for _, arg := range []string{"https://login.phish.test/verify?token=s3cr3t-1", "login.phish.test/verify"} {
		var out string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out = h.Slash(alice, "history "+arg); strings.Contains(out, "*malicious*") {
				break
			}
		}
		apptest.MustContain(t, out, "*malicious*")
		if strings.Contains(out, "s3cr3t") {
			t.Errorf("/scan history %s shows the query: %s", arg, out)
		}
	}
	// /scan strips too.
	h.Slash(alice, "https://example.org/reset?key=hunter2")
	h.WaitCard("", func(b string) bool {
		return strings.Contains(b, "example[.]org/reset") && strings.Contains(b, "query not sent") && strings.Contains(b, "Clean")
	})
	if n := len(h.Sim.URLTasks("https://example.org/reset")); n != 1 {
		t.Fatalf("/scan: %d submissions of the stripped URL", n)
	}
}

// filesSent counts what a shared file caused: downloads from Slack and
// requests to the sandbox.
func filesSent(h *harness) (downloads, sandbox int) {
	return len(h.Slack.Calls(slackfake.MethodFileDownload)), h.Sim.Count(sim.ServiceSandbox, "")
}

func TestScanFilesFalseDownloadsAndSendsNothing(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, map[string]string{"VERDICTBOT_SCAN_FILES": "false"})
	_, ds := h.Share(secChannel, slackfake.File{Name: "payroll.xlsx", Content: []byte(apptest.Eicar)}, "salaries")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool {
		return strings.Contains(b, "payroll.xlsx") && strings.Contains(b, "file scanning is off in this channel")
	})
	time.Sleep(500 * time.Millisecond)
	if dl, sb := filesSent(h); dl != 0 || sb != 0 {
		t.Fatalf("files off: %d downloads, %d sandbox requests", dl, sb)
	}
	// Links in the same channel are still scanned.
	d := h.Post("<https://evil.test/x>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	apptest.MustContain(t, h.Slash(alice, "channel"), "Shared files: *off* by default (VERDICTBOT_SCAN_FILES)")
}

func TestChannelFilesSwitchIsForAdminsAndHolds(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	apptest.MustContain(t, h.Slash(alice, "channel"), "Shared files: *on* by default")
	apptest.MustContain(t, h.Slash(alice, "channel files off"), "Only admins can change whether this channel's files are scanned")
	apptest.MustContain(t, h.Slash(adminUser, "channel files maybe"), "use `/scan channel files on`")
	apptest.MustContain(t, h.Slash(adminUser, "channel files off"), "not downloaded and not sent")
	apptest.MustContain(t, h.Slash(alice, "channel"), "Shared files: *off* (not downloaded, not sent)")
	apptest.MustContain(t, h.Slash(alice, "channel files"), "Shared files: *off*")

	_, ds := h.Share(secChannel, slackfake.File{Name: "offer.pdf", Content: []byte(apptest.Eicar)}, "")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "file scanning is off in this channel") })
	time.Sleep(500 * time.Millisecond)
	if dl, sb := filesSent(h); dl != 0 || sb != 0 {
		t.Fatalf("channel files off: %d downloads, %d sandbox requests", dl, sb)
	}

	apptest.MustContain(t, h.Slash(adminUser, "channel files on"), "now *scanned*")
	_, ds = h.Share(secChannel, slackfake.File{Name: "offer2.pdf", Content: []byte(apptest.Eicar)}, "")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	if dl, sb := filesSent(h); dl != 1 || sb == 0 {
		t.Fatalf("channel files on again: %d downloads, %d sandbox requests", dl, sb)
	}
}
