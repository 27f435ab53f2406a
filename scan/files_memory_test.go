package scan

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// memFileMemory is a FileMemory in a map, with a record of its calls.
type memFileMemory struct {
	mu       sync.Mutex
	inflight map[string]string // sha256 → task ids ("" intent)
	verdicts map[string]FileVerdict
	calls    []string
}

func newMemFileMemory() *memFileMemory {
	return &memFileMemory{inflight: map[string]string{}, verdicts: map[string]FileVerdict{}}
}

func (m *memFileMemory) log(s string) { m.calls = append(m.calls, s) }

func (m *memFileMemory) Recall(sha string, ttl time.Duration) (FileVerdict, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.verdicts[sha]
	if !ok || time.Since(v.CheckedAt) > ttl {
		return FileVerdict{}, false
	}
	// What a store keeps: no hashes but the key, no screenshots.
	return FileVerdict{SHA256: sha, TaskID: v.TaskID, Level: v.Level, MalScore: v.MalScore, Family: v.Family, CheckedAt: v.CheckedAt}, true
}

func (m *memFileMemory) InFlight(sha string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.inflight[sha]
	return id, ok
}

func (m *memFileMemory) Submitting(sha string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log("submitting")
	m.inflight[sha] = ""
}

func (m *memFileMemory) Submitted(sha, taskID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log("submitted " + taskID)
	m.inflight[sha] = taskID
}

func (m *memFileMemory) LastTask(sha string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.verdicts[sha].TaskID
}

func (m *memFileMemory) Finished(v FileVerdict, source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log("finished " + v.TaskID)
	delete(m.inflight, v.SHA256)
	if v.Err == nil {
		m.verdicts[v.SHA256] = v
	}
}

func (m *memFileMemory) task(sha string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.inflight[sha]
	return id, ok
}

// blockedWait never finishes polling: the process "stops" mid-analysis.
func blockedWait(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// A restart resumes a task in flight without uploading the file again,
// whether the file is checked again (downloaded, hashed) or resumed by its
// hash alone.
func TestResumeAfterRestartWithoutUploadingAgain(t *testing.T) {
	t.Parallel()
	mem := newMemFileMemory()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) {
		o.Memory = mem
		o.Wait.Sleep = blockedWait
	})
	content := []byte("MZ resumed after a restart SIM:MALSCORE=9.5 SIM:FAMILY=Lumma")
	_, _, sha := sums(content)
	ref := e.share("resume.exe", content)

	first := make(chan FileVerdict, 1)
	f1 := e.files
	go func() { first <- f1.Check(t.Context(), ref, FileCheckOptions{}) }()
	var task string
	for deadline := time.Now().Add(10 * time.Second); ; {
		if id, ok := mem.task(sha); ok && id != "" {
			task = id
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no submission recorded")
		}
		time.Sleep(time.Millisecond)
	}
	e.restart(func(o *FileOptions) { o.Wait.Sleep = nil }) // the process stops
	v := <-first
	if v.Level != verdict.Unknown || !errors.Is(v.Err, context.Canceled) || v.Problem != "the check was stopped (the bot is shutting down)" {
		t.Fatalf("interrupted verdict %+v", v)
	}
	if id, ok := mem.task(sha); !ok || id != task {
		t.Fatalf("in flight after the stop: %q %v, want %q", id, ok, task)
	}

	// The new process resumes the task by its hash, without the file.
	downloads := e.downloads()
	var st statusLog
	v = e.files.Resume(t.Context(), sha, FileCheckOptions{OnStatus: st.add})
	md, s1, _ := sums(content)
	if v.Level != verdict.Malicious || v.TaskID != task || v.Family != "Lumma" || v.MD5 != md || v.SHA1 != s1 ||
		v.Size != int64(len(content)) || v.Reused {
		t.Fatalf("resumed verdict %+v", v)
	}
	if e.uploads() != 1 || e.downloads() != downloads {
		t.Fatalf("%d uploads, %d downloads (was %d)", e.uploads(), e.downloads(), downloads)
	}
	if _, ok := mem.task(sha); ok {
		t.Error("still in flight after the verdict")
	}
	if got := st.get(); slices.Contains(got, "reported") || slices.Contains(got, FileUploading) {
		t.Errorf("statuses %q", got)
	}

	// Checked again after another restart: the memory recalls the verdict,
	// nothing is uploaded.
	e.restart(nil)
	v = e.files.Check(t.Context(), ref, FileCheckOptions{})
	if !v.Cached || v.Level != verdict.Malicious || v.TaskID != task || v.MD5 != md || e.uploads() != 1 {
		t.Fatalf("recalled verdict %+v, uploads %d", v, e.uploads())
	}
}

