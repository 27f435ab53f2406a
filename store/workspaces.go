package store

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"
)

// Workspace is one workspace (team) of the Enterprise Grid organisation the
// app is installed in, as the bot last learnt it (auth.teams.list,
// team_access_granted / team_access_revoked). A single-workspace install
// keeps none.
type Workspace struct {
	TeamID       string
	EnterpriseID string
	Name, Domain string
	// Granted is false once access was revoked (the record stays, so that
	// the replicas learn of the revocation and cards of it still name it).
	Granted bool
	// Changed is when Granted last changed (or the record was first put).
	Changed time.Time
}

// ErrNoTeamID is returned by PutWorkspaces for a workspace without a
// TeamID: nothing is recorded.
var ErrNoTeamID = errors.New("workspace: no team id")

// WorkspacesToPut returns ws as PutWorkspaces records them, for the
// backends: the last entry of each TeamID, in TeamID order (bytewise), or
// ErrNoTeamID when one has none.
func WorkspacesToPut(ws []Workspace) ([]Workspace, error) {
	last := make(map[string]Workspace, len(ws))
	for _, w := range ws {
		if w.TeamID == "" {
			return nil, ErrNoTeamID
		}
		last[w.TeamID] = w
	}
	return slices.SortedFunc(maps.Values(last), func(a, b Workspace) int { return strings.Compare(a.TeamID, b.TeamID) }), nil
}
