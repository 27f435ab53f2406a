package bolt_test

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// The retention behaviour is tested in the conformance suite
// (storetest.RunPrune, part of storetest.Run) on every backend. Here its
// cases run again on the file and on memory with Prune sweeping 3 keys per
// transaction, so that every bucket's sweep crosses batch boundaries.
func TestPruneInSmallBatches(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		storetest.RunPrune(t, func(t *testing.T, now func() time.Time) store.State {
			db, err := bolt.Open(t.TempDir(), bolt.Options{Now: now, PruneBatch: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("memory", func(t *testing.T) {
		storetest.RunPrune(t, func(t *testing.T, now func() time.Time) store.State {
			return bolt.Memory(bolt.Options{Now: now, PruneBatch: 3})
		})
	})
}
