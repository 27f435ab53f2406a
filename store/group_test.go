package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSharedWritesCommitTogether: writes that arrive while a shared
// commit is under way commit together in the next one; a write that fails
// or panics gets its own error and the others of its round still commit.
func TestSharedWritesCommitTogether(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	before := commits(t, db)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if err := be.batch(func(tx txn) error { <-hold; return tx.put(bMeta, "held", []byte("1")) }); err != nil {
			t.Error(err)
		}
	})
	for be.sharing() != 1 {
		runtimeYield()
	}
	const n = 40
	errs := make([]error, n)
	bad := errors.New("refused")
	for i := range n {
		wg.Go(func() {
			errs[i] = be.batch(func(tx txn) error {
				switch i {
				case 7:
					return bad
				case 23:
					panic("boom")
				}
				return tx.put(bMeta, fmt.Sprintf("k%02d", i), []byte("v"))
			})
		})
	}
	for be.sharing() != n+1 {
		runtimeYield()
	}
	release()
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == 7 && err != bad, i == 23 && (err == nil || !strings.Contains(err.Error(), "panic")):
			t.Errorf("write %d: %v", i, err)
		case i != 7 && i != 23 && err != nil:
			t.Errorf("write %d: %v", i, err)
		}
	}
	_ = be.view(func(tx txn) error {
		for i := range n {
			if got := tx.get(bMeta, fmt.Sprintf("k%02d", i)) != nil; got != (i != 7 && i != 23) {
				t.Errorf("write %d stored: %v", i, got)
			}
		}
		return nil
	})
	// The held write, then the 38 that succeed together (the rounds that
	// failed, and the failing writes run alone, were rolled back).
	if c := commits(t, db) - before; c != 2 {
		t.Errorf("%d commits for %d shared writes, want 2", c, n+1)
	}
}

func runtimeYield() { time.Sleep(time.Millisecond) } // until the writes are under way (not a timing assertion)
