package cards

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func TestRecallDoesNotReuseAVerdictReportedOnSince(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db := store.Memory(store.Options{Now: clock})
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
