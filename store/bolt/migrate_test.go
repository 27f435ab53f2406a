package bolt

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// openV1Fixture copies testdata/v1.db (a store written by the code before
// issue 12, schema 1; see testdata/README) into a fresh directory and opens it.
func openV1Fixture(t *testing.T) (*DB, string) {
	t.Helper()
	return openFixture(t, "testdata/v1.db")
}

// openFixture copies a store file of testdata into a fresh directory and
// opens it.
func openFixture(t *testing.T, file string) (*DB, string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{Now: func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatalf("open the store %s: %v", file, err)
	}
	return db, dir
}

// The values below are those testdata/gen_v1_test.go.txt wrote.
var (
	v1At  = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	v1URL = "https://evil.test/login?x=1"
	v1Ref = card.Ref{Channel: "C1", SourceTS: "1700000000.000100"}
)

func v1Card1() card.Card {
	return card.Card{Channel: "C1", ThreadTS: "1700000000.000100", SourceTS: "1700000000.000100", CardTS: "1700000001.000200",
		Poster: "U1", Final: true, LeftOut: 2, MaxLinks: 10, Notes: []string{"Rechecked 2026-03-01 09:45 UTC: now malicious"},
		Lines: []card.Line{
			{Kind: card.KindURL, Target: v1URL, Level: verdict.Malicious, Category: "phishing",
				Scores: verdict.Scores{"phishing": 0.97, "malware": 0.1}, Service: "reputation", TaskID: "rt-1", Detail: "Sign in",
				QueryNotSent: true, Cached: true, CheckedAt: v1At, Actions: true,
				Reports: []card.Report{{User: "U2", Option: "fp", Category: "phishing", At: v1At.Add(time.Minute), Outcome: "rejected: already reviewed"}}},
			{Kind: card.KindFile, Target: "invoice.zip", Level: verdict.Suspicious, Service: "sandbox", TaskID: "st-9", CheckedAt: v1At,
				File: &card.FileInfo{Name: "invoice.zip", Type: "zip", Size: 12345, MD5: "md5x", SHA1: "sha1x", SHA256: "sha256x",
					MalScore: 6.5, Family: "Emotet", AddedOn: "2026-03-01 09:00:00", StartedOn: "2026-03-01 09:01:00", DoneOn: "2026-03-01 09:05:00",
					Screenshots: 2, ScreenshotsFailed: true}},
		},
		Skipped: []card.Skip{{Kind: card.KindURL, Target: "https://intra.corp/", Reason: "private or internal host"},
			{Kind: card.KindFile, Target: "notes.canvas", Reason: "not a file the sandbox runs"}},
	}
}

// TestMigrateV1FindsEverything opens a store written by the code before
// issue 12 (cards stored as notify.Card with Go's default JSON keys) and
// finds every record: cards field by field, their ts index, analyses in
// flight, verdict history and the recheck index, reports, channel modes and
// file switches, the allowlist, jobs and seen events.
func TestMigrateV1FindsEverything(t *testing.T) {
	db, dir := openV1Fixture(t)
	defer db.Close()
	checkMigratedFixture(t, db, dir, 1)
}

// TestMigrateV2FindsEverything opens a store written by the code of schema
// 2 (testdata/v2.db: v1.db migrated to schema 2 by that code; targets and
// history keyed by URL, JSON records) and finds every record in schema 4.
func TestMigrateV2FindsEverything(t *testing.T) {
	db, dir := openFixture(t, "testdata/v2.db")
	defer db.Close()
	checkMigratedFixture(t, db, dir, 2)
}

