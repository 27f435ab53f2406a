package pg_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
	"github.com/verdictbot/verdictbot/store/storetest"
)

// schema11Card is a card record as the code of schema 11 (commit c4c4db9,
// before issue 24) marshals it: no "team".
const schema11Card = `{"card":{"channel":"C1","thread_ts":"1764322200.000100","source_ts":"1764322200.000100","card_ts":"1764322201.000200","poster":"U1","final":true,"lines":[{"kind":"url","target":"https://evil.test/login?x=1","level":5,"category":"phishing","scores":null,"service":"reputation","task_id":"rt-1","checked_at":"2026-11-28T09:30:00Z","reports":null}],"skipped":null,"max_links":10,"notes":null},"mode":"verbose","gen":1,"updated":"2026-11-28T09:31:00Z"}`

// putCard11 and recordJob11 are the statements with which the code of
// schema 11 writes a card and a job (pg.go's putCard and recordJob at
// commit c4c4db9).
const (
	putCard11 = `INSERT INTO cards (channel, source_ts, card_ts, unfinished, record, updated)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (channel, source_ts) DO UPDATE SET card_ts = excluded.card_ts, unfinished = excluded.unfinished,
			record = excluded.record, updated = excluded.updated`
	recordJob11 = `WITH seen AS (
	INSERT INTO events (event_id, seen_at) SELECT $2, $4 WHERE $2 <> '' ON CONFLICT DO NOTHING RETURNING 1
)
INSERT INTO jobs (kind, event_id, payload, received, owner)
SELECT $1, $2, $3, $5, $6 WHERE $2 = '' OR EXISTS (SELECT 1 FROM seen)
RETURNING id`
)

