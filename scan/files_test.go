package scan

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/verdict"
)

const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// fastSandboxWait polls the simulator (FastProfile: one status per poll)
// without sleeping for long.
var fastSandboxWait = sandbox.WaitOptions{
	Backoff:  sandbox.Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond},
	Deadline: 10 * time.Second,
}

// fileEnv is a file pipeline between the simulator (over real HTTP) and
// files on disk read by LocalFiles.
type fileEnv struct {
	t   *testing.T
	src *testFetcher
	sim *sim.Server
	// simURL is the simulator's base URL.
	simURL string
	sb     *sandbox.Client
	files  *Files
	opt    FileOptions
	tmp    string
	logs   *testutil.SyncBuffer
}

func newFileEnv(t *testing.T, cfg sim.Config, mod func(*FileOptions)) *fileEnv {
	t.Helper()
	logger, logs := testutil.Logger(slog.LevelDebug)
	e := &fileEnv{t: t, src: newTestFetcher(t), tmp: t.TempDir(), logs: logs}
	e.sim, e.simURL = simtest.Start(t, cfg)
	var err error
	e.sb, err = sandbox.New(e.simURL, simKey,
		sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}),
		sandbox.WithRetries(2, time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.opt = FileOptions{
		Wait: fastSandboxWait, TempDir: e.tmp, RetryDelay: time.Millisecond,
		Logger: logger, SkipTypes: []string{"post", "space", "quip", "canvas"},
	}
	if mod != nil {
		mod(&e.opt)
	}
	e.files = NewFiles(e.sb, e.src, e.opt)
	t.Cleanup(func() {
		e.files.Close()
		if left, _ := filepathGlob(e.tmp); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})
	return e
}

// restart replaces the pipeline with a new one (same files, sandbox and
// options, mod applied), as a restarted process would have.
func (e *fileEnv) restart(mod func(*FileOptions)) {
	e.files.Close()
	opt := e.opt
	if mod != nil {
		mod(&opt)
	}
	e.files = NewFiles(e.sb, e.src, opt)
}

// share writes a file for the pipeline and returns its FileRef.
func (e *fileEnv) share(name string, content []byte) FileRef {
	e.t.Helper()
	return e.src.add(e.t, FileRef{Name: name}, content)
}

// info returns the FileRef of a file shared earlier.
func (e *fileEnv) info(id string) FileRef {
	e.t.Helper()
	e.src.mu.Lock()
	defer e.src.mu.Unlock()
	ref, ok := e.src.refs[id]
	if !ok {
		e.t.Fatalf("no file %s", id)
	}
	return ref
}

func (e *fileEnv) downloads() int { return int(e.src.fetches.Load()) }
func (e *fileEnv) uploads() int   { return e.sim.Count(sim.ServiceSandbox, sim.OpCreateFile) }

func filepathGlob(dir string) ([]string, error) { return filepath.Glob(filepath.Join(dir, "*")) }

func sums(b []byte) (md, s1, s256 string) {
	m, a, c := md5.Sum(b), sha1.Sum(b), sha256.Sum256(b)
	return hex.EncodeToString(m[:]), hex.EncodeToString(a[:]), hex.EncodeToString(c[:])
}

// statusLog collects OnStatus words.
type statusLog struct {
	mu sync.Mutex
	s  []string
}

func (l *statusLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.s) == 0 || l.s[len(l.s)-1] != s {
		l.s = append(l.s, s)
	}
}

func (l *statusLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.s)
}

