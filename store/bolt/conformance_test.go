package bolt_test

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// The conformance suite (package storetest) on the file and on memory;
// store/pg runs it on PostgreSQL.
func TestConformanceBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.State {
		db, err := bolt.Open(t.TempDir(), bolt.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.State {
		return bolt.Memory(bolt.Options{Now: now})
	})
}
