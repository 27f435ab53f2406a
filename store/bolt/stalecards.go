package bolt

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// bStaleCards holds the final cards Slack refused for longer than the
// card's own retries (store.State.StaleCards): the card's key (channel/ts,
// as in cards) → since when (8 bytes, big endian, Unix nanoseconds).
const bStaleCards = "stale_cards"

func init() { buckets = append(buckets, bStaleCards) }

// MarkCardStale: see store.State.
func (db *DB) MarkCardStale(ref card.Ref, at time.Time) error {
	k := ref.Key()
	return db.update(func(t txn) error {
		if t.get(bStaleCards, k) != nil || t.get(bCards, k) == nil {
			return nil
		}
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(at.UnixNano()))
		return t.put(bStaleCards, k, v)
	})
}

// StaleCards: see store.State.
func (db *DB) StaleCards(limit int) ([]store.StaleCard, error) {
	var out []store.StaleCard
	err := db.be.view(func(t txn) error {
		t.scan(bStaleCards, "", "", func(k string, v []byte) bool {
			ch, ts, ok := strings.Cut(k, "/")
			if ok && len(v) == 8 {
				out = append(out, store.StaleCard{Ref: card.Ref{Channel: ch, SourceTS: ts},
					Since: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()})
			}
			return true
		})
		return nil
	})
	slices.SortStableFunc(out, func(a, b store.StaleCard) int { return a.Since.Compare(b.Since) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// StaleCardDone: see store.State.
func (db *DB) StaleCardDone(ref card.Ref) error {
	k := ref.Key()
	return db.update(func(t txn) error {
		if t.get(bStaleCards, k) == nil {
			return nil
		}
		return t.del(bStaleCards, k)
	})
}
