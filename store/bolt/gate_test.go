package bolt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	bbolt "go.etcd.io/bbolt"
)

// gateRun records the order in which writers get through a writeGate.
type gateRun struct {
	g     *writeGate
	mu    sync.Mutex
	order []string
	wg    sync.WaitGroup
}

// queue starts a writer and returns once it waits at the gate; inside,
// it records its name, runs then (if any), and leaves.
func (r *gateRun) queue(t *testing.T, name string, urgent bool, then func()) {
	t.Helper()
	waiting := func() (n int) {
		r.g.mu.Lock()
		defer r.g.mu.Unlock()
		return int(r.g.next-r.g.serving) + r.g.urgentWaiting
	}
	before := waiting()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.g.lock(urgent)
		r.mu.Lock()
		r.order = append(r.order, name)
		r.mu.Unlock()
		if then != nil {
			then()
		}
		r.g.unlock()
	}()
	for waiting() == before {
		time.Sleep(time.Millisecond) // until it is queued (not a timing assertion)
	}
}

func TestWriteGateLetsTheJournalGoFirst(t *testing.T) {
	r := &gateRun{g: &writeGate{}}
	r.g.lock(false) // a card write in progress
	r.queue(t, "card1", false, nil)
	r.queue(t, "card2", false, nil)
	r.queue(t, "card3", false, nil)
	r.queue(t, "journal", true, nil)
	r.g.unlock()
	r.wg.Wait()
	if want := []string{"journal", "card1", "card2", "card3"}; !slices.Equal(r.order, want) {
		t.Fatalf("order %v, want %v", r.order, want)
	}
}

func TestWriteGateAlternatesSoNeitherStarves(t *testing.T) {
	r := &gateRun{g: &writeGate{}}
	r.g.lock(false)
	r.queue(t, "card1", false, nil)
	r.queue(t, "journal1", true, func() {
		// While the first journal write runs, another one queues: the
		// card waiting goes before it.
		r.queue(t, "journal2", true, nil)
	})
	r.queue(t, "card2", false, nil)
	r.g.unlock()
	r.wg.Wait()
	if want := []string{"journal1", "card1", "journal2", "card2"}; !slices.Equal(r.order, want) {
		t.Fatalf("order %v, want %v", r.order, want)
	}
}

// commits returns how many write transactions the bolt store has committed
// (its meta page's transaction id).
func commits(t *testing.T, db *DB) uint64 {
	t.Helper()
	var id uint64
	if err := db.be.(*boltBackend).db.View(func(tx *bbolt.Tx) error { id = uint64(tx.ID()); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// twoWrites makes two writes with put, the second starting gap after the
// first; it returns the commits they made and how long the first took.
func twoWrites(t *testing.T, db *DB, put func(key string) error, gap time.Duration) (uint64, time.Duration) {
	t.Helper()
	before := commits(t, db)
	first := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		if err := put("a"); err != nil {
			t.Error(err)
		}
		first <- time.Since(start)
	}()
	time.Sleep(gap)
	if err := put("b"); err != nil {
		t.Fatal(err)
	}
	took := <-first
	return commits(t, db) - before, took
}

// TestJournalWritesShareTheLinksCommits: while shared (batched) writes
// are under way, RecordJobs and FinishJob join them: one commit, one
// fsync, for the three writes here instead of three.
func TestJournalWritesShareTheLinksCommits(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	// A batch waits this long for company: long enough that the writes
	// below all join the one batch.
	be.group.delay = time.Second
	old := &store.Job{Kind: "message", EventID: "Ev0"}
	if _, err := db.RecordJobs([]*store.Job{old}); err != nil {
		t.Fatal(err)
	}
	before := commits(t, db)
	// A shared write holding the store (it commits on its own).
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	var wg sync.WaitGroup
	defer wg.Wait()
	defer release()
	waitSharing := func(n int, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); be.sharing() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not join the shared writes", what)
			}
		}
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := be.batch(func(tx txn) error { <-hold; return tx.put(bMeta, "x", []byte("1")) }); err != nil {
			t.Error(err)
		}
	}()
	waitSharing(1, "the held write")
	// A card write waits for its batch, then the journal arrives.
	go func() {
		defer wg.Done()
		if _, err := db.UpsertCardShared(card.Ref{Channel: "C1", SourceTS: "1.0"}, func(*store.CardRecord, bool) error { return nil }); err != nil {
			t.Error(err)
		}
	}()
	waitSharing(2, "the card write")
	go func() {
		defer wg.Done()
		if err := db.FinishJob(old.ID); err != nil {
			t.Error(err)
		}
	}()
	waitSharing(3, "FinishJob")
	var fresh []bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		fresh, err = db.RecordJobs([]*store.Job{{Kind: "message", EventID: "Ev1"}, {Kind: "message", EventID: "Ev1"}, {Kind: "message", EventID: "Ev0"}})
	}()
	waitSharing(4, "RecordJobs")
	release()
	wg.Wait()
	if err != nil || !slices.Equal(fresh, []bool{true, false, false}) {
		t.Fatalf("RecordJobs: %v, %v", fresh, err)
	}
	if n := commits(t, db) - before; n != 2 {
		t.Errorf("%d commits, want 2 (the held write, then the card, the finished job and the journal together)", n)
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].EventID != "Ev1" {
		t.Fatalf("pending jobs %+v, %v", jobs, err)
	}
}

