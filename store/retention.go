package store

import (
	"strconv"
	"strings"
	"time"
)

// PruneStats counts what one Prune removed, per kind of record.
type PruneStats struct {
	Cards    int // final cards (and their card-ts index entries)
	Verdicts int // verdict-history entries
	Reports  int // feedback reports (the audit trail)
	Targets  int // targets no card, history or recheck refers to any more
	Events   int // processed event ids
	// Jobs is finished jobs. The embedded store deletes a job as soon as
	// it finishes (FinishJob), so it is always 0 here; unfinished jobs
	// are never pruned.
	Jobs int
}

// Total is the number of records removed.
func (s PruneStats) Total() int {
	return s.Cards + s.Verdicts + s.Reports + s.Targets + s.Events + s.Jobs
}

// pruneBatch is how many keys one Prune transaction looks at: each
// transaction is short, so the bot's own writes wait a few milliseconds at
// most while a Prune runs.
var pruneBatch = 2000

// Prune removes what is older than cutoff (now minus VERDICTBOT_RETENTION):
//
//   - final cards last updated before cutoff, with their card-ts index
//     entries (a card still being analysed, or whose post was interrupted,
//     stays whatever its age);
//   - verdicts and reports recorded before cutoff (what /scan history shows
//     within the window stays);
//   - targets last checked before cutoff that have no recheck planned, no
//     analysis in flight and no card left, with their due and task index
//     entries;
//   - processed event ids seen before cutoff;
//   - task index entries whose target is gone.
//
// It works in batches of short transactions, so it can run while the bot
// is busy; a failure leaves what was pruned so far pruned.
func (db *DB) Prune(cutoff time.Time) (PruneStats, error) {
	var st PruneStats
	var err error
	if st.Cards, err = db.pruneCards(cutoff); err != nil {
		return st, err
	}
	if st.Verdicts, err = db.pruneTimed(bHistory, cutoff, true); err != nil {
		return st, err
	}
	if st.Reports, err = db.pruneTimed(bReports, cutoff, false); err != nil {
		return st, err
	}
	if st.Targets, err = db.pruneTargets(cutoff); err != nil {
		return st, err
	}
	if err = db.pruneOrphanTasks(); err != nil {
		return st, err
	}
	for {
		n, err := db.PruneEvents(cutoff, pruneBatch)
		st.Events += n
		if err != nil {
			return st, err
		}
		if n < pruneBatch {
			break
		}
	}
	return st, nil
}

// sweep visits bucket in key order, pruneBatch keys per update
// transaction, and calls visit on each; visit may delete records (the key
// itself included) through t and reports whether it pruned one.
func (db *DB) sweep(bucket string, visit func(t txn, k string, v []byte) (bool, error)) (int, error) {
	n := 0
	from := ""
	for {
		done := false
		err := db.be.update(func(t txn) error {
			type kv struct {
				k string
				v []byte
			}
			var batch []kv
			t.scan(bucket, from, "", func(k string, v []byte) bool {
				batch = append(batch, kv{k, append([]byte(nil), v...)})
				return len(batch) < pruneBatch
			})
			done = len(batch) < pruneBatch
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
// (history, reports) recorded before cutoff. For verdicts, the task index
// entry of a pruned verdict goes too, unless its task is still the
// target's current one (cards and /scan report name it).
func (db *DB) pruneTimed(bucket string, cutoff time.Time, verdicts bool) (int, error) {
	limit := timeKey(cutoff)
	return db.sweep(bucket, func(t txn, k string, v []byte) (bool, error) {
		i := len(k) - 17 // target \x00 time(8) seq(8)
		if i < 0 || k[i] != 0 {
			return false, nil // not a key of ours; leave it
		}
		if k[i+1:i+9] >= limit {
			return false, nil
		}
		if verdicts {
			if err := dropVerdictTask(t, k[:i], v); err != nil {
				return false, err
			}
		}
		return true, t.del(bucket, k)
	})
}

// dropVerdictTask removes the task index entry of a pruned verdict of
// target, unless the target's current task is that task.
func dropVerdictTask(t txn, target string, raw []byte) error {
	var v Verdict
	if err := dec(raw, &v); err != nil {
		return err
	}
	if v.TaskID == "" || string(t.get(bTasks, v.TaskID)) != target {
		return nil
	}
	if tr := t.get(bTargets, target); tr != nil {
		var tg Target
		if err := dec(tr, &tg); err != nil {
			return err
		}
		if tg.TaskID == v.TaskID {
			return nil
		}
	}
	return t.del(bTasks, v.TaskID)
}

// pruneTargets removes targets last checked before cutoff that nothing
// keeps: no recheck planned, no analysis in flight, no verdict left in the
// history, no card left. Refs to cards that are gone are dropped from the
// targets that stay.
func (db *DB) pruneTargets(cutoff time.Time) (int, error) {
	return db.sweep(bTargets, func(t txn, k string, v []byte) (bool, error) {
		var tg Target
		if err := dec(v, &tg); err != nil {
			return false, err
		}
		live := tg.Cards[:0:0]
		for _, ref := range tg.Cards {
			if t.get(bCards, ref.Key()) != nil {
				live = append(live, ref)
			}
		}
		keep := !tg.Checked.Before(cutoff) || !tg.NextCheck.IsZero() || len(live) > 0 ||
			t.get(bAnalyses, analysisKey("reputation", k)) != nil || t.get(bAnalyses, analysisKey("sandbox", k)) != nil
		if !keep {
			p := k + "\x00"
			t.scan(bHistory, p, prefixEnd(p), func(string, []byte) bool { keep = true; return false })
		}
		if keep {
			if len(live) != len(tg.Cards) {
				tg.Cards = live
				if len(tg.Cards) == 0 {
					tg.Cards = nil
				}
				return false, t.put(bTargets, k, enc(tg))
			}
			return false, nil
		}
		if tg.TaskID != "" && string(t.get(bTasks, tg.TaskID)) == k {
			if err := t.del(bTasks, tg.TaskID); err != nil {
				return false, err
			}
		}
		return true, t.del(bTargets, k)
	})
}

// pruneOrphanTasks removes task index entries whose target is gone (an
// analysis that failed leaves its task indexed without a verdict).
func (db *DB) pruneOrphanTasks() error {
	_, err := db.sweep(bTasks, func(t txn, k string, v []byte) (bool, error) {
		if t.get(bTargets, string(v)) != nil {
			return false, nil
		}
		for _, svc := range []string{"reputation", "sandbox"} {
			if t.get(bAnalyses, analysisKey(svc, string(v))) != nil {
				return false, nil
			}
		}
		return true, t.del(bTasks, k)
	})
	return err
}

// decodeCard decodes a stored card record.
func decodeCard(v []byte) (*CardRecord, error) {
	var rec CardRecord
	if err := dec(v, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
