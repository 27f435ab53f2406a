// Package store is the contract of the state layer: what the bot keeps so
// that it survives a restart, and the interfaces through which it keeps
// it. It holds the domain records (jobs acked to Slack but not finished,
// analyses in flight, targets and their verdict history, cards and where
// they are, reports, channel settings, the runtime allowlist, quarantined
// messages and the removals a recheck decided, the outgoing events, the
// workspaces of an Enterprise Grid install, the messages people reported
// to the security team), the State and EventQueue interfaces, the recheck
// Schedule, the leases of the periodic jobs, and the errors every backend
// returns. It stores nothing itself and imports nothing of Slack.
//
// Each backend is a package of its own that implements State: store/bolt,
// the embedded bbolt file (the default: one process, nothing to install),
// and store/pg, PostgreSQL (several replicas sharing one database).
// Package store/storetest is the conformance suite both pass.
package store

import "errors"

// ErrNotFound is returned by lookups of absent records.
var ErrNotFound = errors.New("not found")

// ErrBadAllowance is returned by TakeAllowance for a limit below 1 or a
// window that is not positive.
var ErrBadAllowance = errors.New("allowance: want a limit of at least 1 and a positive window")
