package bolt

import "testing"

// BucketTargets names the targets bucket in Counts.
const BucketTargets = bTargets

// InUse is the bytes of the file's B+tree pages in use.
func InUse(tb testing.TB, db *DB) int64 {
	inuse, _, _, _ := boltUsage(tb, db)
	return inuse
}
