package store

import "time"

// Outgoing is an event queued by the write that reports it (the outbox):
// a card write (CardRecord.Outbox) queues its events in the same
// transaction as the card's new state, so the state and the events that
// report it are kept or lost together; a process killed between two
// writes loses no event of the state it kept. Build makes the body under
// the sequence number given (it may run more than once: a write may be
// retried); Max bounds the queue as EnqueueEvent's max does. Once the
// write has committed, Seq, Body and Dropped say what was queued.
type Outgoing struct {
	Build func(seq uint64) ([]byte, error)
	Max   int

	Seq     uint64
	Body    []byte
	Dropped int
}

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
	// QueuedEvents returns up to n of the oldest queued events whose
	// sequence number is above after (0: from the front), oldest first.
	// The sender passes the last event it delivered and has not yet
	// deleted, so it does not read those again.
	QueuedEvents(after uint64, n int) ([]QueuedEvent, error)
	// DeleteEvents removes sent events in one transaction (absent ones:
	// no error). Under a Fence (not zero), only while that term of the
	// sender's lead is live: ErrNotLeader otherwise, and the events stay.
	DeleteEvents(seqs []uint64, f Fence) error
	// EventsQueued is how many events are queued.
	EventsQueued() (int, error)
	// LastEventSeq is the last sequence number given (0: none yet).
	LastEventSeq() (uint64, error)

	// DeadLetterEvent moves a queued event to the dead-letter list, with
	// why it was not delivered (absent: no error); fenced as DeleteEvents.
	// The sender moves the front event only, which keeps the queue
	// contiguous.
	DeadLetterEvent(seq uint64, why DeadLetter, f Fence) error
	// DeadEvents returns up to n dead letters, oldest (lowest sequence)
	// first.
	DeadEvents(n int) ([]DeadEvent, error)
	// DeadEventsCount is how many dead letters are kept.
	DeadEventsCount() (int, error)
	// RequeueDeadEvents puts dead letters back at the end of the queue, in
	// one transaction: those of seqs (all of them when seqs is empty),
	// oldest first, each under the next sequence number, with the body
	// rebuild(body, seq) returns (the sequence is also in the body). Dead
	// letters absent from the list are skipped: the answer says which
	// were requeued. max bounds the queue as in EnqueueEvent.
	RequeueDeadEvents(seqs []uint64, rebuild func(body []byte, seq uint64) ([]byte, error), max int) (requeued []Requeued, dropped int, err error)
}

// DeadLetter is why an event was taken out of the queue undelivered: the
// receiver refused it Failures times in a row, last with HTTP Status and
// the user-safe Error (no URL path, no secret).
type DeadLetter struct {
	Failures int
	Status   int
	Error    string
	At       time.Time
}

// DeadEvent is an event on the dead-letter list: its sequence number when
// it was queued, its body as it was sent, and why.
type DeadEvent struct {
	Seq  uint64
	Body []byte
	DeadLetter
}

// Requeued is a dead letter put back in the queue: From its old sequence
// number To its new one.
type Requeued struct{ From, To uint64 }
