package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestRetentionPrunesTheStoreAfterStart: the bot prunes what is older
// than VERDICTBOT_RETENTION shortly after it starts, logs the counts, and
// keeps what is within the window.
func TestRetentionPrunesTheStoreAfterStart(t *testing.T) {
	old := pruneFirstDelay
	pruneFirstDelay = 200 * time.Millisecond
	t.Cleanup(func() { pruneFirstDelay = old })

	dir := t.TempDir()
	past := time.Now().Add(-100 * 24 * time.Hour)
	recent := time.Now().Add(-time.Hour)
	at := past
	db, err := store.Open(dir, store.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	oldRef := store.CardRef{Channel: secChannel, SourceTS: fmt.Sprintf("%d.000100", past.Unix())}
	newRef := store.CardRef{Channel: secChannel, SourceTS: fmt.Sprintf("%d.000100", recent.Unix())}
	for _, r := range []struct {
		ref    store.CardRef
		target string
		when   time.Time
	}{{oldRef, "https://old.example/", past}, {newRef, "https://new.example/", recent}} {
		at = r.when
		if err := db.PutCard(&store.CardRecord{Card: card.Card{Channel: r.ref.Channel, SourceTS: r.ref.SourceTS, Final: true}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.RecordVerdict(store.Verdict{Target: r.target, Kind: "url", TaskID: "task-" + r.target, Level: verdict.Clean, Source: "scan"}, &r.ref, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	h := startBot(t, map[string]string{"VERDICTBOT_DATA_DIR": dir, "VERDICTBOT_RETENTION": "720h"}, sim.Config{})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.logs.String(), "retention: pruned the store") {
		if time.Now().After(deadline) {
			t.Fatalf("no prune logged:\n%s", h.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	logs := h.logs.String()
	for _, want := range []string{`"retention":"720h0m0s"`, `"cards":1`, `"verdicts":1`, `"targets":1`} {
		if !strings.Contains(logs, want) {
			t.Errorf("prune log lacks %s:\n%s", want, logs)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Card(oldRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("card older than the retention: %v, want pruned", err)
	}
	if _, err := db.Target("https://old.example/"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("target older than the retention: %v, want pruned", err)
	}
	if _, err := db.Card(newRef); err != nil {
		t.Errorf("recent card: %v, want kept", err)
	}
	if h, err := db.History("https://new.example/"); err != nil || len(h) != 1 {
		t.Errorf("recent history: %d verdicts, %v", len(h), err)
	}
}