// checkMigratedFixture checks the fixture's records in a store migrated
// from schema from to SchemaVersion (4).
func checkMigratedFixture(t *testing.T, db *DB, dir string, from int) {
	if _, err := os.Stat(filepath.Join(dir, FileName+".schema"+strconv.Itoa(from)+".bak")); err != nil {
		t.Errorf("no backup before the migration: %v", err)
	}
	var schema string
	_ = db.be.view(func(t txn) error { schema = string(t.get(bMeta, "schema")); return nil })
	if schema != strconv.Itoa(SchemaVersion) || SchemaVersion != 4 {
		t.Errorf("schema after migration = %q, want %d", schema, SchemaVersion)
	}
	// Schema 3: no history bucket (history lives in the target records),
	// one id per target and the id sequence in meta. Schema 4: the
	// targets' cards in target_cards.
	want := map[string]int{"allow": 2, "analyses": 3, "backfills": 0, "card_ts": 2, "cards": 3, "channel_files": 1, "channel_quarantine": 0, "channels": 2, "check_claims": 0, "deferred": 0, "deferred_at": 0, "due": 1, "durations": 0,
		"event_times": 1, "events": 1, "ids": 2, "jobs": 1, "meta": 2, "pending_flips": 0, "quarantined": 0, "quarantined_times": 0, "removal_batches": 0, "removals": 0, "reports": 2, "stale_cards": 0, "target_cards": 2, "targets": 2, "tasks": 5,
		"user_report_triage": 0, "user_reports": 0, "user_reports_by": 0, "workspaces": 0}
	if got := db.Counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts after migration:\n got %v\nwant %v", got, want)
	}

	// Cards.
	rec, err := db.Card(v1Ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := v1Card1(); !reflect.DeepEqual(rec.Card, want) {
		t.Errorf("card C1 after migration:\n got %+v\nwant %+v", rec.Card, want)
	}
	if rec.Mode != "verbose" || rec.Gen != 2 || rec.PostStarted || rec.Deleted || rec.Updated.IsZero() {
		t.Errorf("card C1 record: mode %q gen %d post_started %v deleted %v updated %v", rec.Mode, rec.Gen, rec.PostStarted, rec.Deleted, rec.Updated)
	}
	if byTS, err := db.CardByTS("C1", "1700000001.000200"); err != nil || byTS.Ref() != v1Ref {
		t.Errorf("CardByTS: %v %v", byTS, err)
	}
	unfinished, err := db.UnfinishedCards()
	if err != nil || len(unfinished) != 1 {
		t.Fatalf("unfinished cards: %d, %v", len(unfinished), err)
	}
	c2 := unfinished[0]
	if c2.Ref() != (card.Ref{Channel: "C2", SourceTS: "1700000100.000300"}) || !c2.PostStarted || c2.Mode != "quiet" || c2.Card.RequestedBy != "U3" ||
		len(c2.Card.Lines) != 1 || c2.Card.Lines[0].Status != "running" || c2.Card.Lines[0].Level != verdict.Pending || c2.Card.Lines[0].TaskID != "rt-2" {
		t.Errorf("unfinished card: %+v", c2)
	}
	c3, err := db.Card(card.Ref{Channel: "C1", SourceTS: "1700000200.000400"})
	if err != nil || !c3.Deleted || c3.Card.Lines[0].Problem != "The service did not answer." || c3.Card.Lines[0].Level != verdict.Unknown ||
		!reflect.DeepEqual(c3.Card.Notes, []string{"The message was deleted."}) {
		t.Errorf("deleted card: %+v, %v", c3, err)
	}
	recent, err := db.RecentCards("C1", 10)
	if err != nil || len(recent) != 2 || recent[0].Card.SourceTS != "1700000200.000400" {
		t.Errorf("recent cards of C1: %d, %v", len(recent), err)
	}
	if cards, err := db.CardsOfTask("st-9"); err != nil || len(cards) != 1 || cards[0].Ref() != v1Ref {
		t.Errorf("cards of task st-9: %v, %v", cards, err)
	}

	// Analyses in flight.
	if a, err := db.Analysis("reputation", "https://slow.test/"); err != nil || a.TaskID != "rt-2" || !a.SubmittedAt.Equal(v1At) {
		t.Errorf("URL analysis: %+v, %v", a, err)
	}
	if a, err := db.Analysis("sandbox", "sha256-inflight"); err != nil || a.TaskID != "st-10,st-11" {
		t.Errorf("file analysis: %+v, %v", a, err)
	}
	if a, err := db.Analysis("reputation", "https://intent.test/"); err != nil || a.TaskID != "" {
		t.Errorf("submission intent: %+v, %v", a, err)
	}

	// Verdict history, targets, the recheck index and the task index.
	hist, err := db.History(v1URL)
	if err != nil || len(hist) != 2 || hist[0].TaskID != "rt-0" || hist[1].Level != verdict.Malicious || hist[1].Source != "recheck" ||
		hist[1].Scores["phishing"] != 0.97 {
		t.Errorf("URL history: %+v, %v", hist, err)
	}
	tg, err := db.Target(v1URL)
	if err != nil || tg.Kind != "url" || tg.Level != verdict.Malicious || tg.Rechecks != 1 || tg.TaskID != "rt-1" ||
		!reflect.DeepEqual(tg.Cards, []card.Ref{v1Ref}) || !tg.NextCheck.Equal(tg.FirstSeen.Add(24*time.Hour)) {
		t.Errorf("URL target: %+v, %v", tg, err)
	}
	due, err := db.Due(v1At.Add(48*time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].Target != v1URL {
		t.Errorf("due: %+v, %v", due, err)
	}
	fhist, err := db.History("sha256x")
	if err != nil || len(fhist) != 1 || fhist[0].Kind != "file" || fhist[0].MalScore != 6.5 || fhist[0].Family != "Emotet" {
		t.Errorf("file history: %+v, %v", fhist, err)
	}
	if target, err := db.TargetOfTask("rt-1"); err != nil || target != v1URL {
		t.Errorf("target of rt-1: %q, %v", target, err)
	}

	// Reports.
	reps, err := db.Reports(v1URL)
	if err != nil || len(reps) != 2 || reps[0].User != "U2" || reps[0].Outcome != "rejected: already reviewed" ||
		reps[1].Option != "restore" || reps[1].Card != v1Ref {
		t.Errorf("reports: %+v, %v", reps, err)
	}

	// Channel policy and the allowlist.
	for ch, mode := range map[string]string{"C1": "verbose", "C2": "quiet"} {
		if got, err := db.ChannelMode(ch); err != nil || got != mode {
			t.Errorf("mode of %s = %q, %v; want %q", ch, got, err, mode)
		}
	}
	if got, err := db.ChannelFiles("C1"); err != nil || got != "off" {
		t.Errorf("files switch of C1 = %q, %v", got, err)
	}
	allow, err := db.AllowList()
	if err != nil || len(allow) != 2 || allow[0].Domain != "corp.test" || allow[0].By != "U8" || allow[1].Domain != "example.org" {
		t.Errorf("allowlist: %+v, %v", allow, err)
	}

	// Jobs and seen events.
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].Kind != "message" || jobs[0].EventID != "Ev1" ||
		!bytes.Contains(jobs[0].Payload, []byte("https://evil.test/login?x=1")) {
		t.Errorf("pending jobs: %+v, %v", jobs, err)
	}
	if fresh, err := db.SeenEvent("Ev1"); err != nil || fresh {
		t.Errorf("event Ev1 is new after the migration (%v, %v): a redelivery would run again", fresh, err)
	}

	// The card is now stored in schema 2's JSON format, deflated (schema 3).
	var stored []byte
	_ = db.be.view(func(t txn) error { stored = t.get(bCards, v1Ref.Key()); return nil })
	if len(stored) == 0 || stored[0] != cardMagic {
		t.Fatalf("migrated card is not deflated: %q", stored)
	}
	raw, err := io.ReadAll(flate.NewReaderDict(bytes.NewReader(stored[1:]), cardDict))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct {
		Card map[string]json.RawMessage `json:"card"`
	}
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"source_ts", "card_ts", "thread_ts", "lines", "max_links"} {
		if _, ok := keys.Card[k]; !ok {
			t.Errorf("migrated card lacks key %q: %s", k, raw)
		}
	}
	if strings.Contains(string(raw), `"SourceTS"`) || strings.Contains(string(raw), `"MalScore"`) {
		t.Errorf("migrated card still holds schema 1 keys: %s", raw)
	}
}

