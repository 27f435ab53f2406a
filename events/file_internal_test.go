package events

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncedBuffer is a file: what was written, and what was fsynced.
type syncedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	synced int // bytes covered by an fsync
	syncs  atomic.Int32
	fail   error
}

func (b *syncedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncedBuffer) sync() error {
	b.syncs.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.synced = b.buf.Len()
	return nil
}

func (b *syncedBuffer) Close() error { return nil }

func (b *syncedBuffer) state() (written, synced int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len(), b.synced
}

// A burst of lines is written at once, line by line, and fsynced together
// within fileSyncEvery (not once a line); Close fsyncs what is left; an
// fsync that fails is reported by the next Write.
func TestFileFsyncsLinesTogether(t *testing.T) {
	b := &syncedBuffer{}
	f := &File{w: b, sync: b.sync, c: b}
	for i := range 100 {
		if err := f.Write([]byte(`{"n":` + strings.Repeat("1", i%7+1) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if written, _ := b.state(); strings.Count(b.buf.String(), "\n") != 100 || written == 0 {
		t.Fatalf("%d lines written at once, want 100", strings.Count(b.buf.String(), "\n"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		written, synced := b.state()
		if synced == written {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes fsynced 5 s after the writes", synced, written)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.syncs.Load(); n > 2 {
		t.Fatalf("%d fsyncs for a burst of 100 lines, want 1 (2 if the timer split it)", n)
	}
	// A line written just before Close is fsynced by Close.
	if err := f.Write([]byte(`{"last":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if written, synced := b.state(); synced != written {
		t.Fatalf("Close left %d of %d bytes unsynced", written-synced, written)
	}

	// A failed fsync comes back from the next Write.
	b2 := &syncedBuffer{fail: errors.New("input/output error")}
	f2 := &File{w: b2, sync: b2.sync, c: b2}
	if err := f2.Write([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for b2.syncs.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if err := f2.Write([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), "input/output") {
		t.Fatalf("the write after a failed fsync returned %v", err)
	}
}
