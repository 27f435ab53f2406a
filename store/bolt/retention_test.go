package store_test

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// The retention behaviour is tested in the conformance suite
// (storetest.RunPrune, part of storetest.Run) on every backend. Here its
// cases run again on the file and on memory with Prune sweeping 3 keys per
// transaction, so that every bucket's sweep crosses batch boundaries.
func TestPruneInSmallBatches(t *testing.T) {
	store.SetPruneBatch(t, 3)
	t.Run("bolt", func(t *testing.T) {
		storetest.RunPrune(t, func(t *testing.T, now func() time.Time) store.State {
			db, err := store.Open(t.TempDir(), store.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("memory", func(t *testing.T) {
		storetest.RunPrune(t, func(t *testing.T, now func() time.Time) store.State {
			return store.Memory(store.Options{Now: now})
		})
	})
}
