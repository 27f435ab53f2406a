package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func init() {
	cases = append(cases,
		testCase{"EventQueueKeepsOrderAndDropsTheOldest", eventQueueOrderAndBound},
		testCase{"EventQueueConcurrentEnqueuesAreContiguous", eventQueueConcurrent},
		testCase{"DeadLettersLeaveTheQueueAndComeBackAtItsEnd", deadLetters},
		testCase{"FencedWritesUnderALiveLease", fencedWrites},
		testCase{"ClaimRecheckTakesADueTargetOnce", claimRecheck})
}

func body(seq uint64) ([]byte, error) { return fmt.Appendf(nil, `{"seq":%d}`, seq), nil }

func eventQueueOrderAndBound(t *testing.T, db store.State, _ *Clock) {
	if n, err := db.EventsQueued(); err != nil || n != 0 {
		t.Fatalf("empty queue: %d, %v", n, err)
	}
	for i := 1; i <= 5; i++ {
		seq, dropped, err := db.EnqueueEvent(body, 3)
		must(t, err)
		wantDropped := 0
		if i > 3 {
			wantDropped = 1
		}
		if seq != uint64(i) || dropped != wantDropped {
			t.Fatalf("enqueue %d: seq %d dropped %d, want %d and %d", i, seq, dropped, i, wantDropped)
		}
	}
	got, err := db.QueuedEvents(0, 10)
	must(t, err)
	if len(got) != 3 || got[0].Seq != 3 || got[2].Seq != 5 || string(got[0].Body) != `{"seq":3}` {
		t.Fatalf("queued after bound 3: %+v", got)
	}
	if n, _ := db.EventsQueued(); n != 3 {
		t.Fatalf("EventsQueued = %d, want 3", n)
	}
	// After a sequence number: the sender passes the last it delivered.
	for _, c := range []struct {
		after uint64
		n     int
		want  []uint64
	}{{3, 10, []uint64{4, 5}}, {2, 1, []uint64{3}}, {4, 10, []uint64{5}}, {5, 10, nil}, {99, 10, nil}} {
		got, err := db.QueuedEvents(c.after, c.n)
		must(t, err)
		var seqs []uint64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Equal(seqs, c.want) || (len(got) > 0 && string(got[0].Body) != fmt.Sprintf(`{"seq":%d}`, c.want[0])) {
			t.Fatalf("QueuedEvents(%d, %d) = %+v, want seqs %v", c.after, c.n, got, c.want)
		}
	}
	must(t, db.DeleteEvents([]uint64{3}, store.Fence{}))
	must(t, db.DeleteEvents([]uint64{3}, store.Fence{})) // absent: no error
	got, err = db.QueuedEvents(0, 1)
	must(t, err)
	if len(got) != 1 || got[0].Seq != 4 {
		t.Fatalf("oldest after delete: %+v", got)
	}
	must(t, db.DeleteEvents([]uint64{4, 5, 99}, store.Fence{})) // several at once, one absent
	must(t, db.DeleteEvents(nil, store.Fence{}))
	if n, _ := db.EventsQueued(); n != 0 {
		t.Fatalf("EventsQueued = %d after sending all, want 0", n)
	}
	// The sequence goes on after the queue emptied.
	seq, _, err := db.EnqueueEvent(body, 0)
	must(t, err)
	if seq != 6 {
		t.Fatalf("next seq = %d, want 6", seq)
	}
	// A build error records nothing.
	if _, _, err := db.EnqueueEvent(func(uint64) ([]byte, error) { return nil, fmt.Errorf("boom") }, 0); err == nil {
		t.Fatal("build error not returned")
	}
	if seq, _, _ := db.EnqueueEvent(body, 0); seq != 7 {
		t.Fatalf("seq after a failed enqueue = %d, want 7", seq)
	}
}

