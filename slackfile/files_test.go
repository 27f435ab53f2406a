package slackfile

// The file pipeline (scan.Files) with the Downloader as its Fetcher, between
// the fake Slack and the simulator, all over real HTTP: what the bot does
// with a file shared in a channel.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim/simtest"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

const simKey = "test-key-123"

// fastSandboxWait polls the simulator (FastProfile: one status per poll)
// without sleeping for long.
var fastSandboxWait = sandbox.WaitOptions{
	Backoff:  sandbox.Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond},
	Deadline: 10 * time.Second,
}

// fileEnv is a fake Slack, the simulator and a file pipeline between them.
type fileEnv struct {
	t     *testing.T
	fake  *slackfake.Server
	api   *slack.Client
	sim   *sim.Server
	sb    *sandbox.Client
	dl    *Downloader
	files *scan.Files
	opt   scan.FileOptions
	logs  *testutil.SyncBuffer
}

func newFileEnv(t *testing.T, cfg sim.Config, mod func(*scan.FileOptions)) *fileEnv {
	t.Helper()
	e := &fileEnv{t: t, fake: slackfaketest.Start(t), logs: &testutil.SyncBuffer{}}
	e.api = slack.New(e.fake.BotToken(), slack.OptionAPIURL(e.fake.APIURL()))
	var base string
	e.sim, base = simtest.Start(t, cfg)
	var err error
	e.sb, err = sandbox.New(base, simKey,
		sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}),
		sandbox.WithRetries(2, time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.dl, err = NewDownloader(e.fake.BotToken(), e.fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	e.opt = scan.FileOptions{
		Wait: fastSandboxWait, TempDir: t.TempDir(), RetryDelay: time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		SkipTypes: DefaultSkipTypes,
	}
	if mod != nil {
		mod(&e.opt)
	}
	e.files = scan.NewFiles(e.sb, e.dl, e.opt)
	t.Cleanup(func() {
		e.files.Close()
		if strings.Contains(e.logs.String(), e.fake.BotToken()) {
			t.Error("the bot token appears in the logs")
		}
	})
	return e
}

// share hosts a file in the fake and returns its files.info as a FileRef,
// the way the bot gets it.
func (e *fileEnv) share(name string, content []byte) scan.FileRef {
	e.t.Helper()
	f := e.fake.AddFile(slackfake.File{Name: name, User: "U0ALICE", Content: content, Channels: []string{"C0SEC"}})
	return e.info(f.ID)
}

func (e *fileEnv) info(id string) scan.FileRef {
	e.t.Helper()
	info, _, _, err := e.api.GetFileInfoContext(e.t.Context(), id, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return refFromSlack(info)
}

// refFromSlack is how the bot turns files.info into a FileRef.
func refFromSlack(f *slack.File) scan.FileRef {
	return scan.FileRef{ID: f.ID, Name: f.Name, Filetype: f.Filetype, Mimetype: f.Mimetype, Size: int64(f.Size),
		External: f.IsExternal, Source: f.URLPrivateDownload}
}

func (e *fileEnv) downloads() int { return len(e.fake.Calls(slackfake.MethodFileDownload)) }
func (e *fileEnv) uploads() int   { return e.sim.Count(sim.ServiceSandbox, sim.OpCreateFile) }

// A file shared in Slack goes through the whole pipeline: downloaded with
// the bot token, hashed, uploaded, analysed.
func TestSlackFileChecked(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ from slack SIM:MALSCORE=9.5")
	sum := sha256.Sum256(content)
	v := e.files.Check(t.Context(), e.share("dropper.exe", content), scan.FileCheckOptions{})
	if v.Level != verdict.Malicious || v.SHA256 != hex.EncodeToString(sum[:]) || v.Size != int64(len(content)) ||
		e.downloads() != 1 || e.uploads() != 1 {
		t.Fatalf("verdict %+v, %d downloads, %d uploads", v, e.downloads(), e.uploads())
	}
}

// External files and files without a download link are skipped, in Slack's
// words, without a request.
func TestSlackFilesSkippedWithoutDownload(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, func(o *scan.FileOptions) { o.MaxBytes = 1000 })
	ext := e.fake.AddFile(slackfake.File{Name: "budget.xlsx", User: "U0ALICE", IsExternal: true,
		ExternalURL: "https://docs.google.com/spreadsheets/d/1", Channels: []string{"C0SEC"}})
	canvas := e.fake.AddFile(slackfake.File{Name: "Team notes", Filetype: "quip", User: "U0ALICE", Content: []byte("notes"), Channels: []string{"C0SEC"}})
	for _, tc := range []struct {
		ref  scan.FileRef
		want string
	}{
		{e.info(ext.ID), "it is stored outside Slack (an external file), so the bot cannot fetch it"},
		{e.info(canvas.ID), `files of type "quip" are not checked`},
		{scan.FileRef{ID: "F0NOLINK", Name: "x"}, "Slack gave no download link for it"},
	} {
		if got := e.files.Precheck(tc.ref); got != tc.want {
			t.Errorf("Precheck(%s) = %q, want %q", tc.ref.Name, got, tc.want)
		}
		v := e.files.Check(t.Context(), tc.ref, scan.FileCheckOptions{})
		if v.Level != verdict.Skipped || v.Problem != tc.want || v.FileID != tc.ref.ID {
			t.Errorf("Check(%s) = %+v", tc.ref.Name, v)
		}
	}
	// Slack's size was wrong: the download stops at the limit.
	liar := e.share("small.bin", bytes.Repeat([]byte("B"), 5000))
	liar.Size = 10
	v := e.files.Check(t.Context(), liar, scan.FileCheckOptions{})
	if v.Level != verdict.Skipped || v.Problem != "it is larger than the 1 kB limit" || e.uploads() != 0 || e.downloads() != 1 {
		t.Fatalf("lying size: %+v", v)
	}
}

// The token never goes to another host: a file whose download link is not
// on Slack is not fetched, and the host is never contacted.
func TestForeignDownloadLinkIsRefused(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	foreign := newHitCounter(t)
	ref := scan.FileRef{ID: "F0EVIL", Name: "evil.exe", Filetype: "binary", Size: 18, Source: foreign.URL + "/files-pri/T1-F0EVIL/download/evil.exe"}
	v := e.files.Check(t.Context(), ref, scan.FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "its download link does not point to Slack, so the bot did not fetch it" {
		t.Fatalf("verdict %+v", v)
	}
	if foreign.hits.Load() != 0 || e.uploads() != 0 {
		t.Fatalf("foreign hits %d, uploads %d", foreign.hits.Load(), e.uploads())
	}
}

// A download without the right token gets Slack's sign-in page: a clear
// could-not-check, nothing sent to the sandbox.
func TestSignInPageIsNotAnalysed(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	ref := e.share("invoice.pdf", []byte("%PDF-1.7 SIM:MALSCORE=9"))
	wrong, err := NewDownloader("xoxb-not-the-bot", e.fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	f := scan.NewFiles(e.sb, wrong, e.opt)
	defer f.Close()
	v := f.Check(t.Context(), ref, scan.FileCheckOptions{})
	if v.Level != verdict.Unknown || !strings.Contains(v.Problem, "sign-in page") || e.uploads() != 0 {
		t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
	}
	if n := e.downloads(); n != 1 {
		t.Errorf("%d download attempts, want 1 (a sign-in page is not retried)", n)
	}
	if strings.Contains(e.logs.String(), "xoxb-not-the-bot") || strings.Contains(fmt.Sprint(v.Err), "xoxb-not-the-bot") {
		t.Error("the token appears in the logs or the error")
	}
	// An HTML attachment (phishing pages often are) is analysed as a file.
	page := e.share("login.html", []byte("<!DOCTYPE html><html><form>password SIM:MALSCORE=7.7</form></html>"))
	v = e.files.Check(t.Context(), page, scan.FileCheckOptions{})
	if v.Level != verdict.Malicious || v.MalScore != 7.7 {
		t.Fatalf("HTML file: %+v", v)
	}
}

func TestSlackDownloadRetriedAfterTransientFailure(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	ref := e.share("flaky.exe", []byte("MZ flaky SIM:MALSCORE=1"))
	e.fake.InjectFault(slackfake.Fault{Method: slackfake.MethodFileDownload, Times: 1, Status: 503})
	v := e.files.Check(t.Context(), ref, scan.FileCheckOptions{})
	if v.Level != verdict.Clean || e.downloads() != 2 {
		t.Fatalf("verdict %+v after %d downloads", v, e.downloads())
	}
	// A file that is gone is not retried.
	gone := scan.FileRef{ID: "F0GONE", Name: "gone.exe", Source: e.fake.URL() + "/files-pri/T0-F0GONE/download/gone.exe"}
	v = e.files.Check(t.Context(), gone, scan.FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "the file is no longer available in Slack" || e.downloads() != 3 {
		t.Fatalf("gone: %+v after %d downloads", v, e.downloads())
	}
}

func mb[T int64 | uint64](n T) float64 { return float64(n) / 1e6 }

const thirtyMB = 30_000_000

// A 30 MB file is downloaded from Slack, hashed and uploaded with the heap
// growing by a small fraction of its size: it is streamed through a
// temporary file, never held in memory. (The fake Slack holds its copy of
// the file in this process; that copy is there before the baseline.)
func TestSlackFileMemoryStaysFlatFor30MB(t *testing.T) {
	if testing.Short() {
		t.Skip("30 MB through the whole pipeline")
	}
	e := newFileEnv(t, sim.Config{}, nil)
	h := sha256.New()
	content, _ := io.ReadAll(io.TeeReader(testutil.Synthetic(1, thirtyMB), h))
	want := hex.EncodeToString(h.Sum(nil))
	f := e.fake.AddFile(slackfake.File{Name: "big.iso", User: "U0ALICE", Content: content, Channels: []string{"C0SEC"}})
	content, f.Content = nil, nil
	ref := e.info(f.ID)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := testutil.HeapObjects()
	s := testutil.StartHeapSampler()
	v := e.files.Check(t.Context(), ref, scan.FileCheckOptions{})
	peak := s.Finish()
	runtime.ReadMemStats(&after)
	if v.Err != nil || v.Level == verdict.Unknown || v.Size != thirtyMB || v.SHA256 != want || e.uploads() != 1 {
		t.Fatalf("verdict %+v", v)
	}
	growth := int64(peak) - int64(base)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("30 MB file: heap %0.1f MB before, peak %0.1f MB (growth %0.1f MB); %0.1f MB allocated in all, in this process (pipeline, fake Slack and simulator)",
		mb(base), mb(peak), float64(growth)/1e6, mb(allocated))
	if growth > 8e6 {
		t.Errorf("the heap grew by %0.1f MB for a 30 MB file", float64(growth)/1e6)
	}
	if allocated > 8e6 {
		t.Errorf("%0.1f MB allocated for a 30 MB file", mb(allocated))
	}
}
