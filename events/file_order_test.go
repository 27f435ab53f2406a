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
	committed := func(seqs ...uint64) {
		for _, s := range seqs {
			e.Committed([]*store.Outgoing{{Seq: s, Body: fmt.Appendf(nil, `{"seq":%d}`, s)}})
		}
	}
	committed(1, 3, 2)
	if got := strings.Join(fileLines(t, path), " "); got != `{"seq":1} {"seq":2} {"seq":3}` {
		t.Fatalf("file %s", got)
	}
	// 4 is another replica's: 5 and 6 wait for it, then go.
	committed(6, 5)
	if n := len(fileLines(t, path)); n != 3 {
		t.Fatalf("%d lines before the hold ended, want 3", n)
	}
	time.Sleep(fileHold + 100*time.Millisecond)
	if got := strings.Join(fileLines(t, path), " "); got != `{"seq":1} {"seq":2} {"seq":3} {"seq":5} {"seq":6}` {
		t.Fatalf("after the hold: %s", got)
	}
	committed(8)
	e.Flush()
	if got := fileLines(t, path); len(got) != 6 || got[5] != `{"seq":8}` {
		t.Fatalf("after Flush: %q", got)
	}
}
