package pg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// MarkCardStale: see store.State. A card not stored inserts no row.
func (db *DB) MarkCardStale(ref card.Ref, at time.Time) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO stale_cards (channel, source_ts, since)
			SELECT channel, source_ts, $3 FROM cards WHERE channel = $1 AND source_ts = $2
			ON CONFLICT (channel, source_ts) DO NOTHING`, ref.Channel, ref.SourceTS, at.UTC())
		return err
	})
}

// StaleCards: see store.State.
func (db *DB) StaleCards(limit int) ([]store.StaleCard, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT channel, source_ts, since FROM stale_cards ORDER BY since, channel, source_ts LIMIT $1`, max(limit, 1))
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.StaleCard, error) {
		var s store.StaleCard
		err := r.Scan(&s.Ref.Channel, &s.Ref.SourceTS, &s.Since)
		s.Since = s.Since.UTC()
		return s, err
	})
	return out, db.result(err)
}

// StaleCardDone: see store.State.
func (db *DB) StaleCardDone(ref card.Ref) error {
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM stale_cards WHERE channel = $1 AND source_ts = $2`, ref.Channel, ref.SourceTS)
		return err
	})
}