// TestMigratedStoreReopens: a migrated store opens again as it is (no
// second migration, no second backup) and keeps its cards.
func TestMigratedStoreReopens(t *testing.T) {
	db, dir := openV1Fixture(t)
	db.Close()
	bak := filepath.Join(dir, FileName+".schema1.bak")
	before, _ := os.Stat(bak)
	os.Remove(bak)
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, err := os.Stat(bak); before == nil || err == nil {
		t.Errorf("reopening a schema 2 store migrated again (backup written)")
	}
	if rec, err := db2.Card(v1Ref); err != nil || !reflect.DeepEqual(rec.Card, v1Card1()) {
		t.Errorf("card after reopen: %+v, %v", rec, err)
	}
}

// TestCardRoundTrip: a card saved by this code reads back identical, every
// field included (a tag lost or mistyped would drop one).
func TestCardRoundTrip(t *testing.T) {
	db := Memory(Options{})
	want := v1Card1()
	want.RequestedBy, want.ConfirmedBy, want.FromHistory = "U7", "U8", true
	want.Lines[0].Status, want.Lines[0].Problem = "reporting", "p"
	want.Lines[0].Signals = []card.Signal{{Kind: "lookalike", Reason: "looks like okta.com (one letter differs)", Level: verdict.Suspicious}}
	want.Lines[0].ServiceLevel, want.Lines[0].Via = verdict.Clean, "poster.png"
	want.Lines[0].Reports[0].TaskID = "t-older"
	f := *want.Lines[1].File
	f.ID, f.ScreenshotsWithheld = "F0123", true
	want.Lines[0].File = &f
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	want.Quarantine = &card.Quarantine{State: card.QuarantineReleased, Level: verdict.Malicious, At: at, Files: true,
		Names: []string{"invoice.zip"}, Problem: "p", ReleasedBy: "U9", ReleasedAt: at.Add(time.Minute)}
	if err := db.PutCard(&store.CardRecord{Card: want, Mode: "verbose", Gen: 3}); err != nil {
		t.Fatal(err)
	}
	rec, err := db.Card(v1Ref)
	if err != nil || !reflect.DeepEqual(rec.Card, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", rec.Card, want)
	}
	// Every field of the model is set above: a zero field would not prove
	// that it is stored.
	checkAllSet(t, reflect.ValueOf(want), "Card")
}

func checkAllSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if _, ok := v.Interface().(time.Time); ok {
			if v.Interface().(time.Time).IsZero() {
				t.Errorf("%s is zero", path)
			}
			return
		}
		for i := range v.NumField() {
			checkAllSet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("%s is empty", path)
		}
		for i := range v.Len() {
			// only the first element of each slice must be complete
			if i == 0 {
				checkAllSet(t, v.Index(i), path+"[0]")
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			t.Errorf("%s is nil", path)
			return
		}
		checkAllSet(t, v.Elem(), path)
	default:
		if v.IsZero() {
			t.Errorf("%s is zero", path)
		}
	}
}

// The values below are those testdata/gen_v3_test.go.txt wrote.
var (
	v3At  = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	v3URL = "https://evil.test/login?x=1"
	v3Ref = card.Ref{Channel: "C1", SourceTS: "1764322200.000100"}
)

func v3Card() card.Card {
	return card.Card{Channel: "C1", ThreadTS: "1764322200.000100", SourceTS: "1764322200.000100", CardTS: "1764322201.000200",
		Poster: "U1", Final: true, MaxLinks: 10,
		Lines: []card.Line{{Kind: card.KindURL, Target: v3URL, Level: verdict.Malicious, Category: "phishing",
			Scores: verdict.Scores{"phishing": 0.97}, Service: "reputation", TaskID: "rt-1", CheckedAt: v3At, Actions: true}}}
}