func TestFileVerdictsFromTheSimulator(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	for _, tc := range []struct {
		name    string
		content string
		level   verdict.Level
		score   float64
		family  string
		shots   int
		problem string
	}{
		{"eicar.com", eicar, verdict.Malicious, 10, "EICAR", 3, ""},
		{"invoice.doc", "MZ dropper SIM:MALSCORE=4.2 SIM:FAMILY=Qakbot", verdict.Suspicious, 4.2, "Qakbot", 3, ""},
		{"report.bin", "MZ SIM:MALSCORE=6.1", verdict.Malicious, 6.1, "", 3, ""},
		{"edge.bin", "MZ SIM:MALSCORE=2.0", verdict.Clean, 2.0, "", 3, ""},
		{"shots.exe", "MZ SIM:SHOTS=2 SIM:MALSCORE=7", verdict.Malicious, 7, "", 2, ""},
		{"noshots.exe", "MZ SIM:SHOTS=0", verdict.Clean, -1, "", 0, ""},
		{"broken.exe", "MZ SIM:FAIL_ANALYSIS", verdict.Unknown, 0, "", 0, "the sandbox could not analyse it (failed_analysis)"},
		{"broken2.exe", "MZ SIM:FAIL_REPORTING", verdict.Unknown, 0, "", 0, "the sandbox could not analyse it (failed_reporting)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := e.share(tc.name, []byte(tc.content))
			var st statusLog
			v := e.files.Check(t.Context(), ref, FileCheckOptions{OnStatus: st.add})
			md, s1, s256 := sums([]byte(tc.content))
			if v.Level != tc.level || v.Family != tc.family || v.Problem != tc.problem {
				t.Fatalf("verdict %s family %q problem %q err %v", v.Level, v.Family, v.Problem, v.Err)
			}
			if tc.score >= 0 && v.MalScore != tc.score {
				t.Errorf("malscore %v, want %v", v.MalScore, tc.score)
			}
			if v.SHA256 != s256 || v.MD5 != md || v.SHA1 != s1 || v.Size != int64(len(tc.content)) {
				t.Errorf("hashes %s %s %s size %d", v.MD5, v.SHA1, v.SHA256, v.Size)
			}
			if v.FileID != ref.ID || v.Name != tc.name || v.TaskID == "" || v.Reused || v.Cached || v.Polls < 1 {
				t.Errorf("verdict %+v", v)
			}
			var shots []Screenshot
			if tc.level != verdict.Unknown {
				var err error
				if shots, err = e.files.Screenshots(t.Context(), v.TaskID); err != nil {
					t.Errorf("screenshots: %v", err)
				}
			}
			if len(shots) != tc.shots {
				t.Errorf("%d screenshots, want %d", len(shots), tc.shots)
			}
			for _, img := range shots {
				if img.ContentType != "image/jpeg" || !isImage(img.Data) {
					t.Errorf("screenshot %s %s", img.Name, img.ContentType)
				}
				if _, err := jpeg.Decode(bytes.NewReader(img.Data)); err != nil {
					t.Errorf("screenshot %s: %v", img.Name, err)
				}
			}
			want := []string{FileQueued, FileDownloading, FileLookingUp, FileUploading, FileSubmitted, "pending"}
			if tc.level != verdict.Unknown {
				// "reported" is not progress: the verdict follows it at once.
				want = append(want, "running", "completed", "reporting")
				if v.AddedOn == "" || v.StartedOn == "" || v.CompletedOn == "" || v.Magic == "" {
					t.Errorf("times %q %q %q magic %q", v.AddedOn, v.StartedOn, v.CompletedOn, v.Magic)
				}
			}
			if got := st.get(); !slices.Equal(got[:min(len(got), len(want))], want) || slices.Contains(got, "reported") {
				t.Errorf("statuses %q, want %q… and never reported", got, want)
			}
		})
	}
	if n := e.uploads(); n != 8 {
		t.Errorf("%d uploads, want 8", n)
	}
}

