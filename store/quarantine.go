package store

import (
	"encoding/json"
	"time"
)

// Quarantined is a message that quarantine removed from its channel (or
// whose files it removed), kept so an admin can release it: its content as
// Slack gave it, who wrote it, where it was, and why and when it was
// removed. It is kept for VERDICTBOT_QUARANTINE_RETENTION after RemovedAt
// (PruneQuarantined).
type Quarantined struct {
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts,omitempty"` // the root's ts for a reply
	User     string `json:"user,omitempty"`
	Team     string `json:"team,omitempty"`
	Text     string `json:"text,omitempty"`
	// Blocks and Attachments are the message's, as Slack's JSON.
	Blocks      json.RawMessage `json:"blocks,omitempty"`
	Attachments json.RawMessage `json:"attachments,omitempty"`
	// Scope is what was removed: ScopeMessage, the message (with the
	// files it shared, which stay in Slack), or ScopeFiles, the files
	// Found in Files, deleted workspace-wide (the message stays). ""
	// (records written before it existed): ScopeFiles when Files is set,
	// else ScopeMessage (see FilesDeleted).
	Scope string `json:"scope,omitempty"`
	// Files are the message's files: for ScopeFiles the ones deleted;
	// for ScopeMessage all it shared (not posted again on release), Found
	// marking those whose verdict removed it.
	Files []QuarantinedFile `json:"files,omitempty"`
	// Level is the verdict level that removed it ("malicious", …);
	// Reason says why in a line (targets, scores).
	Level     string    `json:"level"`
	Reason    string    `json:"reason,omitempty"`
	RemovedAt time.Time `json:"removed_at"`
	// ReleasedBy, ReleasedAt and ReleasedTS are set once an admin released
	// it (ReleasedTS: the bot's re-post).
	ReleasedBy string    `json:"released_by,omitempty"`
	ReleasedAt time.Time `json:"released_at,omitzero"`
	ReleasedTS string    `json:"released_ts,omitempty"`
}

// What a removal removed (Quarantined.Scope).
const (
	ScopeMessage = "message"
	ScopeFiles   = "files"
)

// QuarantinedFile is one file of a removed message (or one file deleted).
type QuarantinedFile struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Found: its verdict reached the quarantine level.
	Found bool `json:"found,omitempty"`
}

// Released reports whether an admin released the message.
func (q Quarantined) Released() bool { return q.ReleasedBy != "" }

// FilesDeleted reports whether files were deleted (workspace-wide) rather
// than the message removed.
func (q Quarantined) FilesDeleted() bool {
	return q.Scope == ScopeFiles || (q.Scope == "" && len(q.Files) > 0)
}
