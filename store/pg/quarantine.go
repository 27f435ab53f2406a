package pg

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// PutQuarantined keeps (or replaces) a removed message.
func (db *DB) PutQuarantined(q store.Quarantined) error {
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	ctx, cancel := db.ctx()
	defer cancel()
	_, err = db.pool.Exec(ctx, `INSERT INTO quarantined (channel, ts, removed, record) VALUES ($1, $2, $3, $4)
		ON CONFLICT (channel, ts) DO UPDATE SET removed = excluded.removed, record = excluded.record`,
		q.Channel, q.TS, micro(q.RemovedAt), b)
	return db.result(err)
}

// Quarantined returns the removed message at (channel, ts), or
// store.ErrNotFound.
func (db *DB) Quarantined(channel, ts string) (store.Quarantined, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var b []byte
	var q store.Quarantined
	err := db.pool.QueryRow(ctx, `SELECT record FROM quarantined WHERE channel = $1 AND ts = $2`, channel, ts).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return q, store.ErrNotFound
	}
	if err != nil {
		return q, db.result(err)
	}
	return q, json.Unmarshal(b, &q)
}

// PruneQuarantined removes the messages removed before cutoff, and the
// recheck removals that waited that long for an admin's Remove all.
func (db *DB) PruneQuarantined(cutoff time.Time) (int, error) {
	n := 0
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		if err := pruneRemovalBatches(ctx, tx, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM quarantined WHERE removed < $1`, micro(cutoff))
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ChannelQuarantine returns a channel's quarantine level ("" when not set).
func (db *DB) ChannelQuarantine(channel string) (string, error) {
	return db.channelSetting("quarantine", channel)
}

// SetChannelQuarantine sets a channel's quarantine level; "" removes it.
func (db *DB) SetChannelQuarantine(channel, level string, out ...*store.Outgoing) error {
	return db.setChannelSetting("quarantine", channel, level, out)
}
