package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/verdict"
)

// clock is a settable clock for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// eachBackend runs fn against the file store and the memory store.
func eachBackend(t *testing.T, fn func(t *testing.T, db *DB, c *clock)) {
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		c := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
		db, err := Open(t.TempDir(), Options{Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, db, c)
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
		fn(t, Memory(Options{Now: c.now}), c)
	})
}

func TestJobsAreDedupedAndFinished(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		jobs := []*Job{{Kind: "message", EventID: "Ev1", Payload: []byte(`{"a":1}`)}, {Kind: "message", EventID: "Ev2", Payload: []byte(`{}`)}, {Kind: "message", EventID: "Ev1", Payload: []byte(`{}`)}}
		fresh, err := db.RecordJobs(jobs)
		if err != nil {
			t.Fatal(err)
		}
		if !fresh[0] || !fresh[1] || fresh[2] {
			t.Fatalf("fresh = %v", fresh)
		}
		again, _ := db.RecordJobs([]*Job{{Kind: "message", EventID: "Ev2"}})
		if again[0] {
			t.Fatal("a redelivery was accepted")
		}
		pending, _ := db.PendingJobs()
		if len(pending) != 2 || pending[0].EventID != "Ev1" || string(pending[0].Payload) != `{"a":1}` {
			t.Fatalf("pending %+v", pending)
		}
		if err := db.FinishJob(jobs[0].ID); err != nil {
			t.Fatal(err)
		}
		pending, _ = db.PendingJobs()
		if len(pending) != 1 || pending[0].EventID != "Ev2" {
			t.Fatalf("pending %+v", pending)
		}
		// Event ids are forgotten after the window, and only then.
		c.add(25 * time.Hour)
		if n, _ := db.SeenEvent("Ev3"); !n {
			t.Fatal("Ev3 not new")
		}
		removed, err := db.PruneEvents(c.now().Add(-24*time.Hour), 1000)
		if err != nil || removed != 2 {
			t.Fatalf("pruned %d, %v", removed, err)
		}
		if n, _ := db.SeenEvent("Ev1"); !n {
			t.Fatal("Ev1 still remembered after pruning")
		}
		if n, _ := db.SeenEvent("Ev3"); n {
			t.Fatal("Ev3 forgotten too early")
		}
	})
}

func TestCards(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		rec := &CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1.1", ThreadTS: "1.1", Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.test/", Level: verdict.Pending}}}, Mode: "verbose", Gen: 1}
		if err := db.PutCard(rec); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CardByTS("C1", "9.9"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err %v", err)
		}
		got, err := db.UpdateCard(CardRef{"C1", "1.1"}, func(r *CardRecord) error {
			r.Card.CardTS = "2.2"
			r.Card.Lines[0].Level = verdict.Malicious
			r.Card.Final = true
			return nil
		})
		if err != nil || got.Card.CardTS != "2.2" {
			t.Fatal(err)
		}
		byTS, err := db.CardByTS("C1", "2.2")
		if err != nil || byTS.Card.Lines[0].Level != verdict.Malicious || byTS.Mode != "verbose" {
			t.Fatalf("%+v %v", byTS, err)
		}
		// A failing update changes nothing.
		_, err = db.UpdateCard(CardRef{"C1", "1.1"}, func(r *CardRecord) error {
			r.Card.Lines[0].Level = verdict.Clean
			return errors.New("no")
		})
		if err == nil {
			t.Fatal("want error")
		}
		again, _ := db.Card(CardRef{"C1", "1.1"})
		if again.Card.Lines[0].Level != verdict.Malicious {
			t.Fatal("failed update was saved")
		}
		db.PutCard(&CardRecord{Card: card.Card{Channel: "C1", SourceTS: "3.3"}})
		open, _ := db.UnfinishedCards()
		if len(open) != 1 || open[0].Card.SourceTS != "3.3" {
			t.Fatalf("unfinished %+v", open)
		}
	})
}

