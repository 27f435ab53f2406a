package bolt

import (
	"encoding/json"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

const (
	bRemovals       = "removals"        // channel/source ts → removalRow (JSON)
	bRemovalBatches = "removal_batches" // batch id → RemovalBatch (JSON)
)

func init() { buckets = append(buckets, bRemovals, bRemovalBatches) }

// removalRow is a Removal as the embedded store keeps it, owner included.
type removalRow struct {
	store.Removal
	Owner string `json:"owner,omitempty"`
}

func getRemoval(t txn, key string) (store.Removal, bool) {
	v := t.get(bRemovals, key)
	if v == nil {
		return store.Removal{}, false
	}
	var row removalRow
	if json.Unmarshal(v, &row) != nil {
		return store.Removal{}, false
	}
	row.Removal.Owner = row.Owner
	return row.Removal, true
}

func putRemoval(t txn, r store.Removal) error {
	return t.put(bRemovals, r.Card.Key(), enc(removalRow{Removal: r, Owner: r.Owner}))
}

// queueRemoval queues r unless its card has one. A removal held for a
// batch that an admin approved already (the request was answered while
// the flip's cards were still being written) is queued released.
func queueRemoval(t txn, r store.Removal) error {
	if _, ok := getRemoval(t, r.Card.Key()); ok {
		return nil
	}
	if r.Held && r.Batch != "" {
		var b store.RemovalBatch
		if v := t.get(bRemovalBatches, r.Batch); v != nil && dec(v, &b) == nil && b.ApprovedBy != "" {
			r.Held = false
		}
	}
	r.Owner = ""
	return putRemoval(t, r)
}

// UpdateCardQueue is UpdateCard whose fn may also decide a removal of the
// card's message: the removal it returns (nil: none) is queued in the same
// transaction, unless one is queued for the card already (and released if
// its batch was approved already).
func (db *DB) UpdateCardQueue(ref card.Ref, fn func(rec *store.CardRecord) (*store.Removal, error)) (*store.CardRecord, error) {
	var r *store.Removal
	return db.updateCard(db.update, ref, func(rec *store.CardRecord) error {
		var err error
		r, err = fn(rec)
		return err
	}, func(t txn) error {
		if r == nil {
			return nil
		}
		q := *r
		q.Card = ref
		return queueRemoval(t, q)
	})
}

// QueueRemovals queues removals (those of a card already queued are left
// as they are).
func (db *DB) QueueRemovals(rs []store.Removal) error {
	return db.update(func(t txn) error {
		for _, r := range rs {
			if err := queueRemoval(t, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClaimRemoval takes, for this process, the removal due first (NextAt at
// or before now, not held) that no live process holds. ok is false when
// none is due. The embedded file is opened by one process at a time, so
// a removal held by another process was a stopped one's.
func (db *DB) ClaimRemoval(now time.Time) (store.Removal, bool, error) {
	var out store.Removal
	found := false
	err := db.update(func(t txn) error {
		found = false
		var best store.Removal
		t.scan(bRemovals, "", "", func(_ string, v []byte) bool {
			var row removalRow
			if json.Unmarshal(v, &row) != nil {
				return true
			}
			r := row.Removal
			if r.Held || r.NextAt.After(now) || row.Owner == db.proc {
				return true
			}
			if !found || r.NextAt.Before(best.NextAt) || (r.NextAt.Equal(best.NextAt) && r.Queued.Before(best.Queued)) {
				best, found = r, true
			}
			return true
		})
		if !found {
			return nil
		}
		best.Owner = db.proc
		out = best
		return putRemoval(t, best)
	})
	return out, found, err
}

// FinishRemoval forgets a removal that is done (or given up).
func (db *DB) FinishRemoval(ref card.Ref) error {
	return db.update(func(t txn) error { return t.del(bRemovals, ref.Key()) })
}

// RetryRemoval puts a claimed removal back, due at next, for any process
// to take; failed counts a try that failed (Attempts one more), else it
// was only not its turn.
func (db *DB) RetryRemoval(ref card.Ref, next time.Time, failed bool) error {
	return db.update(func(t txn) error {
		r, ok := getRemoval(t, ref.Key())
		if !ok {
			return store.ErrNotFound
		}
		r.Owner, r.NextAt = "", next
		if failed {
			r.Attempts++
		}
		return putRemoval(t, r)
	})
}

// PutRemovalBatch keeps (or replaces) a batch.
func (db *DB) PutRemovalBatch(b store.RemovalBatch) error {
	return db.update(func(t txn) error { return t.put(bRemovalBatches, b.ID, enc(b)) })
}

// RemovalBatch returns a batch, or ErrNotFound.
func (db *DB) RemovalBatch(id string) (store.RemovalBatch, error) {
	var b store.RemovalBatch
	err := db.be.view(func(t txn) error {
		v := t.get(bRemovalBatches, id)
		if v == nil {
			return store.ErrNotFound
		}
		return dec(v, &b)
	})
	return b, err
}

// SetBatchAlert records where a batch's request was posted.
func (db *DB) SetBatchAlert(id, channel, ts string) error {
	return db.update(func(t txn) error {
		v := t.get(bRemovalBatches, id)
		if v == nil {
			return store.ErrNotFound
		}
		var b store.RemovalBatch
		if err := dec(v, &b); err != nil {
			return err
		}
		b.AlertChannel, b.AlertTS = channel, ts
		return t.put(bRemovalBatches, id, enc(b))
	})
}

// ApproveBatch records an admin's Remove all of a batch and releases its
// held removals (each due when it was planned to be; the batch's removals
// queued later are queued released). The first approval wins (first): a later one (a second click,
// another replica) changes nothing and gets the batch as the first left
// it. ErrNotFound for an unknown batch.
func (db *DB) ApproveBatch(id, by string, at time.Time) (b store.RemovalBatch, released int, first bool, err error) {
	n := 0
	err = db.update(func(t txn) error {
		n, first = 0, false
		v := t.get(bRemovalBatches, id)
		if v == nil {
			return store.ErrNotFound
		}
		if err := dec(v, &b); err != nil {
			return err
		}
		if b.ApprovedBy != "" {
			return nil
		}
		first = true
		b.ApprovedBy, b.ApprovedAt = by, at
		if err := t.put(bRemovalBatches, id, enc(b)); err != nil {
			return err
		}
		var held []store.Removal
		t.scan(bRemovals, "", "", func(_ string, v []byte) bool {
			var row removalRow
			if json.Unmarshal(v, &row) == nil && row.Held && row.Batch == id {
				r := row.Removal
				r.Owner = row.Owner
				held = append(held, r)
			}
			return true
		})
		for _, r := range held {
			r.Held = false // due as planned: once its card was shown
			if err := putRemoval(t, r); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return b, n, first, err
}

// RemovalCounts returns how many removals are queued (not held) and how
// many wait for an admin (held).
func (db *DB) RemovalCounts() (queued, held int, err error) {
	err = db.be.view(func(t txn) error {
		queued, held = 0, 0
		t.scan(bRemovals, "", "", func(_ string, v []byte) bool {
			var row removalRow
			if json.Unmarshal(v, &row) == nil && row.Kind == store.RemovalMessage {
				if row.Held {
					held++
				} else {
					queued++
				}
			}
			return true
		})
		return nil
	})
	return queued, held, err
}

// pruneRemovalBatches forgets the batches created before cutoff
// (VERDICTBOT_QUARANTINE_RETENTION) with their removals still held or
// asked for: no admin approved them in time.
func pruneRemovalBatches(t txn, cutoff time.Time) (int, error) {
	old := map[string]bool{}
	t.scan(bRemovalBatches, "", "", func(k string, v []byte) bool {
		var b store.RemovalBatch
		if json.Unmarshal(v, &b) == nil && b.Created.Before(cutoff) {
			old[k] = true
		}
		return true
	})
	if len(old) == 0 {
		return 0, nil
	}
	var gone []string
	t.scan(bRemovals, "", "", func(k string, v []byte) bool {
		var row removalRow
		if json.Unmarshal(v, &row) == nil && old[row.Batch] && (row.Held || row.Kind == store.RemovalAsk) {
			gone = append(gone, k)
		}
		return true
	})
	for _, k := range gone {
		if err := t.del(bRemovals, k); err != nil {
			return 0, err
		}
	}
	for k := range old {
		if err := t.del(bRemovalBatches, k); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}
