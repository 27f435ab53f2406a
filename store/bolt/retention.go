package bolt

import (
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// defaultPruneBatch is how many keys one Prune transaction looks at
// (Options.PruneBatch): each transaction is short, so the bot's own writes
// wait a few milliseconds at most while a Prune runs.
const defaultPruneBatch = 2000

// Prune removes what is older than cutoff by the rules of
// store.State.Prune, in short transactions of Options.PruneBatch keys each.
func (db *DB) Prune(cutoff time.Time) (store.PruneStats, error) {
	var st store.PruneStats
	var err error
	if st.Cards, err = db.pruneCards(cutoff); err != nil {
		return st, err
	}
	if st.Reports, err = db.pruneTimed(bReports, cutoff); err != nil {
		return st, err
	}
	if st.UserReports, err = db.pruneUserReports(cutoff); err != nil {
		return st, err
	}
	if st.Backfills, err = db.pruneBackfills(cutoff); err != nil {
		return st, err
	}
	if st.Verdicts, st.Targets, err = db.pruneTargets(cutoff); err != nil {
		return st, err
	}
	if err = db.pruneOrphanTasks(); err != nil {
		return st, err
	}
	for {
		n, err := db.PruneEvents(cutoff, db.pruneBatch)
		st.Events += n
		if err != nil {
			return st, err
		}
		if n < db.pruneBatch {
			break
		}
	}
	return st, nil
}

// sweep visits bucket in key order, db.pruneBatch keys per update
// transaction, and calls visit on each; visit may delete records (the key
// itself included) through t and reports whether it pruned one.
func (db *DB) sweep(bucket string, visit func(t txn, k string, v []byte) (bool, error)) (int, error) {
	n := 0
	from := ""
	for {
		done := false
		err := db.update(func(t txn) error {
			type kv struct {
				k string
				v []byte
			}
			var batch []kv
			t.scan(bucket, from, "", func(k string, v []byte) bool {
				batch = append(batch, kv{k, append([]byte(nil), v...)})
				return len(batch) < db.pruneBatch
			})
			done = len(batch) < db.pruneBatch
			for _, e := range batch {
				pruned, err := visit(t, e.k, e.v)
				if err != nil {
					return err
				}
				if pruned {
					n++
				}
			}
			if len(batch) > 0 {
				from = batch[len(batch)-1].k + "\x00"
			}
			return nil
		})
		if err != nil || done {
			return n, err
		}
	}
}

// pruneCards removes final cards last updated before cutoff. A card's key
// ends with its source message's ts, which is older than any update of the
// card: a younger ts needs no decoding.
func (db *DB) pruneCards(cutoff time.Time) (int, error) {
	return db.sweep(bCards, func(t txn, k string, v []byte) (bool, error) {
		if _, ts, ok := strings.Cut(k, "/"); ok {
			if at, ok := slackTime(ts); ok && !at.Before(cutoff) {
				return false, nil
			}
		}
		rec, err := decodeCard(v)
		if err != nil {
			return false, err
		}
		if !rec.Card.Final || rec.PostStarted || !rec.Updated.Before(cutoff) {
			return false, nil
		}
		if rec.Card.CardTS != "" {
			idx := rec.Card.Channel + "/" + rec.Card.CardTS
			if string(t.get(bCardTS, idx)) == k {
				if err := t.del(bCardTS, idx); err != nil {
					return false, err
				}
			}
		}
		if t.get(bStaleCards, k) != nil {
			if err := t.del(bStaleCards, k); err != nil {
				return false, err
			}
		}
		return true, t.del(bCards, k)
	})
}

// slackTime parses a Slack ts ("1700000000.123456").
func slackTime(ts string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}, false
	}
	var us int64
	if frac != "" {
		if us, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(s, us*1000), true
}

// pruneTimed removes the entries of a target \x00 time \x00 seq bucket
// (reports) recorded before cutoff.
func (db *DB) pruneTimed(bucket string, cutoff time.Time) (int, error) {
	limit := timeKey(cutoff)
	return db.sweep(bucket, func(t txn, k string, v []byte) (bool, error) {
		i := len(k) - 17 // target \x00 time(8) seq(8)
		if i < 0 || k[i] != 0 {
			return false, nil // not a key of ours; leave it
		}
		if k[i+1:i+9] >= limit {
			return false, nil
		}
		return true, t.del(bucket, k)
	})
}

// dropTask removes the task index entry of taskID if it points to the
// target with this id.
func dropTask(t txn, taskID, id string) error {
	if taskID == "" {
		return nil
	}
	k := taskKey(taskID)
	if v := t.get(bTasks, k); len(v) == 9 && v[0] == 0 && string(v[1:]) == id {
		return t.del(bTasks, k)
	}
	return nil
}

// pruneTargets removes, from each target's history, the verdicts recorded
// before cutoff (with their task index entries, unless the task is still
// the target's current one: cards and /scan report name it); then it
// removes targets last checked before cutoff that nothing keeps: no
// recheck or deferred check planned, no analysis in flight, no verdict left in the history,
// no card left. Refs to cards that are gone are dropped from the targets
// that stay. It returns the verdicts and the targets removed.
func (db *DB) pruneTargets(cutoff time.Time) (verdicts, targets int, err error) {
	targets, err = db.sweep(bTargets, func(t txn, id string, v []byte) (bool, error) {
		rec, err := decodeTarget(v)
		if err != nil {
			return false, err
		}
		changed := false
		hist := rec.History[:0:0]
		for _, h := range rec.History {
			if !h.At.Before(cutoff) {
				hist = append(hist, h)
				continue
			}
			verdicts++
			changed = true
			if h.TaskID != rec.TaskID {
				if err := dropTask(t, h.TaskID, id); err != nil {
					return false, err
				}
			}
		}
		if len(hist) == 0 {
			hist = nil
		}
		rec.History = hist
		cards, err := pruneTargetCards(t, id)
		if err != nil {
			return false, err
		}
		k := rec.Target.Target
		keep := !rec.Checked.Before(cutoff) || !rec.NextCheck.IsZero() || t.get(bDeferredAt, id) != nil || cards > 0 || len(rec.History) > 0 ||
			t.get(bAnalyses, analysisKey("reputation", k)) != nil || t.get(bAnalyses, analysisKey("sandbox", k)) != nil
		if keep {
			if changed {
				return false, t.put(bTargets, id, encodeTarget(&rec))
			}
			return false, nil
		}
		if err := dropTask(t, rec.TaskID, id); err != nil {
			return false, err
		}
		if err := dropTargetID(t, k, id); err != nil {
			return false, err
		}
		if err := t.del(bFlips, id); err != nil {
			return false, err
		}
		if err := dropTargetCards(t, id); err != nil {
			return false, err
		}
		return true, t.del(bTargets, id)
	})
	return verdicts, targets, err
}

// pruneOrphanTasks removes task index entries whose target is gone (an
// analysis that failed leaves its task indexed without a verdict).
func (db *DB) pruneOrphanTasks() error {
	_, err := db.sweep(bTasks, func(t txn, k string, v []byte) (bool, error) {
		id, target, err := taskTarget(t, v)
		if err != nil {
			return false, err
		}
		if id != "" && target != "" {
			return false, nil // its target's record is there
		}
		if id == "" && targetID(t, target) != "" && t.get(bTargets, targetID(t, target)) != nil {
			return false, nil
		}
		if target != "" {
			for _, svc := range []string{"reputation", "sandbox"} {
				if t.get(bAnalyses, analysisKey(svc, target)) != nil {
					return false, nil
				}
			}
		}
		return true, t.del(bTasks, k)
	})
	return err
}
