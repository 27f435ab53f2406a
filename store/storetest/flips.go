package storetest

import (
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

func init() {
	cases = append(cases, testCase{"ARecheckFlipIsPendingUntilAnnounced", pendingFlips})
}

// pendingFlips: a recheck's verdict that changes the level records the
// flip in its write, with the level before; a first verdict, a recheck
// that changes nothing and a verdict that is not a recheck record none; a
// second flip before the first is announced keeps the first's level
// before; FlipAnnounced forgets it only at the level announced.
func pendingFlips(t *testing.T, db store.State, c *Clock) {
	sched := store.Schedule{time.Hour}
	ref := &card.Ref{Channel: "C1", SourceTS: "1.1"}
	record := func(u string, l verdict.Level, recheck bool) {
		t.Helper()
		if _, _, err := db.RecordVerdict(store.Verdict{Target: u, Kind: "url", TaskID: "t-" + u, Level: l, At: c.Now()}, ref, sched, recheck); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Second)
	}
	pending := func() map[string]verdict.Level {
		t.Helper()
		fs, err := db.PendingFlips(10)
		must(t, err)
		out := map[string]verdict.Level{}
		for _, f := range fs {
			out[f.Target.Target] = f.Was
		}
		return out
	}
	const a, b, same = "https://a.test/", "https://b.test/", "https://same.test/"
	record(a, verdict.Clean, true) // a first verdict, even as a recheck: no flip
	record(b, verdict.Clean, false)
	record(same, verdict.Clean, false)
	record(same, verdict.Clean, true)
	record(b, verdict.Malicious, false) // not a recheck
	if p := pending(); len(p) != 0 {
		t.Fatalf("pending before any flip: %v", p)
	}
	record(a, verdict.Suspicious, true)
	record(a, verdict.Malicious, true) // flipped again before the announcement
	if p := pending(); len(p) != 1 || p[a] != verdict.Clean {
		t.Fatalf("pending: %v; want a, from clean", p)
	}
	fs, _ := db.PendingFlips(10)
	if fs[0].Target.Level != verdict.Malicious {
		t.Fatalf("the pending flip's target: %+v", fs[0].Target)
	}
	must(t, db.FlipAnnounced(a, verdict.Suspicious)) // an older announcement
	if p := pending(); len(p) != 1 {
		t.Fatalf("announcing an older level forgot the flip: %v", p)
	}
	must(t, db.FlipAnnounced(a, verdict.Malicious))
	if p := pending(); len(p) != 0 {
		t.Fatalf("still pending after its announcement: %v", p)
	}
	must(t, db.FlipAnnounced("https://never.test/", verdict.Clean)) // unknown: no error
}
