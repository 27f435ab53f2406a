package bolt_test

import (
	"context"
	"testing"

	"github.com/verdictbot/verdictbot/store/bolt"
)

// What store.State declares for several replicas and a database has its
// neutral value on the file: one process, nothing to ping, no orphans.
func TestTheFileHasTheNeutralValues(t *testing.T) {
	t.Parallel()
	db, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(context.Background()); err != nil {
		t.Errorf("Ping = %v, want nil", err)
	}
	if n := db.Size(); n <= 0 {
		t.Errorf("Size = %d, want the file's size", n)
	}
	if d := db.SweepEvery(); d != 0 {
		t.Errorf("SweepEvery = %v, want 0 (no orphans)", d)
	}
	if n := db.Replicas(); n != 1 {
		t.Errorf("Replicas = %d, want 1", n)
	}
	db.OnReplicas(func(n int) { t.Errorf("OnReplicas called fn(%d): the count never changes", n) })
	if n := bolt.Memory(bolt.Options{}).Size(); n != 0 {
		t.Errorf("Size in memory = %d, want 0", n)
	}
}
