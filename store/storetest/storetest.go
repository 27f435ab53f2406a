// Package storetest is the conformance suite of the state layer: every
// backend of store.State (the embedded file, PostgreSQL) runs the same
// cases through the public API, so they behave alike.
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Opener returns an empty store whose clock is now; it closes the store at
// the test's cleanup.
type Opener func(t *testing.T, now func() time.Time) store.State

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock.
func (c *Clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Set sets the clock.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type testCase struct {
	name string
	fn   func(t *testing.T, db store.State, c *Clock)
}

var cases = []testCase{
	{"JobsAreDedupedAndFinished", jobsAreDedupedAndFinished},
	{"RecordJobsDedupesWithinABatchAndAcrossCalls", recordJobsDedupe},
	{"PendingJobsOldestFirst", pendingJobsOldestFirst},
	{"PruneEventsHonoursTheLimit", pruneEventsLimit},
	{"Cards", cards},
	{"UpsertCard", upsertCard},
	{"UpdateCardIsAtomicUnderConcurrency", updateCardConcurrent},
	{"SettleCardLinksARecordedTargetInTheSameWrite", settleCard},
	{"UpsertCardIsAtomicUnderConcurrency", upsertCardConcurrent},
	{"SharedCardWritesLoseNothing", sharedCardWrites},
	{"CardRecordRoundTrip", cardRoundTrip},
	{"VerdictHistoryAndRecheckSchedule", verdictHistoryAndRecheckSchedule},
	{"DueOrderingAndLimit", dueOrderingAndLimit},
	{"RecheckFailedAdvancesTheSchedule", recheckFailed},
	{"AnalysesReportsSettings", analysesReportsSettings},
	{"TaskIndexAndRecentCards", taskIndexAndRecentCards},
	{"FinishAnalysisRecordsAndForgetsTogether", finishAnalysis},
	{"ConcurrentVerdictsOfOneTarget", concurrentVerdicts},
	{"CardsOfTaskFollowsTheIndex", cardsOfTask},
	{"ChannelFilesSwitchIsKeptApartFromTheMode", channelFiles},
	{"AbsentRecords", absentRecords},
	{"QuarantinedMessagesAreKeptUntilTheirRetention", quarantined},
	{"ClaimAnalysisOfOneProcess", claimAnalysis},
	{"AllowanceIsASlidingWindowPerKey", allowance},
	{"ReportClaimIsOneHolderAtATime", reportClaims},
	{"DurationsKeepTheLatestPerService", durations},
}

// Run runs the conformance suite, each case in its own subtest (in
// parallel) on a store of its own from open.
func Run(t *testing.T, open Opener) {
	runCases(t, open, append(cases[:len(cases):len(cases)], pruneCases...))
}

func runCases(t *testing.T, open Opener, cases []testCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &Clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
			tc.fn(t, open(t, c.Now), c)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jobsAreDedupedAndFinished(t *testing.T, db store.State, c *Clock) {
	jobs := []*store.Job{{Kind: "message", EventID: "Ev1", Payload: []byte(`{"a":1}`)}, {Kind: "message", EventID: "Ev2", Payload: []byte(`{}`)}, {Kind: "message", EventID: "Ev1", Payload: []byte(`{}`)}}
	fresh, err := db.RecordJobs(jobs)
	must(t, err)
	if !fresh[0] || !fresh[1] || fresh[2] {
		t.Fatalf("fresh = %v", fresh)
	}
	again, _ := db.RecordJobs([]*store.Job{{Kind: "message", EventID: "Ev2"}})
	if again[0] {
		t.Fatal("a redelivery was accepted")
	}
	pending, _ := db.PendingJobs()
	if len(pending) != 2 || pending[0].EventID != "Ev1" || string(pending[0].Payload) != `{"a":1}` {
		t.Fatalf("pending %+v", pending)
	}
	if pending[0].ID != jobs[0].ID || !pending[0].Received.Equal(c.Now()) || pending[0].Kind != "message" {
		t.Fatalf("pending[0] %+v, recorded as id %d", pending[0], jobs[0].ID)
	}
	must(t, db.FinishJob(jobs[0].ID))
	pending, _ = db.PendingJobs()
	if len(pending) != 1 || pending[0].EventID != "Ev2" {
		t.Fatalf("pending %+v", pending)
	}
	// Event ids are forgotten after the window, and only then.
	c.Add(25 * time.Hour)
	if n, _ := db.SeenEvent("Ev3"); !n {
		t.Fatal("Ev3 not new")
	}
	removed, err := db.PruneEvents(c.Now().Add(-24*time.Hour), 1000)
	if err != nil || removed != 2 {
		t.Fatalf("pruned %d, %v", removed, err)
	}
	if n, _ := db.SeenEvent("Ev1"); !n {
		t.Fatal("Ev1 still remembered after pruning")
	}
	if n, _ := db.SeenEvent("Ev3"); n {
		t.Fatal("Ev3 forgotten too early")
	}
}

func recordJobsDedupe(t *testing.T, db store.State, c *Clock) {
	// Within one batch: the second and third Ev1 are redeliveries; jobs
	// without an event id are never deduplicated.
	batch := []*store.Job{
		{Kind: "message", EventID: "Ev1", Payload: []byte(`1`)},
		{Kind: "interactive", Payload: []byte(`2`)},
		{Kind: "message", EventID: "Ev1", Payload: []byte(`3`)},
		{Kind: "interactive", Payload: []byte(`4`)},
		{Kind: "message", EventID: "Ev1", Payload: []byte(`5`)},
	}
	fresh, err := db.RecordJobs(batch)
	must(t, err)
	if fmt.Sprint(fresh) != "[true true false true false]" {
		t.Fatalf("fresh = %v", fresh)
	}
	if batch[0].ID == 0 || batch[0].ID == batch[1].ID || batch[1].ID == batch[3].ID {
		t.Fatalf("ids %d %d %d", batch[0].ID, batch[1].ID, batch[3].ID)
	}
	// Across calls, and against SeenEvent.
	if seen, _ := db.SeenEvent("Ev1"); seen {
		t.Fatal("SeenEvent: Ev1 is new again")
	}
	if seen, _ := db.SeenEvent("Ev9"); !seen {
		t.Fatal("SeenEvent: Ev9 not new")
	}
	fresh, err = db.RecordJobs([]*store.Job{{Kind: "message", EventID: "Ev9"}, {Kind: "message", EventID: "Ev1"}, {Kind: "message", EventID: "Ev2"}})
	must(t, err)
	if fmt.Sprint(fresh) != "[false false true]" {
		t.Fatalf("second call fresh = %v", fresh)
	}
	pending, _ := db.PendingJobs()
	var payloads []string
	for _, j := range pending {
		payloads = append(payloads, string(j.Payload))
	}
	if len(pending) != 4 || fmt.Sprint(payloads[:3]) != "[1 2 4]" || pending[3].EventID != "Ev2" {
		t.Fatalf("pending %v %+v", payloads, pending)
	}
	// A given Received time is kept.
	at := c.Now().Add(-time.Minute)
	j := &store.Job{Kind: "message", Received: at}
	_, err = db.RecordJobs([]*store.Job{j})
	must(t, err)
	pending, _ = db.PendingJobs()
	if last := pending[len(pending)-1]; last.ID != j.ID || !last.Received.Equal(at) {
		t.Fatalf("last %+v", last)
	}
	// An empty batch is fine.
	if fresh, err := db.RecordJobs(nil); err != nil || len(fresh) != 0 {
		t.Fatalf("empty batch: %v %v", fresh, err)
	}
}

func pendingJobsOldestFirst(t *testing.T, db store.State, c *Clock) {
	var ids []uint64
	for i := range 12 {
		j := &store.Job{Kind: "message", EventID: fmt.Sprintf("Ev%02d", 11-i), Payload: []byte(fmt.Sprint(i))}
		_, err := db.RecordJobs([]*store.Job{j})
		must(t, err)
		ids = append(ids, j.ID)
		if i%3 == 0 {
			c.Add(time.Millisecond)
		}
	}
	must(t, db.FinishJob(ids[4]))
	must(t, db.FinishJob(ids[4])) // finishing twice is harmless
	pending, err := db.PendingJobs()
	must(t, err)
	if len(pending) != 11 {
		t.Fatalf("%d pending", len(pending))
	}
	want := 0
	for _, j := range pending {
		if want == 4 {
			want++
		}
		if string(j.Payload) != fmt.Sprint(want) || j.ID != ids[want] {
			t.Fatalf("pending out of order at %d: %+v", want, pending)
		}
		want++
	}
}

func pruneEventsLimit(t *testing.T, db store.State, c *Clock) {
	for i := range 5 {
		db.SeenEvent(fmt.Sprint("old", i))
		c.Add(time.Second)
	}
	c.Add(time.Hour)
	db.SeenEvent("new")
	cutoff := c.Now().Add(-time.Minute)
	n, err := db.PruneEvents(cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("first %d %v", n, err)
	}
	// The oldest go first.
	if fresh, _ := db.SeenEvent("old0"); !fresh {
		t.Fatal("old0 kept")
	}
	n, _ = db.PruneEvents(cutoff, 100)
	if n != 3 {
		t.Fatalf("second %d", n)
	}
	if fresh, _ := db.SeenEvent("new"); fresh {
		t.Fatal("new pruned")
	}
}

func cards(t *testing.T, db store.State, c *Clock) {
	rec := &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1.1", ThreadTS: "1.1", Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.test/", Level: verdict.Pending}}}, Mode: "verbose", Gen: 1}
	must(t, db.PutCard(rec))
	if !rec.Updated.Equal(c.Now()) {
		t.Fatalf("updated %v", rec.Updated)
	}
	if _, err := db.CardByTS("C1", "9.9"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := db.Card(card.Ref{Channel: "C1", SourceTS: "9.9"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := db.UpdateCard(card.Ref{Channel: "C1", SourceTS: "9.9"}, func(*store.CardRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing card: %v", err)
	}
	c.Add(time.Second)
	got, err := db.UpdateCard(card.Ref{Channel: "C1", SourceTS: "1.1"}, func(r *store.CardRecord) error {
		r.Card.CardTS = "2.2"
		r.Card.Lines[0].Level = verdict.Malicious
		r.Card.Final = true
		return nil
	})
	if err != nil || got.Card.CardTS != "2.2" || !got.Updated.Equal(c.Now()) {
		t.Fatal(got, err)
	}
	byTS, err := db.CardByTS("C1", "2.2")
	if err != nil || byTS.Card.Lines[0].Level != verdict.Malicious || byTS.Mode != "verbose" || byTS.Card.SourceTS != "1.1" {
		t.Fatalf("%+v %v", byTS, err)
	}
	if _, err := db.CardByTS("C2", "2.2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another channel: %v", err)
	}
	// A failing update changes nothing.
	sentinel := errors.New("no")
	_, err = db.UpdateCard(card.Ref{Channel: "C1", SourceTS: "1.1"}, func(r *store.CardRecord) error {
		r.Card.Lines[0].Level = verdict.Clean
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("want the callback's error, got %v", err)
	}
	again, _ := db.Card(card.Ref{Channel: "C1", SourceTS: "1.1"})
	if again.Card.Lines[0].Level != verdict.Malicious {
		t.Fatal("failed update was saved")
	}
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "3.3"}}))
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C2", SourceTS: "4.4", Final: true, CardTS: "4.5"}, PostStarted: true}))
	open, _ := db.UnfinishedCards()
	var keys []string
	for _, r := range open {
		keys = append(keys, r.Ref().Key())
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[C1/3.3 C2/4.4]" {
		t.Fatalf("unfinished %v", keys)
	}
	// PutCard replaces the record.
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "3.3", Final: true}, Deleted: true}))
	r, _ := db.Card(card.Ref{Channel: "C1", SourceTS: "3.3"})
	if !r.Deleted || !r.Card.Final {
		t.Fatalf("replaced %+v", r)
	}
	open, _ = db.UnfinishedCards()
	if len(open) != 1 || open[0].Card.SourceTS != "4.4" {
		t.Fatalf("unfinished %+v", open)
	}
}

