package scan

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"runtime"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"

	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

const thirtyMB = 30_000_000

// A 30 MB file is fetched, hashed and uploaded with the heap growing by a
// small fraction of its size: it is streamed through a temporary file,
// never held in memory. (The downloader's package has the same test for
// its own Fetcher.)
func TestMemoryStaysFlatFor30MB(t *testing.T) {
	if testing.Short() {
		t.Skip("30 MB through the whole pipeline")
	}
	e := newFileEnv(t, sim.Config{}, nil)
	h := sha256.New()
	content, _ := io.ReadAll(io.TeeReader(testutil.Synthetic(1, thirtyMB), h))
	want := hex.EncodeToString(h.Sum(nil))
	ref := e.src.add(t, FileRef{Name: "big.iso"}, content)
	content = nil

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := testutil.HeapObjects()
	s := testutil.StartHeapSampler()
	v := e.files.Check(t.Context(), ref, FileCheckOptions{})
	peak := s.Finish()
	runtime.ReadMemStats(&after)
	if v.Err != nil || v.Level == verdict.Unknown || v.Size != thirtyMB || v.SHA256 != want || e.uploads() != 1 {
		t.Fatalf("verdict %+v", v)
	}
	growth := int64(peak) - int64(base)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("30 MB file: heap %0.1f MB before, peak %0.1f MB (growth %0.1f MB); %0.1f MB allocated in all, in this process (pipeline and simulator)",
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
