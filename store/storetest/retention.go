package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// pruneCases are the retention cases (State.Prune). Run runs them with
// the rest; RunPrune runs them alone, for a backend opened with small
// prune batches.
var pruneCases = []testCase{
	{"PruneRemovesWhatIsOlderThanTheWindowOnly", pruneWindow},
	{"PruneKeepsTargetsDueForRecheck", pruneKeepsDue},
}

// RunPrune runs the retention cases only, each in its own subtest on a
// store of its own from open: a backend runs them again with prune batches
// of a few records, so that every step crosses batch boundaries.
func RunPrune(t *testing.T, open Opener) { runCases(t, open, pruneCases) }

// slackTS is a Slack ts at t.
func slackTS(t time.Time, n int) string { return fmt.Sprintf("%d.%06d", t.Unix(), n) }

func mustPut(t *testing.T, db store.State, rec *store.CardRecord) {
	t.Helper()
	must(t, db.PutCard(rec))
}

func mustVerdict(t *testing.T, db store.State, v store.Verdict, ref *card.Ref, sched store.Schedule) {
	t.Helper()
	if _, _, err := db.RecordVerdict(v, ref, sched, v.Source == "recheck"); err != nil {
		t.Fatal(err)
	}
}

// pruneWindow: Prune removes exactly what is older than the window and
// nothing still in use, and a second run finds nothing.
//
// The counts are exact on every backend. PruneStats.Jobs is 0 on both:
// the file and PostgreSQL delete a job as it finishes (FinishJob), and an
// unfinished job is never pruned, so the pending job below stays.
func pruneWindow(t *testing.T, db store.State, c *Clock) {
	start := c.Now()
	sched := store.Schedule{time.Hour}
	// Day 0: old records.
	oldRef := card.Ref{Channel: "C1", SourceTS: slackTS(start, 1)}
	openRef := card.Ref{Channel: "C1", SourceTS: slackTS(start, 2)}    // never finished
	postingRef := card.Ref{Channel: "C2", SourceTS: slackTS(start, 3)} // post interrupted
	mustPut(t, db, &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: oldRef.SourceTS, CardTS: slackTS(start, 9), Final: true,
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://old.example/", TaskID: "t-old"}}}})
	mustPut(t, db, &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: openRef.SourceTS}})
	mustPut(t, db, &store.CardRecord{Card: card.Card{Channel: "C2", SourceTS: postingRef.SourceTS, Final: true}, PostStarted: true})
	mustVerdict(t, db, store.Verdict{Target: "https://old.example/", Kind: "url", TaskID: "t-old", Level: verdict.Clean, Source: "scan"}, &oldRef, nil)
	mustVerdict(t, db, store.Verdict{Target: "https://shown.example/", Kind: "url", TaskID: "t-shown-1", Level: verdict.Clean, Source: "scan"}, nil, nil)
	mustVerdict(t, db, store.Verdict{Target: "https://rechecked.example/", Kind: "url", TaskID: "t-re-1", Level: verdict.Clean, Source: "scan"}, nil, nil)
	must(t, db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://inflight.example/", TaskID: "t-inflight"}))
	must(t, db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://failed.example/", TaskID: "t-failed"}))
	must(t, db.DeleteAnalysis("reputation", "https://failed.example/")) // failed: its task stays indexed
	must(t, db.RecordReport(store.Report{Target: "https://old.example/", TaskID: "t-old", User: "U1", Option: "fp", Card: oldRef}))
	if _, err := db.SeenEvent("Ev-old"); err != nil {
		t.Fatal(err)
	}
	jobs := []*store.Job{{Kind: "message", EventID: "Ev-job", Payload: []byte(`{}`)}} // never finished
	if _, err := db.RecordJobs(jobs); err != nil {
		t.Fatal(err)
	}

	// Day 40: newer records.
	c.Add(40 * 24 * time.Hour)
	newRef := card.Ref{Channel: "C1", SourceTS: slackTS(c.Now(), 4)}
	mustPut(t, db, &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: newRef.SourceTS, CardTS: slackTS(c.Now(), 5), Final: true}})
	mustVerdict(t, db, store.Verdict{Target: "https://shown.example/", Kind: "url", TaskID: "t-shown-1", Level: verdict.Clean, Source: "scan", At: start}, &newRef, nil) // cached verdict on a new card
	mustVerdict(t, db, store.Verdict{Target: "https://rechecked.example/", Kind: "url", TaskID: "t-re-2", Level: verdict.Suspicious, Source: "recheck"}, nil, sched)
	mustVerdict(t, db, store.Verdict{Target: "https://new.example/", Kind: "url", TaskID: "t-new", Level: verdict.Clean, Source: "scan"}, &newRef, nil)
	must(t, db.RecordReport(store.Report{Target: "https://new.example/", TaskID: "t-new", User: "U1", Option: "fp", Card: newRef}))
	if _, err := db.SeenEvent("Ev-new"); err != nil {
		t.Fatal(err)
	}

	// Day 60, 30 days of retention: day 0 is out, day 40 is in.
	c.Add(20 * 24 * time.Hour)
	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Pruned: the old card; the day-0 verdicts of old, shown (its cached
	// verdict is dated day 0 too) and rechecked; old's report; the target
	// old (its card is gone; shown stays, a kept card shows it); the
	// day-0 event ids Ev-old and Ev-job (its job stays pending).
	want := store.PruneStats{Cards: 1, Verdicts: 4, Reports: 1, Targets: 1, Events: 2}
	if st != want {
		t.Errorf("Prune = %+v, want %+v", st, want)
	}
	if _, err := db.Card(oldRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old final card: %v, want pruned", err)
	}
	if _, err := db.CardByTS("C1", slackTS(start, 9)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("card-ts index of the pruned card: %v, want gone", err)
	}
	for _, ref := range []card.Ref{openRef, postingRef, newRef} {
		if _, err := db.Card(ref); err != nil {
			t.Errorf("card %v: %v, want kept", ref, err)
		}
	}
	if got, err := db.UnfinishedCards(); err != nil || len(got) != 2 {
		t.Errorf("unfinished cards after Prune: %d, %v; want 2", len(got), err)
	}
	if _, err := db.CardByTS("C1", slackTS(start.Add(40*24*time.Hour), 5)); err != nil {
		t.Errorf("card-ts index of a kept card: %v", err)
	}
	if _, err := db.Target("https://old.example/"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old target: %v, want pruned", err)
	}
	if _, err := db.TargetOfTask("t-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task of the pruned target: %v, want gone", err)
	}
	if got, err := db.CardsOfTask("t-old"); err != nil || len(got) != 0 {
		t.Errorf("cards of the pruned task = %d, %v", len(got), err)
	}
	if _, err := db.TargetOfTask("t-failed"); !errors.Is(err, store.ErrNotFound) {
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
	if _, err := db.TargetOfTask("t-re-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task of a pruned verdict: %v, want gone", err)
	}
	if r, _ := db.Reports("https://new.example/"); len(r) != 1 {
		t.Errorf("reports within the window: %d", len(r))
	}
	if r, _ := db.Reports("https://old.example/"); len(r) != 0 {
		t.Errorf("old reports: %d left", len(r))
	}
	if pending, err := db.PendingJobs(); err != nil || len(pending) != 1 || pending[0].ID != jobs[0].ID {
		t.Errorf("pending jobs after Prune = %+v, %v; want the unfinished one", pending, err)
	}
	if fresh, _ := db.SeenEvent("Ev-new"); fresh {
		t.Error("a recent event id was pruned")
	}

	// A second run finds nothing more.
	if st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil || st.Total() != 0 {
		t.Errorf("second Prune = %+v, %v", st, err)
	}
}

// pruneKeepsDue: a target whose recheck is planned stays, however old its
// last check.
func pruneKeepsDue(t *testing.T, db store.State, c *Clock) {
	sched := store.Schedule{time.Hour, 100 * 24 * time.Hour}
	mustVerdict(t, db, store.Verdict{Target: "https://due.example/", Kind: "url", TaskID: "t1", Level: verdict.Clean, Source: "scan"}, nil, sched)
	c.Add(2 * time.Hour)
	mustVerdict(t, db, store.Verdict{Target: "https://due.example/", Kind: "url", TaskID: "t2", Level: verdict.Clean, Source: "recheck"}, nil, sched)
	c.Add(50 * 24 * time.Hour)
	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.PruneStats{Verdicts: 2}); st != want {
		t.Errorf("Prune = %+v, want %+v", st, want)
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
	if _, err := db.TargetOfTask("t1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task of a pruned verdict: %v, want gone", err)
	}
}
