package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestStateInPostgresSurvivesARestart runs the real program (one replica)
// with VERDICTBOT_DATABASE_URL: a link gets its card, the process stops,
// a new one starts on the same database, and /scan history still shows the
// verdict. The state is in PostgreSQL, not in VERDICTBOT_DATA_DIR, and the
// URL's password never reaches the logs.
func TestStateInPostgresSurvivesARestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	_, schemaURL := pgtest.Schema(t)
	// The local server trusts its clients, so a password is accepted and
	// ignored: enough to check that it is never printed.
	const pw = "pg-Secret-77"
	if strings.HasPrefix(schemaURL, "postgres://postgres@") {
		schemaURL = strings.Replace(schemaURL, "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
	}
	fake := slackfaketest.Start(t)
	// The analysis ends before the bot's first status check (the
	// simulator's default moves a task one status per poll, and the bot's
	// second poll comes 15 s later).
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickProfile()})
	dataDir := t.TempDir()
	env := map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR": dataDir, "VERDICTBOT_DATABASE_URL": schemaURL, "VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_LOG_LEVEL": "debug", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	first := startProcess(t, env)
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("did not connect: %v\n%s", err, first.logs.String())
	}
	const url = "https://login.pgphish.test/verify"
	srv.FlipOnNextScan(url, sim.Scores{Phishing: 0.97})
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "see <" + url + ">"})
	if err != nil {
		t.Fatal(err)
	}
	cardIsMalicious := func() bool {
		for _, m := range fake.Messages(secChannel, d.TS) {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Malicious") {
				return true
			}
		}
		return false
	}
	for !cardIsMalicious() {
		if ctx.Err() != nil {
			t.Fatalf("no final card\n%s", first.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop(t, first)

	// The state is in the database, not in the data directory.
	if _, err := os.Stat(filepath.Join(dataDir, "verdictbot.db")); !os.IsNotExist(err) {
		t.Errorf("the embedded file was created in VERDICTBOT_DATA_DIR (%v)", err)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var cards, verdicts int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM cards), (SELECT count(*) FROM verdicts WHERE target = $1)`, url).Scan(&cards, &verdicts); err != nil {
		t.Fatal(err)
	}
	if cards != 1 || verdicts != 1 {
		t.Fatalf("in PostgreSQL: %d cards, %d verdicts of the link; want 1 and 1", cards, verdicts)
	}

	second := startProcess(t, env)
	if err := fake.WaitConnected(ctx, 2); err != nil {
		t.Fatalf("second process did not connect: %v\n%s", err, second.logs.String())
	}
	cmd, err := fake.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: "history " + url, UserID: alice, ChannelID: secChannel})
	if err != nil {
		t.Fatal(err)
	}
	answer := ""
	for !strings.Contains(answer, "*malicious*") {
		if ctx.Err() != nil {
			t.Fatalf("/scan history after the restart: %q\n%s", answer, second.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
		answer = ""
		for _, a := range fake.Acks() {
			if a.EnvelopeID == cmd.EnvelopeID && a.Payload != nil {
				var p struct{ Text string }
				json.Unmarshal(a.Payload, &p)
				answer += p.Text
			}
		}
		for _, p := range fake.ResponsePosts() {
			if p.EnvelopeID == cmd.EnvelopeID {
				answer += p.Text
			}
		}
	}
	stop(t, second)
	for _, m := range fake.Messages(secChannel, d.TS) {
		if m.Bot && m.TS != "" {
			cards++
		}
	}
	if cards != 2 { // the one counted in the database, and the one in the thread
		t.Errorf("%d cards in the thread after the restart, want 1", cards-1)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Errorf("%d submissions of one link", n)
	}
	logs := first.logs.String() + second.logs.String()
	if !strings.Contains(logs, "state in PostgreSQL") {
		t.Error("the processes did not log that the state is in PostgreSQL")
	}
	for _, secret := range []string{pw, fake.BotToken(), fake.AppToken(), e2eKey} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret (%.4s…) appears in the logs", secret)
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func stop(t testing.TB, p *process) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("did not exit within 15 s of SIGTERM\n%s", p.logs.String())
	}
}

// verdictbot migrate migrates alone and prints the schema version, on the
// file and on PostgreSQL; a database newer than the binary is refused with
// one line.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := mapEnv(map[string]string{"VERDICTBOT_DATA_DIR": dir, "VERDICTBOT_DATABASE_URL": ""})
	var out, errOut strings.Builder
	if code := runCLI(env, testOptions(), []string{"migrate"}, strings.NewReader(""), &out, &errOut); code != 0 || out.String() != filepath.Join(dir, "verdictbot.db")+fmt.Sprintf(": schema version %d\n", bolt.SchemaVersion) {
		t.Fatalf("file: exit %d, %q %q", code, out.String(), errOut.String())
	}

	_, schemaURL := pgtest.Schema(t)
	env = mapEnv(map[string]string{"VERDICTBOT_DATA_DIR": dir, "VERDICTBOT_DATABASE_URL": schemaURL})
	out.Reset()
	if code := runCLI(env, testOptions(), []string{"migrate"}, strings.NewReader(""), &out, &errOut); code != 0 || !strings.HasSuffix(out.String(), fmt.Sprintf(": schema version %d\n", pg.SchemaVersion)) {
		t.Fatalf("postgres: exit %d, %q %q", code, out.String(), errOut.String())
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, pg.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code := runCLI(env, testOptions(), []string{"migrate"}, strings.NewReader(""), &out, &errOut)
	if want := fmt.Sprintf("verdictbot migrate: database schema %d is newer than this verdictbot (%d); upgrade verdictbot\n", pg.SchemaVersion+1, pg.SchemaVersion); code != 1 || errOut.String() != want {
		t.Fatalf("newer: exit %d, %q, want %q", code, errOut.String(), want)
	}
}
