package bolt

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/store"
)

func TestDataSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.RecordJobs([]*store.Job{{Kind: "message", EventID: "Ev1"}})
	db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if jobs, _ := db.PendingJobs(); len(jobs) != 1 {
		t.Fatal("job lost")
	}
	if fresh, _ := db.SeenEvent("Ev1"); fresh {
		t.Fatal("event id lost")
	}
	if _, err := db.Analysis("reputation", "https://a.test/"); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, FileName))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file mode %v", fi.Mode().Perm())
	}
}

func TestCorruptLockedOrNewerStoreIsAClearErrorNotAReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	garbage := bytes.Repeat([]byte("not a database "), 1000)
	os.WriteFile(path, garbage, 0o600)
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "is unreadable") || !strings.Contains(err.Error(), "left untouched") {
		t.Fatalf("corrupt store: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, garbage) {
		t.Fatal("the corrupt file was modified")
	}

	dir2 := t.TempDir()
	db, err := Open(dir2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir2, Options{})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second open: %v", err)
	}
	db.be.update(func(t txn) error { return t.put(bMeta, "schema", []byte("99")) })
	db.Close()
	_, err = Open(dir2, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this verdictbot understands") {
		t.Fatalf("newer schema: %v", err)
	}

	dir3 := t.TempDir()
	os.Chmod(dir3, 0o500)
	defer os.Chmod(dir3, 0o700)
	if os.Geteuid() != 0 {
		if _, err := Open(dir3, Options{}); err == nil {
			t.Fatal("unwritable directory accepted")
		}
	}
}
