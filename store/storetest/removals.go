package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases,
		testCase{"RemovalIsQueuedWithItsCardAndClaimedOnce", removalQueuedWithCard},
		testCase{"HeldRemovalsWaitForTheFirstApproval", heldRemovals},
		testCase{"ConcurrentClaimsTakeEachRemovalOnce", concurrentRemovalClaims},
		testCase{"UnapprovedBatchesArePrunedWithTheRetention", pruneRemovalBatches})
}

func putCardAt(t *testing.T, db store.State, channel, ts string) card.Ref {
	t.Helper()
	ref := card.Ref{Channel: channel, SourceTS: ts}
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: channel, SourceTS: ts, ThreadTS: ts, Final: true}, Gen: 1}))
	return ref
}

func removalQueuedWithCard(t *testing.T, db store.State, c *Clock) {
	ref := putCardAt(t, db, "C1", "1.000001")
	now := c.Now()
	// fn's error writes neither the card nor the removal.
	_, err := db.UpdateCardQueue(ref, func(rec *store.CardRecord) (*store.Removal, error) {
		rec.Card.Notes = append(rec.Card.Notes, "not kept")
		return &store.Removal{Target: "https://x.test/", Level: "malicious", Queued: now, NextAt: now}, errors.New("no")
	})
	if err == nil || err.Error() != "no" {
		t.Fatalf("fn's error: %v", err)
	}
	if _, ok, err := db.ClaimRemoval(now); ok || err != nil {
		t.Fatalf("a removal was queued by a failed write (%v)", err)
	}
	rec, err := db.UpdateCardQueue(ref, func(rec *store.CardRecord) (*store.Removal, error) {
		rec.Card.Notes = append(rec.Card.Notes, "flipped")
		return &store.Removal{Target: "https://x.test/", Level: "malicious", Queued: now, NextAt: now}, nil
	})
	must(t, err)
	if len(rec.Card.Notes) != 1 || rec.Card.Notes[0] != "flipped" {
		t.Fatalf("card %+v", rec.Card)
	}
	// A second decision for the card leaves the first as it is.
	_, err = db.UpdateCardQueue(ref, func(rec *store.CardRecord) (*store.Removal, error) {
		return &store.Removal{Target: "https://other.test/", Level: "suspicious", Queued: now, NextAt: now}, nil
	})
	must(t, err)
	if q, h, err := db.RemovalCounts(); q != 1 || h != 0 || err != nil {
		t.Fatalf("counts %d %d %v", q, h, err)
	}
	r, ok, err := db.ClaimRemoval(now)
	must(t, err)
	if !ok || r.Card != ref || r.Target != "https://x.test/" || r.Level != "malicious" || r.Attempts != 0 {
		t.Fatalf("claimed %+v %v", r, ok)
	}
	if _, ok, _ := db.ClaimRemoval(now); ok {
		t.Fatal("a claimed removal was claimed again")
	}
	// Put back for a minute later: not due before.
	must(t, db.RetryRemoval(ref, now.Add(time.Second), false)) // not its turn: no attempt counted
	r, ok, err = db.ClaimRemoval(now.Add(2 * time.Second))
	must(t, err)
	if !ok || r.Attempts != 0 {
		t.Fatalf("after a put back: %+v %v", r, ok)
	}
	must(t, db.RetryRemoval(ref, now.Add(time.Minute), true))
	if _, ok, _ := db.ClaimRemoval(now.Add(30 * time.Second)); ok {
		t.Fatal("claimed before it was due again")
	}
	r, ok, err = db.ClaimRemoval(now.Add(2 * time.Minute))
	must(t, err)
	if !ok || r.Attempts != 1 || r.Card != ref {
		t.Fatalf("claimed again %+v %v", r, ok)
	}
	must(t, db.FinishRemoval(ref))
	if _, ok, _ := db.ClaimRemoval(now.Add(time.Hour)); ok {
		t.Fatal("a finished removal was claimed")
	}
	if err := db.RetryRemoval(ref, now, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retry of a finished removal: %v", err)
	}
	// QueueRemovals queues without a card write, once per card.
	ask := store.Removal{Card: store.AskRef("b1"), Kind: store.RemovalAsk, Batch: "b1", Queued: now, NextAt: now}
	must(t, db.QueueRemovals([]store.Removal{ask, ask}))
	r, ok, err = db.ClaimRemoval(now)
	must(t, err)
	if !ok || r.Kind != store.RemovalAsk || r.Batch != "b1" || r.Card != store.AskRef("b1") {
		t.Fatalf("ask %+v %v", r, ok)
	}
	if q, h, _ := db.RemovalCounts(); q != 0 || h != 0 {
		t.Fatalf("an ask counted as a removal: %d %d", q, h)
	}
}

