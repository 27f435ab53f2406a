package bolt

import (
	"fmt"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestStoreFileOfAnEarlierVersionOpensAndBack: the store no longer writes
// bbolt's freelist at each commit (NoFreelistSync: it is rebuilt when the
// file is opened). A file an earlier version wrote (freelist synced) opens
// and takes writes, and a file written now still opens with bbolt's
// default options (a downgrade) with everything in it.
func TestStoreFileOfAnEarlierVersionOpensAndBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	// An earlier version's file: bbolt's defaults, the freelist synced.
	old, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("scratch"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a file of an earlier version: %v", err)
	}
	for i := range 50 {
		rec := &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: fmt.Sprintf("1.%03d", i), Final: true,
			Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.test/", Level: verdict.Clean}}}}
		if err := db.PutCard(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Back with bbolt's defaults: the cards written are all there.
	back, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("reopened with bbolt's defaults: %v", err)
	}
	if err := back.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("scratch")).Get([]byte("k")); string(v) != "v" {
			t.Errorf("the earlier version's key: %q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	back.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Card(card.Ref{Channel: "C1", SourceTS: "1.026"}); err != nil {
		t.Fatalf("a card written before: %v", err)
	}
}