// A file the sandbox already analysed is not uploaded again: its newest
// reported task gives the verdict.
func TestKnownHashIsNotUploaded(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ known sample SIM:MALSCORE=8.8 SIM:FAMILY=AgentTesla SIM:SHOTS=1")
	sub, err := e.sb.CreateFile(t.Context(), "earlier.exe", bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sb.Wait(t.Context(), sub.TaskIDs[0], fastSandboxWait); err != nil {
		t.Fatal(err)
	}
	var st statusLog
	v := e.files.Check(t.Context(), e.share("again.exe", content), FileCheckOptions{OnStatus: st.add})
	if v.Level != verdict.Malicious || v.MalScore != 8.8 || v.Family != "AgentTesla" || !v.Reused || v.Cached ||
		v.TaskID != sub.TaskIDs[0] || v.Polls != 0 || v.CompletedOn == "" {
		t.Fatalf("verdict %+v", v)
	}
	if slices.Contains(st.get(), FileUploading) {
		t.Errorf("statuses %q", st.get())
	}
	if n := e.uploads(); n != 1 {
		t.Fatalf("%d uploads, want 1 (the earlier one)", n)
	}
	// Another file with the same bytes: the verdict cache (by sha256).
	v2 := e.files.Check(t.Context(), e.share("third.exe", content), FileCheckOptions{})
	if !v2.Cached || v2.TaskID != v.TaskID || v2.Name != "third.exe" || e.uploads() != 1 {
		t.Fatalf("second check %+v (uploads %d)", v2, e.uploads())
	}
	// The verdict carries no images (they are read after it is given):
	// those of a cached verdict are read from its task.
	if shots, err := e.files.Screenshots(t.Context(), v2.TaskID); err != nil || len(shots) != 1 || !isImage(shots[0].Data) {
		t.Fatalf("screenshots of a cached verdict: %d, %v", len(shots), err)
	}
	// The same file again: no download either.
	before := e.downloads()
	v3 := e.files.Check(t.Context(), e.info(v2.FileID), FileCheckOptions{})
	if !v3.Cached || e.downloads() != before {
		t.Fatalf("third check %+v (downloads %d → %d)", v3, before, e.downloads())
	}
}

// A task still running for the same hash is joined, not uploaded again.
func TestKnownHashInProgressIsJoined(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ in progress SIM:MALSCORE=3.3")
	sub, err := e.sb.CreateFile(t.Context(), "other-bot.exe", bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	v := e.files.Check(t.Context(), e.share("x.exe", content), FileCheckOptions{})
	if v.Level != verdict.Suspicious || !v.Reused || v.TaskID != sub.TaskIDs[0] || v.Polls == 0 || e.uploads() != 1 {
		t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
	}
}

// One upload per unique file, however many messages share it at once.
func TestSameFileCheckedConcurrently(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ shared everywhere SIM:MALSCORE=9.1")
	ref := e.share("shared.exe", content)
	check := func(refs []FileRef) []FileVerdict {
		out := make([]FileVerdict, len(refs))
		var wg sync.WaitGroup
		for i, r := range refs {
			wg.Go(func() { out[i] = e.files.Check(t.Context(), r, FileCheckOptions{}) })
		}
		wg.Wait()
		return out
	}
	// The same file in ten messages: one download, one upload.
	refs := make([]FileRef, 10)
	for i := range refs {
		refs[i] = ref
	}
	for _, v := range check(refs) {
		if v.Level != verdict.Malicious || v.TaskID == "" || v.Err != nil {
			t.Fatalf("verdict %+v", v)
		}
	}
	if d, u := e.downloads(), e.uploads(); d != 1 || u != 1 {
		t.Fatalf("%d downloads, %d uploads; want 1 and 1", d, u)
	}

	// Ten files with the same new bytes: ten downloads (the hash is
	// only known after one), one upload.
	content2 := []byte("MZ uploaded ten times by ten people SIM:MALSCORE=5")
	for i := range refs {
		refs[i] = e.share(fmt.Sprintf("copy%d.exe", i), content2)
	}
	vs := check(refs)
	for i, v := range vs {
		if v.Level != verdict.Suspicious || v.TaskID != vs[0].TaskID || v.Name != refs[i].Name || v.FileID != refs[i].ID {
			t.Fatalf("verdict %d %+v", i, v)
		}
	}
	if d, u := e.downloads(), e.uploads(); d != 11 || u != 2 {
		t.Fatalf("%d downloads, %d uploads; want 11 and 2", d, u)
	}
}

func TestSkippedWithoutDownload(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.MaxBytes = 1000 })
	big := e.share("big.iso", bytes.Repeat([]byte("A"), 1500))
	ext := e.src.add(t, FileRef{Name: "budget.xlsx", External: true}, []byte("a link"))
	canvas := e.src.add(t, FileRef{Name: "Team notes", Filetype: "quip"}, []byte("notes"))
	for _, tc := range []struct {
		ref  FileRef
		want string
	}{
		{big, "it is larger than the 1 kB limit (1.5 kB)"},
		{ext, "it is not a file on this machine"}, // the Fetcher's words
		{canvas, `files of type "quip" are not checked`},
		{FileRef{ID: "F0NOLINK", Name: "x"}, "it is not a file on this machine"},
	} {
		if got := e.files.Precheck(tc.ref); got != tc.want {
			t.Errorf("Precheck(%s) = %q, want %q", tc.ref.Name, got, tc.want)
		}
		v := e.files.Check(t.Context(), tc.ref, FileCheckOptions{})
		if v.Level != verdict.Skipped || v.Problem != tc.want || v.FileID != tc.ref.ID {
			t.Errorf("Check(%s) = %+v", tc.ref.Name, v)
		}
	}
	if d, u := e.downloads(), e.uploads(); d != 0 || u != 0 {
		t.Fatalf("%d downloads, %d uploads; want none", d, u)
	}

	// The source's size was wrong: the fetch stops at the limit.
	liar := e.share("small.bin", bytes.Repeat([]byte("B"), 5000))
	liar.Size = 10
	v := e.files.Check(t.Context(), liar, FileCheckOptions{})
	if v.Level != verdict.Skipped || v.Problem != "it is larger than the 1 kB limit" || e.uploads() != 0 {
		t.Fatalf("lying size: %+v", v)
	}
	empty := e.share("empty.txt", nil)
	if v := e.files.Check(t.Context(), empty, FileCheckOptions{}); v.Level != verdict.Skipped || v.Problem != "it is empty" {
		t.Fatalf("empty: %+v", v)
	}

	// Skip lists: mimetype families, and nothing at all.
	img := e.share("cat.png", []byte("\x89PNG\r\n\x1a\n...."))
	e.restart(func(o *FileOptions) { o.SkipTypes = []string{"image/*"} })
	if got := e.files.Precheck(img); got != `files of type "png" are not checked` {
		t.Errorf("image/*: %q", got)
	}
	e.restart(func(o *FileOptions) { o.SkipTypes = []string{} })
	if got := e.files.Precheck(canvas); got != "" {
		t.Errorf("empty skip list: %q", got)
	}
}

