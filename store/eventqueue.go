package store

import (
	"encoding/binary"
	"strconv"
)

// QueuedEvent is one event waiting to be sent (package events): its
// sequence number, monotonic across restarts, and its body as it will be
// sent.
type QueuedEvent struct {
	Seq  uint64
	Body []byte
}

// EventQueue is the durable queue of outgoing events (VERDICTBOT_EVENTS_URL).
// Sequence numbers are assigned in commit order, one after the other, so
// the queue's order is the order the sender must keep.
type EventQueue interface {
	// EnqueueEvent records build(seq)'s body under the next sequence
	// number, in one transaction. When more than max events are then
	// queued (max > 0), the oldest are removed in the same transaction and
	// counted in dropped. build may run more than once.
	EnqueueEvent(build func(seq uint64) ([]byte, error), max int) (seq uint64, dropped int, err error)
	// QueuedEvents returns up to n of the oldest queued events, oldest first.
	QueuedEvents(n int) ([]QueuedEvent, error)
	// DeleteEvent removes a sent event (absent: no error).
	DeleteEvent(seq uint64) error
	// EventsQueued is how many events are queued.
	EventsQueued() (int, error)
}

var _ EventQueue = (*DB)(nil)

// The queue lives in bucket event_queue (8-byte big-endian sequence →
// body); the last sequence number given is meta's event_seq. Events leave
// the queue from the front only (sent in order, or dropped oldest first),
// so the queued sequence numbers are contiguous.
const metaEventSeq = "event_seq"

// EnqueueEvent: see EventQueue.
func (db *DB) EnqueueEvent(build func(seq uint64) ([]byte, error), max int) (uint64, int, error) {
	var seq uint64
	var dropped int
	err := db.update(func(t txn) error {
		seq, dropped = 0, 0
		if v := t.get(bMeta, metaEventSeq); v != nil {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return err
			}
			seq = n
		}
		seq++
		body, err := build(seq)
		if err != nil {
			return err
		}
		if err := t.put(bMeta, metaEventSeq, []byte(strconv.FormatUint(seq, 10))); err != nil {
			return err
		}
		if err := t.put(bEventQueue, seqKey(seq), body); err != nil {
			return err
		}
		if max <= 0 || seq <= uint64(max) {
			return nil
		}
		var old []string
		t.scan(bEventQueue, "", seqKey(seq-uint64(max)+1), func(k string, _ []byte) bool {
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
		return 0, 0, err
	}
	return seq, dropped, nil
}

// QueuedEvents: see EventQueue.
func (db *DB) QueuedEvents(n int) ([]QueuedEvent, error) {
	var out []QueuedEvent
	err := db.be.view(func(t txn) error {
		t.scan(bEventQueue, "", "", func(k string, v []byte) bool {
			out = append(out, QueuedEvent{Seq: binary.BigEndian.Uint64([]byte(k)), Body: append([]byte(nil), v...)})
			return len(out) < n
		})
		return nil
	})
	return out, err
}

// DeleteEvent: see EventQueue.
func (db *DB) DeleteEvent(seq uint64) error {
	return db.update(func(t txn) error { return t.del(bEventQueue, seqKey(seq)) })
}

// EventsQueued: see EventQueue. The queue is contiguous: last - first + 1.
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
