package bolt

import (
	"encoding/binary"
	"time"
)

// bClaims keeps the claims of rechecks (ClaimRecheck) and deferred checks
// (ClaimDeferred) under way: kind ('r' or 'd') + target id → until (8
// bytes) + the due time the claim moved (8 bytes). A claim moves its URL's
// due time ahead by its hold (the analysis deadline and a minute), so that
// no other run lists it meanwhile; a process killed during the check left
// the URL held that long. The file is opened by one process, so every
// claim found when it opens is a dead process's: it is given back
// (releaseStaleClaims), the URL due when it was. A claim's entry goes when
// its URL's due time is written again (the check's verdict, a failure, a
// release, an end).
const bClaims = "check_claims"

func init() { buckets = append(buckets, bClaims) }

const (
	claimRecheck  = "r"
	claimDeferred = "d"
)

func putClaim(t txn, kind, id string, until, due time.Time) error {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(until.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(due.UnixNano()))
	return t.put(bClaims, kind+id, v)
}

func dropClaim(t txn, kind, id string) error { return t.del(bClaims, kind+id) }

// releaseStaleClaims gives back the claims a process that died left (see
// bClaims): a URL still held by one is due again when it was. It returns
// how many it gave back.
func (db *DB) releaseStaleClaims() (int, error) {
	released := 0
	err := db.be.update(func(t txn) error {
		released = 0
		type claim struct {
			key        string
			until, due time.Time
		}
		var claims []claim
		t.scan(bClaims, "", "", func(k string, v []byte) bool {
			if len(v) == 16 && len(k) > 1 {
				claims = append(claims, claim{k,
					time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
					time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC()})
			} else {
				claims = append(claims, claim{key: k})
			}
			return true
		})
		for _, c := range claims {
			if err := t.del(bClaims, c.key); err != nil {
				return err
			}
			if c.until.IsZero() {
				continue
			}
			kind, id := c.key[:1], c.key[1:]
			switch kind {
			case claimRecheck:
				raw := t.get(bTargets, id)
				if raw == nil {
					continue
				}
				rec, err := decodeTarget(raw)
				if err != nil {
					return err
				}
				if !rec.Target.NextCheck.Equal(c.until) {
					continue // written since: not held
				}
				if err := moveDue(t, id, &rec, c.due); err != nil {
					return err
				}
			case claimDeferred:
				if !deferredAt(t, id).Equal(c.until) {
					continue
				}
				if err := setDeferred(t, id, c.due); err != nil {
					return err
				}
			}
			released++
		}
		return nil
	})
	return released, err
}
