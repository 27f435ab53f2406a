package bolt

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestTargetRecordRoundTrip: every field of Target and Verdict survives the
// binary encoding of schema 3, with odd values (unknown kinds, sources and
// categories, scores not exact to 1e-4, negative and huge floats, zero
// times, task ids that are not 32-character hex). A field added to Target
// or Verdict without being encoded fails here (every field is set).
func TestTargetRecordRoundTrip(t *testing.T) {
	first := time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.UTC)
	rec := targetRecord{
		Target: store.Target{Target: "https://a.test/x?y=1", Kind: "url", FirstSeen: first, Checked: first.Add(time.Hour),
			Level: verdict.Malicious, Category: verdict.CatPhishing, TaskID: "0123456789abcdef0123456789abcdef", Rechecks: 3,
			NextCheck: first.Add(72 * time.Hour)},
		History: []store.Verdict{
			{Kind: "url", TaskID: "0123456789ABCDEF0123456789abcdef", Level: verdict.Clean, Category: "weird",
				Scores:   verdict.Scores{"phishing": 0.123, "malicious": 1.0 / 3, "other": -2.5, "illegal": 0},
				MalScore: 1e300, Family: "f", At: first, Source: "scan"},
			{Kind: "thing", TaskID: "12345", Level: verdict.Level(-1), MalScore: math.SmallestNonzeroFloat64, At: first.Add(-time.Hour), Source: "other"},
			{Kind: "file", TaskID: "", Level: verdict.Suspicious, MalScore: 6.5, Family: "Emotet", At: first.Add(2 * time.Hour), Source: "recheck"},
		},
	}
	for i := range rec.History {
		rec.History[i].Target = rec.Target.Target
	}
	// Deferred has a bucket of its own, and so have the cards (schema 4).
	assertFieldsSet(t, reflect.ValueOf(rec.Target), "Target", "Deferred", "Cards")
	assertFieldsSet(t, reflect.ValueOf(rec.History[0]), "Verdict")
	got, err := decodeTarget(encodeTarget(&rec))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, rec)
	}
	// Zero times and no first-seen time.
	empty := targetRecord{Target: store.Target{Target: "sha256:ff"}}
	if got, err := decodeTarget(encodeTarget(&empty)); err != nil || !reflect.DeepEqual(got, empty) {
		t.Errorf("empty record: %+v, %v", got, err)
	}
	// Truncated and trailing bytes are errors, not panics.
	raw := encodeTarget(&rec)
	for n := range raw {
		if _, err := decodeTarget(raw[:n]); err == nil {
			t.Fatalf("record cut to %d of %d bytes decoded", n, len(raw))
		}
	}
	if _, err := decodeTarget(append(raw, 0)); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("trailing byte: %v", err)
	}
}

// assertFieldsSet fails for a zero field of v but those apart: kept out
// of the record (Target.Deferred has buckets of its own, deferred.go, so
// that a release that knows nothing of it still reads every record).
func assertFieldsSet(t *testing.T, v reflect.Value, name string, apart ...string) {
	t.Helper()
	for i := range v.NumField() {
		if v.Field(i).IsZero() && !slices.Contains(apart, v.Type().Field(i).Name) {
			t.Errorf("%s.%s is zero in the test record: set it, so that its encoding is checked", name, v.Type().Field(i).Name)
		}
	}
}

// TestURLInTargetRecordOnly: in schema 3 a URL is written once, in its
// target record; the ids, due and task index keys and values carry its id.
func TestURLInTargetRecordOnly(t *testing.T) {
	db := Memory(Options{Now: func() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }})
	url := "https://only-once.test/path"
	for i, task := range []string{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"} {
		v := store.Verdict{Target: url, Kind: "url", TaskID: task, Level: verdict.Clean, At: time.Date(2026, 3, 1, i, 0, 0, 0, time.UTC), Source: "scan"}
		if _, _, err := db.RecordVerdict(v, &card.Ref{Channel: "C1", SourceTS: "1.2"}, store.Schedule{time.Hour, 24 * time.Hour}, i > 0); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	_ = db.be.view(func(tx txn) error {
		for _, b := range buckets {
			tx.scan(b, "", "", func(k string, v []byte) bool {
				if strings.Contains(k, url) || strings.Contains(string(v), url) {
					n++
					if b != bTargets {
						t.Errorf("bucket %s holds the URL: %q → %q", b, k, v)
					}
				}
				return true
			})
		}
		return nil
	})
	if n != 1 {
		t.Errorf("the URL is stored %d times, want once", n)
	}
	if got, err := db.TargetOfTask("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"); err != nil || got != url {
		t.Errorf("TargetOfTask: %q, %v", got, err)
	}
	if h, err := db.History(url); err != nil || len(h) != 2 || h[1].TaskID != "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" {
		t.Errorf("History: %+v, %v", h, err)
	}
}

// TestTargetIDCollision: ids whose URLs share an ids key (a sha256 prefix
// collision, forced here) are told apart by their records.
func TestTargetIDCollision(t *testing.T) {
	db := Memory(Options{})
	one, two := "https://one.test/", "https://two.test/"
	var id1, id2 string
	err := db.be.update(func(tx txn) error {
		for _, u := range []string{one, two} {
			id, err := newTargetID(tx, u)
			if err != nil {
				return err
			}
			rec := targetRecord{Target: store.Target{Target: u, Kind: "url"}}
			if err := tx.put(bTargets, id, encodeTarget(&rec)); err != nil {
				return err
			}
			if u == one {
				id1 = id
			} else {
				id2 = id
			}
		}
		// The collision: two's id first under one's key.
		return tx.put(bIDs, idsKey(one), []byte(id2+id1))
	})
	if err != nil {
		t.Fatal(err)
	}
	if tg, err := db.Target(one); err != nil || tg.Target != one {
		t.Errorf("Target(one) after a collision: %+v, %v", tg, err)
	}
	_ = db.be.update(func(tx txn) error {
		if got := targetID(tx, one); got != id1 {
			t.Errorf("id of one = %x, want %x", got, id1)
		}
		if err := dropTargetID(tx, one, id1); err != nil {
			t.Fatal(err)
		}
		if v := tx.get(bIDs, idsKey(one)); string(v) != id2 {
			t.Errorf("ids entry after dropping one: %x, want %x", v, id2)
		}
		return nil
	})
}
