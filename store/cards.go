package store

import (
	"time"

	"github.com/verdictbot/verdictbot/card"
)

// CardRecord is a card and its state.
type CardRecord struct {
	Card card.Card `json:"card"`
	// Mode is the channel mode the card was made under.
	Mode string `json:"mode"`
	// TeamID is the workspace (team) the card's channel was reached
	// through on an Enterprise Grid install (see Workspace). "" on a
	// single-workspace install, in records written before it existed, and
	// in records that a replica of an earlier release rewrote during a
	// rolling upgrade (it drops the field it does not know).
	TeamID string `json:"team,omitempty"`
	// Gen counts rescans of the message (edits); older analyses' results
	// are ignored.
	Gen int `json:"gen"`
	// PostStarted is set just before chat.postMessage and cleared once its
	// ts is saved: after a crash in between, the thread is searched for
	// the card rather than posting a second one.
	PostStarted bool `json:"post_started,omitempty"`
	// PostAt is when the post's claim was last renewed: the replica
	// posting renews it while its post waits (a 429, the channel's pace),
	// so another replica waits for a claim that is renewed and searches
	// the thread only after one that stopped being renewed (its replica
	// died mid-post). Zero in records written before it existed.
	PostAt time.Time `json:"post_at,omitzero"`
	// Deleted is set when the source message was deleted.
	Deleted bool      `json:"deleted,omitempty"`
	Updated time.Time `json:"updated"`

	// Outbox holds the events a write of this record queues in its own
	// transaction (see Outgoing): a card write's fn appends them; the
	// record the write returns has them with their sequence numbers. Never
	// stored with the record.
	Outbox []*Outgoing `json:"-"`
}

// Ref returns the record's card reference.
func (r *CardRecord) Ref() card.Ref {
	return card.Ref{Channel: r.Card.Channel, SourceTS: r.Card.SourceTS}
}

// StaleCard is a final card Slack refused for longer than the card's own
// retries (State.StaleCards), and since when.
type StaleCard struct {
	Ref   card.Ref
	Since time.Time
}
