package bolt

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

const (
	bQuarantined      = "quarantined"       // channel/ts → Quarantined (JSON)
	bQuarantinedTimes = "quarantined_times" // removed time + channel/ts → nil (for pruning)
	bChannelQuar      = "channel_quarantine"
)

func init() { buckets = append(buckets, bQuarantined, bQuarantinedTimes, bChannelQuar) }

func quarantineKey(channel, ts string) string { return channel + "/" + ts }

func quarantineTimeKey(q store.Quarantined) string {
	return q.RemovedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "\x00" + quarantineKey(q.Channel, q.TS)
}

// PutQuarantined keeps (or replaces) a removed message.
func (db *DB) PutQuarantined(q store.Quarantined) error {
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	// Shared (a removal's writes come with a link's): fn reads the
	// stored record afresh each time it runs.
	return db.be.batch(func(t txn) error {
		key := quarantineKey(q.Channel, q.TS)
		if old := t.get(bQuarantined, key); old != nil {
			var o store.Quarantined
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
func (db *DB) Quarantined(channel, ts string) (store.Quarantined, error) {
	var q store.Quarantined
	err := db.be.view(func(t txn) error {
		v := t.get(bQuarantined, quarantineKey(channel, ts))
		if v == nil {
			return store.ErrNotFound
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
func (db *DB) SetChannelQuarantine(channel, level string, out ...*store.Outgoing) error {
	return db.update(func(t txn) error {
		if err := setOrDel(t, bChannelQuar, channel, level); err != nil {
			return err
		}
		return enqueueAll(t, out)
	})
}
