package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestRetentionPrunesTheStoreAfterStart: the bot prunes what is older
// than VERDICTBOT_RETENTION shortly after it starts, logs the counts, and
// keeps what is within the window, on the embedded file.
func TestRetentionPrunesTheStoreAfterStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	retentionAfterStart(t, map[string]string{"VERDICTBOT_DATA_DIR": dir}, func(now func() time.Time) store.State {
		db, err := bolt.Open(dir, bolt.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestRetentionPrunesThePostgresStoreAfterStart: the same with
// VERDICTBOT_DATABASE_URL.
func TestRetentionPrunesThePostgresStoreAfterStart(t *testing.T) {
	t.Parallel()
	schema, schemaURL := pgtest.Schema(t)
	retentionAfterStart(t, map[string]string{"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_DATABASE_URL": schemaURL},
		func(now func() time.Time) store.State {
			db, err := pg.Open(context.Background(), pgtest.URL(t), pg.Options{Now: now, Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			return db
		})
}

// retentionAfterStart seeds a store opened by open (an old and a recent
// card, each with a verdict), starts the bot on it with env and a 30-day
// retention, and checks what the first prune removed.
func retentionAfterStart(t *testing.T, env map[string]string, open func(now func() time.Time) store.State) {
	past := time.Now().Add(-100 * 24 * time.Hour)
	recent := time.Now().Add(-time.Hour)
	var mu sync.Mutex
	at := past
	db := open(func() time.Time { mu.Lock(); defer mu.Unlock(); return at })
	oldRef := card.Ref{Channel: secChannel, SourceTS: fmt.Sprintf("%d.000100", past.Unix())}
	newRef := card.Ref{Channel: secChannel, SourceTS: fmt.Sprintf("%d.000100", recent.Unix())}
	for _, r := range []struct {
		ref    card.Ref
		target string
		when   time.Time
	}{{oldRef, "https://old.example/", past}, {newRef, "https://new.example/", recent}} {
		mu.Lock()
		at = r.when
		mu.Unlock()
		if err := db.PutCard(&store.CardRecord{Card: card.Card{Channel: r.ref.Channel, SourceTS: r.ref.SourceTS, Final: true}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.RecordVerdict(store.Verdict{Target: r.target, Kind: "url", TaskID: "task-" + r.target, Level: verdict.Clean, Source: "scan"}, &r.ref, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	env["VERDICTBOT_RETENTION"] = "720h"
	opts := apptest.QuickPolling()
	opts.FirstPruneDelay = 200 * time.Millisecond
	h := startBotOptions(t, env, sim.Config{}, opts)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.Logs.String(), "retention: pruned the store") {
		if time.Now().After(deadline) {
			t.Fatalf("no prune logged:\n%s", h.Logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	logs := h.Logs.String()
	for _, want := range []string{`"retention":"720h0m0s"`, `"cards":1`, `"verdicts":1`, `"targets":1`} {
		if !strings.Contains(logs, want) {
			t.Errorf("prune log lacks %s:\n%s", want, logs)
		}
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	db = open(time.Now)
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
