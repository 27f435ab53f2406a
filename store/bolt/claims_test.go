package bolt

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestAKilledProcesssClaimsAreGivenBack: a process that claimed a
// recheck and a deferred check and died without giving them back (the
// file closed without a release: a kill) left the URLs held for the
// claim's hold; the next Open gives them back, due when they were. A
// claim that ended normally (a verdict written) is not touched, and no
// claim is left behind.
func TestAKilledProcesssClaimsAreGivenBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	db, err := Open(dir, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	sched := store.Schedule{time.Hour}
	ref := &card.Ref{Channel: "C1", SourceTS: "1.1"}
	for _, u := range []string{"https://held.test/", "https://done.test/"} {
		if _, _, err := db.RecordVerdict(store.Verdict{Target: u, Kind: "url", TaskID: "t-" + u, Level: verdict.Clean, At: t0}, ref, sched, false); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.DeferCheck("https://deferred.test/", card.Ref{Channel: "C1", SourceTS: "2.2"}, t0))
	now = t0.Add(time.Hour) // both due
	hold := 11 * time.Minute
	for _, u := range []string{"https://held.test/", "https://done.test/"} {
		if _, ok, err := db.ClaimRecheck(u, now, hold, store.Fence{}); err != nil || !ok {
			t.Fatalf("claim %s: %v %v", u, ok, err)
		}
	}
	if _, ok, err := db.ClaimDeferred("https://deferred.test/", now, hold, store.Fence{}); err != nil || !ok {
		t.Fatalf("claim the deferred check: %v %v", ok, err)
	}
	// done.test's recheck ends normally: its verdict plans its next age.
	if _, _, err := db.RecordVerdict(store.Verdict{Target: "https://done.test/", Kind: "url", TaskID: "t2", Level: verdict.Clean, At: now}, nil, sched, true); err != nil {
		t.Fatal(err)
	}
	doneBefore, _ := db.Target("https://done.test/")
	if due, _ := db.Due(now.Add(time.Minute), 10); len(due) != 0 {
		t.Fatalf("claimed URLs listed as due: %+v", due)
	}
	db.Close() // killed: nothing given back

	db, err = Open(dir, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	due, err := db.Due(now, 10)
	if err != nil || len(due) != 1 || due[0].Target != "https://held.test/" || !due[0].NextCheck.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after the restart, due: %+v %v; want held.test due at its age again", due, err)
	}
	if d, _ := db.DueDeferred(now, 10); len(d) != 1 || d[0].Target != "https://deferred.test/" {
		t.Fatalf("after the restart, deferred due: %+v; want the deferred check again", d)
	}
	if doneAfter, _ := db.Target("https://done.test/"); !doneAfter.NextCheck.Equal(doneBefore.NextCheck) {
		t.Fatalf("a recheck that ended normally was moved: %v, was %v", doneAfter.NextCheck, doneBefore.NextCheck)
	}
	n := 0
	db.be.view(func(tx txn) error { n = tx.count(bClaims); return nil })
	if n != 0 {
		t.Fatalf("%d claims left after the restart", n)
	}
}
