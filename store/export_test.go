package store

import "testing"

// SetPruneBatch makes Prune work in batches of n keys until t ends, so
// that the retention cases cross batch boundaries (external tests).
func SetPruneBatch(t testing.TB, n int) {
	old := pruneBatch
	pruneBatch = n
	t.Cleanup(func() { pruneBatch = old })
}
