package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func analysisKey(service, target string) string { return service + "\x00" + target }

// PutAnalysis records a submission.
func (db *DB) PutAnalysis(a store.Analysis) error {
	if a.SubmittedAt.IsZero() {
		a.SubmittedAt = db.now()
	}
	return db.be.batch(func(t txn) error {
		if err := indexTask(t, a.TaskID, a.Target); err != nil {
			return err
		}
		return t.put(bAnalyses, analysisKey(a.Service, a.Target), enc(a))
	})
}

// Analysis returns the submission in flight for a target, or ErrNotFound.
func (db *DB) Analysis(service, target string) (store.Analysis, error) {
	var a store.Analysis
	err := db.be.view(func(t txn) error {
		v := t.get(bAnalyses, analysisKey(service, target))
		if v == nil {
			return store.ErrNotFound
		}
		return dec(v, &a)
	})
	return a, err
}

// DeleteAnalysis forgets a finished submission.
func (db *DB) DeleteAnalysis(service, target string) error {
	return db.update(func(t txn) error { return t.del(bAnalyses, analysisKey(service, target)) })
}

// Analyses returns every submission in flight.
func (db *DB) Analyses() ([]store.Analysis, error) {
	var out []store.Analysis
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bAnalyses, "", "", func(_ string, v []byte) bool {
			var a store.Analysis
			if derr = dec(v, &a); derr != nil {
				return false
			}
			out = append(out, a)
			return true
		})
		return derr
	})
	return out, err
}

// RecordVerdict appends v to its target's history, updates the target (the
// card ref, if given, is remembered), and plans the next recheck of a URL
// by schedule. recheck marks v as the result of a recheck, which advances
// the schedule. It returns the target as saved and its previous level.
func (db *DB) RecordVerdict(v store.Verdict, ref *card.Ref, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	return db.recordVerdict("", v, ref, schedule, recheck)
}

// FinishAnalysis records the verdict of a submission and forgets the
// submission in one transaction, so a crash never leaves neither (which
// would make a restart submit the target again). The target it returns
// lists no cards (Target does).
func (db *DB) FinishAnalysis(service string, v store.Verdict, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	return db.recordVerdict(service, v, nil, schedule, recheck)
}

func (db *DB) recordVerdict(finished string, v store.Verdict, ref *card.Ref, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	if v.At.IsZero() {
		v.At = db.now()
	}
	var saved store.Target
	var prev verdict.Level
	err := db.be.batch(func(t txn) error {
		saved, prev = store.Target{}, verdict.Pending
		if finished != "" {
			if err := t.del(bAnalyses, analysisKey(finished, v.Target)); err != nil {
				return err
			}
		}
		id, rec, ok, err := getTarget(t, v.Target)
		if err != nil {
			return err
		}
		if ok {
			prev = rec.Level
		} else {
			rec = targetRecord{Target: store.Target{Target: v.Target, Kind: v.Kind, FirstSeen: v.At}}
			prev = verdict.Pending
			if id == "" {
				if id, err = newTargetID(t, v.Target); err != nil {
					return err
				}
			}
		}
		tg := &rec.Target
		if !tg.NextCheck.IsZero() {
			if err := t.del(bDue, timeKey(tg.NextCheck)+id); err != nil {
				return err
			}
		}
		if err := dropClaim(t, claimRecheck, id); err != nil {
			return err
		}
		tg.Checked, tg.Level, tg.Category, tg.TaskID = v.At, v.Level, v.Category, v.TaskID
		if ref != nil {
			if _, err := addTargetCard(t, id, *ref, db.nextSeq()); err != nil {
				return err
			}
		}
		if recheck {
			tg.Rechecks++
			if ok && prev != verdict.Pending && prev != v.Level {
				if err := putFlip(t, id, prev, v.At); err != nil {
					return err
				}
			}
		}
		// Skip ages already passed (a long outage): plan the next one
		// still ahead, counting the skipped as done.
		schedule.PlanNext(tg, v.At)
		if !tg.NextCheck.IsZero() {
			if err := t.put(bDue, timeKey(tg.NextCheck)+id, nil); err != nil {
				return err
			}
		}
		rec.addVerdict(v)
		if err := t.put(bTargets, id, encodeTarget(&rec)); err != nil {
			return err
		}
		saved = rec.Target
		if finished == "" {
			// Not for FinishAnalysis, every analysis's write: reading a
			// popular URL's cards there would cost each analysis of it
			// their count, for a result its callers do not read.
			saved.Cards = targetCards(t, id)
		}
		return indexTask(t, v.TaskID, v.Target)
	})
	return saved, prev, err
}

// AddCard remembers that card shows target (without a new verdict).
func (db *DB) AddCard(target string, ref card.Ref) error {
	return db.be.batch(func(t txn) error { return addCard(t, target, ref, db.nextSeq()) })
}

