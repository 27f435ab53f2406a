package store

import (
	"errors"
	"time"
)

// Backfill is a scan of one channel's recent history (/scan channel
// backfill): its window, where the reading stands, what it found, and
// who runs it.
type Backfill struct {
	Channel   string
	Since     time.Time // the oldest message to read (now minus the window at start)
	Until     time.Time // the newest (the start: later messages are live)
	StartedBy string    // the admin, or "" when started by the bot joining
	// State: "running", "done", "stopped" (an admin stopped it), "failed".
	State string
	// Cursor is conversations.history's next_cursor ("" before the first page and after the last);
	// Thread is the root whose replies are being read ("" none) and ThreadCursor their cursor.
	Cursor, Thread, ThreadCursor         string
	Pages, Messages, Links, Files, Found int // counts so far (Found: not clean)
	// ProgressTS is the progress message in the channel (updated in place).
	ProgressTS string
	// Owner is the replica running it and OwnedUntil its claim's end (a lease: another replica takes over after it).
	Owner            string
	OwnedUntil       time.Time
	Problem          string    // why it failed
	Created, Updated time.Time // set by the store
}

// The states of a backfill. Only a running one is claimed, listed by
// RunningBackfills and kept by Prune; any other is finished.
const (
	BackfillRunning = "running"
	BackfillDone    = "done"
	BackfillStopped = "stopped"
	BackfillFailed  = "failed"
)

// ErrNoChannel is returned by StartBackfill for a backfill without a
// channel: nothing is recorded.
var ErrNoChannel = errors.New("backfill: no channel")

// Running reports whether b is running (not finished).
func (b *Backfill) Running() bool { return b.State == BackfillRunning }

// Claimable reports whether owner may claim b at now (ClaimBackfill, for
// the backends): b is running and its claim is free (no owner), expired
// (OwnedUntil at or before now) or owner's already.
func (b *Backfill) Claimable(owner string, now time.Time) bool {
	return b.Running() && (b.Owner == "" || b.Owner == owner || !now.Before(b.OwnedUntil))
}
