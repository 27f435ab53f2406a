package bolt

import (
	"encoding/binary"
	"slices"
	"strconv"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

var _ store.EventQueue = (*DB)(nil)

// The queue lives in bucket event_queue (8-byte big-endian sequence →
// body); the last sequence number given is meta's event_seq. Events leave
// the queue from the front only (sent in order, dead-lettered when the
// receiver refuses the front one, or dropped oldest first), so the queued
// sequence numbers are contiguous. Dead letters live in bucket event_dead
// (the same key → deadRecord).
const metaEventSeq = "event_seq"

// EnqueueEvent: see EventQueue.
func (db *DB) EnqueueEvent(build func(seq uint64) ([]byte, error), max int) (uint64, int, error) {
	o := &store.Outgoing{Build: build, Max: max}
	if err := db.update(func(t txn) error { return enqueue(t, o) }); err != nil {
		return 0, 0, err
	}
	return o.Seq, o.Dropped, nil
}

// enqueue queues o in t under the next sequence number (EnqueueEvent, and
// the outbox of a card write), setting its Seq, Body and Dropped.
func enqueue(t txn, o *store.Outgoing) error {
	o.Seq, o.Body, o.Dropped = 0, nil, 0
	var seq uint64
	if v := t.get(bMeta, metaEventSeq); v != nil {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return err
		}
		seq = n
	}
	seq++
	body, err := o.Build(seq)
	if err != nil {
		return err
	}
	if err := t.put(bMeta, metaEventSeq, []byte(strconv.FormatUint(seq, 10))); err != nil {
		return err
	}
	if err := t.put(bEventQueue, seqKey(seq), body); err != nil {
		return err
	}
	o.Seq, o.Body = seq, body
	if o.Max <= 0 || seq <= uint64(o.Max) {
		return nil
	}
	var old []string
	t.scan(bEventQueue, "", seqKey(seq-uint64(o.Max)+1), func(k string, _ []byte) bool {
		old = append(old, k)
		return true
	})
	for _, k := range old {
		if err := t.del(bEventQueue, k); err != nil {
			return err
		}
	}
	o.Dropped = len(old)
	return nil
}

// enqueueOutbox queues the events of rec's outbox in t, in order.
func enqueueOutbox(t txn, rec *store.CardRecord) error { return enqueueAll(t, rec.Outbox) }

// enqueueAll queues the events out in t, in order (nil ones skipped).
func enqueueAll(t txn, out []*store.Outgoing) error {
	for _, o := range out {
		if o == nil {
			continue
		}
		if err := enqueue(t, o); err != nil {
			return err
		}
	}
	return nil
}

// QueuedEvents: see EventQueue.
func (db *DB) QueuedEvents(after uint64, n int) ([]store.QueuedEvent, error) {
	var out []store.QueuedEvent
	from := ""
	if after > 0 {
		from = seqKey(after + 1)
	}
	err := db.be.view(func(t txn) error {
		t.scan(bEventQueue, from, "", func(k string, v []byte) bool {
			out = append(out, store.QueuedEvent{Seq: binary.BigEndian.Uint64([]byte(k)), Body: append([]byte(nil), v...)})
			return len(out) < n
		})
		return nil
	})
	return out, err
}