// addCard adds card to target's cards at position pos (addTargetCard);
// ErrNotFound when target is not recorded.
func addCard(t txn, target string, ref card.Ref, pos uint64) error {
	id := targetID(t, target)
	if id == "" || t.get(bTargets, id) == nil {
		return store.ErrNotFound
	}
	_, err := addTargetCard(t, id, ref, pos)
	return err
}

// Target returns what is known of a target, or ErrNotFound.
func (db *DB) Target(target string) (store.Target, error) {
	var tg store.Target
	err := db.be.view(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		tg = rec.Target
		tg.Cards = targetCards(t, id)
		tg.Deferred = deferredAt(t, id)
		return nil
	})
	return tg, err
}

// History returns a target's verdicts, oldest first.
func (db *DB) History(target string) ([]store.Verdict, error) {
	var out []store.Verdict
	err := db.be.view(func(t txn) error {
		_, rec, _, err := getTarget(t, target)
		out = rec.History
		return err
	})
	return out, err
}

// Due returns up to limit targets whose recheck is due at now, the oldest
// due first. It reads an index ordered by due time, so its cost grows with
// limit, not with the number of targets.
func (db *DB) Due(now time.Time, limit int) ([]store.Target, error) {
	var out []store.Target
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bDue, "", timeKey(now.Add(time.Nanosecond)), func(k string, _ []byte) bool {
			raw := t.get(bTargets, k[8:])
			if raw == nil {
				return true
			}
			var rec targetRecord
			if rec, derr = decodeTarget(raw); derr != nil {
				return false
			}
			rec.Deferred = deferredAt(t, k[8:])
			rec.Cards = targetCards(t, k[8:])
			out = append(out, rec.Target)
			return len(out) < limit
		})
		return derr
	})
	return out, err
}

// RecheckFailed advances a URL's recheck schedule after a recheck that could
// not complete (the service failed), without touching its verdict, so one
// broken URL does not hold the head of the queue run after run.
func (db *DB) RecheckFailed(target string, schedule store.Schedule) error {
	now := db.now()
	return db.update(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		tg := &rec.Target
		if !tg.NextCheck.IsZero() {
			if err := t.del(bDue, timeKey(tg.NextCheck)+id); err != nil {
				return err
			}
		}
		if err := dropClaim(t, claimRecheck, id); err != nil {
			return err
		}
		tg.Rechecks++
		schedule.PlanNext(tg, now)
		if !tg.NextCheck.IsZero() {
			if err := t.put(bDue, timeKey(tg.NextCheck)+id, nil); err != nil {
				return err
			}
		}
		return t.put(bTargets, id, encodeTarget(&rec))
	})
}

// ClaimRecheck makes the caller the one that rechecks target now (see
// store.State.ClaimRecheck): its due time moves to until, so that no other run
// lists it meanwhile. The file has one process, so the fence is not
// checked.
func (db *DB) ClaimRecheck(target string, dueBy time.Time, hold time.Duration, _ store.Fence) (time.Time, bool, error) {
	until := later(db.now(), dueBy).Add(hold)
	claimed := false
	err := db.update(func(t txn) error {
		claimed = false
		id, rec, ok, err := getTarget(t, target)
		if err != nil || !ok {
			return err
		}
		if rec.Target.NextCheck.IsZero() || rec.Target.NextCheck.After(dueBy) {
			return nil
		}
		claimed = true
		due := rec.Target.NextCheck
		if err := moveDue(t, id, &rec, until); err != nil {
			return err
		}
		return putClaim(t, claimRecheck, id, until, due)
	})
	if err != nil || !claimed {
		return time.Time{}, false, err
	}
	return until, true, nil
}

// ReleaseRecheck: see store.State.ReleaseRecheck.
func (db *DB) ReleaseRecheck(target string, until, dueAt time.Time) error {
	return db.update(func(t txn) error {
		id, rec, ok, err := getTarget(t, target)
		if err != nil || !ok || dueAt.IsZero() || !rec.Target.NextCheck.Equal(until) {
			return err
		}
		return moveDue(t, id, &rec, dueAt)
	})
}

// moveDue sets a target's due time and its entry in the due index.
func moveDue(t txn, id string, rec *targetRecord, at time.Time) error {
	if err := dropClaim(t, claimRecheck, id); err != nil {
		return err
	}
	tg := &rec.Target
	if !tg.NextCheck.IsZero() {
		if err := t.del(bDue, timeKey(tg.NextCheck)+id); err != nil {
			return err
		}
	}
	tg.NextCheck = at
	if err := t.put(bDue, timeKey(at)+id, nil); err != nil {
		return err
	}
	return t.put(bTargets, id, encodeTarget(rec))
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
