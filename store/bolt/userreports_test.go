package bolt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// checkUserReportIndexes fails t unless the index buckets of the user
// reports hold exactly the entries their records imply: what the
// conformance suite cannot see (a stale entry is skipped by the lookups,
// but would keep a triage card taken and stay in the file for good).
func checkUserReportIndexes(t *testing.T, db *DB, when string) {
	t.Helper()
	wantTriage, wantBy := map[string]string{}, map[string]bool{}
	gotTriage, gotBy := map[string]string{}, map[string]bool{}
	err := db.be.view(func(t txn) error {
		var derr error
		t.scan(bUserReports, "", "", func(k string, v []byte) bool {
			var row userReportRow
			if derr = dec(v, &row); derr != nil {
				return false
			}
			rep := row.report()
			if rep.HasTriage() {
				wantTriage[userReportKey(rep.TriageChannel, rep.TriageTS)] = k
			}
			for _, r := range rep.Reporters {
				wantBy[reportedByKey(r.User, r.At, k)] = true
			}
			return true
		})
		t.scan(bUserReportTriage, "", "", func(k string, v []byte) bool { gotTriage[k] = string(v); return true })
		t.scan(bUserReportsBy, "", "", func(k string, _ []byte) bool { gotBy[k] = true; return true })
		return derr
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(gotTriage, wantTriage) {
		t.Fatalf("%s: triage index %q, want %q", when, gotTriage, wantTriage)
	}
	if !maps.Equal(gotBy, wantBy) {
		t.Fatalf("%s: by-user index %q, want %q", when, slices.Sorted(maps.Keys(gotBy)), slices.Sorted(maps.Keys(wantBy)))
	}
}

// TestUserReportIndexesFollowTheirReports: after each write (a report
// created, a reporter added, the triage card set, moved and cleared,
// reporters changed, a write that fails, Prune), the triage and by-user
// buckets hold the entries of the reports stored and nothing else.
func TestUserReportIndexesFollowTheirReports(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	for name, db := range map[string]*DB{"memory": Memory(Options{Now: c.now, PruneBatch: 2}), "file": func() *DB {
		db, err := Open(t.TempDir(), Options{Now: c.now, PruneBatch: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}()} {
		t.Run(name, func(t *testing.T) {
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				checkUserReportIndexes(t, db, what)
			}
			add := func(ts, user string) error {
				_, _, err := db.AddUserReport("C1", ts, store.Reporter{User: user, Via: "shortcut"}, nil)
				return err
			}
			update := func(ts string, fn func(rep *store.UserReport)) error {
				_, err := db.UpdateUserReport("C1", ts, func(rep *store.UserReport) error { fn(rep); return nil })
				return err
			}
			for i := range 5 {
				for j := range i + 1 {
					c.add(time.Second)
					step(fmt.Sprintf("report %d by U%d", i, j), add(fmt.Sprint("1.", i), fmt.Sprint("U", j)))
				}
				step(fmt.Sprintf("report %d: same user", i), add(fmt.Sprint("1.", i), "U0"))
				step(fmt.Sprintf("report %d: triage card", i), update(fmt.Sprint("1.", i), func(rep *store.UserReport) {
					rep.TriageChannel, rep.TriageTS = "CSEC", fmt.Sprint("9.", i)
				}))
			}
			step("triage card moved", update("1.0", func(rep *store.UserReport) { rep.TriageTS = "9.100" }))
			step("triage card cleared", update("1.1", func(rep *store.UserReport) { rep.TriageChannel, rep.TriageTS = "", "" }))
			step("reporter dropped, time changed", update("1.2", func(rep *store.UserReport) {
				rep.Reporters = rep.Reporters[1:]
				rep.Reporters[0].At = rep.Reporters[0].At.Add(-time.Hour)
			}))
			if err := update("1.3", func(rep *store.UserReport) { rep.TriageTS = "9.4"; rep.Reporters = rep.Reporters[:1] }); !errors.Is(err, store.ErrTriageTaken) {
				t.Fatalf("another's triage card: %v", err)
			}
			step("a write that failed", nil)
			c.add(40 * 24 * time.Hour)
			step("report 4 updated", update("1.4", func(rep *store.UserReport) { rep.Assignee = "UADMIN" }))
			st, err := db.Prune(c.now().Add(-30 * 24 * time.Hour))
			step("Prune", err)
			if st.UserReports != 4 {
				t.Fatalf("Prune: %+v, want 4 user reports", st)
			}
			if n := db.Counts()[bUserReportsBy]; n != 5 {
				t.Fatalf("%d by-user entries after Prune, want report 4's 5", n)
			}
		})
	}
}
