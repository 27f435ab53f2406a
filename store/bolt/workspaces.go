package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// bWorkspaces holds the workspaces of an Enterprise Grid install
// (store.State.PutWorkspaces): team id → workspaceRow's JSON. Like the
// other buckets added since schema 3 it changed no schema: a file of an
// earlier release gets it at its first write, and an earlier release
// reads a file that has it as it is, without its workspaces.
const bWorkspaces = "workspaces"

func init() { buckets = append(buckets, bWorkspaces) }

// workspaceRow is a workspace as the file keeps it.
type workspaceRow struct {
	TeamID       string    `json:"team"`
	EnterpriseID string    `json:"enterprise,omitempty"`
	Name         string    `json:"name,omitempty"`
	Domain       string    `json:"domain,omitempty"`
	Granted      bool      `json:"granted"`
	Changed      time.Time `json:"changed"`
}

// PutWorkspaces records ws by team id in one transaction; a record whose
// Granted is unchanged keeps its Changed (store.State).
func (db *DB) PutWorkspaces(ws []store.Workspace) error {
	ws, err := store.WorkspacesToPut(ws)
	if err != nil || len(ws) == 0 {
		return err
	}
	now := db.now()
	return db.update(func(t txn) error {
		for _, w := range ws {
			row := workspaceRow{TeamID: w.TeamID, EnterpriseID: w.EnterpriseID, Name: w.Name, Domain: w.Domain, Granted: w.Granted, Changed: now}
			if old := t.get(bWorkspaces, w.TeamID); old != nil {
				var was workspaceRow
				if err := dec(old, &was); err != nil {
					return err
				}
				if was.Granted == w.Granted {
					row.Changed = was.Changed
				}
			}
			if err := t.put(bWorkspaces, w.TeamID, enc(row)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Workspaces returns every workspace recorded, by team id (store.State).
func (db *DB) Workspaces() ([]store.Workspace, error) {
	var out []store.Workspace
	err := db.be.view(func(t txn) error {
		var derr error
		t.scan(bWorkspaces, "", "", func(_ string, v []byte) bool {
			var row workspaceRow
			if derr = dec(v, &row); derr != nil {
				return false
			}
			out = append(out, store.Workspace{TeamID: row.TeamID, EnterpriseID: row.EnterpriseID, Name: row.Name, Domain: row.Domain,
				Granted: row.Granted, Changed: row.Changed})
			return true
		})
		return derr
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
