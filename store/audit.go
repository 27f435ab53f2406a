package store

import (
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// Report is one feedback report, for the audit trail.
type Report struct {
	Target   string           `json:"target"`
	TaskID   string           `json:"task_id"`
	User     string           `json:"user"`
	Option   string           `json:"option"` // fp, fn, restore
	Category verdict.Category `json:"category"`
	At       time.Time        `json:"at"`
	// Outcome is "" when the service accepted it, else the service's text.
	Outcome string   `json:"outcome,omitempty"`
	Card    card.Ref `json:"card"`
}

// AllowEntry is a domain added to the allowlist at run time.
type AllowEntry struct {
	Domain string    `json:"domain"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}