func eventQueueConcurrent(t *testing.T, db store.State, _ *Clock) {
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, _, err := db.EnqueueEvent(body, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := db.QueuedEvents(0, 1000)
	must(t, err)
	if len(got) != writers*each {
		t.Fatalf("%d queued, want %d", len(got), writers*each)
	}
	for i, e := range got {
		if e.Seq != uint64(i+1) || string(e.Body) != fmt.Sprintf(`{"seq":%d}`, i+1) {
			t.Fatalf("event %d: seq %d body %s", i, e.Seq, e.Body)
		}
	}
}

// deadLetters: an event refused for good leaves the front of the queue for
// the dead-letter list with why (the next event is now the front, and the
// count stays right); a retry puts the chosen dead letters back at the
// end of the queue under new sequence numbers, rebuilt, oldest first,
// and skips the ones that are not dead letters.
func deadLetters(t *testing.T, db store.State, c *Clock) {
	for range 5 {
		_, _, err := db.EnqueueEvent(body, 0)
		must(t, err)
	}
	must(t, db.DeadLetterEvent(1, store.DeadLetter{Failures: 20, Status: 400, Error: "POST to https://siem.test: 400 Bad Request"}, store.Fence{}))
	must(t, db.DeadLetterEvent(1, store.DeadLetter{Failures: 20}, store.Fence{})) // gone from the queue: no error
	must(t, db.DeleteEvents([]uint64{2}, store.Fence{}))
	must(t, db.DeadLetterEvent(3, store.DeadLetter{Failures: 20, Status: 422, Error: "422"}, store.Fence{}))
	if q, err := db.QueuedEvents(0, 10); err != nil || len(q) != 2 || q[0].Seq != 4 {
		t.Fatalf("queue after two dead letters: %+v, %v", q, err)
	}
	if n, err := db.EventsQueued(); err != nil || n != 2 {
		t.Fatalf("EventsQueued = %d, %v, want 2", n, err)
	}
	dead, err := db.DeadEvents(10)
	must(t, err)
	if len(dead) != 2 || dead[0].Seq != 1 || dead[1].Seq != 3 || string(dead[0].Body) != `{"seq":1}` ||
		dead[0].Failures != 20 || dead[0].Status != 400 || !strings.Contains(dead[0].Error, "400 Bad Request") || !dead[0].At.Equal(c.Now()) {
		t.Fatalf("dead letters: %+v", dead)
	}
	if n, err := db.DeadEventsCount(); err != nil || n != 2 {
		t.Fatalf("DeadEventsCount = %d, %v", n, err)
	}
	if one, _ := db.DeadEvents(1); len(one) != 1 || one[0].Seq != 1 {
		t.Fatalf("DeadEvents(1) = %+v", one)
	}
	rebuild := func(b []byte, seq uint64) ([]byte, error) {
		return fmt.Appendf(nil, `{"was":%s,"seq":%d}`, b, seq), nil
	}
	// One chosen (and one that is not a dead letter): it comes back as 6.
	moved, dropped, err := db.RequeueDeadEvents([]uint64{3, 99, 3}, rebuild, 0)
	must(t, err)
	if len(moved) != 1 || moved[0] != (store.Requeued{From: 3, To: 6}) || dropped != 0 {
		t.Fatalf("requeue 3: %+v dropped %d", moved, dropped)
	}
	// A rebuild that fails moves nothing.
	if _, _, err := db.RequeueDeadEvents(nil, func([]byte, uint64) ([]byte, error) { return nil, errors.New("boom") }, 0); err == nil {
		t.Fatal("a failed rebuild was not returned")
	}
	// All the others (bounded to 3 queued: the oldest goes).
	moved, dropped, err = db.RequeueDeadEvents(nil, rebuild, 3)
	must(t, err)
	if len(moved) != 1 || moved[0] != (store.Requeued{From: 1, To: 7}) || dropped != 1 {
		t.Fatalf("requeue all: %+v dropped %d", moved, dropped)
	}
	q, err := db.QueuedEvents(0, 10)
	must(t, err)
	if len(q) != 3 || q[0].Seq != 5 || q[1].Seq != 6 || q[2].Seq != 7 ||
		string(q[1].Body) != `{"was":{"seq":3},"seq":6}` || string(q[2].Body) != `{"was":{"seq":1},"seq":7}` {
		t.Fatalf("queue after the retries: %+v", q)
	}
	if n, _ := db.EventsQueued(); n != 3 {
		t.Fatalf("EventsQueued = %d, want 3", n)
	}
	if n, _ := db.DeadEventsCount(); n != 0 {
		t.Fatalf("%d dead letters left", n)
	}
	if moved, _, err := db.RequeueDeadEvents(nil, rebuild, 0); err != nil || len(moved) != 0 {
		t.Fatalf("requeue of nothing: %+v %v", moved, err)
	}
	// The sequence goes on after them.
	if seq, _, _ := db.EnqueueEvent(body, 0); seq != 8 {
		t.Fatalf("next seq = %d, want 8", seq)
	}
}

// fencedWrites: the writes a leader makes after acting succeed under its
// live term; the lead of one job does not stop another's.
func fencedWrites(t *testing.T, db store.State, c *Clock) {
	ctx := context.Background()
	lease, ok, err := db.Lead(ctx, "events")
	if err != nil || !ok {
		t.Fatalf("Lead: %v %v", ok, err)
	}
	defer lease.Release()
	if lease.Remaining() <= 0 {
		t.Fatalf("a new term has no time left: %v", lease.Remaining())
	}
	other, ok, err := db.Lead(ctx, "recheck")
	if err != nil || !ok {
		t.Fatalf("the lead of the events holds up the recheck's: %v %v", ok, err)
	}
	for range 3 {
		_, _, err := db.EnqueueEvent(body, 0)
		must(t, err)
	}
	must(t, db.DeleteEvents([]uint64{1}, lease.Fence()))
	must(t, db.DeadLetterEvent(2, store.DeadLetter{Failures: 20, Status: 400}, lease.Fence()))
	if q, _ := db.QueuedEvents(0, 10); len(q) != 1 || q[0].Seq != 3 {
		t.Fatalf("queue: %+v", q)
	}
	sched := store.Schedule{time.Hour}
	mustVerdict(t, db, store.Verdict{Target: "https://fenced.test/", Kind: "url", Level: verdict.Clean}, nil, sched)
	c.Add(time.Hour)
	if _, ok, err := db.ClaimRecheck("https://fenced.test/", c.Now(), time.Minute, other.Fence()); err != nil || !ok {
		t.Fatalf("fenced claim: %v %v", ok, err)
	}
	other.Release()
	select {
	case <-other.Done():
	default:
		t.Fatal("Done is open after Release")
	}
	if other.Remaining() != 0 {
		t.Fatalf("a released term has %v left", other.Remaining())
	}
	other.Release() // again: nothing
}

// claimRecheck: a due target is claimed once (a second run does not get
// it, and Due no longer lists it) for hold; after hold it is due again
// (the recheck that claimed it never finished); a claim given back makes
// it due at its old time, unless it was rechecked meanwhile; a verdict
// recorded as a recheck plans its next age as usual; a target not due,
// unknown or without a recheck planned is not claimed.
func claimRecheck(t *testing.T, db store.State, c *Clock) {
	const u = "https://claim-recheck.test/"
	sched := store.Schedule{time.Hour, 2 * time.Hour}
	t0 := c.Now()
	mustVerdict(t, db, store.Verdict{Target: u, Kind: "url", Level: verdict.Clean}, nil, sched)
	if _, ok, err := db.ClaimRecheck(u, c.Now(), time.Minute, store.Fence{}); err != nil || ok {
		t.Fatalf("claimed before it is due: %v %v", ok, err)
	}
	c.Set(t0.Add(time.Hour + time.Second))
	until, ok, err := db.ClaimRecheck(u, c.Now(), 10*time.Minute, store.Fence{})
	if err != nil || !ok || !until.Equal(c.Now().Add(10*time.Minute)) {
		t.Fatalf("due target not claimed: %v %v %v", until, ok, err)
	}
	if _, ok, _ := db.ClaimRecheck(u, c.Now(), 10*time.Minute, store.Fence{}); ok {
		t.Fatal("claimed twice")
	}
	if due, _ := db.Due(c.Now(), 10); len(due) != 0 {
		t.Fatalf("a claimed target is still due: %+v", due)
	}
	// Given back (the recheck did not happen): due at its time again.
	must(t, db.ReleaseRecheck(u, until, t0.Add(time.Hour)))
	due, _ := db.Due(c.Now(), 10)
	if len(due) != 1 || !due[0].NextCheck.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after the release: %+v", due)
	}
	// The claim lapses: due again.
	if _, ok, _ := db.ClaimRecheck(u, c.Now(), 10*time.Minute, store.Fence{}); !ok {
		t.Fatal("not claimed after the release")
	}
	c.Add(10*time.Minute + time.Second)
	due, _ = db.Due(c.Now(), 10)
	if len(due) != 1 || due[0].Target != u {
		t.Fatalf("after the hold: %+v", due)
	}
	until, ok, _ = db.ClaimRecheck(u, c.Now(), time.Minute, store.Fence{})
	if !ok {
		t.Fatal("not claimed again after the hold")
	}
	mustVerdict(t, db, store.Verdict{Target: u, Kind: "url", Level: verdict.Clean, Source: "recheck"}, nil, sched)
	tg, _ := db.Target(u)
	if tg.Rechecks != 1 || !tg.NextCheck.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after the recheck: rechecks %d next %v, want 1 and %v", tg.Rechecks, tg.NextCheck, t0.Add(2*time.Hour))
	}
	// A late release of that claim changes nothing: it was rechecked.
	must(t, db.ReleaseRecheck(u, until, t0.Add(time.Hour)))
	if tg, _ := db.Target(u); !tg.NextCheck.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("a stale release moved the next recheck to %v", tg.NextCheck)
	}
	// A claim made for a later time (the shell's recheck brought forward)
	// holds past it.
	later := t0.Add(2 * time.Hour)
	if _, ok, _ := db.ClaimRecheck(u, later, time.Minute, store.Fence{}); !ok {
		t.Fatal("not claimed for a later time")
	}
	if due, _ := db.Due(later.Add(30*time.Second), 10); len(due) != 0 {
		t.Fatalf("due within the hold after the later time: %+v", due)
	}
	if _, ok, err := db.ClaimRecheck("https://unknown.test/", c.Now(), time.Minute, store.Fence{}); err != nil || ok {
		t.Fatalf("unknown target: %v %v", ok, err)
	}
	must(t, db.ReleaseRecheck("https://unknown.test/", c.Now(), c.Now()))
	mustVerdict(t, db, store.Verdict{Target: "sha256:ff", Kind: "file", Level: verdict.Clean}, nil, sched)
	if _, ok, err := db.ClaimRecheck("sha256:ff", c.Now().Add(1000*time.Hour), time.Minute, store.Fence{}); err != nil || ok {
		t.Fatalf("a file (never rechecked): %v %v", ok, err)
	}
}

func init() {
	cases = append(cases, testCase{"LastEventSeqIsTheLastGiven", lastEventSeq})
}

// lastEventSeq: LastEventSeq is 0 before any event, then the last
// sequence given, whether or not its event is still queued.
func lastEventSeq(t *testing.T, db store.State, _ *Clock) {
	if n, err := db.LastEventSeq(); err != nil || n != 0 {
		t.Fatalf("before any: %d %v", n, err)
	}
	for range 3 {
		if _, _, err := db.EnqueueEvent(body, 0); err != nil {
			t.Fatal(err)
		}
	}
	must(t, db.DeleteEvents([]uint64{3}, store.Fence{}))
	if n, err := db.LastEventSeq(); err != nil || n != 3 {
		t.Fatalf("after 3, the last sent: %d %v", n, err)
	}
}
