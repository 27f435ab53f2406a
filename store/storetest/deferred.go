package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func init() {
	cases = append(cases, testCase{"DeferredChecksAreDueApartFromTheSchedule", deferredChecks})
	pruneCases = append(pruneCases, testCase{"PruneKeepsTargetsWithADeferredCheck", pruneKeepsDeferred})
}

func dueDeferred(t *testing.T, db store.State, now time.Time, limit int) []string {
	t.Helper()
	tgs, err := db.DueDeferred(now, limit)
	must(t, err)
	out := []string{}
	for _, tg := range tgs {
		out = append(out, tg.Target)
	}
	return out
}

func deferredAt(t *testing.T, db store.State, target string) time.Time {
	t.Helper()
	tg, err := db.Target(target)
	must(t, err)
	return tg.Deferred
}

// deferredChecks: a URL whose check was deferred (its poster had used
// their allowance) is recorded, if new, as a URL that could not be
// checked, with the card linked; its deferred check is due at once, in a
// list of its own (the schedule's Due does not list it), the oldest first;
// a second deferral keeps the first due time; a claim holds it off the
// other runs; a deferral during a claim makes it due again, so that ending
// the claim leaves it pending; ending a claim that nothing deferred again
// clears it, or gives it back; the schedule's writes leave it alone.
func deferredChecks(t *testing.T, db store.State, c *Clock) {
	const u, v = "https://deferred.test/a", "https://deferred.test/b"
	c1, c2, c3 := card.Ref{Channel: "C1", SourceTS: "1.1"}, card.Ref{Channel: "C2", SourceTS: "2.1"}, card.Ref{Channel: "C1", SourceTS: "3.1"}
	sched := store.Schedule{time.Hour, 6 * time.Hour}
	t0 := c.Now()
	must(t, db.DeferCheck(u, c1, t0))
	tg, err := db.Target(u)
	must(t, err)
	if tg.Kind != "url" || tg.Level != verdict.Unknown || !tg.FirstSeen.Equal(t0) || !tg.Deferred.Equal(t0) || !tg.NextCheck.IsZero() ||
		tg.TaskID != "" || len(tg.Cards) != 1 || tg.Cards[0] != c1 {
		t.Fatalf("a new deferred URL: %+v", tg)
	}
	if h, err := db.History(u); err != nil || len(h) != 0 {
		t.Fatalf("a deferral wrote history: %+v %v", h, err)
	}
	if got := dueDeferred(t, db, t0.Add(-time.Nanosecond), 10); len(got) != 0 {
		t.Fatalf("due before its time: %v", got)
	}
	if due, _ := db.Due(t0.Add(100*time.Hour), 10); len(due) != 0 {
		t.Fatalf("a deferred check is in the schedule's list: %+v", due)
	}
	// A second card: linked; the first due time is kept.
	c.Add(time.Minute)
	must(t, db.DeferCheck(u, c2, c.Now()))
	if tg, _ := db.Target(u); !tg.Deferred.Equal(t0) || len(tg.Cards) != 2 || tg.Cards[1] != c2 {
		t.Fatalf("after a second deferral: %+v", tg)
	}
	// A URL with a verdict and a schedule keeps both.
	mustVerdict(t, db, store.Verdict{Target: v, Kind: "url", TaskID: "t1", Level: verdict.Clean, Source: "scan"}, nil, sched)
	c.Add(time.Minute)
	tv := c.Now()
	must(t, db.DeferCheck(v, c3, tv))
	if tg, _ := db.Target(v); tg.Level != verdict.Clean || tg.TaskID != "t1" || !tg.NextCheck.Equal(tv.Add(-time.Minute+time.Hour)) ||
		!tg.Deferred.Equal(tv) || len(tg.Cards) != 1 {
		t.Fatalf("a deferral changed a recorded URL: %+v", tg)
	}
	if got := dueDeferred(t, db, tv, 10); len(got) != 2 || got[0] != u || got[1] != v {
		t.Fatalf("due %v, want the oldest first", got)
	}
	if got := dueDeferred(t, db, tv, 1); len(got) != 1 || got[0] != u {
		t.Fatalf("limit 1: %v", got)
	}
	tgs, _ := db.DueDeferred(tv, 1)
	if len(tgs[0].Cards) != 2 || !tgs[0].Deferred.Equal(t0) {
		t.Fatalf("a due deferred target as listed: %+v", tgs[0])
	}

	// A claim holds it off; a deferral meanwhile makes it due again.
	until, ok, err := db.ClaimDeferred(u, c.Now(), 10*time.Minute, store.Fence{})
	if err != nil || !ok || !until.Equal(c.Now().Add(10*time.Minute)) {
		t.Fatalf("claim: %v %v %v", until, ok, err)
	}
	if _, ok, _ := db.ClaimDeferred(u, c.Now(), 10*time.Minute, store.Fence{}); ok {
		t.Fatal("claimed twice")
	}
	if got := dueDeferred(t, db, c.Now(), 10); len(got) != 1 || got[0] != v {
		t.Fatalf("due while u is claimed: %v", got)
	}
	c.Add(time.Second)
	again := c.Now()
	must(t, db.DeferCheck(u, c3, again))
	must(t, db.EndDeferred(u, until, time.Time{}))
	if d := deferredAt(t, db, u); !d.Equal(again) {
		t.Fatalf("a deferral during the claim was lost when the claim ended: due %v, want %v", d, again)
	}
	// Claimed again and ended: no longer pending.
	until, ok, _ = db.ClaimDeferred(u, c.Now(), 10*time.Minute, store.Fence{})
	if !ok {
		t.Fatal("not claimed again")
	}
	must(t, db.EndDeferred(u, until, time.Time{}))
	if tg, _ := db.Target(u); !tg.Deferred.IsZero() || len(tg.Cards) != 3 {
		t.Fatalf("after its deferred check: %+v", tg)
	}
	if got := dueDeferred(t, db, c.Now().Add(time.Hour), 10); len(got) != 1 || got[0] != v {
		t.Fatalf("due after u's check: %v", got)
	}
	// A stale end changes nothing.
	must(t, db.EndDeferred(u, until, c.Now()))
	if d := deferredAt(t, db, u); !d.IsZero() {
		t.Fatalf("a stale end deferred u again: %v", d)
	}

	// Given back: due at its time again. A claim lapses after its hold.
	until, ok, _ = db.ClaimDeferred(v, c.Now(), time.Minute, store.Fence{})
	if !ok {
		t.Fatal("v not claimed")
	}
	must(t, db.EndDeferred(v, until, tv))
	if d := deferredAt(t, db, v); !d.Equal(tv) {
		t.Fatalf("given back: due %v, want %v", d, tv)
	}
	if _, ok, _ = db.ClaimDeferred(v, c.Now(), time.Minute, store.Fence{}); !ok {
		t.Fatal("v not claimed after it was given back")
	}
	c.Add(time.Minute + time.Second)
	if got := dueDeferred(t, db, c.Now(), 10); len(got) != 1 || got[0] != v {
		t.Fatalf("after the hold: %v", got)
	}
	// The schedule's writes (a verdict, a failed recheck, a recheck claim)
	// leave the deferral alone, and the deferral the schedule.
	pending := deferredAt(t, db, v)
	mustVerdict(t, db, store.Verdict{Target: v, Kind: "url", TaskID: "t2", Level: verdict.Malicious, Source: "scan"}, nil, sched)
	must(t, db.RecheckFailed(v, sched))
	c.Set(t0.Add(7 * time.Hour))
	if _, ok, err := db.ClaimRecheck(v, c.Now(), time.Minute, store.Fence{}); err != nil || !ok {
		t.Fatalf("recheck claim: %v %v", ok, err)
	}
	if tg, _ := db.Target(v); !tg.Deferred.Equal(pending) || tg.Level != verdict.Malicious {
		t.Fatalf("the schedule moved the deferral: %+v, want it due at %v", tg, pending)
	}

	// Unknown targets; a fenced claim under a live term.
	if _, ok, err := db.ClaimDeferred("https://unknown.test/", c.Now(), time.Minute, store.Fence{}); err != nil || ok {
		t.Fatalf("unknown target claimed: %v %v", ok, err)
	}
	must(t, db.EndDeferred("https://unknown.test/", c.Now(), time.Time{}))
	lease, ok, err := db.Lead(context.Background(), "recheck")
	if err != nil || !ok {
		t.Fatalf("Lead: %v %v", ok, err)
	}
	defer lease.Release()
	if _, ok, err := db.ClaimDeferred(v, c.Now(), time.Minute, lease.Fence()); err != nil || !ok {
		t.Fatalf("fenced claim: %v %v", ok, err)
	}
}

// pruneKeepsDeferred: a target whose deferred check is pending is kept
// whatever its age, though nothing else keeps it (its card is gone); once
// its check is done, it goes like any other.
func pruneKeepsDeferred(t *testing.T, db store.State, c *Clock) {
	const u = "https://deferred-prune.test/"
	must(t, db.DeferCheck(u, card.Ref{Channel: "C1", SourceTS: "1.1"}, c.Now()))
	c.Add(50 * 24 * time.Hour)
	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	must(t, err)
	if st.Targets != 0 {
		t.Fatalf("Prune = %+v: a target with a deferred check pending was removed", st)
	}
	if got := dueDeferred(t, db, c.Now(), 10); len(got) != 1 || got[0] != u {
		t.Fatalf("due after Prune: %v", got)
	}
	until, ok, err := db.ClaimDeferred(u, c.Now(), time.Minute, store.Fence{})
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	must(t, db.EndDeferred(u, until, time.Time{}))
	if st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil || st.Targets != 1 {
		t.Fatalf("Prune after the check = %+v, %v; want the target gone", st, err)
	}
}
