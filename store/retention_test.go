package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// smallBatches makes Prune work in batches of n keys for one test, so the
// tests cross batch boundaries.
func smallBatches(t *testing.T, n int) {
	old := pruneBatch
	pruneBatch = n
	t.Cleanup(func() { pruneBatch = old })
}

// slackTS is a Slack ts at t.
func slackTS(t time.Time, n int) string { return fmt.Sprintf("%d.%06d", t.Unix(), n) }

func TestPruneRemovesWhatIsOlderThanTheWindowOnly(t *testing.T) {
	smallBatches(t, 3)
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		start := c.now()
		sched := Schedule{time.Hour}
		// Day 0: old records.
		oldRef := CardRef{Channel: "C1", SourceTS: slackTS(start, 1)}
		openRef := CardRef{Channel: "C1", SourceTS: slackTS(start, 2)}    // never finished
		postingRef := CardRef{Channel: "C2", SourceTS: slackTS(start, 3)} // post interrupted
		mustPut(t, db, &CardRecord{Card: card.Card{Channel: "C1", SourceTS: oldRef.SourceTS, CardTS: slackTS(start, 9), Final: true,
			Lines: []card.Line{{Kind: card.KindURL, Target: "https://old.example/", TaskID: "t-old"}}}})
		mustPut(t, db, &CardRecord{Card: card.Card{Channel: "C1", SourceTS: openRef.SourceTS}})
		mustPut(t, db, &CardRecord{Card: card.Card{Channel: "C2", SourceTS: postingRef.SourceTS, Final: true}, PostStarted: true})
		mustVerdict(t, db, Verdict{Target: "https://old.example/", Kind: "url", TaskID: "t-old", Level: verdict.Clean, Source: "scan"}, &oldRef, nil)
		mustVerdict(t, db, Verdict{Target: "https://shown.example/", Kind: "url", TaskID: "t-shown-1", Level: verdict.Clean, Source: "scan"}, nil, nil)
		mustVerdict(t, db, Verdict{Target: "https://rechecked.example/", Kind: "url", TaskID: "t-re-1", Level: verdict.Clean, Source: "scan"}, nil, nil)
		if err := db.PutAnalysis(Analysis{Service: "reputation", Target: "https://inflight.example/", TaskID: "t-inflight"}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutAnalysis(Analysis{Service: "reputation", Target: "https://failed.example/", TaskID: "t-failed"}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteAnalysis("reputation", "https://failed.example/"); err != nil { // failed: its task stays indexed
			t.Fatal(err)
		}
		if err := db.RecordReport(Report{Target: "https://old.example/", TaskID: "t-old", User: "U1", Option: "fp", Card: oldRef}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SeenEvent("Ev-old"); err != nil {
			t.Fatal(err)
		}

		// Day 40: newer records.
		c.add(40 * 24 * time.Hour)
		newRef := CardRef{Channel: "C1", SourceTS: slackTS(c.now(), 4)}
		mustPut(t, db, &CardRecord{Card: card.Card{Channel: "C1", SourceTS: newRef.SourceTS, CardTS: slackTS(c.now(), 5), Final: true}})
		mustVerdict(t, db, Verdict{Target: "https://shown.example/", Kind: "url", TaskID: "t-shown-1", Level: verdict.Clean, Source: "scan", At: start}, &newRef, nil) // cached verdict on a new card
		mustVerdict(t, db, Verdict{Target: "https://rechecked.example/", Kind: "url", TaskID: "t-re-2", Level: verdict.Suspicious, Source: "recheck"}, nil, sched)
		mustVerdict(t, db, Verdict{Target: "https://new.example/", Kind: "url", TaskID: "t-new", Level: verdict.Clean, Source: "scan"}, &newRef, nil)
		if err := db.RecordReport(Report{Target: "https://new.example/", TaskID: "t-new", User: "U1", Option: "fp", Card: newRef}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SeenEvent("Ev-new"); err != nil {
			t.Fatal(err)
		}

		// Day 60, 30 days of retention: day 0 is out, day 40 is in.
		c.add(20 * 24 * time.Hour)
		st, err := db.Prune(c.now().Add(-30 * 24 * time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		// Pruned: the old card; the day-0 verdicts of old, shown (its cached
		// verdict is dated day 0 too) and rechecked; old's report; the target
		// old (its card is gone; shown stays, a kept card shows it).
		want := PruneStats{Cards: 1, Verdicts: 4, Reports: 1, Targets: 1, Events: 1}
		if st != want {
			t.Errorf("Prune = %+v, want %+v", st, want)
		}
		if _, err := db.Card(oldRef); !errors.Is(err, ErrNotFound) {
			t.Errorf("old final card: %v, want pruned", err)
		}
		if _, err := db.CardByTS("C1", slackTS(start, 9)); !errors.Is(err, ErrNotFound) {
			t.Errorf("card-ts index of the pruned card: %v, want gone", err)
		}
		for _, ref := range []CardRef{openRef, postingRef, newRef} {
			if _, err := db.Card(ref); err != nil {
				t.Errorf("card %v: %v, want kept", ref, err)
			}
		}
		if _, err := db.CardByTS("C1", slackTS(start.Add(40*24*time.Hour), 5)); err != nil {
			t.Errorf("card-ts index of a kept card: %v", err)
		}
		if _, err := db.Target("https://old.example/"); !errors.Is(err, ErrNotFound) {
			t.Errorf("old target: %v, want pruned", err)
		}
		if _, err := db.TargetOfTask("t-old"); !errors.Is(err, ErrNotFound) {
			t.Errorf("task of the pruned target: %v, want gone", err)
		}
		if _, err := db.TargetOfTask("t-failed"); !errors.Is(err, ErrNotFound) {
			t.Errorf("task of a failed analysis: %v, want gone", err)
		}
		if got, err := db.TargetOfTask("t-inflight"); err != nil || got != "https://inflight.example/" {
			t.Errorf("task of an analysis in flight = %q, %v", got, err)
		}
		if _, err := db.Analysis("reputation", "https://inflight.example/"); err != nil {
			t.Errorf("analysis in flight: %v", err)
		}
		if h, _ := db.History("https://old.example/"); len(h) != 0 {
			t.Errorf("old history: %d verdicts left", len(h))
		}
		// shown: its only verdict is old, but a kept card shows it, and its
		// task is its current one, which the card names.
		if tg, err := db.Target("https://shown.example/"); err != nil || len(tg.Cards) != 1 || tg.Cards[0] != newRef {
			t.Errorf("target on a kept card = %+v, %v", tg, err)
		}
		if got, err := db.TargetOfTask("t-shown-1"); err != nil || got != "https://shown.example/" {
			t.Errorf("current task of a kept target = %q, %v", got, err)
		}
		// rechecked: the day-0 verdict is gone, the day-40 one stays, and
		// so does the task index of the recent task only.
		h, err := db.History("https://rechecked.example/")
		if err != nil || len(h) != 1 || h[0].TaskID != "t-re-2" {
			t.Errorf("history within the window = %+v, %v", h, err)
		}
		if _, err := db.TargetOfTask("t-re-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("task of a pruned verdict: %v, want gone", err)
		}
		if r, _ := db.Reports("https://new.example/"); len(r) != 1 {
			t.Errorf("reports within the window: %d", len(r))
		}
		if r, _ := db.Reports("https://old.example/"); len(r) != 0 {
			t.Errorf("old reports: %d left", len(r))
		}
		if fresh, _ := db.SeenEvent("Ev-new"); fresh {
			t.Error("a recent event id was pruned")
		}

		// A second run finds nothing more.
		if st, err := db.Prune(c.now().Add(-30 * 24 * time.Hour)); err != nil || st.Total() != 0 {
			t.Errorf("second Prune = %+v, %v", st, err)
		}
	})
}

// A target whose recheck is planned stays, however old its last check.
func TestPruneKeepsTargetsDueForRecheck(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		sched := Schedule{time.Hour, 100 * 24 * time.Hour}
		mustVerdict(t, db, Verdict{Target: "https://due.example/", Kind: "url", TaskID: "t1", Level: verdict.Clean, Source: "scan"}, nil, sched)
		c.add(2 * time.Hour)
		mustVerdict(t, db, Verdict{Target: "https://due.example/", Kind: "url", TaskID: "t2", Level: verdict.Clean, Source: "recheck"}, nil, sched)
		c.add(50 * 24 * time.Hour)
		st, err := db.Prune(c.now().Add(-30 * 24 * time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if st.Targets != 0 || st.Verdicts != 2 {
			t.Errorf("Prune = %+v, want 2 verdicts and no target", st)
		}
		tg, err := db.Target("https://due.example/")
		if err != nil || tg.NextCheck.IsZero() {
			t.Fatalf("target due for recheck = %+v, %v", tg, err)
		}
		due, err := db.Due(tg.NextCheck, 10)
		if err != nil || len(due) != 1 {
			t.Errorf("Due at its next check = %d, %v", len(due), err)
		}
		if got, err := db.TargetOfTask("t2"); err != nil || got != "https://due.example/" {
			t.Errorf("current task = %q, %v", got, err)
		}
	})
}

func mustPut(t *testing.T, db *DB, rec *CardRecord) {
	t.Helper()
	if err := db.PutCard(rec); err != nil {
		t.Fatal(err)
	}
}

func mustVerdict(t *testing.T, db *DB, v Verdict, ref *CardRef, sched Schedule) {
	t.Helper()
	if _, _, err := db.RecordVerdict(v, ref, sched, v.Source == "recheck"); err != nil {
		t.Fatal(err)
	}
}
