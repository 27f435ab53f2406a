package bolt

import (
	"encoding/binary"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// bFlips holds the flips not announced yet (store.State.PendingFlips):
// target id → the level before (1 byte) + when (8 bytes).
const bFlips = "pending_flips"

func init() { buckets = append(buckets, bFlips) }

// putFlip records target id's flip from was, unless one is pending.
func putFlip(t txn, id string, was verdict.Level, at time.Time) error {
	if t.get(bFlips, id) != nil {
		return nil // still to announce: the cards show the older level
	}
	v := make([]byte, 9)
	v[0] = byte(was)
	binary.BigEndian.PutUint64(v[1:], uint64(at.UnixNano()))
	return t.put(bFlips, id, v)
}

// PendingFlips returns up to limit flips not announced, oldest first
// (store.State).
func (db *DB) PendingFlips(limit int) ([]store.PendingFlip, error) {
	var out []store.PendingFlip
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bFlips, "", "", func(id string, v []byte) bool {
			raw := t.get(bTargets, id)
			if raw == nil || len(v) != 9 {
				return true
			}
			var rec targetRecord
			if rec, derr = decodeTarget(raw); derr != nil {
				return false
			}
			rec.Cards = targetCards(t, id)
			out = append(out, store.PendingFlip{Target: rec.Target, Was: verdict.Level(v[0]),
				At: time.Unix(0, int64(binary.BigEndian.Uint64(v[1:]))).UTC()})
			return true
		})
		return derr
	})
	sortFlips(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

func sortFlips(fs []store.PendingFlip) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].At.Before(fs[j-1].At); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// FlipAnnounced forgets target's pending flip if the target is still at
// level (store.State).
func (db *DB) FlipAnnounced(target string, level verdict.Level) error {
	return db.update(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil || !ok || t.get(bFlips, id) == nil {
			return err
		}
		if rec.Target.Level != level {
			return nil // flipped again since: that one is pending
		}
		return t.del(bFlips, id)
	})
}