// fromSchema11: a database of the release before issue 24 (schema 11),
// with a card and a job written as that release writes them, is migrated
// by this code to SchemaVersion (12 when this was written) at Open: the
// card reads with no team, the job is pending, there are no workspaces and
// they can be put; a card written with a team keeps it, until the
// schema-11 code rewrites the record (what a replica of the old release
// does during a rolling upgrade).
func fromSchema11(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	ctx := context.Background()
	if err := pg.MigrateTo(ctx, schemaURL, pg.Options{}, 11); err != nil {
		t.Fatal(err)
	}
	if v, rows := schemaVersion(t, schemaURL); v != 11 || rows != 12 {
		t.Fatalf("before: schema %d (%d rows), want 11", v, rows)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('workspaces') IS NOT NULL`).Scan(&has); err != nil || has {
		t.Fatalf("schema 11 has a workspaces table (%v, %v)", has, err)
	}
	at := time.Date(2026, 11, 28, 9, 31, 0, 0, time.UTC)
	if _, err := conn.Exec(ctx, putCard11, "C1", "1764322200.000100", "1764322201.000200", false, schema11Card, at); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := conn.QueryRow(ctx, recordJob11, "message", "Ev1", []byte(`{"text":"see https://evil.test/login?x=1"}`), at, at, "").Scan(&jobID); err != nil {
		t.Fatal(err)
	}

	db := open(t, schema, pgtest.URL(t), func() time.Time { return at.Add(time.Hour) })
	if v, rows := schemaVersion(t, schemaURL); v != pg.SchemaVersion || rows != pg.SchemaVersion+1 {
		t.Fatalf("after Open: schema %d (%d rows), want %d", v, rows, pg.SchemaVersion)
	}
	ref := card.Ref{Channel: "C1", SourceTS: "1764322200.000100"}
	rec, err := db.Card(ref)
	if err != nil {
		t.Fatal(err)
	}
	if rec.TeamID != "" || rec.Mode != "verbose" || rec.Gen != 1 || !rec.Updated.Equal(at) || rec.Card.CardTS != "1764322201.000200" ||
		len(rec.Card.Lines) != 1 || rec.Card.Lines[0].Target != "https://evil.test/login?x=1" {
		t.Fatalf("card of schema 11: %+v", rec)
	}
	if byTS, err := db.CardByTS("C1", "1764322201.000200"); err != nil || byTS.Ref() != ref {
		t.Fatalf("CardByTS: %v, %v", byTS, err)
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].ID != uint64(jobID) || jobs[0].EventID != "Ev1" || string(jobs[0].Payload) != `{"text":"see https://evil.test/login?x=1"}` {
		t.Fatalf("pending jobs: %+v, %v", jobs, err)
	}
	if fresh, err := db.SeenEvent("Ev1"); err != nil || fresh {
		t.Fatalf("Ev1 is new after the migration (%v, %v): its redelivery would run again", fresh, err)
	}

	if ws, err := db.Workspaces(); err != nil || len(ws) != 0 {
		t.Fatalf("workspaces after the migration: %+v, %v", ws, err)
	}
	w := store.Workspace{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha", Granted: true}
	if err := db.PutWorkspaces([]store.Workspace{w}); err != nil {
		t.Fatal(err)
	}
	w.Changed = at.Add(time.Hour)
	if ws, err := db.Workspaces(); err != nil || !reflect.DeepEqual(ws, []store.Workspace{w}) {
		t.Fatalf("workspaces: %+v, %v; want %+v", ws, err, w)
	}

	// The card written with its team keeps it in the record.
	if _, err := db.UpdateCard(ref, func(rec *store.CardRecord) error { rec.TeamID = "T1"; return nil }); err != nil {
		t.Fatal(err)
	}
	var team string
	if err := conn.QueryRow(ctx, `SELECT record->>'team' FROM cards WHERE channel = 'C1'`).Scan(&team); err != nil || team != "T1" {
		t.Fatalf("the record's team: %q, %v", team, err)
	}
	if rec, err := db.Card(ref); err != nil || rec.TeamID != "T1" {
		t.Fatalf("card with its team: %+v, %v", rec, err)
	}
	// A replica of schema 11 still writes cards on schema 12; the record it
	// writes has no team.
	if _, err := conn.Exec(ctx, putCard11, "C1", "1764322200.000100", "1764322201.000200", false, schema11Card, at); err != nil {
		t.Fatalf("schema 11's card write on schema 12: %v", err)
	}
	if rec, err := db.Card(ref); err != nil || rec.TeamID != "" {
		t.Fatalf("card rewritten by schema 11: %+v, %v", rec, err)
	}
}

// schema12Card is a card record as the code of schema 12 (commit dc4009d,
// before issue 25) marshals it: a card reached through workspace T1.
const schema12Card = `{"card":{"channel":"C1","thread_ts":"1764408600.000100","source_ts":"1764408600.000100","card_ts":"1764408601.000200","poster":"U1","final":true,"lines":[{"kind":"url","target":"https://evil.test/login?x=1","level":5,"category":"phishing","scores":null,"service":"reputation","task_id":"rt-1","checked_at":"2026-11-29T09:30:00Z","reports":null}],"skipped":null,"max_links":10,"notes":null},"mode":"verbose","team":"T1","gen":1,"updated":"2026-11-29T09:31:00Z"}`

// putWorkspace12 is the statement with which the code of schema 12 writes
// a workspace (workspaces.go's putWorkspace at commit dc4009d); its card
// write is putCard11, unchanged in schema 12.
const putWorkspace12 = `
INSERT INTO workspaces AS w (team_id, enterprise_id, name, domain, granted, changed)
	VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (team_id) DO UPDATE
	SET enterprise_id = excluded.enterprise_id, name = excluded.name, domain = excluded.domain,
		granted = excluded.granted,
		changed = CASE WHEN w.granted = excluded.granted THEN w.changed ELSE excluded.changed END`

// fromSchema12: a database of the release before issue 25 (schema 12),
// with a card of a workspace, the workspace and a job written as that
// release writes them, is migrated by this code to SchemaVersion (13 when
// this was written) at Open: the card
// reads with its team, the workspace and the pending job are there, there
// are no user reports, and a message reported gathers its reporters, gets
// a triage card, is found by it and by its reporters, and is pruned. The
// release of schema 12 still writes its card and its workspace on 13.
func fromSchema12(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	ctx := context.Background()
	if err := pg.MigrateTo(ctx, schemaURL, pg.Options{}, 12); err != nil {
		t.Fatal(err)
	}
	if v, rows := schemaVersion(t, schemaURL); v != 12 || rows != 13 {
		t.Fatalf("before: schema %d (%d rows), want 12", v, rows)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('user_reports') IS NOT NULL OR to_regclass('user_report_reporters') IS NOT NULL`).Scan(&has); err != nil || has {
		t.Fatalf("schema 12 has a user reports table (%v, %v)", has, err)
	}
	at := time.Date(2026, 11, 29, 9, 31, 0, 0, time.UTC)
	const source, cardTS = "1764408600.000100", "1764408601.000200"
	if _, err := conn.Exec(ctx, putCard11, "C1", source, cardTS, false, schema12Card, at); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, putWorkspace12, "T1", "E1", "Alpha", "alpha", true, at); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := conn.QueryRow(ctx, recordJob11, "message", "Ev1", []byte(`{"text":"see https://evil.test/login?x=1"}`), at, at, "").Scan(&jobID); err != nil {
		t.Fatal(err)
	}

	clock := &storetest.Clock{}
	clock.Set(at.Add(time.Hour))
	db := open(t, schema, pgtest.URL(t), clock.Now)
	if v, rows := schemaVersion(t, schemaURL); v != pg.SchemaVersion || rows != pg.SchemaVersion+1 {
		t.Fatalf("after Open: schema %d (%d rows), want %d", v, rows, pg.SchemaVersion)
	}
	ref := card.Ref{Channel: "C1", SourceTS: source}
	rec, err := db.Card(ref)
	if err != nil {
		t.Fatal(err)
	}
	if rec.TeamID != "T1" || rec.Mode != "verbose" || rec.Gen != 1 || !rec.Updated.Equal(time.Date(2026, 11, 29, 9, 31, 0, 0, time.UTC)) ||
		rec.Card.CardTS != cardTS || len(rec.Card.Lines) != 1 || rec.Card.Lines[0].Target != "https://evil.test/login?x=1" {
		t.Fatalf("card of schema 12: %+v", rec)
	}
	w := store.Workspace{TeamID: "T1", EnterpriseID: "E1", Name: "Alpha", Domain: "alpha", Granted: true, Changed: at}
	if ws, err := db.Workspaces(); err != nil || !reflect.DeepEqual(ws, []store.Workspace{w}) {
		t.Fatalf("workspaces of schema 12: %+v, %v; want %+v", ws, err, w)
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].ID != uint64(jobID) || jobs[0].EventID != "Ev1" {
		t.Fatalf("pending jobs: %+v, %v", jobs, err)
	}

	// No reports; then the message is reported, twice, and triaged.
	if _, err := db.UserReport("C1", source); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a user report after the migration: %v", err)
	}
	if reps, err := db.UserReportsBy("U2", 10); err != nil || len(reps) != 0 {
		t.Fatalf("UserReportsBy after the migration: %+v, %v", reps, err)
	}
	rep, added, err := db.AddUserReport("C1", source, store.Reporter{User: "U2", Via: "shortcut"}, func(rep *store.UserReport) {
		rep.Author, rep.AuthorTeam = rec.Card.Poster, rec.TeamID
	})
	if err != nil || !added || rep.Author != "U1" || rep.AuthorTeam != "T1" || len(rep.Reporters) != 1 {
		t.Fatalf("first report: %+v, %v, %v", rep, added, err)
	}
	clock.Add(time.Minute)
	if rep, added, err = db.AddUserReport("C1", source, store.Reporter{User: "U3", Via: "reaction"}, nil); err != nil || !added || len(rep.Reporters) != 2 {
		t.Fatalf("second report: %+v, %v, %v", rep, added, err)
	}
	if _, err := db.UpdateUserReport("C1", source, func(rep *store.UserReport) error {
		rep.TriageChannel, rep.TriageTS = "CSEC", "1764412300.000001"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.UserReportByTriage("CSEC", "1764412300.000001"); err != nil || got.TS != source || got.Author != "U1" ||
		len(got.Reporters) != 2 || got.Reporters[0].User != "U2" || got.Reporters[1].User != "U3" {
		t.Fatalf("by its triage card: %+v, %v", got, err)
	}
	if n, err := db.UserReportsSince("U3", at); err != nil || n != 1 {
		t.Fatalf("UserReportsSince: %d, %v", n, err)
	}

	// The release of schema 12 still writes its records on 13.
	if _, err := conn.Exec(ctx, putCard11, "C1", source, cardTS, false, schema12Card, at); err != nil {
		t.Fatalf("schema 12's card write on 13: %v", err)
	}
	if _, err := conn.Exec(ctx, putWorkspace12, "T1", "E1", "Alpha", "alpha", false, at.Add(time.Hour)); err != nil {
		t.Fatalf("schema 12's workspace write on 13: %v", err)
	}
	if ws, err := db.Workspaces(); err != nil || len(ws) != 1 || ws[0].Granted {
		t.Fatalf("workspace written by schema 12 on 13: %+v, %v", ws, err)
	}

	// Retention removes the report, and its reporters with it.
	clock.Add(40 * 24 * time.Hour)
	st, err := db.Prune(clock.Now().Add(-30 * 24 * time.Hour))
	if err != nil || st.UserReports != 1 {
		t.Fatalf("Prune: %+v, %v; want 1 user report", st, err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM user_report_reporters`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("reporters left after their report was pruned: %d, %v", left, err)
	}
}

// addUserReport13 and addReporter13 are the statements with which the code
// of schema 13 creates a user report and adds a reporter (userreports.go
// at commit a9ab7f0).
const (
	addUserReport13 = `INSERT INTO user_reports (channel, ts, created, updated) VALUES ($1, $2, $3, $3)
				ON CONFLICT (channel, ts) DO NOTHING`
	addReporter13 = `INSERT INTO user_report_reporters (channel, ts, user_id, at, via, told) VALUES ($1, $2, $3, $4, $5, $6)`
)

// fromSchema13: a database of the release before the backfills of issue
// 25 (schema 13), with a user report and a job written as that release
// writes them, is migrated by this code to 14 at Open: the report and the
// pending job are there, there are no backfills, and a backfill is
// started, refused a second start, updated, claimed (once), listed while
// running, and pruned once done. The release of schema 13 still writes its
// user reports on 14.
func fromSchema13(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	ctx := context.Background()
	if err := pg.MigrateTo(ctx, schemaURL, pg.Options{}, 13); err != nil {
		t.Fatal(err)
	}
	if v, rows := schemaVersion(t, schemaURL); v != 13 || rows != 14 {
		t.Fatalf("before: schema %d (%d rows), want 13", v, rows)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('backfills') IS NOT NULL`).Scan(&has); err != nil || has {
		t.Fatalf("schema 13 has a backfills table (%v, %v)", has, err)
	}
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	const source = "1764493200.000100"
	if _, err := conn.Exec(ctx, addUserReport13, "C1", source, at); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, addReporter13, "C1", source, "U2", at, "shortcut", false); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := conn.QueryRow(ctx, recordJob11, "message", "Ev1", []byte(`{"text":"see https://evil.test/login?x=1"}`), at, at, "").Scan(&jobID); err != nil {
		t.Fatal(err)
	}

	clock := &storetest.Clock{}
	clock.Set(at.Add(time.Hour))
	db := open(t, schema, pgtest.URL(t), clock.Now)
	if v, rows := schemaVersion(t, schemaURL); v != pg.SchemaVersion || rows != pg.SchemaVersion+1 {
		t.Fatalf("after Open: schema %d (%d rows), want %d", v, rows, pg.SchemaVersion)
	}
	if rep, err := db.UserReport("C1", source); err != nil || len(rep.Reporters) != 1 || rep.Reporters[0].User != "U2" || !rep.Created.Equal(at) {
		t.Fatalf("user report of schema 13: %+v, %v", rep, err)
	}
	jobs, err := db.PendingJobs()
	if err != nil || len(jobs) != 1 || jobs[0].ID != uint64(jobID) || jobs[0].EventID != "Ev1" {
		t.Fatalf("pending jobs: %+v, %v", jobs, err)
	}

	// No backfills; then one is started, refused again, updated, claimed.
	if _, err := db.Backfill("C1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a backfill after the migration: %v", err)
	}
	if bs, err := db.RunningBackfills(); err != nil || len(bs) != 0 {
		t.Fatalf("RunningBackfills after the migration: %+v, %v", bs, err)
	}
	now := clock.Now()
	b, ok, err := db.StartBackfill(store.Backfill{Channel: "C1", Since: now.Add(-7 * 24 * time.Hour), Until: now, StartedBy: "UADMIN"})
	if err != nil || !ok || b.State != store.BackfillRunning || !b.Created.Equal(now) {
		t.Fatalf("start: %+v, %v, %v", b, ok, err)
	}
	if b, ok, err = db.StartBackfill(store.Backfill{Channel: "C1", Since: now, Until: now}); err != nil || ok || b.StartedBy != "UADMIN" {
		t.Fatalf("second start: %+v, %v, %v", b, ok, err)
	}
	if b, err = db.UpdateBackfill("C1", func(b *store.Backfill) error { b.Cursor, b.Pages, b.Messages = "next", 1, 200; return nil }); err != nil {
		t.Fatal(err)
	}
	if b, ok, err = db.ClaimBackfill("C1", "A", now, now.Add(time.Minute)); err != nil || !ok || b.Owner != "A" || b.Cursor != "next" || b.Messages != 200 {
		t.Fatalf("claim by A: %+v, %v, %v", b, ok, err)
	}
	if _, ok, err = db.ClaimBackfill("C1", "B", now.Add(time.Second), now.Add(time.Minute)); err != nil || ok {
		t.Fatalf("claim by B during A's: %v, %v", ok, err)
	}
	if bs, err := db.RunningBackfills(); err != nil || len(bs) != 1 || bs[0].Owner != "A" {
		t.Fatalf("RunningBackfills: %+v, %v", bs, err)
	}

	// The release of schema 13 still writes its user reports on 14.
	if _, err := conn.Exec(ctx, addReporter13, "C1", source, "U3", at.Add(time.Minute), "reaction", false); err != nil {
		t.Fatalf("schema 13's reporter write on 14: %v", err)
	}
	if rep, err := db.UserReport("C1", source); err != nil || len(rep.Reporters) != 2 {
		t.Fatalf("user report written by schema 13 on 14: %+v, %v", rep, err)
	}

	// Done, then pruned 40 days on.
	if _, err := db.UpdateBackfill("C1", func(b *store.Backfill) error { b.State = store.BackfillDone; return nil }); err != nil {
		t.Fatal(err)
	}
	clock.Add(40 * 24 * time.Hour)
	st, err := db.Prune(clock.Now().Add(-30 * 24 * time.Hour))
	if err != nil || st.Backfills != 1 {
		t.Fatalf("Prune: %+v, %v; want 1 backfill", st, err)
	}
	if _, err := db.Backfill("C1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the done backfill after Prune: %v", err)
	}
}

