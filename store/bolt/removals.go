package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Removal is a removal quarantine decided when a recheck flipped a URL to
// its channel's level: the message a card answers is to be removed. It is
// queued in the same write that shows the flip on the card (UpdateCardQueue),
// kept until the removal is done (FinishRemoval), and taken by one
// process at a time (ClaimRemoval), so a stop between the decision and the
// deletion resumes after the restart, and several replicas remove each
// message once. Removals are paced by their taker (Slack's chat.delete is
// Tier 3); a passing failure puts one back for later (RetryRemoval).
//
// A flip with more messages than VERDICTBOT_QUARANTINE_FLIP_MAX queues
// them Held, under a RemovalBatch, until an admin's Remove all
// (ApproveBatch); a removal of Kind RemovalAsk posts that request in the
// alert channel, taken and retried like the others.
type Removal struct {
	// Card is the card whose message is removed; for RemovalAsk,
	// {"", "batch:" + Batch}.
	Card CardRef `json:"card"`
	// Kind is RemovalMessage or RemovalAsk.
	Kind string `json:"kind,omitempty"`
	// Target and Level are the URL that flipped and its new level.
	Target string `json:"target,omitempty"`
	Level  string `json:"level,omitempty"`
	// Batch is the flip's batch when it waits for an admin ("" when not).
	Batch string `json:"batch,omitempty"`
	// Held: waits for the batch's approval.
	Held bool `json:"held,omitempty"`
	// Queued is when it was decided; NextAt is when it may be tried
	// (again); Attempts counts the tries that failed for a passing reason.
	Queued   time.Time `json:"queued"`
	NextAt   time.Time `json:"next_at"`
	Attempts int       `json:"attempts,omitempty"`
	// Owner is the process working on it ("" none); not stored in the
	// record.
	Owner string `json:"-"`
}

// Kinds of removal.
const (
	RemovalMessage = ""    // remove the card's message
	RemovalAsk     = "ask" // post the batch's Remove all request
)

// AskRef is the key of a batch's RemovalAsk.
func AskRef(batch string) CardRef { return CardRef{SourceTS: "batch:" + batch} }

// RemovalBatch is a flip whose removals wait for an admin's Remove all:
// what, how many, where, and who approved it.
type RemovalBatch struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Level  string `json:"level"`
	// Count and Channels are the messages held, in all and per channel.
	Count    int            `json:"count"`
	Channels map[string]int `json:"channels,omitempty"`
	Created  time.Time      `json:"created"`
	// AlertChannel and AlertTS are the request's message, once posted.
	AlertChannel string `json:"alert_channel,omitempty"`
	AlertTS      string `json:"alert_ts,omitempty"`
	// ApprovedBy and ApprovedAt are set by the admin's Remove all.
	ApprovedBy string    `json:"approved_by,omitempty"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`
}

// NewBatchID returns a new, unguessable batch id (the button's value).
func NewBatchID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const (
	bRemovals       = "removals"        // channel/source ts → removalRow (JSON)
	bRemovalBatches = "removal_batches" // batch id → RemovalBatch (JSON)
)

func init() { buckets = append(buckets, bRemovals, bRemovalBatches) }

// removalRow is a Removal as the embedded store keeps it, owner included.
type removalRow struct {
	Removal
	Owner string `json:"owner,omitempty"`
}

func getRemoval(t txn, key string) (Removal, bool) {
	v := t.get(bRemovals, key)
	if v == nil {
		return Removal{}, false
	}
	var row removalRow
	if json.Unmarshal(v, &row) != nil {
		return Removal{}, false
	}
	row.Removal.Owner = row.Owner
	return row.Removal, true
}

func putRemoval(t txn, r Removal) error {
	return t.put(bRemovals, r.Card.Key(), enc(removalRow{Removal: r, Owner: r.Owner}))
}

// queueRemoval queues r unless its card has one. A removal held for a
// batch that an admin approved already (the request was answered while
// the flip's cards were still being written) is queued released.
func queueRemoval(t txn, r Removal) error {
	if _, ok := getRemoval(t, r.Card.Key()); ok {
		return nil
	}
	if r.Held && r.Batch != "" {
		var b RemovalBatch
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
func (db *DB) UpdateCardQueue(ref CardRef, fn func(rec *CardRecord) (*Removal, error)) (*CardRecord, error) {
	var r *Removal
	return db.updateCard(db.update, ref, func(rec *CardRecord) error {
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
func (db *DB) QueueRemovals(rs []Removal) error {
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
func (db *DB) ClaimRemoval(now time.Time) (Removal, bool, error) {
	var out Removal
	found := false
	err := db.update(func(t txn) error {
		found = false
		var best Removal
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
func (db *DB) FinishRemoval(ref CardRef) error {
	return db.update(func(t txn) error { return t.del(bRemovals, ref.Key()) })
}

// RetryRemoval puts a claimed removal back, due at next, for any process
// to take; failed counts a try that failed (Attempts one more), else it
// was only not its turn.
func (db *DB) RetryRemoval(ref CardRef, next time.Time, failed bool) error {
	return db.update(func(t txn) error {
		r, ok := getRemoval(t, ref.Key())
		if !ok {
			return ErrNotFound
		}
		r.Owner, r.NextAt = "", next
		if failed {
			r.Attempts++
		}
		return putRemoval(t, r)
	})
}

// PutRemovalBatch keeps (or replaces) a batch.
func (db *DB) PutRemovalBatch(b RemovalBatch) error {
	return db.update(func(t txn) error { return t.put(bRemovalBatches, b.ID, enc(b)) })
}

// RemovalBatch returns a batch, or ErrNotFound.
func (db *DB) RemovalBatch(id string) (RemovalBatch, error) {
	var b RemovalBatch
	err := db.be.view(func(t txn) error {
		v := t.get(bRemovalBatches, id)
		if v == nil {
			return ErrNotFound
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
			return ErrNotFound
		}
		var b RemovalBatch
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
func (db *DB) ApproveBatch(id, by string, at time.Time) (b RemovalBatch, released int, first bool, err error) {
	n := 0
	err = db.update(func(t txn) error {
		n, first = 0, false
		v := t.get(bRemovalBatches, id)
		if v == nil {
			return ErrNotFound
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
		var held []Removal
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
			if json.Unmarshal(v, &row) == nil && row.Kind == RemovalMessage {
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
		var b RemovalBatch
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
		if json.Unmarshal(v, &row) == nil && old[row.Batch] && (row.Held || row.Kind == RemovalAsk) {
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
