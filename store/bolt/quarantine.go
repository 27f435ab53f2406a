package store

import (
	"encoding/json"
	"strings"
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

const (
	bQuarantined      = "quarantined"       // channel/ts → Quarantined (JSON)
	bQuarantinedTimes = "quarantined_times" // removed time + channel/ts → nil (for pruning)
	bChannelQuar      = "channel_quarantine"
)

func init() { buckets = append(buckets, bQuarantined, bQuarantinedTimes, bChannelQuar) }

func quarantineKey(channel, ts string) string { return channel + "/" + ts }

func quarantineTimeKey(q Quarantined) string {
	return q.RemovedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "\x00" + quarantineKey(q.Channel, q.TS)
}

// PutQuarantined keeps (or replaces) a removed message.
func (db *DB) PutQuarantined(q Quarantined) error {
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	return db.update(func(t txn) error {
		key := quarantineKey(q.Channel, q.TS)
		if old := t.get(bQuarantined, key); old != nil {
			var o Quarantined
			if json.Unmarshal(old, &o) == nil {
				if err := t.del(bQuarantinedTimes, quarantineTimeKey(o)); err != nil {
					return err
				}
			}
		}
		if err := t.put(bQuarantinedTimes, quarantineTimeKey(q), nil); err != nil {
			return err
		}
		return t.put(bQuarantined, key, b)
	})
}

// Quarantined returns the removed message at (channel, ts), or ErrNotFound.
func (db *DB) Quarantined(channel, ts string) (Quarantined, error) {
	var q Quarantined
	err := db.be.view(func(t txn) error {
		v := t.get(bQuarantined, quarantineKey(channel, ts))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &q)
	})
	return q, err
}

// PruneQuarantined removes the messages removed before cutoff
// (VERDICTBOT_QUARANTINE_RETENTION): they can no longer be released. The
// recheck removals that waited that long for an admin's Remove all go too.
func (db *DB) PruneQuarantined(cutoff time.Time) (int, error) {
	n := 0
	err := db.update(func(t txn) error {
		n = 0
		if _, err := pruneRemovalBatches(t, cutoff); err != nil {
			return err
		}
		var gone []string
		end := cutoff.UTC().Format("2006-01-02T15:04:05.000000000Z")
		t.scan(bQuarantinedTimes, "", end, func(k string, _ []byte) bool {
			gone = append(gone, k)
			return true
		})
		for _, k := range gone {
			_, key, _ := strings.Cut(k, "\x00")
			if err := t.del(bQuarantinedTimes, k); err != nil {
				return err
			}
			if err := t.del(bQuarantined, key); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// ChannelQuarantine returns a channel's quarantine level ("off",
// "malicious", "suspicious"), or "" when the channel has none
// (VERDICTBOT_QUARANTINE applies).
func (db *DB) ChannelQuarantine(channel string) (string, error) {
	var v string
	err := db.be.view(func(t txn) error {
		v = string(t.get(bChannelQuar, channel))
		return nil
	})
	return v, err
}

// SetChannelQuarantine sets a channel's quarantine level; "" removes it.
func (db *DB) SetChannelQuarantine(channel, level string) error {
	return db.update(func(t txn) error {
		if level == "" {
			return t.del(bChannelQuar, channel)
		}
		return t.put(bChannelQuar, channel, []byte(level))
	})
}