// TestLoneWriteWaitsForCompanyOnlyUnderLoad: a shared write with no other
// under way commits at once on a quiet store (a sequential writer pays no
// batch delay), but waits for company when shared writes overlapped
// lately (a steady load of links): the next write then joins its commit.
func TestLoneWriteWaitsForCompanyOnlyUnderLoad(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	// Long beside one commit's fsync (up to about 0.5 s seen on a disk
	// busy with other tests), so "at once" and "waited for company" stay
	// apart however slow the disk is.
	const delay = 2 * time.Second
	be.group.delay = delay
	put := func(k string) error { return be.batch(func(tx txn) error { return tx.put(bMeta, k, []byte("1")) }) }
	two := func(gap time.Duration) (uint64, time.Duration) { t.Helper(); return twoWrites(t, db, put, gap) }

	// Quiet: each write commits alone, at once.
	if n, took := two(delay / 4); n != 2 || took >= delay/2 {
		t.Fatalf("quiet store: %d commits, the first write took %v; want 2, at once", n, took)
	}
	// Two writes under way together: the store is under load.
	hold := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- be.batch(func(tx txn) error { <-hold; return tx.put(bMeta, "held", nil) }) }()
	for deadline := time.Now().Add(5 * time.Second); be.sharing() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held write did not start")
		}
	}
	go func() { done <- put("c") }()
	for deadline := time.Now().Add(5 * time.Second); be.sharing() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second write did not start")
		}
	}
	close(hold)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Under load: the first write waits for the second, one commit.
	if n, _ := two(10 * time.Millisecond); n != 1 {
		t.Fatalf("under load: %d commits for two writes 10 ms apart, want 1", n)
	}
	// Quiet again once no writes overlapped for companyWindow.
	time.Sleep(companyWindow + delay)
	if n, took := two(delay / 4); n != 2 || took >= delay/2 {
		t.Fatalf("quiet again: %d commits, the first write took %v; want 2, at once", n, took)
	}
}

