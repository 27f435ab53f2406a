package scan

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

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
	content, _ := io.ReadAll(io.TeeReader(synthetic(1, thirtyMB), h))
	want := hex.EncodeToString(h.Sum(nil))
	ref := e.src.add(t, FileRef{Name: "big.iso"}, content)
	content = nil

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