// fromSchema14: a database of the release before the shared report claims
// (schema 14), with a backfill under way as that release writes it, is
// migrated by this code to 15 at Open: the backfill is there and
// resumable, there are no claims, and a report's claim is one holder's at
// a time, across two handles on the database (two replicas).
func fromSchema14(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	ctx := context.Background()
	if err := pg.MigrateTo(ctx, schemaURL, pg.Options{}, 14); err != nil {
		t.Fatal(err)
	}
	if v, rows := schemaVersion(t, schemaURL); v != 14 || rows != 15 {
		t.Fatalf("before: schema %d (%d rows), want 14", v, rows)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('report_claims') IS NOT NULL`).Scan(&has); err != nil || has {
		t.Fatalf("schema 14 has a report_claims table (%v, %v)", has, err)
	}
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if _, err := conn.Exec(ctx, `INSERT INTO backfills (channel, since_at, until_at, started_by, state, next_cursor, pages, messages, created, updated)
		VALUES ('C1', $1, $2, 'UADMIN', 'running', 'cur2', 1, 200, $2, $2)`, at.Add(-7*24*time.Hour), at); err != nil {
		t.Fatal(err)
	}

	clock := &storetest.Clock{}
	clock.Set(at.Add(time.Minute))
	db := open(t, schema, pgtest.URL(t), clock.Now)
	other := open(t, schema, pgtest.URL(t), clock.Now)
	if v, rows := schemaVersion(t, schemaURL); v != pg.SchemaVersion || rows != pg.SchemaVersion+1 {
		t.Fatalf("after Open: schema %d (%d rows), want %d", v, rows, pg.SchemaVersion)
	}
	if b, ok, err := db.ClaimBackfill("C1", "A", clock.Now(), clock.Now().Add(time.Minute)); err != nil || !ok || b.Cursor != "cur2" || b.Messages != 200 {
		t.Fatalf("the backfill of schema 14: %+v, %v, %v", b, ok, err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM report_claims`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("claims after the migration: %d, %v", n, err)
	}
	const key = "T1|fp|phishing"
	if ok, err := db.ClaimReport(key, "r1/U1", time.Minute); err != nil || !ok {
		t.Fatalf("first claim: %v, %v", ok, err)
	}
	if ok, err := other.ClaimReport(key, "r2/U2", time.Minute); err != nil || ok {
		t.Fatalf("the other replica's claim while the first holds: %v, %v", ok, err)
	}
	if err := db.ReleaseReport(key, "r1/U1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.ClaimReport(key, "r2/U2", time.Minute); err != nil || !ok {
		t.Fatalf("the other replica's claim after the release: %v, %v", ok, err)
	}
}