// The same, when the file is shared again after the restart: it is
// downloaded and hashed, and the task in flight is resumed.
func TestResumeByCheckingTheFileAgain(t *testing.T) {
	t.Parallel()
	mem := newMemFileMemory()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
	content := []byte("MZ shared again after a restart SIM:MALSCORE=3")
	_, _, sha := sums(content)
	sub, err := e.sb.CreateFile(t.Context(), "resume.exe", bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	mem.Submitted(sha, sub.TaskIDs[0]) // what the stopped process recorded
	v := e.files.Check(t.Context(), e.share("resume.exe", content), FileCheckOptions{})
	if v.Level != verdict.Suspicious || v.TaskID != sub.TaskIDs[0] || v.Reused || e.uploads() != 1 {
		t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
	}
}

// The file pipeline's requests wait for the sandbox's budgets in the lane
// of the work they are for (sandbox.WithPriority): a new file's in High, a
// resumed analysis's in Low, behind them.
func TestFileRequestsWaitInTheirWorksLane(t *testing.T) {
	t.Parallel()
	mem := newMemFileMemory()
	var (
		mu    sync.Mutex
		lanes []string
	)
	// take returns the requests made since the last take in lanes other
	// than want, and how many there were in all.
	take := func(want string) (others []string, n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range lanes {
			if !strings.HasSuffix(s, " "+want) {
				others = append(others, s)
			}
		}
		n = len(lanes)
		lanes = nil
		return others, n
	}
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
	sb, err := sandbox.New(e.simURL, simKey, sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}),
		sandbox.WithRetries(2, time.Millisecond, 5*time.Millisecond),
		sandbox.WithObserver(func(ev sandbox.Event) {
			if !ev.IsWait {
				mu.Lock()
				lanes = append(lanes, ev.Op+" "+ev.Priority)
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	e.sb = sb
	e.restart(nil)
	check := func(what, want string) {
		t.Helper()
		if others, n := take(want); n == 0 || len(others) > 0 {
			t.Errorf("%s: %d requests, these not in lane %s: %q", what, n, want, others)
		}
	}

	if v := e.files.Check(t.Context(), e.share("new.exe", []byte("MZ a new file SIM:MALSCORE=1")), FileCheckOptions{}); v.Err != nil {
		t.Fatalf("new file: %+v", v)
	}
	check("a new file", "high")

	// An upload a previous process made and did not finish.
	content := []byte("MZ resumed SIM:MALSCORE=3")
	_, _, sha := sums(content)
	sub, err := sb.CreateFile(t.Context(), "resumed.exe", bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	mem.Submitted(sha, sub.TaskIDs[0])
	take("")
	if v := e.files.Check(t.Context(), e.share("resumed.exe", content), FileCheckOptions{}); v.Err != nil || v.TaskID != sub.TaskIDs[0] {
		t.Fatalf("resumed: %+v", v)
	}
	check("a resumed analysis", "low")
}

// An intent without a task id (the process stopped while uploading) is
// resolved with the task search: a newer task than the last known one is
// the upload that arrived.
func TestIntentResolvedByTaskSearch(t *testing.T) {
	t.Parallel()
	t.Run("the upload arrived", func(t *testing.T) {
		t.Parallel()
		mem := newMemFileMemory()
		e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
		content := []byte("MZ intent, arrived SIM:MALSCORE=8")
		_, _, sha := sums(content)
		mem.Submitting(sha)
		sub, err := e.sb.CreateFile(t.Context(), "arrived.exe", bytes.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		v := e.files.Check(t.Context(), e.share("arrived.exe", content), FileCheckOptions{})
		if v.Level != verdict.Malicious || v.TaskID != sub.TaskIDs[0] || e.uploads() != 1 {
			t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
		}
	})
	t.Run("the upload never arrived", func(t *testing.T) {
		t.Parallel()
		mem := newMemFileMemory()
		e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
		content := []byte("MZ intent, lost SIM:MALSCORE=1")
		_, _, sha := sums(content)
		mem.Submitting(sha)
		v := e.files.Check(t.Context(), e.share("lost.exe", content), FileCheckOptions{})
		if v.Level != verdict.Clean || v.TaskID == "" || e.uploads() != 1 {
			t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
		}
		// The intent stands for the new upload: it is not recorded twice.
		if want := []string{"submitting", "submitted " + v.TaskID, "finished " + v.TaskID}; !slices.Equal(mem.calls, want) {
			t.Errorf("memory calls %q, want %q", mem.calls, want)
		}
	})
	t.Run("only the last known task exists", func(t *testing.T) {
		t.Parallel()
		mem := newMemFileMemory()
		e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
		content := []byte("MZ intent, old task only SIM:MALSCORE=2.5")
		_, _, sha := sums(content)
		sub, err := e.sb.CreateFile(t.Context(), "old.exe", bytes.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.sb.Wait(t.Context(), sub.TaskIDs[0], fastSandboxWait); err != nil {
			t.Fatal(err)
		}
		// An old verdict (outside the TTL) names that task; a new upload
		// was about to be sent.
		mem.verdicts[sha] = FileVerdict{SHA256: sha, TaskID: sub.TaskIDs[0], Level: verdict.Suspicious, CheckedAt: time.Now().Add(-48 * time.Hour)}
		mem.Submitting(sha)
		v := e.files.Check(t.Context(), e.share("old.exe", content), FileCheckOptions{})
		// The intent's upload never arrived; the known reported task is
		// reused rather than uploading.
		if v.Level != verdict.Suspicious || v.TaskID != sub.TaskIDs[0] || !v.Reused || e.uploads() != 1 {
			t.Fatalf("verdict %+v, uploads %d", v, e.uploads())
		}
	})
	t.Run("resume with nothing to resume", func(t *testing.T) {
		t.Parallel()
		mem := newMemFileMemory()
		e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
		_, _, sha := sums([]byte("never uploaded"))
		mem.Submitting(sha)
		v := e.files.Resume(t.Context(), sha, FileCheckOptions{})
		if v.Level != verdict.Unknown || !errors.Is(v.Err, errNothingToResume) || e.uploads() != 0 {
			t.Fatalf("verdict %+v", v)
		}
		if _, ok := mem.task(sha); ok {
			t.Error("the intent was not cleared")
		}
		if v := e.files.Resume(t.Context(), "not-a-hash", FileCheckOptions{}); v.Level != verdict.Unknown {
			t.Errorf("bad hash: %+v", v)
		}
	})
}

// storeFileMemory is FileMemory over the store, as the bot keeps it
// (service "sandbox", target = sha256, verdicts of Kind "file"); it mirrors
// scanstore.FileMemory, which a test inside package scan cannot import.
type storeFileMemory struct{ DB store.State }

const serviceSandbox = "sandbox"

func (m *storeFileMemory) Recall(sha string, ttl time.Duration) (FileVerdict, bool) {
	tg, err := m.DB.Target(sha)
	if err != nil || tg.Kind != "file" || time.Since(tg.Checked) > ttl || tg.Level < verdict.Clean || tg.Level == verdict.Unknown {
		return FileVerdict{}, false
	}
	hist, err := m.DB.History(sha)
	if err != nil || len(hist) == 0 {
		return FileVerdict{}, false
	}
	last := hist[len(hist)-1]
	return FileVerdict{SHA256: sha, TaskID: last.TaskID, Level: last.Level, MalScore: last.MalScore, Family: last.Family, CheckedAt: last.At}, true
}

func (m *storeFileMemory) InFlight(sha string) (string, bool) {
	a, err := m.DB.Analysis(serviceSandbox, sha)
	if err != nil {
		return "", false
	}
	return a.TaskID, true
}

func (m *storeFileMemory) Submitting(sha string) {
	_ = m.DB.PutAnalysis(store.Analysis{Service: serviceSandbox, Target: sha})
}

func (m *storeFileMemory) Submitted(sha, taskID string) {
	_ = m.DB.PutAnalysis(store.Analysis{Service: serviceSandbox, Target: sha, TaskID: taskID})
}

func (m *storeFileMemory) LastTask(sha string) string {
	tg, err := m.DB.Target(sha)
	if err != nil {
		return ""
	}
	return tg.TaskID
}

func (m *storeFileMemory) Finished(v FileVerdict, source string) {
	_ = m.DB.DeleteAnalysis(serviceSandbox, v.SHA256)
	if v.Err != nil {
		return
	}
	_, _, _ = m.DB.RecordVerdict(store.Verdict{Target: v.SHA256, Kind: "file", TaskID: v.TaskID, Level: v.Level,
		MalScore: v.MalScore, Family: v.Family, At: v.CheckedAt, Source: source}, nil, nil, false)
}

func TestStoreBackedFileMemory(t *testing.T) {
	t.Parallel()
	db := bolt.Memory(bolt.Options{})
	mem := &storeFileMemory{DB: db}
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.Memory = mem })
	content := []byte("MZ kept in the store SIM:MALSCORE=6.6 SIM:FAMILY=RedLine")
	_, _, sha := sums(content)
	ref := e.share("stored.exe", content)
	v := e.files.Check(t.Context(), ref, FileCheckOptions{})
	if v.Level != verdict.Malicious {
		t.Fatalf("verdict %+v", v)
	}
	tg, err := db.Target(sha)
	if err != nil || tg.Kind != "file" || tg.TaskID != v.TaskID || tg.Level != verdict.Malicious || !tg.NextCheck.IsZero() {
		t.Fatalf("target %+v, %v", tg, err)
	}
	hist, _ := db.History(sha)
	if len(hist) != 1 || hist[0].MalScore != 6.6 || hist[0].Family != "RedLine" || hist[0].Source != "scan" {
		t.Fatalf("history %+v", hist)
	}
	if as, _ := db.Analyses(); len(as) != 0 {
		t.Fatalf("analyses left: %+v", as)
	}
	e.restart(nil)
	v2 := e.files.Check(t.Context(), ref, FileCheckOptions{})
	if !v2.Cached || v2.TaskID != v.TaskID || v2.MalScore != 6.6 || v2.Family != "RedLine" || e.uploads() != 1 {
		t.Fatalf("recalled %+v, uploads %d", v2, e.uploads())
	}
	// A failed analysis is not recorded as a verdict.
	bad := e.share("bad.exe", []byte("MZ SIM:FAIL_PROCESSING"))
	v3 := e.files.Check(t.Context(), bad, FileCheckOptions{})
	if v3.Problem != "the sandbox could not analyse it (failed_processing)" || !errors.Is(v3.Err, sandbox.ErrTaskFailed) {
		t.Fatalf("failed verdict %+v", v3)
	}
	if _, err := db.Target(v3.SHA256); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failed analysis recorded: %v", err)
	}
}

// Without a fixed backoff the sandbox is polled on the learned,
// status-aware schedule, which the pipeline feeds; a fixed one is kept.
func TestFilesPollOnTheLearnedScheduleByDefault(t *testing.T) {
	f := NewFiles(nil, nil, FileOptions{})
	t.Cleanup(f.Close)
	if f.learned == nil || f.opt.Wait.Schedule != sandbox.Schedule(f.learned) {
		t.Fatalf("default schedule %T, learned %v", f.opt.Wait.Schedule, f.learned)
	}
	fixed := NewFiles(nil, nil, FileOptions{Wait: fastSandboxWait})
	t.Cleanup(fixed.Close)
	if fixed.learned != nil || fixed.opt.Wait.Schedule != nil {
		t.Fatalf("a fixed backoff was replaced: %T", fixed.opt.Wait.Schedule)
	}
}