func heldRemovals(t *testing.T, db store.State, c *Clock) {
	now := c.Now()
	b := store.RemovalBatch{ID: "batch-1", Target: "https://x.test/", Level: "malicious", Count: 3,
		Channels: map[string]int{"C1": 2, "C2": 1}, Created: now}
	must(t, db.PutRemovalBatch(b))
	refs := map[card.Ref]bool{}
	for i, ch := range []string{"C1", "C1", "C2"} {
		ref := putCardAt(t, db, ch, fmt.Sprintf("1.00000%d", i))
		refs[ref] = true
		_, err := db.UpdateCardQueue(ref, func(*store.CardRecord) (*store.Removal, error) {
			return &store.Removal{Target: b.Target, Level: b.Level, Batch: b.ID, Held: true, Queued: now, NextAt: now}, nil
		})
		must(t, err)
	}
	if _, ok, _ := db.ClaimRemoval(now.Add(time.Hour)); ok {
		t.Fatal("a held removal was claimed")
	}
	if q, h, err := db.RemovalCounts(); q != 0 || h != 3 || err != nil {
		t.Fatalf("counts %d %d %v", q, h, err)
	}
	must(t, db.SetBatchAlert(b.ID, "C0ALERTS", "9.000001"))
	if got, err := db.RemovalBatch(b.ID); err != nil || got.AlertTS != "9.000001" || got.Count != 3 || got.Channels["C1"] != 2 {
		t.Fatalf("batch %+v %v", got, err)
	}
	if _, err := db.RemovalBatch("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown batch: %v", err)
	}
	if _, _, _, err := db.ApproveBatch("nope", "U1", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("approve an unknown batch: %v", err)
	}
	at := now.Add(time.Minute)
	got, n, first, err := db.ApproveBatch(b.ID, "U0ADMIN", at)
	must(t, err)
	if n != 3 || !first || got.ApprovedBy != "U0ADMIN" || !got.ApprovedAt.Equal(at) {
		t.Fatalf("approve: %d %+v", n, got)
	}
	got, n, first, err = db.ApproveBatch(b.ID, "U0OTHER", at.Add(time.Minute))
	must(t, err)
	if n != 0 || first || got.ApprovedBy != "U0ADMIN" {
		t.Fatalf("second approval: %d %+v", n, got)
	}
	if q, h, _ := db.RemovalCounts(); q != 3 || h != 0 {
		t.Fatalf("counts after the approval %d %d", q, h)
	}
	seen := map[card.Ref]bool{}
	for {
		r, ok, err := db.ClaimRemoval(at)
		must(t, err)
		if !ok {
			break
		}
		if r.Held || r.Batch != b.ID || seen[r.Card] || !refs[r.Card] {
			t.Fatalf("claimed %+v", r)
		}
		seen[r.Card] = true
	}
	if len(seen) != 3 {
		t.Fatalf("claimed %d of 3 after the approval", len(seen))
	}
	// A card of the batch written after the approval (the request was
	// answered while the flip was still being written) is not held.
	late := putCardAt(t, db, "C3", "3.000001")
	_, err = db.UpdateCardQueue(late, func(*store.CardRecord) (*store.Removal, error) {
		return &store.Removal{Target: b.Target, Level: b.Level, Batch: b.ID, Held: true, Queued: at, NextAt: at}, nil
	})
	must(t, err)
	if r, ok, err := db.ClaimRemoval(at); err != nil || !ok || r.Card != late || r.Held {
		t.Fatalf("a removal queued after its batch's approval: %+v %v %v", r, ok, err)
	}
}

func concurrentRemovalClaims(t *testing.T, db store.State, c *Clock) {
	now := c.Now()
	var rs []store.Removal
	for i := range 30 {
		rs = append(rs, store.Removal{Card: card.Ref{Channel: "C1", SourceTS: fmt.Sprintf("1.%06d", i)},
			Target: "https://x.test/", Level: "malicious", Queued: now, NextAt: now})
	}
	must(t, db.QueueRemovals(rs))
	var mu sync.Mutex
	got := map[card.Ref]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				r, ok, err := db.ClaimRemoval(now)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				got[r.Card]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != len(rs) {
		t.Fatalf("%d removals claimed, want %d", len(got), len(rs))
	}
	for ref, n := range got {
		if n != 1 {
			t.Errorf("%v claimed %d times", ref, n)
		}
	}
}

func pruneRemovalBatches(t *testing.T, db store.State, c *Clock) {
	old := c.Now().Add(-40 * 24 * time.Hour)
	must(t, db.PutRemovalBatch(store.RemovalBatch{ID: "old", Created: old, Count: 2}))
	must(t, db.PutRemovalBatch(store.RemovalBatch{ID: "new", Created: c.Now(), Count: 1}))
	must(t, db.QueueRemovals([]store.Removal{
		{Card: card.Ref{Channel: "C1", SourceTS: "1.1"}, Batch: "old", Held: true, Queued: old, NextAt: old},
		{Card: card.Ref{Channel: "C1", SourceTS: "1.2"}, Batch: "old", Held: true, Queued: old, NextAt: old},
		{Card: store.AskRef("old"), Kind: store.RemovalAsk, Batch: "old", Queued: old, NextAt: c.Now().Add(time.Hour)},
		{Card: card.Ref{Channel: "C1", SourceTS: "1.3"}, Batch: "new", Held: true, Queued: c.Now(), NextAt: c.Now()},
		{Card: card.Ref{Channel: "C1", SourceTS: "1.4"}, Queued: old, NextAt: c.Now().Add(time.Hour)},
	}))
	_, err := db.PruneQuarantined(c.Now().Add(-30 * 24 * time.Hour))
	must(t, err)
	if _, err := db.RemovalBatch("old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old batch was kept: %v", err)
	}
	if _, err := db.RemovalBatch("new"); err != nil {
		t.Fatalf("the new batch was pruned: %v", err)
	}
	q, h, err := db.RemovalCounts()
	must(t, err)
	if q != 1 || h != 1 {
		t.Fatalf("after pruning: %d queued, %d held; want the unbatched one and the new batch's", q, h)
	}
	if r, ok, _ := db.ClaimRemoval(c.Now().Add(2 * time.Hour)); !ok || r.Kind == store.RemovalAsk {
		t.Fatalf("claimed %+v %v: the old batch's ask should be gone", r, ok)
	}
}
