package bolt

import (
	"encoding/binary"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Deferred checks. A URL that was not sent to the service because whoever
// posted it had used their allowance (VERDICTBOT_USER_LINKS_PER_HOUR) is
// not dropped: its check is deferred to the recheck job, which makes it at
// low priority, apart from the recheck schedule, and announces its outcome
// to the cards that show the URL as not checked yet. The deferral is the
// target's Deferred time (when its check is due), with an index of its
// own, so that the recheck takes deferred checks and scheduled rechecks in
// shares of its run and a flood of the one never starves the other.
//
// In the file it is kept out of the target record, in two buckets of its
// own, so that the record's encoding is unchanged: a release that knows
// nothing of deferrals reads every record (and ignores the deferrals).
const (
	bDeferred   = "deferred"    // due time (8) + target id (8) → nil: the index
	bDeferredAt = "deferred_at" // target id (8) → due time (8)
)

func init() { buckets = append(buckets, bDeferred, bDeferredAt) }

// deferredAt returns the due time of the deferred check of the target with
// this id (zero: none pending).
func deferredAt(t txn, id string) time.Time {
	v := t.get(bDeferredAt, id)
	if len(v) != 8 {
		return time.Time{}
	}
	return keyTime(string(v))
}

// keyTime is the time a timeKey holds.
func keyTime(k string) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64([]byte(k[:8])))).UTC()
}

// setDeferred sets the due time of the deferred check of the target with
// this id (zero: none pending), and its index entry.
func setDeferred(t txn, id string, at time.Time) error {
	if err := dropClaim(t, claimDeferred, id); err != nil {
		return err
	}
	if old := t.get(bDeferredAt, id); len(old) == 8 {
		if err := t.del(bDeferred, string(old)+id); err != nil {
			return err
		}
	}
	if at.IsZero() {
		return t.del(bDeferredAt, id)
	}
	k := timeKey(at)
	if err := t.put(bDeferred, k+id, nil); err != nil {
		return err
	}
	return t.put(bDeferredAt, id, []byte(k))
}

// DeferCheck records that the check of the URL target was deferred for
// card (see store.State.DeferCheck).
func (db *DB) DeferCheck(target string, ref card.Ref, at time.Time) error {
	return db.be.batch(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil {
			return err
		}
		if !ok {
			rec = targetRecord{Target: store.Target{Target: target, Kind: "url", FirstSeen: at, Checked: at, Level: verdict.Unknown}}
			if id == "" {
				if id, err = newTargetID(t, target); err != nil {
					return err
				}
			}
		}
		if !ok {
			if err := t.put(bTargets, id, encodeTarget(&rec)); err != nil {
				return err
			}
		}
		if _, err := addTargetCard(t, id, ref, db.nextSeq()); err != nil {
			return err
		}
		if d := deferredAt(t, id); d.IsZero() || d.After(at) {
			return setDeferred(t, id, at)
		}
		return nil
	})
}

// DueDeferred returns up to limit targets whose deferred check is due at
// now, the oldest due first (an index: the cost grows with limit).
func (db *DB) DueDeferred(now time.Time, limit int) ([]store.Target, error) {
	var out []store.Target
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bDeferred, "", timeKey(now.Add(time.Nanosecond)), func(k string, _ []byte) bool {
			raw := t.get(bTargets, k[8:])
			if raw == nil {
				return true
			}
			var rec targetRecord
			if rec, derr = decodeTarget(raw); derr != nil {
				return false
			}
			rec.Deferred = keyTime(k[:8])
			rec.Cards = targetCards(t, k[8:])
			out = append(out, rec.Target)
			return len(out) < limit
		})
		return derr
	})
	return out, err
}

// ClaimDeferred makes the caller the one that makes target's deferred
// check now (see store.State.ClaimDeferred). The file has one process, so the
// fence is not checked.
func (db *DB) ClaimDeferred(target string, dueBy time.Time, hold time.Duration, _ store.Fence) (time.Time, bool, error) {
	until := later(db.now(), dueBy).Add(hold)
	claimed := false
	err := db.update(func(t txn) error {
		claimed = false
		id := targetID(t, target)
		if id == "" {
			return nil
		}
		if d := deferredAt(t, id); d.IsZero() || d.After(dueBy) {
			return nil
		}
		claimed = true
		due := deferredAt(t, id)
		if err := setDeferred(t, id, until); err != nil {
			return err
		}
		return putClaim(t, claimDeferred, id, until, due)
	})
	if err != nil || !claimed {
		return time.Time{}, false, err
	}
	return until, true, nil
}

// EndDeferred ends a claimed deferred check (see store.State.EndDeferred).
func (db *DB) EndDeferred(target string, until, next time.Time) error {
	return db.update(func(t txn) error {
		id := targetID(t, target)
		if id == "" || !deferredAt(t, id).Equal(until) {
			return nil
		}
		return setDeferred(t, id, next)
	})
}
