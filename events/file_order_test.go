package events

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
)

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestFileLinesFollowTheSequence: writes that commit at once report their
// events in any order; the file still gets them in sequence order. A
// sequence never reported here (another replica's) holds the lines after
// it for fileHold only; Flush writes what is held.
func TestFileLinesFollowTheSequence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	db := bolt.Memory(bolt.Options{})
	defer db.Close()
	e := &Emitter{Queue: db, File: f}
	e.StartAt(9) // a restart: the last process queued up to 9
	committed := func(seqs ...uint64) {
		for _, s := range seqs {
			e.Committed([]*store.Outgoing{{Seq: s, Body: fmt.Appendf(nil, `{"seq":%d}`, s)}})
		}
	}
	// A process's first lines: 11 reports before 10 (a restart: the
	// sequences before were the last process's).
	committed(11, 10)
	time.Sleep(fileHold + 100*time.Millisecond)
	if got := strings.Join(fileLines(t, path), " "); got != `{"seq":10} {"seq":11}` {
		t.Fatalf("the first lines: %s", got)
	}
	committed(12, 14, 13)
	if got := strings.Join(fileLines(t, path), " "); got != `{"seq":10} {"seq":11} {"seq":12} {"seq":13} {"seq":14}` {
		t.Fatalf("file %s", got)
	}
	// 15 is another replica's: 16 and 17 wait for it, then go.
	committed(17, 16)
	if n := len(fileLines(t, path)); n != 5 {
		t.Fatalf("%d lines before the hold ended, want 5", n)
	}
	time.Sleep(fileHold + 100*time.Millisecond)
	if got := strings.Join(fileLines(t, path)[5:], " "); got != `{"seq":16} {"seq":17}` {
		t.Fatalf("after the hold: %s", got)
	}
	committed(19)
	e.Flush()
	if got := fileLines(t, path); len(got) != 8 || got[7] != `{"seq":19}` {
		t.Fatalf("after Flush: %q", got)
	}
}
