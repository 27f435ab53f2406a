package store_test

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// The conformance suite (package storetest) on the file and on memory;
// store/pg runs it on PostgreSQL.
func TestConformanceBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.State {
		db, err := store.Open(t.TempDir(), store.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.State {
		return store.Memory(store.Options{Now: now})
	})
}