// DeleteEvents: see EventQueue. The file has one process: the fence is not
// checked.
func (db *DB) DeleteEvents(seqs []uint64, _ store.Fence) error {
	if len(seqs) == 0 {
		return nil
	}
	// Shared: the sender deletes what it delivered after each batch, and
	// deleting again is harmless.
	return db.be.batch(func(t txn) error {
		for _, seq := range seqs {
			if err := t.del(bEventQueue, seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
}

// EventsQueued: see EventQueue. The queue is contiguous: last - first + 1.
// LastEventSeq: see EventQueue.
func (db *DB) LastEventSeq() (uint64, error) {
	var last uint64
	err := db.be.view(func(t txn) error {
		v := t.get(bMeta, metaEventSeq)
		if v == nil {
			return nil
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		last = n
		return err
	})
	return last, err
}

// EventsQueued: see EventQueue.
func (db *DB) EventsQueued() (int, error) {
	var first, last uint64
	err := db.be.view(func(t txn) error {
		t.scan(bEventQueue, "", "", func(k string, _ []byte) bool {
			first = binary.BigEndian.Uint64([]byte(k))
			return false
		})
		if first == 0 {
			return nil
		}
		v := t.get(bMeta, metaEventSeq)
		n, err := strconv.ParseUint(string(v), 10, 64)
		last = n
		return err
	})
	if err != nil || first == 0 {
		return 0, err
	}
	return int(last - first + 1), nil
}

// deadRecord is a dead letter as the file keeps it.
type deadRecord struct {
	Body     []byte    `json:"body"`
	Failures int       `json:"failures"`
	Status   int       `json:"status"`
	Error    string    `json:"error"`
	At       time.Time `json:"at"`
}

// DeadLetterEvent: see EventQueue (the fence is not checked: one process).
func (db *DB) DeadLetterEvent(seq uint64, why store.DeadLetter, _ store.Fence) error {
	if why.At.IsZero() {
		why.At = db.now()
	}
	return db.update(func(t txn) error {
		k := seqKey(seq)
		body := t.get(bEventQueue, k)
		if body == nil {
			return nil
		}
		if err := t.put(bEventDead, k, enc(deadRecord{Body: body, Failures: why.Failures, Status: why.Status, Error: why.Error, At: why.At})); err != nil {
			return err
		}
		return t.del(bEventQueue, k)
	})
}

// DeadEvents: see EventQueue.
func (db *DB) DeadEvents(n int) ([]store.DeadEvent, error) {
	var out []store.DeadEvent
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bEventDead, "", "", func(k string, v []byte) bool {
			var r deadRecord
			if derr = dec(v, &r); derr != nil {
				return false
			}
			out = append(out, store.DeadEvent{Seq: binary.BigEndian.Uint64([]byte(k)), Body: r.Body,
				DeadLetter: store.DeadLetter{Failures: r.Failures, Status: r.Status, Error: r.Error, At: r.At}})
			return len(out) < n
		})
		return derr
	})
	return out, err
}

// DeadEventsCount: see EventQueue.
func (db *DB) DeadEventsCount() (int, error) {
	n := 0
	err := db.be.view(func(t txn) error {
		n = t.count(bEventDead)
		return nil
	})
	return n, err
}

// RequeueDeadEvents: see EventQueue.
func (db *DB) RequeueDeadEvents(seqs []uint64, rebuild func(body []byte, seq uint64) ([]byte, error), max int) ([]store.Requeued, int, error) {
	var moved []store.Requeued
	var dropped int
	err := db.update(func(t txn) error {
		moved, dropped = nil, 0
		var keys []string
		if len(seqs) == 0 {
			t.scan(bEventDead, "", "", func(k string, _ []byte) bool { keys = append(keys, k); return true })
		} else {
			for _, s := range sortedUnique(seqs) {
				if t.get(bEventDead, seqKey(s)) != nil {
					keys = append(keys, seqKey(s))
				}
			}
		}
		if len(keys) == 0 {
			return nil
		}
		var last uint64
		if v := t.get(bMeta, metaEventSeq); v != nil {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return err
			}
			last = n
		}
		for _, k := range keys {
			var r deadRecord
			if err := dec(t.get(bEventDead, k), &r); err != nil {
				return err
			}
			last++
			body, err := rebuild(r.Body, last)
			if err != nil {
				return err
			}
			if err := t.put(bEventQueue, seqKey(last), body); err != nil {
				return err
			}
			if err := t.del(bEventDead, k); err != nil {
				return err
			}
			moved = append(moved, store.Requeued{From: binary.BigEndian.Uint64([]byte(k)), To: last})
		}
		if err := t.put(bMeta, metaEventSeq, []byte(strconv.FormatUint(last, 10))); err != nil {
			return err
		}
		if max <= 0 || last <= uint64(max) {
			return nil
		}
		var old []string
		t.scan(bEventQueue, "", seqKey(last-uint64(max)+1), func(k string, _ []byte) bool {
			old = append(old, k)
			return true
		})
		for _, k := range old {
			if err := t.del(bEventQueue, k); err != nil {
				return err
			}
		}
		dropped = len(old)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return moved, dropped, nil
}

// sortedUnique returns seqs sorted, without repeats.
func sortedUnique(seqs []uint64) []uint64 {
	out := slices.Clone(seqs)
	slices.Sort(out)
	return slices.Compact(out)
}
