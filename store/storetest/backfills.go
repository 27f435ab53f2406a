package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

func init() {
	cases = append(cases, testCase{"BackfillsResumeAndAreClaimedOnce", backfills})
}

// utcBackfill is b with its times in UTC (no monotonic reading), to
// compare backfills with reflect.DeepEqual.
func utcBackfill(b store.Backfill) store.Backfill {
	b.Since, b.Until, b.OwnedUntil, b.Created, b.Updated = b.Since.UTC(), b.Until.UTC(), b.OwnedUntil.UTC(), b.Created.UTC(), b.Updated.UTC()
	return b
}

// checkBackfill fails t unless got is want, and the backfill stored for
// want.Channel is too.
func checkBackfill(t *testing.T, db store.State, what string, got, want store.Backfill) {
	t.Helper()
	if !reflect.DeepEqual(utcBackfill(got), utcBackfill(want)) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	stored, err := db.Backfill(want.Channel)
	if err != nil {
		t.Fatalf("%s: stored: %v", what, err)
	}
	if !reflect.DeepEqual(utcBackfill(stored), utcBackfill(want)) {
		t.Fatalf("%s: stored:\n got %+v\nwant %+v", what, stored, want)
	}
}

// runningChannels returns the channels of RunningBackfills, in order.
func runningChannels(t *testing.T, db store.State) []string {
	t.Helper()
	bs, err := db.RunningBackfills()
	must(t, err)
	out := []string{}
	for _, b := range bs {
		if b.State != store.BackfillRunning {
			t.Fatalf("RunningBackfills lists %s in state %q", b.Channel, b.State)
		}
		out = append(out, b.Channel)
	}
	return out
}

