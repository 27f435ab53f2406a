package pg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/store"
)

// putWorkspace upserts one workspace; ON CONFLICT DO UPDATE locks the
// row, so concurrent writers, in any replica, see each other's granted
// and keep changed only when it is unchanged.
const putWorkspace = `
INSERT INTO workspaces AS w (team_id, enterprise_id, name, domain, granted, changed)
	VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (team_id) DO UPDATE
	SET enterprise_id = excluded.enterprise_id, name = excluded.name, domain = excluded.domain,
		granted = excluded.granted,
		changed = CASE WHEN w.granted = excluded.granted THEN w.changed ELSE excluded.changed END`

// PutWorkspaces records ws by team id in one transaction; a record whose
// Granted is unchanged keeps its Changed (store.State). The rows are
// written in team id order (store.WorkspacesToPut), so that concurrent
// writers of overlapping sets lock them in the same order: none waits for
// another that waits for it (a deadlock PostgreSQL would break by failing
// one of them).
func (db *DB) PutWorkspaces(ws []store.Workspace) error {
	ws, err := store.WorkspacesToPut(ws)
	if err != nil || len(ws) == 0 {
		return err
	}
	now := micro(db.now())
	return db.tx(func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, w := range ws {
			b.Queue(putWorkspace, w.TeamID, w.EnterpriseID, w.Name, w.Domain, w.Granted, now)
		}
		res := tx.SendBatch(ctx, b)
		for range ws {
			if _, err := res.Exec(); err != nil {
				res.Close()
				return err
			}
		}
		return res.Close()
	})
}

// Workspaces returns every workspace recorded, by team id (store.State).
func (db *DB) Workspaces() ([]store.Workspace, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT team_id, enterprise_id, name, domain, granted, changed
		FROM workspaces ORDER BY team_id COLLATE "C"`)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Workspace, error) {
		var w store.Workspace
		err := r.Scan(&w.TeamID, &w.EnterpriseID, &w.Name, &w.Domain, &w.Granted, &w.Changed)
		w.Changed = w.Changed.UTC()
		return w, err
	})
	if err != nil {
		return nil, db.result(err)
	}
	return out, nil
}
