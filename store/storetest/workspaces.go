package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases, testCase{"WorkspacesAreKeptPerTeam", workspaces})
}

// workspaces: none at first; PutWorkspaces records each by team id,
// replacing what was there, and Workspaces reads them sorted; Changed is
// the store's clock when the record is new or its Granted changes, and is
// kept otherwise (the last entry of a team in one call decides); a
// workspace without a team id fails the whole call; concurrent writers of
// overlapping sets lose nothing.
func workspaces(t *testing.T, db store.State, c *Clock) {
	read := func() map[string]store.Workspace {
		t.Helper()
		ws, err := db.Workspaces()
		must(t, err)
		out := map[string]store.Workspace{}
		for i, w := range ws {
			if i > 0 && ws[i-1].TeamID >= w.TeamID {
				t.Fatalf("not sorted by team id: %+v", ws)
			}
			out[w.TeamID] = w
		}
		return out
	}
	check := func(w store.Workspace, granted bool, changed time.Time, name string) {
		t.Helper()
		if w.Granted != granted || !w.Changed.Equal(changed) || w.Name != name {
			t.Fatalf("%s: granted %v changed %v name %q; want %v %v %q", w.TeamID, w.Granted, w.Changed, w.Name, granted, changed, name)
		}
	}
	if ws, err := db.Workspaces(); err != nil || len(ws) != 0 {
		t.Fatalf("before any: %+v %v", ws, err)
	}
	must(t, db.PutWorkspaces(nil))

	// Two, given out of order; the caller's Changed is not the store's.
	t0 := c.Now()
	must(t, db.PutWorkspaces([]store.Workspace{
		{TeamID: "T2", EnterpriseID: "E1", Name: "Beta", Domain: "beta", Granted: true, Changed: time.Unix(1, 0)},
		{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha-co", Granted: true},
	}))
	ws, err := db.Workspaces()
	must(t, err)
	if len(ws) != 2 || ws[0].TeamID != "T1" || ws[1].TeamID != "T2" {
		t.Fatalf("two put: %+v", ws)
	}
	w, want := ws[0], store.Workspace{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha-co", Granted: true}
	if !w.Changed.Equal(t0) {
		t.Fatalf("T1 changed %v, want the store's clock %v", w.Changed, t0)
	}
	if w.Changed = (time.Time{}); w != want {
		t.Fatalf("T1: %+v, want %+v", w, want)
	}
	check(ws[1], true, t0, "Beta")

	// Revoked: Granted false, Changed moves; the other is left alone.
	c.Add(time.Minute)
	t1 := c.Now()
	must(t, db.PutWorkspaces([]store.Workspace{{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha-co"}}))
	got := read()
	check(got["T1"], false, t1, "Alpha")
	check(got["T2"], true, t0, "Beta")

	// Put again with Granted unchanged: Changed is kept, the rest replaced.
	c.Add(time.Minute)
	must(t, db.PutWorkspaces([]store.Workspace{
		{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha (archived)", Domain: "alpha-co"},
		{TeamID: "T2", EnterpriseID: "E1", Name: "Beta", Domain: "beta", Granted: true},
	}))
	got = read()
	check(got["T1"], false, t1, "Alpha (archived)")
	check(got["T2"], true, t0, "Beta")
	if len(got) != 2 {
		t.Fatalf("%d workspaces: %+v", len(got), got)
	}

	// Two entries of one team in a call: the last is recorded, and it is
	// compared with the stored record (granted, as it was: Changed kept).
	must(t, db.PutWorkspaces([]store.Workspace{{TeamID: "T2", Name: "Beta?"}, {TeamID: "T2", EnterpriseID: "E1", Name: "Beta", Domain: "beta", Granted: true}}))
	check(read()["T2"], true, t0, "Beta")

	// A workspace without a team id: ErrNoTeamID, and nothing recorded.
	err = db.PutWorkspaces([]store.Workspace{{TeamID: "T3", Granted: true}, {Name: "no id", Granted: true}})
	if !errors.Is(err, store.ErrNoTeamID) {
		t.Fatalf("no team id: %v, want ErrNoTeamID", err)
	}
	if _, ok := read()["T3"]; ok {
		t.Fatal("a failed PutWorkspaces recorded T3")
	}

	// Granted again: Changed moves again.
	c.Add(time.Minute)
	t3 := c.Now()
	must(t, db.PutWorkspaces([]store.Workspace{{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha-co", Granted: true}}))
	check(read()["T1"], true, t3, "Alpha")

	// Concurrent writers, each with a team of its own and two shared, in
	// either order: none fails (on PostgreSQL, writers locking the shared
	// rows in opposite orders could deadlock), none is lost.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ws := []store.Workspace{
				{TeamID: "TS1", Name: "shared 1", Granted: true},
				{TeamID: fmt.Sprintf("TC%02d", i), Name: fmt.Sprint("own ", i), Granted: true},
				{TeamID: "TS2", Name: "shared 2", Granted: true},
			}
			if i%2 == 1 {
				ws[0], ws[2] = ws[2], ws[0]
			}
			if err := db.PutWorkspaces(ws); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got = read()
	if len(got) != 2+2+20 {
		t.Fatalf("after concurrent writers: %d workspaces, want 24: %+v", len(got), got)
	}
	for i := range 20 {
		check(got[fmt.Sprintf("TC%02d", i)], true, t3, fmt.Sprint("own ", i))
	}
	check(got["TS1"], true, t3, "shared 1")
	check(got["TS2"], true, t3, "shared 2")
}