// backfills: a backfill is started; a second start while it runs is
// refused and returns the running one; its cursor and counts are updated
// and read back; A claims it, B is refused until A's claim expires, then
// B gets it (and A is refused in turn); RunningBackfills lists only the
// running ones, by channel; a stopped one is replaced by a new start;
// of 10 concurrent claimants exactly one wins, and of 10 concurrent
// starters exactly one, of a new channel and of a stopped backfill; Prune removes the old finished ones and keeps the
// running ones and the recent finished ones.
func backfills(t *testing.T, db store.State, c *Clock) {
	const ch = "C1"
	start := c.Now()
	window := 30 * 24 * time.Hour

	// Nothing yet.
	if _, err := db.Backfill(ch); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Backfill before any: %v, want ErrNotFound", err)
	}
	called := false
	if _, err := db.UpdateBackfill(ch, func(*store.Backfill) error { called = true; return nil }); !errors.Is(err, store.ErrNotFound) || called {
		t.Fatalf("UpdateBackfill of none: %v (fn called %v), want ErrNotFound", err, called)
	}
	if _, ok, err := db.ClaimBackfill(ch, "A", start, start.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) || ok {
		t.Fatalf("ClaimBackfill of none: %v, %v; want ErrNotFound", ok, err)
	}
	if got := runningChannels(t, db); len(got) != 0 {
		t.Fatalf("RunningBackfills before any: %q", got)
	}
	if _, ok, err := db.StartBackfill(store.Backfill{Since: start}); !errors.Is(err, store.ErrNoChannel) || ok {
		t.Fatalf("StartBackfill without a channel: %v, %v; want ErrNoChannel", ok, err)
	}

	// Started: state running whatever was given, Created and Updated the
	// store's clock.
	b, ok, err := db.StartBackfill(store.Backfill{Channel: ch, Since: start.Add(-window), Until: start, StartedBy: "UADMIN",
		State: "done", Created: time.Unix(1, 0), Updated: time.Unix(2, 0)})
	must(t, err)
	want := store.Backfill{Channel: ch, Since: start.Add(-window), Until: start, StartedBy: "UADMIN", State: store.BackfillRunning,
		Created: start, Updated: start}
	if !ok {
		t.Fatalf("first start refused: %+v", b)
	}
	checkBackfill(t, db, "started", b, want)

	// Started again while it runs: refused, the running one returned,
	// nothing changed.
	c.Add(time.Minute)
	b, ok, err = db.StartBackfill(store.Backfill{Channel: ch, Since: c.Now().Add(-time.Hour), Until: c.Now(), StartedBy: "UOTHER"})
	must(t, err)
	if ok {
		t.Fatalf("second start while running accepted: %+v", b)
	}
	checkBackfill(t, db, "second start while running", b, want)

	// Progress: the cursor, a thread and the counts; Channel and Created
	// are kept, Updated is the store's clock; fn's error aborts.
	c.Add(time.Minute)
	b, err = db.UpdateBackfill(ch, func(b *store.Backfill) error {
		if b.Cursor != "" || b.Pages != 0 {
			return fmt.Errorf("fn given %+v", *b)
		}
		b.Cursor, b.Thread, b.ThreadCursor = "dXNlcjpVMEc5V0ZYTlo=", "1764400000.000100", "dGhyZWFk"
		b.Pages, b.Messages, b.Links, b.Files, b.Found = 2, 380, 41, 3, 2
		b.ProgressTS = "1764500000.000900"
		b.Channel, b.Created, b.Updated = "C-other", time.Unix(1, 0), time.Unix(2, 0)
		return nil
	})
	must(t, err)
	want.Cursor, want.Thread, want.ThreadCursor = "dXNlcjpVMEc5V0ZYTlo=", "1764400000.000100", "dGhyZWFk"
	want.Pages, want.Messages, want.Links, want.Files, want.Found = 2, 380, 41, 3, 2
	want.ProgressTS, want.Updated = "1764500000.000900", c.Now()
	checkBackfill(t, db, "updated", b, want)
	if _, err := db.Backfill("C-other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fn's Channel was recorded: %v", err)
	}
	boom := errors.New("boom")
	if _, err := db.UpdateBackfill(ch, func(b *store.Backfill) error { b.Pages = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateBackfill with fn failing: %v, want fn's error", err)
	}
	checkBackfill(t, db, "after a failed update", b, want)

	// A claims it for a minute.
	c.Add(time.Minute)
	now := c.Now()
	b, ok, err = db.ClaimBackfill(ch, "A", now, now.Add(time.Minute))
	must(t, err)
	want.Owner, want.OwnedUntil, want.Updated = "A", now.Add(time.Minute), now
	if !ok {
		t.Fatalf("A's claim of a free backfill refused: %+v", b)
	}
	checkBackfill(t, db, "claimed by A", b, want)

	// B is refused while A's claim runs, to its last instant; A renews.
	for _, d := range []time.Duration{0, 30 * time.Second, time.Minute - time.Microsecond} {
		b, ok, err = db.ClaimBackfill(ch, "B", now.Add(d), now.Add(d+time.Minute))
		must(t, err)
		if ok {
			t.Fatalf("B's claim %v into A's accepted: %+v", d, b)
		}
		checkBackfill(t, db, fmt.Sprintf("B refused at %v", d), b, want)
	}
	c.Add(30 * time.Second)
	b, ok, err = db.ClaimBackfill(ch, "A", c.Now(), c.Now().Add(time.Minute))
	must(t, err)
	want.OwnedUntil, want.Updated = c.Now().Add(time.Minute), c.Now()
	if !ok {
		t.Fatalf("A's renewal refused: %+v", b)
	}
	checkBackfill(t, db, "renewed by A", b, want)
	if _, ok, _ := db.ClaimBackfill(ch, "B", now.Add(time.Minute), now.Add(2*time.Minute)); ok {
		t.Fatal("B took A's claim at its first end, after A renewed it")
	}

	// A's claim expires (A died): B takes it over, and A is refused.
	c.Add(time.Minute)
	now = c.Now()
	b, ok, err = db.ClaimBackfill(ch, "B", now, now.Add(time.Minute))
	must(t, err)
	want.Owner, want.OwnedUntil, want.Updated = "B", now.Add(time.Minute), now
	if !ok {
		t.Fatalf("B's claim after A's expired refused: %+v", b)
	}
	checkBackfill(t, db, "taken over by B", b, want)
	if b, ok, err = db.ClaimBackfill(ch, "A", now, now.Add(time.Minute)); err != nil || ok {
		t.Fatalf("A's claim of B's: %+v, %v, %v", b, ok, err)
	}

	// Other channels: RunningBackfills lists the running ones by channel.
	for _, other := range []string{"C3", "C0", "C2"} {
		if _, ok, err := db.StartBackfill(store.Backfill{Channel: other, Since: start, Until: now}); err != nil || !ok {
			t.Fatalf("start %s: %v, %v", other, ok, err)
		}
	}
	_, err = db.UpdateBackfill("C2", func(b *store.Backfill) error { b.State, b.Cursor = store.BackfillDone, ""; return nil })
	must(t, err)
	_, err = db.UpdateBackfill("C0", func(b *store.Backfill) error {
		b.State, b.Problem = store.BackfillFailed, "not_in_channel"
		return nil
	})
	must(t, err)
	if got, want := runningChannels(t, db), []string{"C1", "C3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("RunningBackfills = %q, want %q", got, want)
	}
	// A finished one is not claimed, and is not running.
	if b, ok, err := db.ClaimBackfill("C2", "A", now, now.Add(time.Minute)); err != nil || ok || b.State != store.BackfillDone || b.Owner != "" {
		t.Fatalf("claim of a done backfill: %+v, %v, %v", b, ok, err)
	}

	// Stopped by an admin: a new start replaces it, from scratch.
	c.Add(time.Minute)
	b, err = db.UpdateBackfill(ch, func(b *store.Backfill) error {
		b.State, b.Owner, b.OwnedUntil = store.BackfillStopped, "", time.Time{}
		return nil
	})
	must(t, err)
	if b.State != store.BackfillStopped || b.Owner != "" || !b.OwnedUntil.IsZero() {
		t.Fatalf("stopped: %+v", b)
	}
	if _, ok, _ := db.ClaimBackfill(ch, "B", c.Now(), c.Now().Add(time.Minute)); ok {
		t.Fatal("a stopped backfill was claimed")
	}
	if got, want := runningChannels(t, db), []string{"C3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("RunningBackfills after stopping C1 = %q, want %q", got, want)
	}
	c.Add(time.Minute)
	restart := c.Now()
	b, ok, err = db.StartBackfill(store.Backfill{Channel: ch, Since: restart.Add(-window), Until: restart})
	must(t, err)
	want = store.Backfill{Channel: ch, Since: restart.Add(-window), Until: restart, State: store.BackfillRunning, Created: restart, Updated: restart}
	if !ok {
		t.Fatalf("start after stopping refused: %+v", b)
	}
	checkBackfill(t, db, "started again", b, want)

	// Concurrent claims by 10 owners, of the claim free and then of the
	// winner's once expired (its replica died, the others all take over
	// at once): each time exactly one wins, and the backfill is that one's.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var claimAt time.Time
	for round, what := range []string{"free", "expired"} {
		c.Add(2 * time.Minute)
		claimAt = c.Now()
		var winners []string
		ready, gate := sync.WaitGroup{}, make(chan struct{}) // the claims start together
		ready.Add(10)
		for i := range 10 {
			owner := fmt.Sprintf("R%d-%d", round, i)
			wg.Go(func() {
				ready.Done()
				<-gate
				b, ok, err := db.ClaimBackfill(ch, owner, claimAt, claimAt.Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					if b.Owner != owner {
						t.Errorf("%s won but the backfill is %s's", owner, b.Owner)
					}
					mu.Lock()
					winners = append(winners, owner)
					mu.Unlock()
				} else if b.Owner == owner || b.Owner == "" {
					t.Errorf("%s refused, the backfill's owner %q", owner, b.Owner)
				}
			})
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("concurrent claims (%s): %d winners %q, want 1", what, len(winners), winners)
		}
		if b, err := db.Backfill(ch); err != nil || b.Owner != winners[0] || !b.OwnedUntil.Equal(claimAt.Add(time.Minute)) {
			t.Fatalf("after concurrent claims (%s): %+v, %v; want %s's", what, b, err, winners[0])
		}
	}

	// Concurrent starts of a new channel, then of that channel once
	// stopped: each time exactly one records it, the others get it.
	for round, what := range []string{"new", "stopped"} {
		if round == 1 {
			_, err := db.UpdateBackfill("C9", func(b *store.Backfill) error { b.State = store.BackfillStopped; return nil })
			must(t, err)
		}
		var started []string
		ready, gate := sync.WaitGroup{}, make(chan struct{})
		ready.Add(10)
		for i := range 10 {
			by := fmt.Sprintf("U%d-%d", round, i)
			wg.Go(func() {
				ready.Done()
				<-gate
				b, ok, err := db.StartBackfill(store.Backfill{Channel: "C9", Since: start, Until: claimAt, StartedBy: by})
				if err != nil {
					t.Error(err)
					return
				}
				if b.State != store.BackfillRunning {
					t.Errorf("start by %s: %+v", by, b)
				}
				if ok {
					mu.Lock()
					started = append(started, by)
					mu.Unlock()
				}
			})
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		if len(started) != 1 {
			t.Fatalf("concurrent starts (%s): %d recorded %q, want 1", what, len(started), started)
		}
		if b, err := db.Backfill("C9"); err != nil || b.StartedBy != started[0] {
			t.Fatalf("after concurrent starts (%s): %+v, %v; want %s's", what, b, err, started[0])
		}
	}

	// Retention: 40 days on, C0 (failed) and C2 (done) are old and go; C1,
	// C3, C9 run and stay, however old; C4, finished within the window,
	// stays.
	c.Add(40 * 24 * time.Hour)
	_, ok, err = db.StartBackfill(store.Backfill{Channel: "C4", Since: c.Now().Add(-window), Until: c.Now()})
	must(t, err)
	if !ok {
		t.Fatal("start C4 refused")
	}
	_, err = db.UpdateBackfill("C4", func(b *store.Backfill) error { b.State = store.BackfillDone; return nil })
	must(t, err)
	st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour))
	must(t, err)
	if want := (store.PruneStats{Backfills: 2}); st != want || st.Total() != 2 {
		t.Fatalf("Prune = %+v (total %d), want %+v", st, st.Total(), want)
	}
	for _, gone := range []string{"C0", "C2"} {
		if _, err := db.Backfill(gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s (finished 40 days ago) after Prune: %v, want ErrNotFound", gone, err)
		}
	}
	for _, kept := range []string{"C1", "C3", "C4", "C9"} {
		if _, err := db.Backfill(kept); err != nil {
			t.Errorf("%s after Prune: %v, want kept", kept, err)
		}
	}
	if got, want := runningChannels(t, db), []string{"C1", "C3", "C9"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("RunningBackfills after Prune = %q, want %q", got, want)
	}
	if st, err := db.Prune(c.Now().Add(-30 * 24 * time.Hour)); err != nil || st != (store.PruneStats{}) {
		t.Fatalf("second Prune = %+v, %v; want nothing", st, err)
	}
}