func TestSandboxDeadline(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) {
		o.Wait = sandbox.WaitOptions{Backoff: sandbox.Backoff{Initial: 5 * time.Millisecond, Factor: 1, Max: 5 * time.Millisecond},
			Deadline: 100 * time.Millisecond}
	})
	v := e.files.Check(t.Context(), e.share("slow.exe", []byte("MZ SIM:DURATION=1h")), FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "the sandbox did not finish in time" || v.TaskID == "" {
		t.Fatalf("verdict %+v", v)
	}
}

// A submission that made several tasks (an unpacked archive) takes the
// worst verdict of them.
func TestSeveralTasksTakeTheWorst(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	multi := &twoTasks{SandboxAPI: e.sb, second: []byte(eicar)}
	f := NewFiles(multi, e.src, e.opt)
	defer f.Close()
	v := f.Check(t.Context(), e.share("archive.zip", []byte("PK clean member")), FileCheckOptions{})
	if v.Level != verdict.Malicious || v.Family != "EICAR" || len(v.TaskIDs) != 2 || v.TaskID != v.TaskIDs[1] {
		t.Fatalf("verdict %+v", v)
	}
}

// twoTasks makes each upload answer two task ids, the second for another
// sample, as CAPE does for an archive it unpacks.
type twoTasks struct {
	SandboxAPI
	second []byte
}

