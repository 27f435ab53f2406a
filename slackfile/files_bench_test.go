package slackfile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"

	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
)

// ---- benchmark: peak RSS for one 30 MB file and for ten at once ----

// The servers run in a child process (this test binary, re-executed), so
// the RSS measured is the pipeline's own.
const fileHostHelperEnv = "VERDICTBOT_SLACKFILE_FILEHOST_HELPER"

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
		_, _ = io.Copy(w, testutil.Synthetic(seed, size))
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
	cmd.Env = testutil.ChildEnv(fileHostHelperEnv + "=" + token)
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
//	go test -run '^$' -bench FileMemory -benchtime 3x ./slackfile/
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
			files := scan.NewFiles(sb, dl, scan.FileOptions{Wait: fastSandboxWait, TempDir: b.TempDir(), MaxDownloads: n, MaxScreenshots: -1})
			defer files.Close()
			var peakRSS, rssGrowth, peakHeap, heapGrowth int64
			b.SetBytes(int64(n) * thirtyMB)
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				refs := make([]scan.FileRef, n)
				for i := range refs {
					seed := benchSeed.Add(1)
					refs[i] = scan.FileRef{ID: fmt.Sprintf("F%d", seed), Name: fmt.Sprintf("%d.bin", seed), Size: thirtyMB,
						Source: fmt.Sprintf("%s/files-pri/T0-F%d/download/%d.bin", filesURL, seed, thirtyMB)}
				}
				runtime.GC()
				debug.FreeOSMemory()
				resetPeakRSS()
				rss0, heap0 := procStatus("VmRSS"), testutil.HeapObjects()
				s := testutil.StartHeapSampler()
				b.StartTimer()

				var wg sync.WaitGroup
				vs := make([]scan.FileVerdict, n)
				for i, ref := range refs {
					wg.Go(func() { vs[i] = files.Check(context.Background(), ref, scan.FileCheckOptions{}) })
				}
				wg.Wait()

				b.StopTimer()
				heapPeak := s.Finish()
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
