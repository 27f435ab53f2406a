package testutil

import (
	"io"
	"math/rand/v2"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// heapObjectsMetric is the live-and-unswept heap (runtime/metrics): it errs
// high, which is the safe side for a memory bound.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// HeapObjects returns the heap's live-and-unswept bytes now.
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// HeapSampler records the peak of HeapObjects while it runs, read every
// 500 µs (a peak shorter than that can be missed).
type HeapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64
}

// StartHeapSampler starts sampling; Finish stops it and returns the peak.
func StartHeapSampler() *HeapSampler {
	h := &HeapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
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

// Finish stops the sampler and returns the peak it saw.
func (h *HeapSampler) Finish() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

// Synthetic returns size bytes of incompressible content determined by
// seed (the same seed gives the same bytes).
func Synthetic(seed uint64, size int64) io.Reader {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	return io.LimitReader(rand.NewChaCha8(key), size)
}
