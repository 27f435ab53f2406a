package store

import (
	"slices"
	"time"

	"github.com/verdictbot/verdictbot/verdict"
)

// Deferred checks. A URL that was not sent to the service because whoever
// posted it had used their allowance (VERDICTBOT_USER_LINKS_PER_HOUR) is
// not dropped: its check is deferred to the recheck job, which makes it at
// low priority, apart from the recheck schedule, and announces its verdict
// to the cards that show the URL as not checked yet. The deferral lives on
// the target (Target.Deferred, its due time) with an index of its own, so
// that the recheck takes deferred checks and scheduled rechecks in shares
// of its run and a flood of the one never starves the other.

// bDeferred indexes the pending deferred checks: due time (8) + target
// id (8) → nil.
const bDeferred = "deferred"

func init() { buckets = append(buckets, bDeferred) }

// DeferCheck records that the check of the URL target was deferred for
// card (see State.DeferCheck).
func (db *DB) DeferCheck(target string, card CardRef, at time.Time) error {
	return db.be.batch(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil {
			return err
		}
		if !ok {
			rec = targetRecord{Target: Target{Target: target, Kind: "url", FirstSeen: at, Checked: at, Level: verdict.Unknown}}
			if id == "" {
				if id, err = newTargetID(t, target); err != nil {
					return err
				}
			}
		}
		if !slices.Contains(rec.Cards, card) {
			rec.Cards = append(rec.Cards, card)
		}
		if d := rec.Target.Deferred; d.IsZero() || d.After(at) {
			return setDeferred(t, id, &rec, at)
		}
		return t.put(bTargets, id, encodeTarget(&rec))
	})
}

// DueDeferred returns up to limit targets whose deferred check is due at
// now, the oldest due first (an index: the cost grows with limit).
func (db *DB) DueDeferred(now time.Time, limit int) ([]Target, error) {
	var out []Target
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
			out = append(out, rec.Target)
			return len(out) < limit
		})
		return derr
	})
	return out, err
}

// ClaimDeferred makes the caller the one that makes target's deferred
// check now (see State.ClaimDeferred). The file has one process, so the
// fence is not checked.
func (db *DB) ClaimDeferred(target string, dueBy time.Time, hold time.Duration, _ Fence) (time.Time, bool, error) {
	until := later(db.now(), dueBy).Add(hold)
	claimed := false
	err := db.update(func(t txn) error {
		claimed = false
		id, rec, ok, err := getTarget(t, target)
		if err != nil || !ok {
			return err
		}
		if d := rec.Target.Deferred; d.IsZero() || d.After(dueBy) {
			return nil
		}
		claimed = true
		return setDeferred(t, id, &rec, until)
	})
	if err != nil || !claimed {
		return time.Time{}, false, err
	}
	return until, true, nil
}

// EndDeferred ends a claimed deferred check (see State.EndDeferred).
func (db *DB) EndDeferred(target string, until, next time.Time) error {
	return db.update(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil || !ok || !rec.Target.Deferred.Equal(until) {
			return err
		}
		return setDeferred(t, id, &rec, next)
	})
}

// setDeferred sets a target's deferred due time (zero: none) and its
// entry in the index, and saves the record.
func setDeferred(t txn, id string, rec *targetRecord, at time.Time) error {
	tg := &rec.Target
	if !tg.Deferred.IsZero() {
		if err := t.del(bDeferred, timeKey(tg.Deferred)+id); err != nil {
			return err
		}
	}
	tg.Deferred = at
	if !at.IsZero() {
		if err := t.put(bDeferred, timeKey(at)+id, nil); err != nil {
			return err
		}
	}
	return t.put(bTargets, id, encodeTarget(rec))
}
