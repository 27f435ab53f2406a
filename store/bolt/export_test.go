package store

import "testing"

// SetPruneBatch makes Prune work in batches of n keys until t ends, so
// that the retention cases cross batch boundaries (external tests).
func SetPruneBatch(t testing.TB, n int) {
	old := pruneBatch
	pruneBatch = n
	t.Cleanup(func() { pruneBatch = old })
}

// BucketTargets names the targets bucket in Counts.
const BucketTargets = bTargets

// BoltInUse is the bytes of the file's B+tree pages in use.
func BoltInUse(tb testing.TB, db *DB) int64 {
	inuse, _, _, _ := boltUsage(tb, db)
	return inuse
}