func TestVerdictHistoryAndRecheckSchedule(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		sched := Schedule{time.Hour, 6 * time.Hour, 24 * time.Hour}
		card := &CardRef{"C1", "1.1"}
		t0 := c.now()
		tg, prev, err := db.RecordVerdict(Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t1", Level: verdict.Clean, Source: "scan"}, card, sched, false)
		if err != nil || prev != verdict.Pending || !tg.NextCheck.Equal(t0.Add(time.Hour)) || tg.Cards[0] != *card {
			t.Fatalf("%+v %v %v", tg, prev, err)
		}
		c.add(time.Minute)
		db.RecordVerdict(Verdict{Target: "https://b.test/", Kind: "url", TaskID: "t2", Level: verdict.Clean, Source: "scan"}, nil, sched, false)
		db.RecordVerdict(Verdict{Target: "sha256:ff", Kind: "file", TaskID: "1000", Level: verdict.Clean, Source: "scan"}, nil, sched, false)
		if due, _ := db.Due(t0.Add(59*time.Minute), 10); len(due) != 0 {
			t.Fatalf("due too early: %+v", due)
		}
		due, _ := db.Due(t0.Add(2*time.Hour), 10)
		if len(due) != 2 || due[0].Target != "https://a.test/" || due[1].Target != "https://b.test/" {
			t.Fatalf("due (oldest first, files never): %+v", due)
		}
		if due, _ := db.Due(t0.Add(2*time.Hour), 1); len(due) != 1 {
			t.Fatal("limit ignored")
		}
		// A recheck advances the schedule and records the change.
		c.add(time.Hour)
		tg, prev, _ = db.RecordVerdict(Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t3", Level: verdict.Malicious, Source: "recheck"}, nil, sched, true)
		if prev != verdict.Clean || tg.Rechecks != 1 || !tg.NextCheck.Equal(t0.Add(6*time.Hour)) || len(tg.Cards) != 1 {
			t.Fatalf("%+v prev %v", tg, prev)
		}
		hist, _ := db.History("https://a.test/")
		if len(hist) != 2 || hist[0].Level != verdict.Clean || hist[1].Level != verdict.Malicious || hist[1].Source != "recheck" {
			t.Fatalf("history %+v", hist)
		}
		// After a long outage the ages already passed are skipped.
		c.t = t0.Add(30 * time.Hour)
		tg, _, _ = db.RecordVerdict(Verdict{Target: "https://a.test/", Kind: "url", Level: verdict.Malicious, Source: "recheck"}, nil, sched, true)
		if !tg.NextCheck.IsZero() || tg.Rechecks != 3 {
			t.Fatalf("after the last age: %+v", tg)
		}
		if due, _ := db.Due(t0.Add(100*time.Hour), 10); len(due) != 1 || due[0].Target != "https://b.test/" {
			t.Fatalf("due %+v", due)
		}
	})
}

func TestAnalysesReportsSettings(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		db.PutAnalysis(Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
		if a, err := db.Analysis("reputation", "https://a.test/"); err != nil || a.TaskID != "t1" || a.SubmittedAt.IsZero() {
			t.Fatalf("%+v %v", a, err)
		}
		if all, _ := db.Analyses(); len(all) != 1 {
			t.Fatal(all)
		}
		db.DeleteAnalysis("reputation", "https://a.test/")
		if _, err := db.Analysis("reputation", "https://a.test/"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		db.RecordReport(Report{Target: "https://a.test/", TaskID: "t1", User: "U1", Option: "fp", Category: verdict.CatPhishing})
		c.add(time.Second)
		db.RecordReport(Report{Target: "https://a.test/", TaskID: "t1", User: "U2", Option: "restore", Category: verdict.CatPhishing, Outcome: "task not completed yet"})
		db.RecordReport(Report{Target: "https://a.test/x", User: "U3"})
		rs, _ := db.Reports("https://a.test/")
		if len(rs) != 2 || rs[0].User != "U1" || rs[1].Outcome == "" {
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
		if len(list) != 2 || list[0].Domain != "corp.test" || list[1].By != "U1" {
			t.Fatalf("%+v", list)
		}
		if ok, _ := db.Disallow("corp.test"); !ok {
			t.Fatal("not removed")
		}
		if ok, _ := db.Disallow("corp.test"); ok {
			t.Fatal("removed twice")
		}
	})
}

func TestDataSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.RecordJobs([]*Job{{Kind: "message", EventID: "Ev1"}})
	db.PutAnalysis(Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if jobs, _ := db.PendingJobs(); len(jobs) != 1 {
		t.Fatal("job lost")
	}
	if fresh, _ := db.SeenEvent("Ev1"); fresh {
		t.Fatal("event id lost")
	}
	if _, err := db.Analysis("reputation", "https://a.test/"); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, FileName))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file mode %v", fi.Mode().Perm())
	}
}

