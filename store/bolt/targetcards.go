package bolt

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/verdictbot/verdictbot/card"
)

// Schema 4 keeps the cards that show a target in a bucket of their own,
// one small entry a card, instead of a list inside the target's record:
//
//	target_cards  target id (8) + channel/source ts → position (8 bytes,
//	              big endian: the order the cards joined, from the
//	              target record's card count)
//
// Before, every card of a URL rewrote the URL's whole record with all its
// cards, so a link posted thousands of times within the retention (a
// wiki's front page, or a member flooding one link) made each new card of
// it cost more than the last: 0.30 ms with 10 cards, 1.37 ms with 5,000
// (BenchmarkAddCardPopularURL). Now a card joining costs the same at any
// count, and only the readers that want the list (a recheck, a flip, a
// report's cards) read it.
const bTargetCards = "target_cards"

func init() { buckets = append(buckets, bTargetCards) }

// addTargetCard adds ref to the cards of the target whose id and record
// these are; it reports whether ref is new there, in which case the
// record's card count moved and the caller must save the record.
func addTargetCard(t txn, id string, rec *targetRecord, ref card.Ref) (bool, error) {
	k := id + ref.Key()
	if t.get(bTargetCards, k) != nil {
		return false, nil
	}
	rec.cardSeq++
	return true, t.put(bTargetCards, k, []byte(seqKey(rec.cardSeq)))
}

// targetCards returns the cards of the target whose id and record these
// are, in the order they joined.
func targetCards(t txn, id string, rec *targetRecord) []card.Ref {
	n := int(min(rec.cardSeq, 1<<16)) // the cards that joined: an upper bound of those alive
	refs := make([]card.Ref, 0, n)
	order := make([]uint64, 0, n) // position<<24 | index in refs, sorted below
	var last uint64
	t.scan(bTargetCards, id, prefixEnd(id), func(k string, v []byte) bool {
		ch, ts, _ := strings.Cut(k[len(id):], "/")
		var pos uint64
		if len(v) == 8 {
			pos = binary.BigEndian.Uint64(v)
		}
		last = max(last, pos)
		order = append(order, pos<<24|uint64(len(refs)))
		refs = append(refs, card.Ref{Channel: ch, SourceTS: ts})
		return true
	})
	if len(refs) == 0 {
		return nil
	}
	// Positions are unique and below 2^40 (a card a millisecond would take
	// 35 years to get there), and a target has fewer than 2^24 cards alive:
	// the pair sorts as one number, many times faster than the pairs.
	if len(refs) < 2 || len(refs) >= 1<<24 || last >= 1<<40 {
		return refs // one, or beyond what the encoding orders: the keys' order
	}
	slices.Sort(order)
	out := make([]card.Ref, len(refs))
	for i, o := range order {
		out[i] = refs[o&(1<<24-1)]
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
	for _, ref := range rec.Cards {
		if _, err := addTargetCard(t, id, rec, ref); err != nil {
			return err
		}
	}
	rec.Cards = nil
	return t.put(bTargets, id, encodeTarget(rec))
}
