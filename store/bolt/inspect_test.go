package bolt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store/bolt"
)

// TestInspect: Inspect reads a missing file as not there, a closed one's
// version without changing it, and one a running bot holds as ErrInUse
// within its wait.
func TestInspect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	info, err := bolt.Inspect(dir, 100*time.Millisecond)
	if err != nil || info.Exists || info.Path != filepath.Join(dir, bolt.FileName) {
		t.Fatalf("no file: %+v, %v", info, err)
	}
	if _, err := os.Stat(info.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Inspect created the file")
	}
	db, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = bolt.Inspect(dir, 100*time.Millisecond)
	if !errors.Is(err, bolt.ErrInUse) || time.Since(start) > 2*time.Second {
		t.Errorf("open by another: %v after %v", err, time.Since(start))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(info.Path)
	info, err = bolt.Inspect(dir, 100*time.Millisecond)
	if err != nil || !info.Exists || info.Version != bolt.SchemaVersion || info.Size == 0 {
		t.Fatalf("closed file: %+v, %v", info, err)
	}
	if after, _ := os.ReadFile(info.Path); string(after) != string(before) {
		t.Error("Inspect changed the file")
	}
}