// fromSchema15: a database of the release before the stale cards kept in
// the database (schema 15), with a final card written as that release
// writes it, is migrated by this code to 16 at Open: the card can be
// marked stale and is listed, another handle (a replica) sees the mark,
// and deleting the card deletes its mark.
func fromSchema15(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	ctx := context.Background()
	if err := pg.MigrateTo(ctx, schemaURL, pg.Options{}, 15); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var has bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('stale_cards') IS NOT NULL`).Scan(&has); err != nil || has {
		t.Fatalf("schema 15 has a stale_cards table (%v, %v)", has, err)
	}
	at := time.Date(2026, 11, 28, 9, 31, 0, 0, time.UTC)
	if _, err := conn.Exec(ctx, putCard11, "C1", "1764322200.000100", "1764322201.000200", false, schema11Card, at); err != nil {
		t.Fatal(err)
	}

	clock := &storetest.Clock{}
	clock.Set(at.Add(time.Minute))
	db := open(t, schema, pgtest.URL(t), clock.Now)
	other := open(t, schema, pgtest.URL(t), clock.Now)
	if v, _ := schemaVersion(t, schemaURL); v != pg.SchemaVersion {
		t.Fatalf("after Open: schema %d, want %d", v, pg.SchemaVersion)
	}
	ref := card.Ref{Channel: "C1", SourceTS: "1764322200.000100"}
	if err := db.MarkCardStale(ref, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if kept, err := other.StaleCards(10); err != nil || len(kept) != 1 || kept[0].Ref != ref || !kept[0].Since.Equal(clock.Now()) {
		t.Fatalf("the other replica's stale cards: %+v, %v", kept, err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM cards WHERE channel = 'C1'`); err != nil {
		t.Fatal(err)
	}
	if kept, err := other.StaleCards(10); err != nil || len(kept) != 0 {
		t.Fatalf("stale cards after the card was deleted: %+v, %v", kept, err)
	}
}
