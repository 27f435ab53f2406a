package store

import (
	"crypto/rand"
	"encoding/hex"
	"github.com/verdictbot/verdictbot/card"
	"time"
)

// Removal is a removal quarantine decided when a recheck flipped a URL to
// its channel's level: the message a card answers is to be removed. It is
// queued in the same write that shows the flip on the card (UpdateCardQueue),
// kept until the removal is done (FinishRemoval), and taken by one
// process at a time (ClaimRemoval), so a stop between the decision and the
// deletion resumes after the restart, and several replicas remove each
// message once. Removals are paced by their taker (Slack's chat.delete is
// Tier 3); a passing failure puts one back for later (RetryRemoval).
//
// A flip with more messages than VERDICTBOT_QUARANTINE_FLIP_MAX queues
// them Held, under a RemovalBatch, until an admin's Remove all
// (ApproveBatch); a removal of Kind RemovalAsk posts that request in the
// alert channel, taken and retried like the others.
type Removal struct {
	// Card is the card whose message is removed; for RemovalAsk,
	// {"", "batch:" + Batch}.
	Card card.Ref `json:"card"`
	// Kind is RemovalMessage or RemovalAsk.
	Kind string `json:"kind,omitempty"`
	// Target and Level are the URL that flipped and its new level.
	Target string `json:"target,omitempty"`
	Level  string `json:"level,omitempty"`
	// Batch is the flip's batch when it waits for an admin ("" when not).
	Batch string `json:"batch,omitempty"`
	// Held: waits for the batch's approval.
	Held bool `json:"held,omitempty"`
	// Queued is when it was decided; NextAt is when it may be tried
	// (again); Attempts counts the tries that failed for a passing reason.
	Queued   time.Time `json:"queued"`
	NextAt   time.Time `json:"next_at"`
	Attempts int       `json:"attempts,omitempty"`
	// Owner is the process working on it ("" none); not stored in the
	// record.
	Owner string `json:"-"`
}

// Kinds of removal.
const (
	RemovalMessage = ""    // remove the card's message
	RemovalAsk     = "ask" // post the batch's Remove all request
)

// AskRef is the key of a batch's RemovalAsk.
func AskRef(batch string) card.Ref { return card.Ref{SourceTS: "batch:" + batch} }

// RemovalBatch is a flip whose removals wait for an admin's Remove all:
// what, how many, where, and who approved it.
type RemovalBatch struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Level  string `json:"level"`
	// Count and Channels are the messages held, in all and per channel.
	Count    int            `json:"count"`
	Channels map[string]int `json:"channels,omitempty"`
	Created  time.Time      `json:"created"`
	// AlertChannel and AlertTS are the request's message, once posted.
	AlertChannel string `json:"alert_channel,omitempty"`
	AlertTS      string `json:"alert_ts,omitempty"`
	// ApprovedBy and ApprovedAt are set by the admin's Remove all.
	ApprovedBy string    `json:"approved_by,omitempty"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`
}

// NewBatchID returns a new, unguessable batch id (the button's value).
func NewBatchID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
