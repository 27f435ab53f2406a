package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases, testCase{"UserReportsGatherPerMessage", userReports})
	pruneCases = append(pruneCases, testCase{"PruneRemovesUserReportsNotUpdatedWithinTheWindow", pruneUserReports})
}

// utcReport is rep with its times in UTC (no monotonic reading), to
// compare reports with reflect.DeepEqual.
func utcReport(rep store.UserReport) store.UserReport {
	rep.DecidedAt, rep.Created, rep.Updated = rep.DecidedAt.UTC(), rep.Created.UTC(), rep.Updated.UTC()
	rs := make([]store.Reporter, len(rep.Reporters))
	for i, r := range rep.Reporters {
		r.At = r.At.UTC()
		rs[i] = r
	}
	if len(rs) == 0 {
		rs = nil
	}
	rep.Reporters = rs
	return rep
}

// checkReport fails t unless got is want, and the report stored at
// (want.Channel, want.TS) is too.
func checkReport(t *testing.T, db store.State, what string, got, want store.UserReport) {
	t.Helper()
	if !reflect.DeepEqual(utcReport(got), utcReport(want)) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	stored, err := db.UserReport(want.Channel, want.TS)
	if err != nil {
		t.Fatalf("%s: stored: %v", what, err)
	}
	if !reflect.DeepEqual(utcReport(stored), utcReport(want)) {
		t.Fatalf("%s: stored:\n got %+v\nwant %+v", what, stored, want)
	}
}

// reportKeys returns the (channel/ts) of reps, in order.
func reportKeys(reps []store.UserReport) []string {
	out := []string{}
	for _, r := range reps {
		out = append(out, r.Channel+"/"+r.TS)
	}
	return out
}

