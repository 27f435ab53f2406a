package deadletter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
)

// deadQueue is a memory store with the bodies queued and each set aside
// as a dead letter, plus one event still queued.
func deadQueue(t *testing.T, bodies ...string) *bolt.DB {
	t.Helper()
	db := bolt.Memory(bolt.Options{})
	t.Cleanup(func() { _ = db.Close() })
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	for _, b := range append(bodies, `{"unmapped":{}}`) {
		seq, _, err := db.EnqueueEvent(func(uint64) ([]byte, error) { return []byte(b), nil }, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b == `{"unmapped":{}}` {
			break // the one left queued
		}
		if err := db.DeadLetterEvent(seq, store.DeadLetter{Failures: 20, Status: 422, Error: "refused", At: at}, store.Fence{}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestListShowsEachDeadLetterOnOneLine(t *testing.T) {
	t.Parallel()
	db := deadQueue(t,
		`{"metadata":{"sequence":1},"unmapped":{"kind":"url","level":"malicious","target":"https://login.phish.test/verify"}}`,
		`{"unmapped":{"kind":"file\u001b[2J","level":"","target":"a\nb"}}`,
		`not json`)
	var out bytes.Buffer
	if err := List(db, 2, &out); err != nil {
		t.Fatal(err)
	}
	want := "events queued: 1\ndead letters: 3\n\n" +
		"SEQ  SET ASIDE (UTC)      REFUSALS  ANSWER  KIND      LEVEL      TARGET\n" +
		"1    2025-03-04 04:06:07  20        422     url       malicious  hxxps://login[.]phish[.]test/verify\n" +
		"2    2025-03-04 04:06:07  20        422     file [2J  -          a b\n" +
		"… and 1 more (--limit)\n"
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "verdictbot events retry SEQ… (or --all).") {
		t.Errorf("got:\n%s\nwant it to start with:\n%s", out.String(), want)
	}

	out.Reset()
	if err := List(deadQueue(t), 10, &out); err != nil || out.String() != "events queued: 1\ndead letters: 0\n" {
		t.Errorf("no dead letters: %q, %v", out.String(), err)
	}
}

func TestRetryQueuesAgainAndNamesTheMissing(t *testing.T) {
	t.Parallel()
	db := deadQueue(t, `{"metadata":{"sequence":1},"unmapped":{}}`, `{"metadata":{"sequence":2},"unmapped":{}}`)
	var out bytes.Buffer
	err := Retry(db, []uint64{2, 9}, 0, &out)
	if err == nil || err.Error() != "not on the dead-letter list: 9 (verdictbot events list shows it)" {
		t.Errorf("err = %v", err)
	}
	if want := "dead letter 2 queued again as 4\n1 event(s) queued again: the bot sends them after the events queued before them\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := Retry(db, nil, 0, &out); err != nil || !strings.HasPrefix(out.String(), "dead letter 1 queued again as 5\n") {
		t.Errorf("--all: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := Retry(db, nil, 0, &out); err != nil || out.String() != "no dead letters: nothing to retry\n" {
		t.Errorf("nothing left: %q, %v", out.String(), err)
	}
}
