package store

import (
	"errors"
	"time"
)

// Lease is one term of a process's lead of a periodic job (State.Lead): the
// event sender, the recheck, retention. A term ends when it is released,
// when it is not renewed in time, or (PostgreSQL) when the session that
// renews it ends; another process may lead the job only once it has ended,
// and its term has a greater fencing token.
//
// A leader acts (sends an event, rechecks a URL) only while Remaining is
// above what the action takes, and makes the action's durable write under
// the term's Fence (DeleteEvents, DeadLetterEvent, ClaimRecheck), which the
// store refuses with ErrNotLeader once the term is over. So a process that
// lost the lead without noticing (its session killed, its process paused)
// neither repeats nor reorders the new leader's work.
type Lease interface {
	// Fence names the term for fenced writes.
	Fence() Fence
	// Remaining is how long, at least, the term still holds, less a
	// margin for the fenced write that follows an action: 0 once it has
	// ended. An action must end within it (a request's deadline).
	Remaining() time.Duration
	// Done is closed when the term ends (released or lost).
	Done() <-chan struct{}
	// Release ends the term at once (another process may lead); it is
	// idempotent and never blocks for long.
	Release()
}

// Fence names one term of a job's lead: the job and the term's fencing
// token, which grows at every new term of the job. The zero Fence fences
// nothing (the embedded file, offline tools).
type Fence struct {
	Job   string
	Token uint64
}

// ErrNotLeader is returned by a fenced write whose term is no longer the
// job's live one: another process leads now, or may at any moment.
// Nothing was written.
var ErrNotLeader = errors.New("the lead of the job was lost (another process leads it now)")
