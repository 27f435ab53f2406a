package scanstore

import (
	"errors"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

func TestRecallDoesNotReuseAVerdictReportedOnSince(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db := bolt.Memory(bolt.Options{Now: clock})
	m := &URLMemory{DB: db, Now: clock}
	const url = "https://login.example.net/"
	db.RecordVerdict(store.Verdict{Target: url, Kind: "url", TaskID: "t1", Level: verdict.Malicious, At: now.Add(-time.Minute)}, nil, nil, false)
	if v, ok := m.Recall(url, time.Hour); !ok || v.Level != verdict.Malicious {
		t.Fatalf("a fresh verdict is reused: %+v %v", v, ok)
	}
	// A refused report changes nothing at the service: still reused.
	db.RecordReport(store.Report{Target: url, TaskID: "t1", User: "U1", Option: "fp", At: now, Outcome: "task not completed yet"})
	if _, ok := m.Recall(url, time.Hour); !ok {
		t.Fatal("a refused report stopped reuse")
	}
	// An accepted false positive: the next message is checked again.
	db.RecordReport(store.Report{Target: url, TaskID: "t1", User: "U1", Option: "fp", At: now})
	if v, ok := m.Recall(url, time.Hour); ok {
		t.Fatalf("a verdict reported as a false positive was reused: %+v", v)
	}
	// Once rechecked, the new verdict is reused again.
	db.RecordVerdict(store.Verdict{Target: url, Kind: "url", TaskID: "t2", Level: verdict.Clean, At: now.Add(time.Second)}, nil, nil, false)
	if v, ok := m.Recall(url, time.Hour); !ok || v.TaskID != "t2" {
		t.Fatalf("the newer verdict is not reused: %+v %v", v, ok)
	}
}

// URLMemory is the recheck job's view of the store (scan.DueTargets): due
// URLs come with their last level and the cards that show them, and a
// failed recheck moves the URL to the next age of the schedule.
func TestURLMemoryIsTheRecheckQueue(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db := bolt.Memory(bolt.Options{Now: clock})
	sched := store.Schedule{time.Hour, 6 * time.Hour}
	m := &URLMemory{DB: db, Schedule: sched, Now: clock}
	const url = "https://login.example.net/"
	ref := &card.Ref{Channel: "C1", SourceTS: "1.2"}
	if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", TaskID: "t1", Level: verdict.Suspicious, At: now}, ref, sched, false); err != nil {
		t.Fatal(err)
	}
	if due, err := m.Due(now.Add(59*time.Minute), 10); err != nil || len(due) != 0 {
		t.Fatalf("due before the first age: %+v %v", due, err)
	}
	due, err := m.Due(now.Add(time.Hour), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due at the first age: %+v %v", due, err)
	}
	if d := due[0]; d.Target != url || d.Level != verdict.Suspicious || len(d.Cards) != 1 || d.Cards[0].Channel != "C1" || d.Cards[0].SourceTS != "1.2" {
		t.Errorf("due URL: %+v", d)
	}
	if err := m.RecheckFailed(url); err != nil {
		t.Fatal(err)
	}
	if due, _ := m.Due(now.Add(5*time.Hour), 10); len(due) != 0 {
		t.Errorf("still due after a failed recheck: %+v", due)
	}
	if due, _ := m.Due(now.Add(6*time.Hour), 10); len(due) != 1 {
		t.Errorf("not due at the second age after a failed recheck: %+v", due)
	}
}

// flakyDurable refuses the first writes of a verdict, as a database that
// is restarting does.
type flakyDurable struct {
	Durable
	refuse int
}

func (f *flakyDurable) FinishAnalysis(service string, v store.Verdict, s store.Schedule, recheck bool) (store.Target, verdict.Level, error) {
	if f.refuse > 0 {
		f.refuse--
		return store.Target{}, 0, errors.New("FATAL: the database system is starting up (SQLSTATE 57P03)")
	}
	return f.Durable.FinishAnalysis(service, v, s, recheck)
}

// The verdict of an analysis that ends while the store is down is
// recorded once the store is back, not lost.
func TestVerdictIsRecordedOnceTheStoreIsBack(t *testing.T) {
	db := bolt.Memory(bolt.Options{})
	flaky := &flakyDurable{Durable: db, refuse: 3}
	m := &URLMemory{DB: flaky}
	const url = "https://login.example.net/down"
	m.Claim(url)
	m.Submitted(url, "t1")
	m.Finished(scan.URLVerdict{URL: url, TaskID: "t1", Level: verdict.Malicious, CheckedAt: time.Now()}, "scan")
	if flaky.refuse != 0 {
		t.Fatalf("%d refusals left: the write was not retried", flaky.refuse)
	}
	hist, err := db.History(url)
	if err != nil || len(hist) != 1 || hist[0].Level != verdict.Malicious {
		t.Fatalf("history %+v, %v; want the verdict recorded", hist, err)
	}
	if _, err := db.Analysis("reputation", url); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the analysis is still in flight: %v", err)
	}
}

// A stopping process does not keep retrying a write the store refuses: it
// gives up when Stop is closed (the job resumes from the journal after the
// restart), long before the two minutes a running process would try.
func TestStoreRetriesEndWhenTheProcessStops(t *testing.T) {
	db := bolt.Memory(bolt.Options{})
	flaky := &flakyDurable{Durable: db, refuse: 1 << 30}
	stop := make(chan struct{})
	m := &URLMemory{DB: flaky, Stop: stop}
	const url = "https://login.example.net/stopping"
	m.Claim(url)
	m.Submitted(url, "t1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Finished(scan.URLVerdict{URL: url, TaskID: "t1", Level: verdict.Malicious, CheckedAt: time.Now()}, "scan")
	}()
	select {
	case <-done:
		t.Fatal("Finished returned while the store still refused and the process was running: no retry")
	case <-time.After(300 * time.Millisecond):
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Finished still retrying 5 s after Stop was closed")
	}
	if _, err := db.Analysis("reputation", url); err != nil {
		t.Fatalf("the unrecorded analysis must stay in flight for the restart: %v", err)
	}
}

// claimRefuser refuses the first claims, as a database whose sessions
// were just terminated or that is restarting does.
type claimRefuser struct {
	Durable
	refuse int
}

func (f *claimRefuser) ClaimAnalysis(service, target string) (store.Claim, error) {
	if f.refuse > 0 {
		f.refuse--
		return store.Claim{}, errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	}
	return f.Durable.ClaimAnalysis(service, target)
}

// A claim the store refuses for a moment is retried, not taken as this
// replica's: another replica analysing the URL is followed, not submitted
// again (the soak found a URL submitted twice, one replica's claim having
// failed open on a killed database session).
func TestAClaimTheStoreRefusesIsRetried(t *testing.T) {
	db := bolt.Memory(bolt.Options{})
	const url = "https://login.example.net/claimed"
	other := &URLMemory{DB: db}
	if _, existed, mine := other.Claim(url); existed || !mine {
		t.Fatalf("the first claim: existed %v mine %v", existed, mine)
	}
	other.Submitted(url, "t1")
	flaky := &claimRefuser{Durable: db, refuse: 3}
	m := &URLMemory{DB: flaky}
	task, existed, mine := m.Claim(url)
	if flaky.refuse != 0 {
		t.Fatalf("%d refusals left: the claim was not retried", flaky.refuse)
	}
	// One process on the embedded store: the claim is found, with its
	// task, and resumed rather than submitted again.
	if task != "t1" || !existed {
		t.Fatalf("claim after the refusals: task %q existed %v mine %v; want the recorded task t1", task, existed, mine)
	}
}
