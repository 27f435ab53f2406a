package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// RecordJobs stores jobs in one transaction (one fsync for the batch). A
// job whose EventID was seen before is a redelivery: it is not stored and
// its entry in the result is false. Jobs get their ID here. It returns
// once the jobs are durable; when other per-link writes are under way it
// shares their commit (see recordFirst).
func (db *DB) RecordJobs(jobs []*store.Job) ([]bool, error) {
	fresh := make([]bool, len(jobs))
	ids := make([]uint64, len(jobs))
	for i := range jobs {
		ids[i] = db.nextSeq()
	}
	now := db.now()
	err := db.recordFirst(func(t txn) error {
		// This may run more than once (a shared commit that failed is
		// retried write by write): start afresh each time.
		clear(fresh)
		for i, j := range jobs {
			if j.EventID != "" {
				if t.get(bEvents, j.EventID) != nil {
					continue
				}
				if err := t.put(bEvents, j.EventID, []byte(timeKey(now))); err != nil {
					return err
				}
				if err := t.put(bEventTimes, timeKey(now)+j.EventID, nil); err != nil {
					return err
				}
			}
			j.ID = ids[i]
			if j.Received.IsZero() {
				j.Received = now
			}
			if err := t.put(bJobs, seqKey(j.ID), enc(j)); err != nil {
				return err
			}
			fresh[i] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fresh, nil
}

// SeenEvent records an event id and reports whether it is new, without
// storing a job (for events that need no work).
func (db *DB) SeenEvent(eventID string) (bool, error) {
	fresh := false
	now := db.now()
	err := db.update(func(t txn) error {
		if t.get(bEvents, eventID) != nil {
			return nil
		}
		fresh = true
		if err := t.put(bEvents, eventID, []byte(timeKey(now))); err != nil {
			return err
		}
		return t.put(bEventTimes, timeKey(now)+eventID, nil)
	})
	return fresh, err
}

// FinishJob deletes a finished job. Every link's job ends here, so
// concurrent calls share a commit (batch), like the link's other writes.
func (db *DB) FinishJob(id uint64) error {
	return db.be.batch(func(t txn) error { return t.del(bJobs, seqKey(id)) })
}

// PendingJobs returns the unfinished jobs, oldest first.
func (db *DB) PendingJobs() ([]store.Job, error) {
	var out []store.Job
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bJobs, "", "", func(_ string, v []byte) bool {
			var j store.Job
			if derr = dec(v, &j); derr != nil {
				return false
			}
			out = append(out, j)
			return true
		})
		return derr
	})
	return out, err
}

// PruneEvents forgets event ids seen before cutoff (Slack's last retry
// comes within minutes, or 24 h with Delayed Events). It returns how many
// were removed, at most limit per call.
func (db *DB) PruneEvents(cutoff time.Time, limit int) (int, error) {
	n := 0
	err := db.update(func(t txn) error {
		var keys []string
		t.scan(bEventTimes, "", timeKey(cutoff), func(k string, _ []byte) bool {
			keys = append(keys, k)
			return len(keys) < limit
		})
		for _, k := range keys {
			if err := t.del(bEventTimes, k); err != nil {
				return err
			}
			if err := t.del(bEvents, k[8:]); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}
