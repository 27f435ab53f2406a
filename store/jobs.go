package store

import (
	"encoding/json"
	"time"
)

// Job is a piece of work acked to Slack but not finished: the bot records it
// before the ack and deletes it when done, so a restart resumes it.
type Job struct {
	ID       uint64          `json:"id"`
	Kind     string          `json:"kind"` // "message", "file_shared", "interactive", …
	EventID  string          `json:"event_id,omitempty"`
	Payload  json.RawMessage `json:"payload"`
	Received time.Time       `json:"received"`
	// Owner is the replica that recorded the job; OrphanJobs sets it to
	// the replica the job was taken over from ("" for the embedded file).
	Owner string `json:"-"`
}