// settleCard: SettleCard updates the card and links a recorded target to
// it, both or neither; a target not recorded is left out without an error.
func settleCard(t *testing.T, db store.State, c *Clock) {
	const known, unknown = "https://known.test/", "https://unknown.test/"
	ref := card.Ref{Channel: "C1", SourceTS: "1.1"}
	other := card.Ref{Channel: "C1", SourceTS: "0.9"}
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: ref.Channel, SourceTS: ref.SourceTS,
		Lines: []card.Line{{Kind: card.KindURL, Target: known, Level: verdict.Pending}, {Kind: card.KindURL, Target: unknown, Level: verdict.Pending}}}, Gen: 1}))
	if _, _, err := db.RecordVerdict(store.Verdict{Target: known, Kind: "url", TaskID: "t1", Level: verdict.Malicious, Source: "scan"}, &other, nil, false); err != nil {
		t.Fatal(err)
	}
	cardsOf := func(target string) []card.Ref {
		t.Helper()
		tg, err := db.Target(target)
		if err != nil {
			t.Fatalf("target %s: %v", target, err)
		}
		sort.Slice(tg.Cards, func(i, j int) bool { return tg.Cards[i].Key() < tg.Cards[j].Key() })
		return tg.Cards
	}

	// A failing update links nothing.
	sentinel := errors.New("stale")
	if _, err := db.SettleCard(ref, known, func(r *store.CardRecord) error {
		r.Card.Lines[0].Level = verdict.Malicious
		return sentinel
	}); !errors.Is(err, sentinel) {
		t.Fatalf("want the callback's error, got %v", err)
	}
	if got := cardsOf(known); len(got) != 1 || got[0] != other {
		t.Fatalf("a failed settle linked the target: %+v", got)
	}
	if rec, _ := db.Card(ref); rec.Card.Lines[0].Level != verdict.Pending {
		t.Fatal("a failed settle saved the card")
	}
	// A missing card: ErrNotFound, nothing linked.
	if _, err := db.SettleCard(card.Ref{Channel: "C1", SourceTS: "9.9"}, known, func(*store.CardRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("settle of a missing card: %v", err)
	}
	if got := cardsOf(known); len(got) != 1 {
		t.Fatalf("a settle of a missing card linked the target: %+v", got)
	}

	c.Add(time.Second)
	rec, err := db.SettleCard(ref, known, func(r *store.CardRecord) error {
		r.Card.Lines[0].Level = verdict.Malicious
		return nil
	})
	if err != nil || rec.Card.Lines[0].Level != verdict.Malicious || !rec.Updated.Equal(c.Now()) {
		t.Fatalf("settle: %+v, %v", rec, err)
	}
	if got := cardsOf(known); len(got) != 2 || got[0] != other || got[1] != ref {
		t.Fatalf("target's cards after the settle: %+v, want %v and %v", got, other, ref)
	}
	// Again: linked once.
	if _, err := db.SettleCard(ref, known, func(*store.CardRecord) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := cardsOf(known); len(got) != 2 {
		t.Fatalf("target's cards after a second settle: %+v", got)
	}
	// A target not recorded: the card is saved, the target stays unknown.
	rec, err = db.SettleCard(ref, unknown, func(r *store.CardRecord) error {
		r.Card.Lines[1].Level = verdict.Unknown
		r.Card.Final = true
		return nil
	})
	if err != nil || !rec.Card.Final {
		t.Fatalf("settle with an unrecorded target: %+v, %v", rec, err)
	}
	if _, err := db.Target(unknown); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the unrecorded target: %v, want ErrNotFound", err)
	}
	if got, _ := db.Card(ref); !got.Card.Final || got.Card.Lines[0].Level != verdict.Malicious {
		t.Fatalf("stored card: %+v", got.Card)
	}
	// No target: a plain update.
	if _, err := db.SettleCard(ref, "", func(r *store.CardRecord) error { r.Card.CardTS = "2.2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if byTS, err := db.CardByTS("C1", "2.2"); err != nil || byTS.Card.SourceTS != ref.SourceTS {
		t.Fatalf("card by ts after a settle: %+v, %v", byTS, err)
	}
}

func upsertCard(t *testing.T, db store.State, c *Clock) {
	ref := card.Ref{Channel: "C1", SourceTS: "5.5"}
	rec, err := db.UpsertCard(ref, func(r *store.CardRecord, exists bool) error {
		if exists {
			t.Error("exists on the first call")
		}
		r.Card.Channel, r.Card.SourceTS, r.Gen = ref.Channel, ref.SourceTS, 1
		return nil
	})
	if err != nil || rec.Gen != 1 {
		t.Fatal(rec, err)
	}
	rec, err = db.UpsertCard(ref, func(r *store.CardRecord, exists bool) error {
		if !exists || r.Gen != 1 {
			t.Errorf("second call: exists %v gen %d", exists, r.Gen)
		}
		r.Gen++
		r.Card.CardTS = "5.6"
		return nil
	})
	if err != nil || rec.Gen != 2 {
		t.Fatal(rec, err)
	}
	if got, err := db.CardByTS("C1", "5.6"); err != nil || got.Gen != 2 {
		t.Fatal(got, err)
	}
	// A failing callback creates nothing.
	_, err = db.UpsertCard(card.Ref{Channel: "C1", SourceTS: "6.6"}, func(r *store.CardRecord, _ bool) error {
		r.Card.Channel, r.Card.SourceTS = "C1", "6.6"
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("want error")
	}
	if _, err := db.Card(card.Ref{Channel: "C1", SourceTS: "6.6"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed upsert created the card: %v", err)
	}
}

// 20 goroutines increment one card's counter through UpdateCard: none of
// the read-modify-writes may be lost.
func updateCardConcurrent(t *testing.T, db store.State, c *Clock) {
	ref := card.Ref{Channel: "C1", SourceTS: "1.1"}
	must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1.1"}}))
	const workers, each = 20, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := db.UpdateCard(ref, func(r *store.CardRecord) error {
					r.Gen++
					r.Card.Notes = append(r.Card.Notes, fmt.Sprintf("%d-%d", w, i))
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := db.Card(ref)
	must(t, err)
	if rec.Gen != workers*each || len(rec.Card.Notes) != workers*each {
		t.Fatalf("gen %d, %d notes: updates were lost", rec.Gen, len(rec.Card.Notes))
	}
}

// The shared card writes are UpsertCard and UpdateCard whose commits may
// be shared (the embedded file) or not (PostgreSQL): 20 goroutines start
// one new card and count on it, and no write is lost or applied twice; a
// failing fn changes nothing, and an absent card is ErrNotFound.
func sharedCardWrites(t *testing.T, db store.State, c *Clock) {
	ref := card.Ref{Channel: "C8", SourceTS: "8.8"}
	const workers, each = 20, 3
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.UpsertCardShared(ref, func(r *store.CardRecord, exists bool) error {
				if !exists {
					r.Card.Channel, r.Card.SourceTS = ref.Channel, ref.SourceTS
				}
				r.Gen++
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			for range each {
				if _, err := db.UpdateCardShared(ref, func(r *store.CardRecord) error { r.Gen++; return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	const want = workers * (1 + each)
	rec, err := db.Card(ref)
	must(t, err)
	if rec.Gen != want {
		t.Fatalf("gen %d after %d shared writes", rec.Gen, want)
	}
	if _, err := db.UpdateCardShared(ref, func(r *store.CardRecord) error { r.Gen = 0; return errors.New("no") }); err == nil {
		t.Fatal("a failing fn: want its error")
	}
	if rec, err := db.Card(ref); err != nil || rec.Gen != want {
		t.Fatalf("after a failing fn: %+v, %v", rec, err)
	}
	absent := card.Ref{Channel: "C8", SourceTS: "9.9"}
	if _, err := db.UpdateCardShared(absent, func(*store.CardRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an absent card: %v, want ErrNotFound", err)
	}
}

// 20 goroutines upsert one new card: exactly one sees it absent.
func upsertCardConcurrent(t *testing.T, db store.State, c *Clock) {
	ref := card.Ref{Channel: "C7", SourceTS: "7.7"}
	const workers = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.UpsertCard(ref, func(r *store.CardRecord, exists bool) error {
				if !exists {
					mu.Lock()
					created++
					mu.Unlock()
					r.Card.Channel, r.Card.SourceTS = ref.Channel, ref.SourceTS
				}
				r.Gen++
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rec, err := db.Card(ref)
	must(t, err)
	// A retried transaction may call fn again, so count what was saved.
	if rec.Gen != workers {
		t.Fatalf("gen %d after %d upserts", rec.Gen, workers)
	}
	if created < 1 {
		t.Fatal("nobody created the card")
	}
}

// Every field of the card record survives the store.
func cardRoundTrip(t *testing.T, db store.State, c *Clock) {
	at := time.Date(2026, 11, 20, 8, 30, 15, 123456000, time.UTC)
	in := &store.CardRecord{
		Card: card.Card{Channel: "C1", ThreadTS: "1.0", SourceTS: "1.1", CardTS: "1.2", Poster: "U1", RequestedBy: "U2",
			Final: true, LeftOut: 2, MaxLinks: 10, Notes: []string{"n1"},
			Lines: []card.Line{{Kind: card.KindFile, Target: "sha256:ab", Level: verdict.Suspicious, Category: verdict.CatPhishing,
				Scores: verdict.Scores{verdict.CatPhishing: 0.625, verdict.CatAdvertising: 0.1}, Service: "sandbox", TaskID: "42",
				Status: "done", Problem: "p", Detail: "d", QueryNotSent: true, Cached: true, CheckedAt: at, Actions: true,
				File: &card.FileInfo{Name: "a.exe", Type: "PE32", Size: 1234, MD5: "m", SHA1: "s1", SHA256: "ab", MalScore: 7.5,
					Family: "fam", AddedOn: "x", StartedOn: "y", DoneOn: "z", Screenshots: 2, ScreenshotsFailed: true},
				Reports: []card.Report{{User: "U3", Option: "fp", Category: verdict.CatPhishing, At: at, Outcome: "ok", TaskID: "t1"}}}},
			Skipped: []card.Skip{{Kind: card.KindURL, Target: "http://10.0.0.1/", Reason: "private"}}},
		Mode: "quiet", TeamID: "T2", Gen: 3, PostStarted: true, Deleted: true,
	}
	must(t, db.PutCard(in))
	out, err := db.Card(in.Ref())
	must(t, err)
	a2, b2 := fmt.Sprintf("%+v %+v", in.Card.Lines[0].File, in.Card.Lines[0].CheckedAt.UTC()), fmt.Sprintf("%+v %+v", out.Card.Lines[0].File, out.Card.Lines[0].CheckedAt.UTC())
	if !out.Updated.Equal(in.Updated) || !out.Card.Lines[0].CheckedAt.Equal(at) || a2 != b2 {
		t.Fatalf("round trip:\n in %s\nout %s", a2, b2)
	}
	// Compare without the times (their locations may differ).
	in.Updated, out.Updated = time.Time{}, time.Time{}
	in.Card.Lines[0].CheckedAt, out.Card.Lines[0].CheckedAt = time.Time{}, time.Time{}
	in.Card.Lines[0].Reports[0].At, out.Card.Lines[0].Reports[0].At = time.Time{}, time.Time{}
	in.Card.Lines[0].File, out.Card.Lines[0].File = nil, nil
	a, b := fmt.Sprintf("%+v", *in), fmt.Sprintf("%+v", *out)
	if a != b {
		t.Fatalf("round trip:\n in %s\nout %s", a, b)
	}
}

func verdictHistoryAndRecheckSchedule(t *testing.T, db store.State, c *Clock) {
	sched := store.Schedule{time.Hour, 6 * time.Hour, 24 * time.Hour}
	cr := &card.Ref{Channel: "C1", SourceTS: "1.1"}
	t0 := c.Now()
	tg, prev, err := db.RecordVerdict(store.Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t1", Level: verdict.Clean, Source: "scan",
		Category: verdict.CatPhishing, Scores: verdict.Scores{verdict.CatPhishing: 0.25}}, cr, sched, false)
	if err != nil || prev != verdict.Pending || !tg.NextCheck.Equal(t0.Add(time.Hour)) || tg.Cards[0] != *cr || !tg.FirstSeen.Equal(t0) {
		t.Fatalf("%+v %v %v", tg, prev, err)
	}
	c.Add(time.Minute)
	db.RecordVerdict(store.Verdict{Target: "https://b.test/", Kind: "url", TaskID: "t2", Level: verdict.Clean, Source: "scan"}, nil, sched, false)
	db.RecordVerdict(store.Verdict{Target: "sha256:ff", Kind: "file", TaskID: "1000", Level: verdict.Clean, Source: "scan", MalScore: 1.5, Family: "f"}, nil, sched, false)
	if due, _ := db.Due(t0.Add(59*time.Minute), 10); len(due) != 0 {
		t.Fatalf("due too early: %+v", due)
	}
	due, _ := db.Due(t0.Add(2*time.Hour), 10)
	if len(due) != 2 || due[0].Target != "https://a.test/" || due[1].Target != "https://b.test/" {
		t.Fatalf("due (oldest first, files never): %+v", due)
	}
	if len(due[0].Cards) != 1 || due[0].Cards[0] != *cr || due[0].TaskID != "t1" || due[0].Category != verdict.CatPhishing {
		t.Fatalf("due target %+v", due[0])
	}
	if due, _ := db.Due(t0.Add(2*time.Hour), 1); len(due) != 1 {
		t.Fatal("limit ignored")
	}
	// A recheck advances the schedule and records the change.
	c.Add(time.Hour)
	tg, prev, _ = db.RecordVerdict(store.Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t3", Level: verdict.Malicious, Source: "recheck"}, nil, sched, true)
	if prev != verdict.Clean || tg.Rechecks != 1 || !tg.NextCheck.Equal(t0.Add(6*time.Hour)) || len(tg.Cards) != 1 || !tg.FirstSeen.Equal(t0) {
		t.Fatalf("%+v prev %v", tg, prev)
	}
	got, err := db.Target("https://a.test/")
	if err != nil || got.Level != verdict.Malicious || got.TaskID != "t3" || !got.Checked.Equal(c.Now()) || !got.NextCheck.Equal(tg.NextCheck) || len(got.Cards) != 1 {
		t.Fatalf("Target %+v %v", got, err)
	}
	hist, _ := db.History("https://a.test/")
	if len(hist) != 2 || hist[0].Level != verdict.Clean || hist[1].Level != verdict.Malicious || hist[1].Source != "recheck" ||
		hist[0].Scores[verdict.CatPhishing] != 0.25 || hist[0].TaskID != "t1" || !hist[0].At.Equal(t0) {
		t.Fatalf("history %+v", hist)
	}
	if fh, _ := db.History("sha256:ff"); len(fh) != 1 || fh[0].MalScore != 1.5 || fh[0].Family != "f" || fh[0].Kind != "file" {
		t.Fatalf("file history %+v", fh)
	}
	// After a long outage the ages already passed are skipped.
	c.Set(t0.Add(30 * time.Hour))
	tg, _, _ = db.RecordVerdict(store.Verdict{Target: "https://a.test/", Kind: "url", Level: verdict.Malicious, Source: "recheck"}, nil, sched, true)
	if !tg.NextCheck.IsZero() || tg.Rechecks != 3 {
		t.Fatalf("after the last age: %+v", tg)
	}
	if due, _ := db.Due(t0.Add(100*time.Hour), 10); len(due) != 1 || due[0].Target != "https://b.test/" {
		t.Fatalf("due %+v", due)
	}
	// Verdicts recorded at the same instant stay in the order recorded.
	for i := range 3 {
		db.RecordVerdict(store.Verdict{Target: "https://c.test/", Kind: "url", TaskID: fmt.Sprint("c", i), Level: verdict.Clean, At: t0}, nil, nil, false)
	}
	if h, _ := db.History("https://c.test/"); len(h) != 3 || h[0].TaskID != "c0" || h[2].TaskID != "c2" {
		t.Fatalf("same-instant history %+v", h)
	}
	if h, err := db.History("https://none.test/"); err != nil || len(h) != 0 {
		t.Fatalf("unknown target history %v %v", h, err)
	}
}

func dueOrderingAndLimit(t *testing.T, db store.State, c *Clock) {
	t0 := c.Now()
	// Targets first seen in an order that differs from their names; each
	// has a one-age schedule so its due time is its first sighting + 1h.
	names := []string{"https://m.test/", "https://a.test/", "https://z.test/", "https://b.test/", "https://k.test/"}
	for _, n := range names {
		_, _, err := db.RecordVerdict(store.Verdict{Target: n, Kind: "url", Level: verdict.Clean}, nil, store.Schedule{time.Hour}, false)
		must(t, err)
		c.Add(time.Minute)
	}
	due, err := db.Due(t0.Add(time.Hour+2*time.Minute), 10)
	must(t, err)
	var got []string
	for _, d := range due {
		got = append(got, d.Target)
	}
	if fmt.Sprint(got) != fmt.Sprint(names[:3]) {
		t.Fatalf("due at +1h02 %v, want %v (oldest due first; due exactly at now included)", got, names[:3])
	}
	due, _ = db.Due(t0.Add(10*time.Hour), 4)
	got = got[:0]
	for _, d := range due {
		got = append(got, d.Target)
	}
	if fmt.Sprint(got) != fmt.Sprint(names[:4]) {
		t.Fatalf("limit 4: %v", got)
	}
	if due, _ := db.Due(t0.Add(time.Hour-time.Nanosecond), 10); len(due) != 0 {
		t.Fatalf("not yet due: %+v", due)
	}
}

func recheckFailed(t *testing.T, db store.State, c *Clock) {
	sched := store.Schedule{time.Hour, 2 * time.Hour, 3 * time.Hour}
	t0 := c.Now()
	db.RecordVerdict(store.Verdict{Target: "https://a.test/", Kind: "url", Level: verdict.Suspicious, TaskID: "t1"}, nil, sched, false)
	db.RecordVerdict(store.Verdict{Target: "https://b.test/", Kind: "url", Level: verdict.Clean}, nil, sched, false)
	c.Set(t0.Add(time.Hour + time.Minute))
	must(t, db.RecheckFailed("https://a.test/", sched))
	tg, _ := db.Target("https://a.test/")
	if tg.Rechecks != 1 || !tg.NextCheck.Equal(t0.Add(2*time.Hour)) || tg.Level != verdict.Suspicious || tg.TaskID != "t1" {
		t.Fatalf("%+v", tg)
	}
	if due, _ := db.Due(c.Now(), 10); len(due) != 1 || due[0].Target != "https://b.test/" {
		t.Fatalf("the failed target still heads the queue: %+v", due)
	}
	if h, _ := db.History("https://a.test/"); len(h) != 1 {
		t.Fatalf("a failed recheck wrote history: %+v", h)
	}
	if err := db.RecheckFailed("https://none.test/", sched); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown target: %v", err)
	}
}

func analysesReportsSettings(t *testing.T, db store.State, c *Clock) {
	db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
	if a, err := db.Analysis("reputation", "https://a.test/"); err != nil || a.TaskID != "t1" || !a.SubmittedAt.Equal(c.Now()) || a.Service != "reputation" || a.Target != "https://a.test/" {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := db.Analysis("sandbox", "https://a.test/"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	db.PutAnalysis(store.Analysis{Service: "sandbox", Target: "sha256:aa", TaskID: "7"})
	db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1b"}) // replaces
	if all, _ := db.Analyses(); len(all) != 2 {
		t.Fatal(all)
	}
	if a, _ := db.Analysis("reputation", "https://a.test/"); a.TaskID != "t1b" {
		t.Fatalf("not replaced: %+v", a)
	}
	db.DeleteAnalysis("reputation", "https://a.test/")
	if _, err := db.Analysis("reputation", "https://a.test/"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	must(t, db.DeleteAnalysis("reputation", "https://a.test/"))
	db.RecordReport(store.Report{Target: "https://a.test/", TaskID: "t1", User: "U1", Option: "fp", Category: verdict.CatPhishing,
		Card: card.Ref{Channel: "C1", SourceTS: "1.1"}})
	c.Add(time.Second)
	db.RecordReport(store.Report{Target: "https://a.test/", TaskID: "t1", User: "U2", Option: "restore", Category: verdict.CatPhishing, Outcome: "task not completed yet"})
	db.RecordReport(store.Report{Target: "https://a.test/x", User: "U3"})
	rs, _ := db.Reports("https://a.test/")
	if len(rs) != 2 || rs[0].User != "U1" || rs[1].Outcome == "" || rs[0].Card.SourceTS != "1.1" || rs[0].Option != "fp" ||
		rs[0].Category != verdict.CatPhishing || rs[0].TaskID != "t1" || !rs[1].At.Equal(c.Now()) {
		t.Fatalf("%+v", rs)
	}
	db.SetChannelMode("C1", "verbose")
	if m, _ := db.ChannelMode("C1"); m != "verbose" {
		t.Fatal(m)
	}
	db.SetChannelMode("C1", "")
	if m, _ := db.ChannelMode("C1"); m != "" {
		t.Fatal(m)
	}
	db.Allow("example.org", "U1")
	db.Allow("corp.test", "U2")
	list, _ := db.AllowList()
	if len(list) != 2 || list[0].Domain != "corp.test" || list[1].By != "U1" || !list[1].At.Equal(c.Now()) {
		t.Fatalf("%+v", list)
	}
	if ok, _ := db.Disallow("corp.test"); !ok {
		t.Fatal("not removed")
	}
	if ok, _ := db.Disallow("corp.test"); ok {
		t.Fatal("removed twice")
	}
}

func taskIndexAndRecentCards(t *testing.T, db store.State, c *Clock) {
	db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t-a"})
	db.RecordVerdict(store.Verdict{Target: "https://b.test/", Kind: "url", TaskID: "t-b", Level: verdict.Clean}, nil, nil, false)
	for _, tc := range []struct{ task, want string }{{"t-a", "https://a.test/"}, {"t-b", "https://b.test/"}, {" t-b\n", "https://b.test/"}} {
		if got, err := db.TargetOfTask(tc.task); err != nil || got != tc.want {
			t.Errorf("%q → %q %v", tc.task, got, err)
		}
	}
	if _, err := db.TargetOfTask("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	for i, ts := range []string{"1700000001.000100", "1700000003.000100", "1700000002.000100"} {
		db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: ts, Lines: []card.Line{{Target: fmt.Sprint(i)}}}})
	}
	// An empty card (nothing to show) is not recent.
	db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1700000004.000100"}})
	db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1700000005.000100", Skipped: []card.Skip{{Target: "x", Reason: "y"}}}})
	db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C2", SourceTS: "1700000009.000100", Lines: []card.Line{{Target: "x"}}}})
	db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C10", SourceTS: "1700000009.000100", Lines: []card.Line{{Target: "x"}}}})
	recent, _ := db.RecentCards("C1", 3)
	if len(recent) != 3 || recent[0].Card.SourceTS != "1700000005.000100" || recent[1].Card.SourceTS != "1700000003.000100" || recent[2].Card.SourceTS != "1700000002.000100" {
		t.Fatalf("recent %+v", recent)
	}
	if r, _ := db.RecentCards("C1", 0); len(r) != 0 {
		t.Fatal(r)
	}
	if r, _ := db.RecentCards("C9", 5); len(r) != 0 {
		t.Fatal(r)
	}
}

func finishAnalysis(t *testing.T, db store.State, c *Clock) {
	db.PutAnalysis(store.Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
	db.PutAnalysis(store.Analysis{Service: "sandbox", Target: "https://a.test/", TaskID: "9"})
	tg, prev, err := db.FinishAnalysis("reputation", store.Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t1", Level: verdict.Malicious}, store.Schedule{time.Hour}, false)
	if err != nil || prev != verdict.Pending || tg.Level != verdict.Malicious || !tg.NextCheck.Equal(c.Now().Add(time.Hour)) {
		t.Fatalf("%+v %v %v", tg, prev, err)
	}
	if _, err := db.Analysis("reputation", "https://a.test/"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("the submission is still in flight")
	}
	if _, err := db.Analysis("sandbox", "https://a.test/"); err != nil {
		t.Fatal("another service's submission was forgotten")
	}
	if h, _ := db.History("https://a.test/"); len(h) != 1 {
		t.Fatalf("history %+v", h)
	}
	if got, _ := db.TargetOfTask("t1"); got != "https://a.test/" {
		t.Fatalf("task index %q", got)
	}
}

// Verdicts of one target recorded concurrently all reach its history and
// the rechecks they count are not lost.
func concurrentVerdicts(t *testing.T, db store.State, c *Clock) {
	const n = 20
	sched := make(store.Schedule, 2*n)
	for i := range sched {
		sched[i] = time.Duration(i+1) * time.Hour
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr := &card.Ref{Channel: "C1", SourceTS: fmt.Sprint(i % 4)}
			if _, _, err := db.RecordVerdict(store.Verdict{Target: "https://a.test/", Kind: "url", TaskID: fmt.Sprint("t", i), Level: verdict.Clean}, cr, sched, true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	tg, err := db.Target("https://a.test/")
	must(t, err)
	if tg.Rechecks != n || len(tg.Cards) != 4 || !tg.NextCheck.Equal(tg.FirstSeen.Add(time.Duration(n+1)*time.Hour)) {
		t.Fatalf("%+v", tg)
	}
	if h, _ := db.History("https://a.test/"); len(h) != n {
		t.Fatalf("%d in history", len(h))
	}
	if due, _ := db.Due(c.Now().Add(100*time.Hour), 10); len(due) != 1 {
		t.Fatalf("due index: %+v", due)
	}
}

func cardsOfTask(t *testing.T, db store.State, c *Clock) {
	const task, url = "5a5703931d6e0789be8209606f5688d5", "https://evil.test/x"
	for _, ref := range []card.Ref{{Channel: "C1", SourceTS: "1.1"}, {Channel: "C2", SourceTS: "2.2"}} {
		must(t, db.PutCard(&store.CardRecord{Card: card.Card{Channel: ref.Channel, SourceTS: ref.SourceTS,
			Lines: []card.Line{{Target: "https://other.test/"}, {Target: url, TaskID: task}}}}))
	}
	// A card showing the target with another task (a later recheck).
	db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C3", SourceTS: "3.3", Lines: []card.Line{{Target: url, TaskID: "other"}}}})
	if got, err := db.CardsOfTask(task); err != nil || len(got) != 0 {
		t.Fatalf("unknown task: %v %v", got, err)
	}
	if err := db.AddCard(url, card.Ref{Channel: "C2", SourceTS: "2.2"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AddCard of an unknown target: %v", err)
	}
	if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", TaskID: task, Level: verdict.Malicious}, &card.Ref{Channel: "C1", SourceTS: "1.1"}, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []card.Ref{{Channel: "C2", SourceTS: "2.2"}, {Channel: "C3", SourceTS: "3.3"}, {Channel: "C2", SourceTS: "2.2"}, {Channel: "C4", SourceTS: "gone"}} {
		must(t, db.AddCard(url, ref))
	}
	tg, _ := db.Target(url)
	if fmt.Sprint(tg.Cards) != "[{C1 1.1} {C2 2.2} {C3 3.3} {C4 gone}]" {
		t.Fatalf("cards of the target %v", tg.Cards)
	}
	got, err := db.CardsOfTask(" " + task + " ")
	if err != nil || len(got) != 2 || got[0].Card.Channel != "C1" || got[1].Card.Channel != "C2" {
		t.Fatalf("CardsOfTask = %+v, %v", got, err)
	}
}

func channelFiles(t *testing.T, db store.State, c *Clock) {
	if v, err := db.ChannelFiles("C1"); v != "" || err != nil {
		t.Fatalf("unset: %q %v", v, err)
	}
	must(t, db.SetChannelMode("C1", "verbose"))
	must(t, db.SetChannelFiles("C1", "off"))
	if v, _ := db.ChannelFiles("C1"); v != "off" {
		t.Fatalf("files %q", v)
	}
	if m, _ := db.ChannelMode("C1"); m != "verbose" {
		t.Fatalf("the files switch changed the mode: %q", m)
	}
	if v, _ := db.ChannelFiles("C2"); v != "" {
		t.Fatalf("another channel got %q", v)
	}
	must(t, db.SetChannelFiles("C1", ""))
	if v, _ := db.ChannelFiles("C1"); v != "" {
		t.Fatalf("removed: %q", v)
	}
	if m, _ := db.ChannelMode("C1"); m != "verbose" {
		t.Fatalf("removing the files switch changed the mode: %q", m)
	}
	must(t, db.SetChannelFiles("C1", "on"))
	must(t, db.SetChannelMode("C1", ""))
	if v, _ := db.ChannelFiles("C1"); v != "on" {
		t.Fatalf("removing the mode changed the files switch: %q", v)
	}
}

func absentRecords(t *testing.T, db store.State, c *Clock) {
	if _, err := db.Target("https://none.test/"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Target: %v", err)
	}
	if a, err := db.Analyses(); err != nil || len(a) != 0 {
		t.Fatalf("Analyses: %v %v", a, err)
	}
	if j, err := db.PendingJobs(); err != nil || len(j) != 0 {
		t.Fatalf("PendingJobs: %v %v", j, err)
	}
	if u, err := db.UnfinishedCards(); err != nil || len(u) != 0 {
		t.Fatalf("UnfinishedCards: %v %v", u, err)
	}
	if r, err := db.Reports("https://none.test/"); err != nil || len(r) != 0 {
		t.Fatalf("Reports: %v %v", r, err)
	}
	if l, err := db.AllowList(); err != nil || len(l) != 0 {
		t.Fatalf("AllowList: %v %v", l, err)
	}
	if d, err := db.Due(c.Now().Add(1000*time.Hour), 10); err != nil || len(d) != 0 {
		t.Fatalf("Due: %v %v", d, err)
	}
	if n, err := db.PruneEvents(c.Now(), 10); err != nil || n != 0 {
		t.Fatalf("PruneEvents: %v %v", n, err)
	}
	if m, err := db.ChannelMode("C1"); err != nil || m != "" {
		t.Fatalf("ChannelMode: %q %v", m, err)
	}
}

// quarantined: a removed message is kept whole (content, author, thread,
// release), replaced by a later put, pruned by its removal time, and the
// channel's quarantine level is kept apart from the other settings.
func quarantined(t *testing.T, db store.State, c *Clock) {
	if _, err := db.Quarantined("C1", "1.000001"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
	q := store.Quarantined{Channel: "C1", TS: "1.000001", ThreadTS: "0.000009", User: "U1", Team: "T1",
		Text: "see <https://evil.example/x>", Blocks: json.RawMessage(`[{"type":"rich_text"}]`),
		Attachments: json.RawMessage(`[{"fallback":"x"}]`), Files: []store.QuarantinedFile{{ID: "F1", Name: "a.exe"}},
		Level: "malicious", Reason: "phishing 0.97", RemovedAt: c.Now()}
	must(t, db.PutQuarantined(q))
	old := q
	old.TS, old.RemovedAt = "0.500000", c.Now().Add(-48*time.Hour)
	must(t, db.PutQuarantined(old))
	got, err := db.Quarantined("C1", "1.000001")
	must(t, err)
	if got.Text != q.Text || got.ThreadTS != q.ThreadTS || got.User != "U1" || got.Team != "T1" || string(got.Blocks) == "" ||
		string(got.Attachments) == "" || len(got.Files) != 1 || got.Files[0].Name != "a.exe" || got.Level != "malicious" ||
		!got.RemovedAt.Equal(q.RemovedAt) || got.Released() {
		t.Fatalf("got %+v", got)
	}
	q.ReleasedBy, q.ReleasedAt, q.ReleasedTS = "U9", c.Now().Add(time.Minute), "2.000001"
	must(t, db.PutQuarantined(q))
	if got, _ = db.Quarantined("C1", "1.000001"); !got.Released() || got.ReleasedTS != "2.000001" || !got.ReleasedAt.Equal(q.ReleasedAt) {
		t.Fatalf("after release %+v", got)
	}
	n, err := db.PruneQuarantined(c.Now().Add(-24 * time.Hour))
	must(t, err)
	if n != 1 {
		t.Fatalf("pruned %d, want 1", n)
	}
	if _, err := db.Quarantined("C1", "0.500000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old one was kept: %v", err)
	}
	if _, err := db.Quarantined("C1", "1.000001"); err != nil {
		t.Fatalf("the recent one was pruned: %v", err)
	}

	if v, err := db.ChannelQuarantine("C1"); v != "" || err != nil {
		t.Fatalf("unset level: %q %v", v, err)
	}
	must(t, db.SetChannelFiles("C1", "on"))
	must(t, db.SetChannelQuarantine("C1", "suspicious"))
	must(t, db.SetChannelFiles("C1", ""))
	if v, _ := db.ChannelQuarantine("C1"); v != "suspicious" {
		t.Fatalf("level %q", v)
	}
	must(t, db.SetChannelQuarantine("C1", ""))
	if v, _ := db.ChannelQuarantine("C1"); v != "" {
		t.Fatalf("removed level: %q", v)
	}
}
