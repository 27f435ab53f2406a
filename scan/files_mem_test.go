package scan

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

const thirtyMB = 30_000_000

// synthetic returns size bytes of incompressible content determined by seed.
func synthetic(seed uint64, size int64) io.Reader {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	return io.LimitReader(rand.NewChaCha8(key), size)
}

// heapSampler records the peak of the live-and-unswept heap while it runs.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > h.peak.Load() {
			h.peak.Store(v)
		}
	}
	read()
	go func() {
		defer close(h.done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return h
}

func (h *heapSampler) finish() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A 30 MB file is downloaded, hashed and uploaded with the heap growing by
// a small fraction of its size: it is streamed through a temporary file,
// never held in memory. (The fake Slack holds its copy of the file in this
// process; that copy is there before the baseline.)
func TestMemoryStaysFlatFor30MB(t *testing.T) {
	if testing.Short() {
		t.Skip("30 MB through the whole pipeline")
	}
	e := newFileEnv(t, sim.Config{}, nil)
	h := sha256.New()
	content, _ := io.ReadAll(io.TeeReader(synthetic(1, thirtyMB), h))
	want := hex.EncodeToString(h.Sum(nil))
	f := e.fake.AddFile(slackfake.File{Name: "big.iso", User: "U0ALICE", Content: content, Channels: []string{"C0SEC"}})
	content, f.Content = nil, nil
	ref := e.info(f.ID)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := heapObjects()
	s := startHeapSampler()
	v := e.files.Check(t.Context(), ref, FileCheckOptions{})
	peak := s.finish()
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
	// Nothing the size of the file was ever allocated, even briefly.
	if allocated > 8e6 {
		t.Errorf("%0.1f MB allocated for a 30 MB file", mb(allocated))
	}
}

func mb[T int64 | uint64](n T) float64 { return float64(n) / 1e6 }

// ---- benchmark: peak RSS for one 30 MB file and for ten at once ----

// The servers run in a child process (this test binary, re-executed), so
// the RSS measured is the pipeline's own.
const fileHostHelperEnv = "VERDICTBOT_SCAN_FILEHOST_HELPER"

// TestFileHostHelper is not a test: it is the child process of
// BenchmarkFileMemory. It serves a Slack file host that generates each file
// on the fly (/files-pri/T0-F<seed>/download/<seed>.bin, <size> bytes,
// bot token required, else the sign-in redirect) and the simulator, prints
// their URLs and serves until its stdin closes.
func TestFileHostHelper(t *testing.T) {
	token := os.Getenv(fileHostHelperEnv)
	if token == "" {
		t.Skip("the benchmark's child process")
	}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!DOCTYPE html><html><title>Sign in | Slack</title></html>")
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Redirect(w, r, "/?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
			return
		}
		var seed uint64
		var size int64
		if _, err := fmt.Sscanf(r.URL.Path, "/files-pri/T0-F%d/download/%d.bin", &seed, &size); err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		_, _ = io.Copy(w, synthetic(seed, size))
	}))
	defer files.Close()
	sb := httptest.NewServer(sim.New(sim.Config{}))
	defer sb.Close()
	fmt.Printf("FILES=%s\nSANDBOX=%s\n", files.URL, sb.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startFileHost runs TestFileHostHelper in a child process.
func startFileHost(b *testing.B, token string) (filesURL, sandboxURL string) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestFileHostHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), fileHostHelperEnv+"="+token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for (filesURL == "" || sandboxURL == "") && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "FILES="); ok {
			filesURL = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "SANDBOX="); ok {
			sandboxURL = v
		}
	}
	if filesURL == "" || sandboxURL == "" {
		b.Fatal("the file host did not start")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return filesURL, sandboxURL
}

// procStatus reads a "Vm…: N kB" line of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n * 1024
		}
	}
	return -1
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux).
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

var benchSeed atomic.Uint64

// BenchmarkFileMemory downloads, hashes and uploads 30 MB files through the
// pipeline (a Slack file host and the simulator in a child process, real
// HTTP) and reports this process's peak RSS and heap for one file and for
// ten files at once, each file distinct so each is uploaded.
//
//	go test -run '^$' -bench FileMemory -benchtime 3x ./scan/
func BenchmarkFileMemory(b *testing.B) {
	const token = "xoxb-bench-token"
	filesURL, sandboxURL := startFileHost(b, token)
	sb, err := sandbox.New(sandboxURL, "bench-key", sandbox.WithRateLimits(sandbox.Limit{}, sandbox.Limit{}))
	if err != nil {
		b.Fatal(err)
	}
	dl, err := NewDownloader(token, filesURL+"/api/")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			files := NewFiles(sb, dl, FileOptions{Wait: fastSandboxWait, TempDir: b.TempDir(), MaxDownloads: n, MaxScreenshots: -1})
			defer files.Close()
			var peakRSS, rssGrowth, peakHeap, heapGrowth int64
			b.SetBytes(int64(n) * thirtyMB)
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				refs := make([]FileRef, n)
				for i := range refs {
					seed := benchSeed.Add(1)
					refs[i] = FileRef{ID: fmt.Sprintf("F%d", seed), Name: fmt.Sprintf("%d.bin", seed), Size: thirtyMB,
						URLPrivateDownload: fmt.Sprintf("%s/files-pri/T0-F%d/download/%d.bin", filesURL, seed, thirtyMB)}
				}
				runtime.GC()
				debug.FreeOSMemory()
				resetPeakRSS()
				rss0, heap0 := procStatus("VmRSS"), heapObjects()
				s := startHeapSampler()
				b.StartTimer()

				var wg sync.WaitGroup
				vs := make([]FileVerdict, n)
				for i, ref := range refs {
					wg.Go(func() { vs[i] = files.Check(context.Background(), ref, FileCheckOptions{}) })
				}
				wg.Wait()

				b.StopTimer()
				heapPeak := s.finish()
				hwm := procStatus("VmHWM")
				for _, v := range vs {
					if v.Err != nil || v.Size != thirtyMB || v.TaskID == "" {
						b.Fatalf("verdict %+v", v)
					}
				}
				peakRSS = max(peakRSS, hwm)
				rssGrowth = max(rssGrowth, hwm-rss0)
				peakHeap = max(peakHeap, int64(heapPeak))
				heapGrowth = max(heapGrowth, int64(heapPeak)-int64(heap0))
				b.StartTimer()
			}
			b.ReportMetric(mb(peakRSS), "peak-RSS-MB")
			b.ReportMetric(mb(rssGrowth), "RSS-growth-MB")
			b.ReportMetric(mb(peakHeap), "peak-heap-MB")
			b.ReportMetric(mb(heapGrowth), "heap-growth-MB")
		})
	}
}