func (m *twoTasks) CreateFile(ctx context.Context, name string, r io.Reader) (*sandbox.Submission, error) {
	sub, err := m.SandboxAPI.CreateFile(ctx, name, r)
	if err != nil {
		return nil, err
	}
	sub2, err := m.SandboxAPI.CreateFile(ctx, "member", bytes.NewReader(m.second))
	if err != nil {
		return nil, err
	}
	sub.TaskIDs = append(sub.TaskIDs, sub2.TaskIDs...)
	return sub, nil
}

func TestCheckInterruptedByCaller(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) {
		o.Wait.Backoff = sandbox.Backoff{Initial: 20 * time.Millisecond, Factor: 1, Max: 20 * time.Millisecond}
	})
	ref := e.share("slowish.exe", []byte("MZ slowish SIM:MALSCORE=6.5"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	v := e.files.Check(ctx, ref, FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "the check was interrupted before it finished" {
		t.Fatalf("verdict %+v", v)
	}
	// The analysis carried on: the next check joins or reuses it.
	v = e.files.Check(t.Context(), ref, FileCheckOptions{})
	if v.Level != verdict.Malicious || e.uploads() != 1 {
		t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
	}
}

// Screenshots are asked for once: a failed archive request is not followed
// by a second, numbered walk (the client already falls back when the
// archive is unusable), and only real images are kept.
func TestScreenshotsAskedOnceAndKeepOnlyImages(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	odd := &oddShots{SandboxAPI: e.sb}
	f := NewFiles(odd, e.src, e.opt)
	defer f.Close()
	v := f.Check(t.Context(), e.share("shots.exe", []byte("MZ SIM:SHOTS=4 SIM:MALSCORE=7")), FileCheckOptions{})
	if v.Level != verdict.Malicious || odd.calls.Load() != 0 {
		t.Fatalf("verdict %+v, %d screenshot calls before the verdict", v.Level, odd.calls.Load())
	}
	shots, err := f.Screenshots(t.Context(), v.TaskID)
	if err != nil || len(shots) != 3 || odd.calls.Load() != 1 {
		t.Fatalf("%d screenshots, %v, %d calls", len(shots), err, odd.calls.Load())
	}
	for i, img := range shots {
		if !isImage(img.Data) || img.Name != fmt.Sprintf("%04d.jpg", i+1) {
			t.Errorf("screenshot %d: %s", i, img.Name)
		}
	}
	odd.fail.Store(true)
	if shots, err := f.Screenshots(t.Context(), v.TaskID); err == nil || len(shots) != 0 || odd.calls.Load() != 2 {
		t.Fatalf("failing archive: %d screenshots, %v, %d calls (want one more)", len(shots), err, odd.calls.Load())
	}
}

// TestScreenshotsHaveADeadline: a screenshot endpoint that never answers
// costs ScreenshotTimeout, not the client's whole retry budget.
func TestScreenshotsHaveADeadline(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	hang := &oddShots{SandboxAPI: e.sb}
	hang.hang.Store(true)
	opt := e.opt
	opt.ScreenshotTimeout = 200 * time.Millisecond
	f := NewFiles(hang, e.src, opt)
	defer f.Close()
	start := time.Now()
	shots, err := f.Screenshots(t.Context(), "1000")
	if took := time.Since(start); err == nil || len(shots) != 0 || took > 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%d screenshots, %v after %v", len(shots), err, took)
	}
}

// oddShots slips a non-image among the shots, or fails, or hangs.
type oddShots struct {
	SandboxAPI
	calls      atomic.Int32
	fail, hang atomic.Bool
}

func (o *oddShots) Screenshots(ctx context.Context, taskID string, max int) ([]sandbox.Image, error) {
	o.calls.Add(1)
	switch {
	case o.fail.Load():
		return nil, errors.New("archive broke")
	case o.hang.Load():
		<-ctx.Done()
		return nil, ctx.Err()
	}
	imgs, err := o.SandboxAPI.Screenshots(ctx, taskID, max)
	bad := sandbox.Image{Name: "0000.jpg", ContentType: "image/jpeg", Data: []byte("<html>")}
	return append([]sandbox.Image{bad}, imgs...), err
}
