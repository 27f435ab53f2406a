package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store/bolt"
)

func TestCompactCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := bolt.Open(dir, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if err := db.Allow(strings.Repeat("x", 60)+"-"+time.Duration(i).String()+".example", "U1"); err != nil {
			t.Fatal(err)
		}
	}

	// While the store is open (the bot runs), compact refuses.
	var out, errOut bytes.Buffer
	if code := runCLI(mapEnv(nil), testOptions(), []string{"compact", "--data-dir", dir}, nil, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "locked by another process: stop verdictbot before compacting") {
		t.Fatalf("compact while open: exit %d, stderr %q", code, errOut.String())
	}
	for i := range 3000 {
		if _, err := db.Disallow(strings.Repeat("x", 60) + "-" + time.Duration(i).String() + ".example"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Allow("kept.example", "U1"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out.Reset()
	errOut.Reset()
	if code := runCLI(mapEnv(map[string]string{"VERDICTBOT_DATA_DIR": dir}), testOptions(), []string{"compact"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("compact: exit %d, stderr %q", code, errOut.String())
	}
	path := filepath.Join(dir, bolt.FileName)
	if !strings.Contains(out.String(), "compacted "+path+": ") || !strings.Contains(out.String(), "kept as "+path+".precompact") {
		t.Fatalf("output %q", out.String())
	}
	before, _ := os.Stat(path + ".precompact")
	after, _ := os.Stat(path)
	if after.Size() >= before.Size() {
		t.Fatalf("file %d bytes after, %d before", after.Size(), before.Size())
	}
	db, err = bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if l, err := db.AllowList(); err != nil || len(l) != 1 || l[0].Domain != "kept.example" {
		t.Fatalf("allowlist after compaction %v, %v", l, err)
	}
}
