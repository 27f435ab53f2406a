package bolt

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/verdictbot/verdictbot/card"
)

// Schema 4 keeps the cards that show a target in a bucket of their own,
// one small entry a card, instead of a list inside the target's record:
//
//	target_cards  target id (8) + channel/source ts → position (8 bytes,
//	              big endian: the order the cards joined, a DB.nextSeq)
//
// Before, every card of a URL rewrote the URL's whole record with all its
// cards, so a link posted thousands of times within the retention (a
// wiki's front page, or a member flooding one link) made each new card of
// it cost more than the last: 0.30 ms with 10 cards, 1.37 ms with 5,000
// (BenchmarkAddCardPopularURL). Now a card joining is one small write at
// any count, the target's record untouched, and only the readers that want
// the list (a recheck, a flip, a report's cards) read it.
const bTargetCards = "target_cards"

func init() { buckets = append(buckets, bTargetCards) }

// addTargetCard adds ref to the cards of target id at position pos (a
// DB.nextSeq: the cards sort by it, in the order they joined); it reports
// whether ref is new there. The target's record is not touched.
func addTargetCard(t txn, id string, ref card.Ref, pos uint64) (bool, error) {
	k := id + ref.Key()
	if t.get(bTargetCards, k) != nil {
		return false, nil
	}
	return true, t.put(bTargetCards, k, []byte(seqKey(pos)))
}

// targetCards returns the cards of target id in the order they joined.
func targetCards(t txn, id string) []card.Ref {
	type entry struct {
		pos uint64
		ref card.Ref
	}
	var all []entry
	t.scan(bTargetCards, id, prefixEnd(id), func(k string, v []byte) bool {
		ch, ts, _ := strings.Cut(k[len(id):], "/")
		var pos uint64
		if len(v) == 8 {
			pos = binary.BigEndian.Uint64(v)
		}
		all = append(all, entry{pos, card.Ref{Channel: ch, SourceTS: ts}})
		return true
	})
	if len(all) == 0 {
		return nil
	}
	// Positions are unique (nextSeq): an unstable sort orders them fully,
	// and much faster than a stable one (2.3 → 1.5 ms for 5,000 cards).
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.pos, b.pos) })
	out := make([]card.Ref, len(all))
	for i, e := range all {
		out[i] = e.ref
	}
	return out
}

// pruneTargetCards drops the cards of target id whose record is gone and
// reports how many are left.
func pruneTargetCards(t txn, id string) (left int, err error) {
	var gone []string
	t.scan(bTargetCards, id, prefixEnd(id), func(k string, _ []byte) bool {
		if t.get(bCards, k[len(id):]) == nil {
			gone = append(gone, k)
		} else {
			left++
		}
		return true
	})
	for _, k := range gone {
		if err := t.del(bTargetCards, k); err != nil {
			return left, err
		}
	}
	return left, nil
}

// dropTargetCards forgets every card of target id (the target is removed).
func dropTargetCards(t txn, id string) error {
	var all []string
	t.scan(bTargetCards, id, prefixEnd(id), func(k string, _ []byte) bool {
		all = append(all, k)
		return true
	})
	for _, k := range all {
		if err := t.del(bTargetCards, k); err != nil {
			return err
		}
	}
	return nil
}

// migrateTargetCardsV4 moves a schema 3 store to schema 4: each target's
// card list leaves its record (format 1) for target_cards, in its order,
// and the record is written again in format 2.
func migrateTargetCardsV4(t txn) error {
	type kv struct {
		k string
		v []byte
	}
	var all []kv
	t.scan(bTargets, "", "", func(k string, v []byte) bool {
		all = append(all, kv{k, append([]byte(nil), v...)})
		return true
	})
	for _, e := range all {
		rec, err := decodeTarget(e.v)
		if err != nil {
			return err
		}
		if err := putTargetWithCards(t, e.k, &rec); err != nil {
			return err
		}
	}
	return nil
}

// putTargetWithCards saves a target record that holds its cards in
// rec.Cards (read from an older format): the cards go to target_cards
// and the record is written without them.
func putTargetWithCards(t txn, id string, rec *targetRecord) error {
	for i, ref := range rec.Cards {
		// Positions 1, 2, …: before any card that joins later (nextSeq).
		if _, err := addTargetCard(t, id, ref, uint64(i+1)); err != nil {
			return err
		}
	}
	rec.Cards = nil
	return t.put(bTargets, id, encodeTarget(rec))
}