// TestV3FileOfBeforeIssue24GetsWorkspaces opens a store of schema 3
// written by the code before issue 24 (testdata/v3.db: no workspaces
// bucket, cards without a team) with this code: it is migrated to schema
// 4 (its target's cards leave the record), its card reads with no team, its job, target and durations are there, it
// has no workspaces; a workspace put and a card given a team are found
// after the store is reopened.
func TestV3FileOfBeforeIssue24GetsWorkspaces(t *testing.T) {
	db, dir := openFixture(t, "testdata/v3.db")
	defer func() { db.Close() }()
	var hasBucket bool
	_ = db.be.view(func(t txn) error { hasBucket = t.(boltTxn).tx.Bucket([]byte(bWorkspaces)) != nil; return nil })
	if hasBucket {
		t.Fatal("the fixture has a workspaces bucket: it is not of the code before issue 24")
	}
	checkV3Migrated(t, dir)

	rec, err := db.Card(v3Ref)
	if err != nil {
		t.Fatal(err)
	}
	if rec.TeamID != "" || rec.Mode != "verbose" || rec.Gen != 1 || rec.Updated.IsZero() || !reflect.DeepEqual(rec.Card, v3Card()) {
		t.Fatalf("card: team %q mode %q gen %d updated %v\n got %+v\nwant %+v", rec.TeamID, rec.Mode, rec.Gen, rec.Updated, rec.Card, v3Card())
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].EventID != "Ev1" || string(jobs[0].Payload) != `{"text":"see https://evil.test/login?x=1"}` {
		t.Errorf("pending jobs: %+v, %v", jobs, err)
	}
	tg, err := db.Target(v3URL)
	if err != nil || tg.Level != verdict.Malicious || tg.TaskID != "rt-1" || !reflect.DeepEqual(tg.Cards, []card.Ref{v3Ref}) || tg.NextCheck.IsZero() {
		t.Errorf("target: %+v, %v", tg, err)
	}
	if ds, err := db.Durations("reputation", 64); err != nil || !reflect.DeepEqual(ds, []time.Duration{3 * time.Second, 4 * time.Second}) {
		t.Errorf("durations: %v, %v", ds, err)
	}
	if ws, err := db.Workspaces(); err != nil || len(ws) != 0 {
		t.Fatalf("workspaces: %+v, %v", ws, err)
	}

	w := store.Workspace{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha", Granted: true}
	if err := db.PutWorkspaces([]store.Workspace{w}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateCard(v3Ref, func(rec *store.CardRecord) error { rec.TeamID = "T1"; return nil }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Changed = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // openFixture's clock
	if ws, err := db.Workspaces(); err != nil || len(ws) != 1 || !ws[0].Changed.Equal(w.Changed) {
		t.Fatalf("workspaces after reopening: %+v, %v; want %+v", ws, err, w)
	} else if ws[0].Changed = w.Changed; ws[0] != w {
		t.Fatalf("workspace after reopening: %+v, want %+v", ws[0], w)
	}
	if rec, err := db.Card(v3Ref); err != nil || rec.TeamID != "T1" || !reflect.DeepEqual(rec.Card, v3Card()) {
		t.Fatalf("card after reopening: %+v, %v", rec, err)
	}
	var schema string
	_ = db.be.view(func(t txn) error { schema = string(t.get(bMeta, "schema")); return nil })
	if schema != "4" {
		t.Errorf("schema %q after reopening, want 4", schema)
	}
}

// The values below are those testdata/gen_v3_issue24_test.go.txt wrote.
var v3i24Ref = card.Ref{Channel: "C1", SourceTS: "1764408600.000100"}

func v3i24Card() card.Card {
	at := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	return card.Card{Channel: "C1", ThreadTS: "1764408600.000100", SourceTS: "1764408600.000100", CardTS: "1764408601.000200",
		Poster: "U1", Final: true, MaxLinks: 10,
		Lines: []card.Line{{Kind: card.KindURL, Target: v3URL, Level: verdict.Malicious, Category: "phishing",
			Scores: verdict.Scores{"phishing": 0.97}, Service: "reputation", TaskID: "rt-1", CheckedAt: at, Actions: true}}}
}

// TestV3FileOfIssue24GetsUserReports opens a store of schema 3 written by
// the code of issue 24, before issue 25 (testdata/v3-issue24.db: a card of
// workspace T1, the workspace, no user reports buckets) with this code: it
// is migrated to schema 4, its card, workspace, job and target read as written,
// it has no user reports; a message reported by two users and given a
// triage card is found, by its key, its triage card and its reporters,
// after the store is reopened, schema 4.
func TestV3FileOfIssue24GetsUserReports(t *testing.T) {
	db, dir := openFixture(t, "testdata/v3-issue24.db")
	defer func() { db.Close() }()
	var has []string
	_ = db.be.view(func(t txn) error {
		for _, b := range []string{bUserReports, bUserReportTriage, bUserReportsBy} {
			if t.(boltTxn).tx.Bucket([]byte(b)) != nil {
				has = append(has, b)
			}
		}
		if t.(boltTxn).tx.Bucket([]byte(bWorkspaces)) == nil {
			has = append(has, "no "+bWorkspaces)
		}
		return nil
	})
	if len(has) != 0 {
		t.Fatalf("the fixture is not of the code of issue 24 (%q)", has)
	}
	checkV3Migrated(t, dir)

	rec, err := db.Card(v3i24Ref)
	if err != nil {
		t.Fatal(err)
	}
	if rec.TeamID != "T1" || rec.Mode != "verbose" || rec.Gen != 1 || rec.Updated.IsZero() || !reflect.DeepEqual(rec.Card, v3i24Card()) {
		t.Fatalf("card: team %q mode %q gen %d updated %v\n got %+v\nwant %+v", rec.TeamID, rec.Mode, rec.Gen, rec.Updated, rec.Card, v3i24Card())
	}
	if ws, err := db.Workspaces(); err != nil || len(ws) != 1 || ws[0].TeamID != "T1" || ws[0].Name != "Alpha" || !ws[0].Granted {
		t.Errorf("workspaces: %+v, %v", ws, err)
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].EventID != "Ev1" || string(jobs[0].Payload) != `{"text":"see https://evil.test/login?x=1"}` {
		t.Errorf("pending jobs: %+v, %v", jobs, err)
	}
	if tg, err := db.Target(v3URL); err != nil || tg.Level != verdict.Malicious || !reflect.DeepEqual(tg.Cards, []card.Ref{v3i24Ref}) {
		t.Errorf("target: %+v, %v", tg, err)
	}
	if _, err := db.UserReport("C1", v3i24Ref.SourceTS); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a user report in the fixture: %v", err)
	}
	if n, err := db.UserReportsSince("U2", time.Time{}); err != nil || n != 0 {
		t.Fatalf("UserReportsSince in the fixture: %d, %v", n, err)
	}

	for _, u := range []string{"U2", "U3"} {
		if _, added, err := db.AddUserReport("C1", v3i24Ref.SourceTS, store.Reporter{User: u, Via: "shortcut"}, func(rep *store.UserReport) {
			rep.Author, rep.AuthorTeam = rec.Card.Poster, rec.TeamID
		}); err != nil || !added {
			t.Fatalf("%s reports the message: %v, %v", u, added, err)
		}
	}
	if _, err := db.UpdateUserReport("C1", v3i24Ref.SourceTS, func(rep *store.UserReport) error {
		rep.TriageChannel, rep.TriageTS = "CSEC", "1764412300.000001"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := db.UserReportByTriage("CSEC", "1764412300.000001")
	if err != nil || rep.TS != v3i24Ref.SourceTS || rep.Author != "U1" || rep.AuthorTeam != "T1" || len(rep.Reporters) != 2 ||
		rep.Reporters[0].User != "U2" || rep.Reporters[1].User != "U3" {
		t.Fatalf("the report after reopening, by its triage card: %+v, %v", rep, err)
	}
	if reps, err := db.UserReportsBy("U3", 10); err != nil || len(reps) != 1 || reps[0].TS != v3i24Ref.SourceTS {
		t.Fatalf("the report after reopening, by its reporter: %+v, %v", reps, err)
	}
	if rec, err := db.Card(v3i24Ref); err != nil || rec.TeamID != "T1" {
		t.Fatalf("card after reopening: %+v, %v", rec, err)
	}
	counts := db.Counts()
	if counts[bUserReports] != 1 || counts[bUserReportTriage] != 1 || counts[bUserReportsBy] != 2 || counts[bWorkspaces] != 1 || counts[bCards] != 1 {
		t.Errorf("counts after reopening: %v", counts)
	}
	var schema string
	_ = db.be.view(func(t txn) error { schema = string(t.get(bMeta, "schema")); return nil })
	if schema != "4" {
		t.Errorf("schema %q after reopening, want 4", schema)
	}
}

// TestV3FileOfIssue25GetsBackfills opens a store of schema 3 written by
// the code of issue 25 before its backfills (testdata/v3-issue25.db: a
// card, its workspace, the message reported, no backfills bucket) with
// this code: it is migrated to schema 4, its card, workspace and user
// report read as written, it has no backfills; a backfill started, updated
// and claimed is found running after the store is reopened, schema 4,
// and a second start is refused.
func TestV3FileOfIssue25GetsBackfills(t *testing.T) {
	db, dir := openFixture(t, "testdata/v3-issue25.db")
	defer func() { db.Close() }()
	var has []string
	_ = db.be.view(func(t txn) error {
		if t.(boltTxn).tx.Bucket([]byte(bBackfills)) != nil {
			has = append(has, bBackfills)
		}
		for _, b := range []string{bWorkspaces, bUserReports} {
			if t.(boltTxn).tx.Bucket([]byte(b)) == nil {
				has = append(has, "no "+b)
			}
		}
		return nil
	})
	if len(has) != 0 {
		t.Fatalf("the fixture is not of the code of issue 25 before its backfills (%q)", has)
	}
	checkV3Migrated(t, dir)
	if rec, err := db.Card(v3i24Ref); err != nil || rec.TeamID != "T1" || !reflect.DeepEqual(rec.Card, v3i24Card()) {
		t.Fatalf("card: %+v, %v", rec, err)
	}
	if ws, err := db.Workspaces(); err != nil || len(ws) != 1 || ws[0].TeamID != "T1" {
		t.Errorf("workspaces: %+v, %v", ws, err)
	}
	if rep, err := db.UserReport("C1", v3i24Ref.SourceTS); err != nil || len(rep.Reporters) != 1 || rep.Reporters[0].User != "U2" {
		t.Fatalf("user report: %+v, %v", rep, err)
	}
	if _, err := db.Backfill("C1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a backfill in the fixture: %v", err)
	}
	if bs, err := db.RunningBackfills(); err != nil || len(bs) != 0 {
		t.Fatalf("RunningBackfills in the fixture: %+v, %v", bs, err)
	}

	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // openFixture's clock
	if _, ok, err := db.StartBackfill(store.Backfill{Channel: "C1", Since: now.Add(-24 * time.Hour), Until: now, StartedBy: "UADMIN"}); err != nil || !ok {
		t.Fatalf("start: %v, %v", ok, err)
	}
	if _, err := db.UpdateBackfill("C1", func(b *store.Backfill) error { b.Cursor, b.Pages, b.Messages = "next", 1, 200; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.ClaimBackfill("C1", "A", now, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	db.Close()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := db.RunningBackfills()
	want := store.Backfill{Channel: "C1", Since: now.Add(-24 * time.Hour), Until: now, StartedBy: "UADMIN", State: store.BackfillRunning,
		Cursor: "next", Pages: 1, Messages: 200, Owner: "A", OwnedUntil: now.Add(time.Minute), Created: now, Updated: now}
	if err != nil || len(bs) != 1 || !reflect.DeepEqual(bs[0], want) {
		t.Fatalf("running after reopening: %+v, %v; want %+v", bs, err, want)
	}
	if b, ok, err := db.StartBackfill(store.Backfill{Channel: "C1", Since: now, Until: now}); err != nil || ok || b.Owner != "A" {
		t.Fatalf("second start after reopening: %+v, %v, %v", b, ok, err)
	}
	if rep, err := db.UserReport("C1", v3i24Ref.SourceTS); err != nil || len(rep.Reporters) != 1 {
		t.Fatalf("user report after reopening: %+v, %v", rep, err)
	}
	if counts := db.Counts(); counts[bBackfills] != 1 || counts[bUserReports] != 1 || counts[bCards] != 1 {
		t.Errorf("counts after reopening: %v", counts)
	}
	var schema string
	_ = db.be.view(func(t txn) error { schema = string(t.get(bMeta, "schema")); return nil })
	if schema != "4" {
		t.Errorf("schema %q after reopening, want 4", schema)
	}
}

// checkV3Migrated checks that the schema 3 fixture opened in dir was
// migrated to schema 4 (the targets' cards left their records), with the
// file as it was kept beside it.
func checkV3Migrated(t *testing.T, dir string) {
	t.Helper()
	baks, _ := filepath.Glob(filepath.Join(dir, "*.bak"))
	if want := filepath.Join(dir, FileName+".schema3.bak"); len(baks) != 1 || baks[0] != want {
		t.Errorf("backups %v, want %s", baks, want)
	}
}