// userReports: a message's report is created at its first reporter (fn
// fills the author and thread, and only then), a second user is added, the
// same user again is not; concurrent reporters, on a new report and on an
// existing one, are each added once, in the order they took the report;
// UpdateUserReport changes the triage card, assignee, outcome and Told,
// with the triage index following it; the lookups by triage card and by
// user, the per-user count, the absent cases and bad input; Prune removes
// the reports not updated within the window, with their index entries.
func userReports(t *testing.T, db store.State, c *Clock) {
	const ch, m1, m2 = "C1", "1764400000.000100", "1764400001.000200"
	noFn := func(rep *store.UserReport) { t.Errorf("fn called for the existing report %s/%s", rep.Channel, rep.TS) }

	// Nothing yet.
	if _, err := db.UserReport(ch, m1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UserReport before any: %v, want ErrNotFound", err)
	}
	called := false
	if _, err := db.UpdateUserReport(ch, m1, func(*store.UserReport) error { called = true; return nil }); !errors.Is(err, store.ErrNotFound) || called {
		t.Fatalf("UpdateUserReport of none: %v (fn called %v), want ErrNotFound", err, called)
	}
	for _, k := range [][2]string{{"CSEC", "9.1"}, {"", ""}, {"CSEC", ""}} {
		if _, err := db.UserReportByTriage(k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UserReportByTriage%q before any: %v, want ErrNotFound", k, err)
		}
	}
	if reps, err := db.UserReportsBy("U1", 10); err != nil || len(reps) != 0 {
		t.Fatalf("UserReportsBy before any: %+v, %v", reps, err)
	}
	if n, err := db.UserReportsSince("U1", time.Time{}); err != nil || n != 0 {
		t.Fatalf("UserReportsSince before any: %d, %v", n, err)
	}
	// Bad input records nothing.
	for _, bad := range []struct{ ch, ts, user string }{{"", m1, "U1"}, {ch, "", "U1"}, {ch, m1, ""}} {
		if _, _, err := db.AddUserReport(bad.ch, bad.ts, store.Reporter{User: bad.user}, nil); !errors.Is(err, store.ErrBadUserReport) {
			t.Fatalf("AddUserReport%+v: %v, want ErrBadUserReport", bad, err)
		}
	}
	if _, err := db.UserReport(ch, m1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a bad AddUserReport recorded a report: %v", err)
	}

	// The first reporter creates the report; fn fills the author and thread
	// (what it sets in the store's fields is overwritten).
	t0 := c.Now()
	fills := 0
	rep, added, err := db.AddUserReport(ch, m1, store.Reporter{User: "U1", Via: "shortcut"}, func(rep *store.UserReport) {
		fills++
		rep.Author, rep.AuthorTeam, rep.ThreadTS = "UA", "TOTHER", "1764399999.000001"
		rep.Channel, rep.TS, rep.Created, rep.Updated = "CX", "1.1", time.Unix(1, 0), time.Unix(2, 0)
		rep.Reporters = []store.Reporter{{User: "UFAKE"}}
	})
	must(t, err)
	want := store.UserReport{Channel: ch, TS: m1, ThreadTS: "1764399999.000001", Author: "UA", AuthorTeam: "TOTHER",
		Reporters: []store.Reporter{{User: "U1", At: t0, Via: "shortcut"}}, Created: t0, Updated: t0}
	if !added || fills != 1 {
		t.Fatalf("first report: added %v, fn called %d times", added, fills)
	}
	checkReport(t, db, "first report", rep, want)

	// A second user is added, fn is not called; the same user again is not
	// added and changes nothing.
	c.Add(time.Minute)
	t1 := c.Now()
	rep, added, err = db.AddUserReport(ch, m1, store.Reporter{User: "U2", Via: "reaction"}, noFn)
	must(t, err)
	want.Reporters = append(want.Reporters, store.Reporter{User: "U2", At: t1, Via: "reaction"})
	want.Updated = t1
	if !added {
		t.Fatal("second user: not added")
	}
	checkReport(t, db, "second user", rep, want)
	c.Add(time.Minute)
	rep, added, err = db.AddUserReport(ch, m1, store.Reporter{User: "U1", Via: "reaction"}, noFn)
	must(t, err)
	if added {
		t.Fatal("the same user again: added")
	}
	checkReport(t, db, "same user again", rep, want)
	// A reporter's own time is kept.
	t3 := c.Now().Add(-10 * time.Second)
	rep, added, err = db.AddUserReport(ch, m1, store.Reporter{User: "U3", At: t3, Via: "shortcut"}, noFn)
	must(t, err)
	want.Reporters = append(want.Reporters, store.Reporter{User: "U3", At: t3, Via: "shortcut"})
	want.Updated = c.Now()
	if !added {
		t.Fatal("U3: not added")
	}
	checkReport(t, db, "a reporter with its time", rep, want)

	// 20 reporters at once, on the existing report (with updates) and on a
	// new one: each is added once, after those before and before the one after, in the
	// order they took the report (the report each call returns ends with
	// its reporter, at the place it has in the end); the new report is
	// filled once.
	c.Add(time.Minute)
	tConc := c.Now()
	var creates atomic.Int32
	for _, msg := range []string{m1, m2} {
		at := c.Now()
		var wg sync.WaitGroup
		places := make([]int, 20)
		for i := range 20 {
			wg.Go(func() {
				user := fmt.Sprintf("UC%02d", i)
				rep, added, err := db.AddUserReport(ch, msg, store.Reporter{User: user, Via: "reaction"}, func(rep *store.UserReport) {
					creates.Add(1)
					rep.Author = "UB"
				})
				if err != nil || !added || len(rep.Reporters) == 0 || rep.Reporters[len(rep.Reporters)-1].User != user {
					t.Errorf("%s, concurrent %s: added %v, %v; reporters %+v", msg, user, added, err, rep.Reporters)
					return
				}
				places[i] = len(rep.Reporters) - 1
			})
		}
		if msg == m1 {
			// And 10 updates meanwhile, each rewriting every reporter
			// (Told flipped): none loses a reporter or another update.
			for range 10 {
				wg.Go(func() {
					_, err := db.UpdateUserReport(ch, msg, func(rep *store.UserReport) error {
						rep.Assignee += "x"
						for i := range rep.Reporters {
							rep.Reporters[i].Told = !rep.Reporters[i].Told
						}
						return nil
					})
					if err != nil {
						t.Errorf("%s, concurrent update: %v", msg, err)
					}
				})
			}
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		c.Add(time.Second)
		_, added, err := db.AddUserReport(ch, msg, store.Reporter{User: "ULAST", Via: "shortcut"}, noFn)
		must(t, err)
		if !added {
			t.Fatalf("%s: ULAST not added", msg)
		}
		got, err := db.UserReport(ch, msg)
		must(t, err)
		before := 0
		if msg == m1 {
			before = 3
		}
		if len(got.Reporters) != before+20+1 {
			t.Fatalf("%s: %d reporters after 20 concurrent ones, want %d: %+v", msg, len(got.Reporters), before+21, got.Reporters)
		}
		for i, r := range got.Reporters[:before] {
			if w := want.Reporters[i]; r.User != w.User || !r.At.Equal(w.At) || r.Via != w.Via {
				t.Fatalf("%s: reporter %d is %+v, want %+v", msg, i, r, want.Reporters[i])
			}
		}
		for i, place := range places {
			user := fmt.Sprintf("UC%02d", i)
			if r := got.Reporters[place]; r.User != user || !r.At.Equal(at) || r.Via != "reaction" {
				t.Fatalf("%s: reporter %d is %+v, want %s (where its call left it) at %v", msg, place, r, user, at)
			}
		}
		if last := got.Reporters[len(got.Reporters)-1]; last.User != "ULAST" {
			t.Fatalf("%s: last reporter %+v, want ULAST", msg, last)
		}
		if msg == m1 && got.Assignee != "xxxxxxxxxx" {
			t.Fatalf("%s: assignee %q after 10 concurrent updates, want 10 x", msg, got.Assignee)
		}
		if msg == m2 && (got.Author != "UB" || !got.Created.Equal(at) || !got.Updated.Equal(c.Now())) {
			t.Fatalf("%s created concurrently: %+v", msg, got)
		}
	}
	if n := creates.Load(); n != 1 {
		t.Fatalf("fn filled the new report %d times, want once", n)
	}
	want, err = db.UserReport(ch, m1)
	must(t, err)

	// UpdateUserReport: the triage card, the assignee, Told; the store's
	// fields are kept.
	c.Add(time.Minute)
	t4 := c.Now()
	rep, err = db.UpdateUserReport(ch, m1, func(rep *store.UserReport) error {
		rep.TriageChannel, rep.TriageTS, rep.Assignee = "CSEC", "1764400100.000001", "UADMIN"
		rep.Reporters[1].Told = true
		rep.Channel, rep.TS, rep.Created, rep.Updated = "CX", "1.1", time.Unix(1, 0), time.Unix(2, 0)
		return nil
	})
	must(t, err)
	want.TriageChannel, want.TriageTS, want.Assignee, want.Updated = "CSEC", "1764400100.000001", "UADMIN", t4
	want.Reporters = append([]store.Reporter(nil), want.Reporters...)
	want.Reporters[1].Told = true
	checkReport(t, db, "triage card and assignee", rep, want)
	if got, err := db.UserReportByTriage("CSEC", "1764400100.000001"); err != nil || !reflect.DeepEqual(utcReport(got), utcReport(want)) {
		t.Fatalf("UserReportByTriage: %+v, %v", got, err)
	}
	for _, k := range [][2]string{{"CSEC", "1764400100.000002"}, {"C2", "1764400100.000001"}, {ch, m1}} {
		if _, err := db.UserReportByTriage(k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UserReportByTriage%q: %v, want ErrNotFound", k, err)
		}
	}
	// The outcome, every reporter told.
	c.Add(time.Minute)
	t5 := c.Now()
	rep, err = db.UpdateUserReport(ch, m1, func(rep *store.UserReport) error {
		rep.Outcome, rep.DecidedBy, rep.DecidedAt = "malicious", "UADMIN", t5
		for i := range rep.Reporters {
			rep.Reporters[i].Told = true
		}
		return nil
	})
	must(t, err)
	want.Outcome, want.DecidedBy, want.DecidedAt, want.Updated = "malicious", "UADMIN", t5, t5
	for i := range want.Reporters {
		want.Reporters[i].Told = true
	}
	checkReport(t, db, "outcome", rep, want)

	// What aborts records nothing: fn's error (returned as is), a triage
	// card that is another report's, a reporter without a user or twice.
	c.Add(time.Minute)
	errFn := errors.New("fn says no")
	if _, err := db.UpdateUserReport(ch, m1, func(rep *store.UserReport) error {
		rep.Outcome, rep.Reporters[0].Told = "not_a_threat", false
		return errFn
	}); err != errFn {
		t.Fatalf("fn's error: %v, want it as is", err)
	}
	checkReport(t, db, "after fn's error", want, want)
	m2rep, err := db.UserReport(ch, m2)
	must(t, err)
	if _, err := db.UpdateUserReport(ch, m2, func(rep *store.UserReport) error {
		rep.TriageChannel, rep.TriageTS, rep.Assignee = "CSEC", "1764400100.000001", "USOMEONE"
		return nil
	}); !errors.Is(err, store.ErrTriageTaken) {
		t.Fatalf("another report's triage card: %v, want ErrTriageTaken", err)
	}
	checkReport(t, db, "m2 after ErrTriageTaken", m2rep, m2rep)
	if got, err := db.UserReportByTriage("CSEC", "1764400100.000001"); err != nil || got.TS != m1 {
		t.Fatalf("the triage card after ErrTriageTaken: %+v, %v", got, err)
	}
	for name, change := range map[string]func(rep *store.UserReport){
		"a user twice": func(rep *store.UserReport) {
			rep.Reporters = append(rep.Reporters, store.Reporter{User: "ULAST", At: t5})
		},
		"a reporter with no user": func(rep *store.UserReport) { rep.Reporters[0].User = "" },
	} {
		if _, err := db.UpdateUserReport(ch, m2, func(rep *store.UserReport) error { rep.Assignee = "UX"; change(rep); return nil }); !errors.Is(err, store.ErrBadUserReport) {
			t.Fatalf("%s: %v, want ErrBadUserReport", name, err)
		}
	}
	checkReport(t, db, "m2 after ErrBadUserReport", m2rep, m2rep)
	// The triage card moves: the index follows.
	_, err = db.UpdateUserReport(ch, m1, func(rep *store.UserReport) error { rep.TriageTS = "1764400200.000001"; return nil })
	must(t, err)
	if _, err := db.UserReportByTriage("CSEC", "1764400100.000001"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the triage card left: %v, want ErrNotFound", err)
	}
	if got, err := db.UserReportByTriage("CSEC", "1764400200.000001"); err != nil || got.TS != m1 || !got.Updated.Equal(c.Now()) {
		t.Fatalf("the triage card moved to: %+v, %v", got, err)
	}
	// Now free, the old card can be m2's.
	_, err = db.UpdateUserReport(ch, m2, func(rep *store.UserReport) error {
		rep.TriageChannel, rep.TriageTS = "CSEC", "1764400100.000001"
		return nil
	})
	must(t, err)
	if got, err := db.UserReportByTriage("CSEC", "1764400100.000001"); err != nil || got.TS != m2 {
		t.Fatalf("the freed triage card given to m2: %+v, %v", got, err)
	}

	// The reports of a user, by when they reported: m3 is U5's first and
	// U1 reports it after m4.
	const m3, m4 = "1764400300.000001", "1764400400.000001"
	c.Add(time.Minute)
	tA := c.Now()
	_, _, err = db.AddUserReport("C2", m3, store.Reporter{User: "U5", Via: "shortcut"}, nil)
	must(t, err)
	c.Add(time.Minute)
	tB := c.Now()
	_, _, err = db.AddUserReport("C2", m4, store.Reporter{User: "U1", Via: "shortcut"}, nil)
	must(t, err)
	c.Add(time.Minute)
	tC := c.Now()
	_, _, err = db.AddUserReport("C2", m3, store.Reporter{User: "U1", Via: "reaction"}, nil)
	must(t, err)
	for _, tc := range []struct {
		user string
		n    int
		want []string
	}{
		{"U1", 10, []string{"C2/" + m3, "C2/" + m4, ch + "/" + m1}},
		{"U1", 3, []string{"C2/" + m3, "C2/" + m4, ch + "/" + m1}},
		{"U1", 2, []string{"C2/" + m3, "C2/" + m4}},
		{"U1", 1, []string{"C2/" + m3}},
		{"U1", 0, []string{}},
		{"U5", 10, []string{"C2/" + m3}},
		{"UC07", 10, []string{ch + "/" + m2, ch + "/" + m1}},
		{"UNOBODY", 10, []string{}},
	} {
		reps, err := db.UserReportsBy(tc.user, tc.n)
		must(t, err)
		if got := reportKeys(reps); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("UserReportsBy(%s, %d) = %q, want %q", tc.user, tc.n, got, tc.want)
		}
	}
	if reps, err := db.UserReportsBy("U1", 1); err != nil || len(reps[0].Reporters) != 2 || reps[0].Reporters[1].User != "U1" || !reps[0].Created.Equal(tA) {
		t.Fatalf("UserReportsBy gives whole reports: %+v, %v", reps, err)
	}
	for _, tc := range []struct {
		user  string
		since time.Time
		want  int
	}{
		{"U1", time.Time{}, 3},
		{"U1", t0, 3},
		{"U1", t0.Add(time.Second), 2},
		{"U1", tB, 2}, // at since counts
		{"U1", tB.Add(time.Second), 1},
		{"U1", tC, 1},
		{"U1", tC.Add(time.Second), 0},
		{"U3", t3, 1},
		{"U3", t3.Add(time.Second), 0},
		{"UC11", tConc, 2},
		{"U5", tA, 1},
		{"UNOBODY", time.Time{}, 0},
	} {
		if n, err := db.UserReportsSince(tc.user, tc.since); err != nil || n != tc.want {
			t.Fatalf("UserReportsSince(%s, %v) = %d, %v; want %d", tc.user, tc.since, n, err, tc.want)
		}
	}

	// 40 days on: a new report m5, and m3 updated (it stays, however old
	// its creation). Prune with 30 days removes m1, m2 and m4, with their
	// triage cards and their reporters' entries.
	c.Add(40 * 24 * time.Hour)
	const m5 = "1767856000.000001"
	_, _, err = db.AddUserReport("C2", m5, store.Reporter{User: "U1", Via: "shortcut"}, nil)
	must(t, err)
	_, err = db.UpdateUserReport("C2", m3, func(rep *store.UserReport) error { rep.Outcome = "not_a_threat"; return nil })
	must(t, err)
	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	must(t, err)
	if want := (store.PruneStats{UserReports: 3}); st != want {
		t.Fatalf("Prune = %+v, want %+v", st, want)
	}
	for _, k := range [][2]string{{ch, m1}, {ch, m2}, {"C2", m4}} {
		if _, err := db.UserReport(k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("pruned report %s/%s: %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	for _, ts := range []string{"1764400100.000001", "1764400200.000001"} {
		if _, err := db.UserReportByTriage("CSEC", ts); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("triage card %s of a pruned report: %v, want ErrNotFound", ts, err)
		}
	}
	if reps, err := db.UserReportsBy("U1", 10); err != nil || !reflect.DeepEqual(reportKeys(reps), []string{"C2/" + m5, "C2/" + m3}) {
		t.Fatalf("UserReportsBy(U1) after Prune: %q, %v", reportKeys(reps), err)
	}
	if n, err := db.UserReportsSince("U1", time.Time{}); err != nil || n != 2 {
		t.Fatalf("UserReportsSince(U1) after Prune: %d, %v; want 2 (m3, m5)", n, err)
	}
	if reps, err := db.UserReportsBy("UC07", 10); err != nil || len(reps) != 0 {
		t.Fatalf("UserReportsBy(UC07) after Prune: %q, %v", reportKeys(reps), err)
	}
	if got, err := db.UserReport("C2", m3); err != nil || got.Outcome != "not_a_threat" || len(got.Reporters) != 2 {
		t.Fatalf("m3 (updated within the window): %+v, %v", got, err)
	}
	if st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil || st.Total() != 0 {
		t.Fatalf("second Prune = %+v, %v", st, err)
	}
	// Reported again, the message has a new report.
	rep, added, err = db.AddUserReport(ch, m1, store.Reporter{User: "U2", Via: "reaction"}, nil)
	must(t, err)
	if !added || len(rep.Reporters) != 1 || !rep.Created.Equal(c.Now()) || rep.Outcome != "" || rep.TriageTS != "" {
		t.Fatalf("a pruned message reported again: %+v, added %v", rep, added)
	}
}

// pruneUserReports: Prune removes the user reports last updated before
// the cutoff, open or decided, however many reporters and batches, with
// their triage cards and reporters; a report created before the cutoff and
// updated since stays, as do reports created since.
func pruneUserReports(t *testing.T, db store.State, c *Clock) {
	start := c.Now()
	ts := func(i int) string { return slackTS(start, i) }
	for i := range 6 {
		for j := range i%3 + 1 {
			_, _, err := db.AddUserReport("C1", ts(i), store.Reporter{User: fmt.Sprintf("U%d", j), Via: "shortcut"}, nil)
			must(t, err)
			c.Add(time.Second) // no two reports of a user at one time
		}
		_, err := db.UpdateUserReport("C1", ts(i), func(rep *store.UserReport) error {
			rep.TriageChannel, rep.TriageTS = "CSEC", ts(100+i)
			if i%2 == 0 {
				rep.Outcome = "malicious"
			}
			return nil
		})
		must(t, err)
	}
	c.Add(40 * 24 * time.Hour)
	// Kept: ts(1), updated now; ts(4), a new reporter now; ts(10), new.
	_, err := db.UpdateUserReport("C1", ts(1), func(rep *store.UserReport) error { rep.Assignee = "UADMIN"; return nil })
	must(t, err)
	_, _, err = db.AddUserReport("C1", ts(4), store.Reporter{User: "U9", Via: "reaction"}, nil)
	must(t, err)
	_, _, err = db.AddUserReport("C1", ts(10), store.Reporter{User: "U0", Via: "reaction"}, nil)
	must(t, err)

	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	must(t, err)
	if want := (store.PruneStats{UserReports: 4}); st != want {
		t.Fatalf("Prune = %+v, want %+v", st, want)
	}
	for i := range 6 {
		_, err := db.UserReport("C1", ts(i))
		_, terr := db.UserReportByTriage("CSEC", ts(100+i))
		if i == 1 || i == 4 {
			if err != nil || terr != nil {
				t.Errorf("report %d (updated within the window): %v, by its triage card: %v", i, err, terr)
			}
			continue
		}
		if !errors.Is(err, store.ErrNotFound) || !errors.Is(terr, store.ErrNotFound) {
			t.Errorf("report %d: %v, by its triage card: %v; want both pruned", i, err, terr)
		}
	}
	// U0 reported 0..5 and 10; U1 1, 2, 4, 5; U2 2 and 5.
	for user, want := range map[string][]string{
		"U0": {"C1/" + ts(10), "C1/" + ts(4), "C1/" + ts(1)},
		"U1": {"C1/" + ts(4), "C1/" + ts(1)},
		"U2": {},
		"U9": {"C1/" + ts(4)},
	} {
		reps, err := db.UserReportsBy(user, 10)
		must(t, err)
		if got := reportKeys(reps); !reflect.DeepEqual(got, want) {
			t.Errorf("UserReportsBy(%s) after Prune = %q, want %q", user, got, want)
		}
		if n, err := db.UserReportsSince(user, time.Time{}); err != nil || n != len(want) {
			t.Errorf("UserReportsSince(%s) after Prune = %d, %v; want %d", user, n, err, len(want))
		}
	}
	if st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil || st.Total() != 0 {
		t.Errorf("second Prune = %+v, %v", st, err)
	}
}
