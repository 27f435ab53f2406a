package app_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
)

func startFileBot(t *testing.T, env map[string]string) *harness {
	t.Helper()
	settings := map[string]string{"SANDBOX_API_KEY": e2eKey}
	for k, v := range env {
		settings[k] = v
	}
	// The sandbox lives on the same simulator as the URL service.
	h := startBotWith(t, settings, sim.Config{Profile: apptest.QuickSandbox()}, true)
	return h
}

func TestFileGetsACardWithScreenshotsInTheThread(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	f, ds := h.Share(secChannel, slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar + " SIM:SHOTS=2")}, "please pay this")
	ts := ds[0].TS
	card := h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "2 screenshots") })
	b := apptest.BlocksText(card.Blocks)
	for _, want := range []string{"invoice.exe", "EICAR", "10", "sha256"} {
		if !strings.Contains(strings.ToLower(b), strings.ToLower(want)) {
			t.Errorf("card lacks %q:\n%s", want, b)
		}
	}
	ups, err := h.Slack.WaitUploads(h.Ctx(10*time.Second), secChannel, ts, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups {
		if !bytes.HasPrefix(u.Content, []byte{0xFF, 0xD8, 0xFF}) {
			t.Errorf("upload %s is not a JPEG", u.Filename)
		}
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Fatalf("%d uploads to the sandbox", n)
	}
	// Both events announced the file: one card only.
	time.Sleep(500 * time.Millisecond)
	cards := 0
	for _, m := range h.Slack.Messages(secChannel, ts) {
		if m.Bot && len(m.Files) == 0 && strings.Contains(apptest.BlocksText(m.Blocks), f.Name) {
			cards++
		}
	}
	if cards != 1 {
		t.Fatalf("%d cards for one file", cards)
	}
	// The bot's own screenshot uploads are not scanned.
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Fatalf("the bot scanned its own uploads (%d uploads)", n)
	}
}

func TestKnownHashIsNotUploadedAgain(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	content := []byte("SIM:MALSCORE=4.5 SIM:FAMILY=Dropper known sample")
	// The sandbox already analysed this file (someone else uploaded it).
	sb, err := sandbox.New(h.SimURL, e2eKey, sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := sb.CreateFile(t.Context(), "dropper.bin", bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Wait(t.Context(), sub.TaskIDs[0], sandbox.WaitOptions{Backoff: sandbox.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	_, ds := h.Share(secChannel, slackfake.File{Name: "dropper.bin", Content: content}, "")
	card := h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "Suspicious") })
	if !strings.Contains(apptest.BlocksText(card.Blocks), sub.TaskIDs[0]) {
		t.Errorf("card does not name the existing task %s", sub.TaskIDs[0])
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Fatalf("%d uploads: a known file was uploaded again", n)
	}
}

func TestTooLargeAndExternalFilesAreSkippedWithAReason(t *testing.T) {
	t.Parallel()
	var foreign atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreign.Add(1) }))
	defer other.Close()
	h := startFileBot(t, map[string]string{"VERDICTBOT_MAX_FILE_BYTES": "1000"})
	_, ds := h.Share(secChannel, slackfake.File{Name: "big.iso", Content: bytes.Repeat([]byte("A"), 5000)}, "")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "big.iso") && strings.Contains(b, "larger") })
	_, ds = h.Share(secChannel, slackfake.File{Name: "drive-doc", IsExternal: true, ExternalURL: other.URL + "/doc"}, "")
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool {
		return strings.Contains(b, "drive-doc") && strings.Contains(strings.ToLower(b), "external")
	})
	if foreign.Load() != 0 {
		t.Fatal("a request went to the external file's host")
	}
	if n := h.Sim.Count(sim.ServiceSandbox, ""); n != 0 {
		t.Fatalf("%d sandbox requests for skipped files", n)
	}
	for _, c := range h.Slack.Calls(slackfake.MethodFileDownload) {
		t.Fatalf("a skipped file was downloaded: %+v", c.Path)
	}
}

func TestFailedAnalysisGivesAClearCard(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	_, ds := h.Share(secChannel, slackfake.File{Name: "crashy.docm", Content: []byte("SIM:FAIL_ANALYSIS macro")}, "")
	card := h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(strings.ToLower(b), "could not check") })
	if !strings.Contains(apptest.BlocksText(card.Blocks), "failed_analysis") {
		t.Errorf("the card does not say why:\n%s", apptest.BlocksText(card.Blocks))
	}
}

func TestSameFileInTwoChannelsIsOneSandboxTask(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	const other = "C0OTHER"
	f := h.Slack.AddFile(slackfake.File{Name: "payload.exe", Content: []byte(apptest.Eicar)})
	var threads [2]string
	for i, ch := range []string{secChannel, other} {
		ds, err := h.Slack.ShareFile(ch, alice, f.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		threads[i] = ds[0].TS
	}
	h.WaitCardIn(secChannel, threads[0], func(b string) bool { return strings.Contains(b, "Malicious") })
	h.WaitCardIn(other, threads[1], func(b string) bool { return strings.Contains(b, "Malicious") })
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Fatalf("%d sandbox tasks for one file shared in two channels", n)
	}
}

func TestFileWithoutTokenHTMLPageIsReportedNotAnalysed(t *testing.T) {
	t.Parallel()
	h := startFileBot(t, nil)
	// A file Slack serves as a sign-in page (what a download without a
	// valid token gets): its download is refused by the fake.
	h.Slack.InjectFault(slackfake.Fault{Method: slackfake.MethodFileDownload, Status: http.StatusOK})
	_, ds := h.Share(secChannel, slackfake.File{Name: "report.pdf", Content: []byte("%PDF-1.7 hello")}, "")
	card := h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(strings.ToLower(b), "could not check") })
	if !strings.Contains(strings.ToLower(apptest.BlocksText(card.Blocks)), "sign-in page") {
		t.Errorf("the card does not say Slack sent a sign-in page:\n%s", apptest.BlocksText(card.Blocks))
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 0 {
		t.Fatal("an HTML page was sent to the sandbox")
	}
}