// TestSteadyEnvelopesMakeTheLinksWritesShare: envelopes arriving
// steadily (the journal written twice within companyWindow) put the store
// under load at once, before any two writes overlapped: the writes of the
// links that follow share their commits from the first link on (in the
// throughput benchmark the first hundred links committed each of their
// first four writes alone). A lone envelope on a quiet store changes
// nothing: its writes commit at once.
func TestSteadyEnvelopesMakeTheLinksWritesShare(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	const delay = 2 * time.Second // as in TestLoneWriteWaitsForCompanyOnlyUnderLoad
	be.group.delay = delay
	seq := 0
	record := func() {
		t.Helper()
		seq++
		if _, err := db.RecordJobs([]*store.Job{{Kind: "message", EventID: fmt.Sprintf("Ev%d", seq)}}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(k string) error { return be.batch(func(tx txn) error { return tx.put(bMeta, k, []byte("1")) }) }
	// A link's two writes (twoWrites).
	link := func(gap time.Duration) (uint64, time.Duration) { t.Helper(); return twoWrites(t, db, put, gap) }

	// One envelope on a quiet store: its link's writes commit at once.
	record()
	if n, took := link(delay / 4); n != 2 || took >= delay/2 {
		t.Fatalf("one envelope: %d commits, the first write took %v; want 2, at once", n, took)
	}
	// Two envelopes 10 ms apart: the second's journal write does not wait
	// out the delay, and the link's writes share a commit.
	time.Sleep(companyWindow + 10*time.Millisecond)
	record()
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	record()
	if took := time.Since(start); took >= delay/2 {
		t.Fatalf("the journal's write took %v: it waited out the delay", took)
	}
	if n, _ := link(10 * time.Millisecond); n != 1 {
		t.Fatalf("steady envelopes: %d commits for a link's two writes 10 ms apart, want 1", n)
	}
	// Quiet again: envelopes companyWindow apart.
	time.Sleep(companyWindow + delay)
	record()
	if n, took := link(delay / 4); n != 2 || took >= delay/2 {
		t.Fatalf("quiet again: %d commits, the first write took %v; want 2, at once", n, took)
	}
}

// TestAJournalWriteCommitsTheGatheredWritesAtOnce: under load, ordinary
// shared writes wait for company (here a minute), but the journal's write
// (the ack waits for it) commits them with it at once: one commit, no
// waiting out the delay.
func TestAJournalWriteCommitsTheGatheredWritesAtOnce(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	be.group.delay = time.Minute
	// Under load: batched writes overlapped a moment ago.
	be.company.Store(time.Now().UnixNano())
	before := commits(t, db)
	start := time.Now()
	cardDone := make(chan error, 1)
	go func() {
		_, err := db.UpsertCardShared(card.Ref{Channel: "C1", SourceTS: "1.0"}, func(rec *store.CardRecord, _ bool) error {
			rec.Card.Channel, rec.Card.SourceTS = "C1", "1.0"
			return nil
		})
		cardDone <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); be.sharing() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the card write did not start")
		}
	}
	fresh, err := db.RecordJobs([]*store.Job{{Kind: "message", EventID: "Ev1"}})
	if err != nil || !slices.Equal(fresh, []bool{true}) {
		t.Fatalf("RecordJobs: %v, %v", fresh, err)
	}
	if err := <-cardDone; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the writes took %v: the journal waited out the delay", took)
	}
	if n := commits(t, db) - before; n != 1 {
		t.Errorf("%d commits, want 1 (the card and the journal together)", n)
	}
	if rec, err := db.Card(card.Ref{Channel: "C1", SourceTS: "1.0"}); err != nil || rec == nil {
		t.Errorf("the card record was not stored: %+v, %v", rec, err)
	}
}

// TestAWriteThatFailsInARoundFailsAlone: writes gathered into one commit
// where one fails (or panics): that caller gets its error, the others
// commit, and nothing of the failed write is stored.
func TestAWriteThatFailsInARoundFailsAlone(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	be := db.be.(*boltBackend)
	be.group.delay = 200 * time.Millisecond
	be.company.Store(time.Now().UnixNano())
	boom := errors.New("boom")
	writes := map[string]func(tx txn) error{
		"a": func(tx txn) error { return tx.put(bMeta, "a", []byte("1")) },
		"b": func(tx txn) error {
			if err := tx.put(bMeta, "b", []byte("1")); err != nil {
				return err
			}
			return boom
		},
		"c": func(tx txn) error { return tx.put(bMeta, "c", []byte("1")) },
		"d": func(tx txn) error {
			_ = tx.put(bMeta, "d", []byte("1"))
			panic("d panicked")
		},
	}
	var mu sync.Mutex
	got := map[string]error{}
	var wg sync.WaitGroup
	for k, fn := range writes {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					got[k] = fmt.Errorf("panic: %v", p)
					mu.Unlock()
				}
			}()
			err := be.batch(fn)
			mu.Lock()
			got[k] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	if got["a"] != nil || got["c"] != nil || !errors.Is(got["b"], boom) || got["d"] == nil || !strings.Contains(got["d"].Error(), "d panicked") {
		t.Fatalf("results %v: want a and c nil, b boom, d its panic", got)
	}
	err = db.be.view(func(tx txn) error {
		for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": false} {
			if have := tx.get(bMeta, k) != nil; have != want {
				t.Errorf("key %s stored %v, want %v", k, have, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