func TestCorruptLockedOrNewerStoreIsAClearErrorNotAReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	garbage := bytes.Repeat([]byte("not a database "), 1000)
	os.WriteFile(path, garbage, 0o600)
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "is unreadable") || !strings.Contains(err.Error(), "left untouched") {
		t.Fatalf("corrupt store: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, garbage) {
		t.Fatal("the corrupt file was modified")
	}

	dir2 := t.TempDir()
	db, err := Open(dir2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir2, Options{})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second open: %v", err)
	}
	db.be.update(func(t txn) error { return t.put(bMeta, "schema", []byte("99")) })
	db.Close()
	_, err = Open(dir2, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this verdictbot understands") {
		t.Fatalf("newer schema: %v", err)
	}

	dir3 := t.TempDir()
	os.Chmod(dir3, 0o500)
	defer os.Chmod(dir3, 0o700)
	if os.Geteuid() != 0 {
		if _, err := Open(dir3, Options{}); err == nil {
			t.Fatal("unwritable directory accepted")
		}
	}
}

func TestTaskIndexAndRecentCards(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		db.PutAnalysis(Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t-a"})
		db.RecordVerdict(Verdict{Target: "https://b.test/", Kind: "url", TaskID: "t-b", Level: verdict.Clean}, nil, nil, false)
		for _, tc := range []struct{ task, want string }{{"t-a", "https://a.test/"}, {"t-b", "https://b.test/"}} {
			if got, err := db.TargetOfTask(tc.task); err != nil || got != tc.want {
				t.Errorf("%s → %q %v", tc.task, got, err)
			}
		}
		if _, err := db.TargetOfTask("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		for i, ts := range []string{"1700000001.000100", "1700000003.000100", "1700000002.000100"} {
			db.PutCard(&CardRecord{Card: card.Card{Channel: "C1", SourceTS: ts, Lines: []card.Line{{Target: fmt.Sprint(i)}}}})
		}
		db.PutCard(&CardRecord{Card: card.Card{Channel: "C2", SourceTS: "1700000009.000100", Lines: []card.Line{{Target: "x"}}}})
		recent, _ := db.RecentCards("C1", 2)
		if len(recent) != 2 || recent[0].Card.SourceTS != "1700000003.000100" || recent[1].Card.SourceTS != "1700000002.000100" {
			t.Fatalf("recent %+v", recent)
		}
	})
}

func TestFinishAnalysisRecordsAndForgetsTogether(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		db.PutAnalysis(Analysis{Service: "reputation", Target: "https://a.test/", TaskID: "t1"})
		tg, prev, err := db.FinishAnalysis("reputation", Verdict{Target: "https://a.test/", Kind: "url", TaskID: "t1", Level: verdict.Malicious}, Schedule{time.Hour}, false)
		if err != nil || prev != verdict.Pending || tg.Level != verdict.Malicious {
			t.Fatalf("%+v %v %v", tg, prev, err)
		}
		if _, err := db.Analysis("reputation", "https://a.test/"); !errors.Is(err, ErrNotFound) {
			t.Fatal("the submission is still in flight")
		}
		if h, _ := db.History("https://a.test/"); len(h) != 1 {
			t.Fatalf("history %+v", h)
		}
	})
}

func TestCardsOfTaskFollowsTheIndexToTheCardsShowingTheTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, c *clock) {
		const task, url = "5a5703931d6e0789be8209606f5688d5", "https://evil.test/x"
		for _, ref := range []CardRef{{"C1", "1.1"}, {"C2", "2.2"}} {
			if err := db.PutCard(&CardRecord{Card: card.Card{Channel: ref.Channel, SourceTS: ref.SourceTS,
				Lines: []card.Line{{Target: "https://other.test/"}, {Target: url, TaskID: task}}}}); err != nil {
				t.Fatal(err)
			}
		}
		// A card showing the target with another task (a later recheck).
		db.PutCard(&CardRecord{Card: card.Card{Channel: "C3", SourceTS: "3.3", Lines: []card.Line{{Target: url, TaskID: "other"}}}})
		if got, err := db.CardsOfTask(task); err != nil || len(got) != 0 {
			t.Fatalf("unknown task: %v %v", got, err)
		}
		if _, _, err := db.RecordVerdict(Verdict{Target: url, Kind: "url", TaskID: task, Level: verdict.Malicious}, &CardRef{"C1", "1.1"}, nil, false); err != nil {
			t.Fatal(err)
		}
		for _, ref := range []CardRef{{"C2", "2.2"}, {"C3", "3.3"}} {
			if err := db.AddCard(url, ref); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.CardsOfTask(" " + task + " ")
		if err != nil || len(got) != 2 || got[0].Card.Channel != "C1" || got[1].Card.Channel != "C2" {
			t.Fatalf("CardsOfTask = %+v, %v", got, err)
		}
	})
}
