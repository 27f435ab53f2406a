package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// eventsBackoffEnv, read by TestMain in the child process, caps the event
// sender's backoff (1 min in the bot) so the test need not wait a minute
// after the receiver comes back.
const eventsBackoffEnv = "GO_TEST_EVENTS_MAX_BACKOFF"

// eventsOutage is how long the receiver stays down at least; it stays
// down until both processes queued their events and the second one's
// sender failed and retried for eventsRetriesAtCap. GO_TEST_EVENTS_OUTAGE
// (e.g. 60s) makes it the real minute.
func eventsOutage() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("GO_TEST_EVENTS_OUTAGE")); err == nil {
		return d
	}
	return 5 * time.Second
}

// eventsRetriesAtCap is how long the receiver stays down after the second
// process's first failed delivery: two more attempts (1 s, then the 2 s cap).
const eventsRetriesAtCap = 3 * time.Second

// retryLine is the sender's log line of a failed delivery.
const retryLine = "event not delivered; retrying"

// siem is a webhook receiver as a SIEM's HTTP input would be: it checks
// each body's signature and records the events in arrival order. While
// down, its port refuses connections.
type siem struct {
	t      *testing.T
	secret []byte
	port   *reservedPort // down: bound, not listening (connections refused)
	mu     sync.Mutex
	srv    *http.Server
	bodies [][]byte
	seqs   []uint64
	bad    int
}

func (s *siem) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !signedBy(s.secret, body, r.Header) {
		s.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		Metadata struct {
			Sequence uint64 `json:"sequence"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		s.t.Errorf("not one JSON object: %v", err)
	}
	s.bodies = append(s.bodies, body)
	s.seqs = append(s.seqs, ev.Metadata.Sequence)
}

// signedBy is a receiver's check, as docs/siem.md documents it: the
// timestamp within 5 minutes, the v1 signature (HMAC-SHA256 of
// "v1:<timestamp>:<body>") and the legacy one (of the body) both in the
// signature header.
func signedBy(secret, body []byte, h http.Header) bool {
	ts := h.Get("X-Verdictbot-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	v1 := hmac.New(sha256.New, secret)
	v1.Write([]byte("v1:" + ts + ":"))
	v1.Write(body)
	legacy := hmac.New(sha256.New, secret)
	legacy.Write(body)
	want := "v1=" + hex.EncodeToString(v1.Sum(nil)) + ",sha256=" + hex.EncodeToString(legacy.Sum(nil))
	return hmac.Equal([]byte(h.Get("X-Verdictbot-Signature")), []byte(want))
}

// up serves on the reserved port; until then it refuses connections.
func (s *siem) up(t *testing.T) {
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(s.port.listen(t))
	t.Cleanup(func() { s.srv.Close() })
}

func (s *siem) received() (seqs []uint64, bodies [][]byte, bad int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.seqs...), append([][]byte(nil), s.bodies...), s.bad
}

// TestEventsSurviveAReceiverOutageAndKill9 runs the real program against
// a webhook receiver that is down (see eventsOutage): events of verdicts
// and a channel setting change are queued while it is down, the process is
// killed with SIGKILL, a new one queues more and fails to deliver them
// too (each process logs its retry); once the receiver is back it
// gets every event, in order, each once, each with a valid signature, and
// the JSON-lines file holds the same bodies. Both backends.
func TestEventsSurviveAReceiverOutageAndKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		eventsOutageKill9(t, "")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		_, schemaURL := pgtest.Schema(t)
		eventsOutageKill9(t, schemaURL)
	})
}

func eventsOutageKill9(t *testing.T, databaseURL string) {
	fake := slackfaketest.Start(t)
	// The analyses end before the bot's first status check and the
	// submissions are not paced (the vendor's default limits, 1 a second,
	// would make the 13 events take 40 s): the outage and the kill are
	// what the test is about.
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickProfile()})
	const secret = "whsec-e2e-Secret-4242"
	// Down from the start: the port is known, held by this test (no other
	// test's listener can take it during the outage), and refuses
	// connections. (It was served, closed, and served again after the
	// outage, when another test's listener had once taken it: "bind:
	// address already in use".)
	rcv := &siem{t: t, secret: []byte(secret), port: reservePort(t)}
	dataDir := t.TempDir()
	file := filepath.Join(dataDir, "events.jsonl")
	env := map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR": dataDir, "VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_ADMINS": adminUser,
		"VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
		"VERDICTBOT_EVENTS_URL": "http://" + rcv.port.addr + "/hook/path-token-77", "VERDICTBOT_EVENTS_SECRET": secret,
		"VERDICTBOT_EVENTS_FILE":         file,
		"VERDICTBOT_REPUTATION_RUN_RATE": "500", "VERDICTBOT_REPUTATION_REPORT_RATE": "500",
		eventsBackoffEnv: "2s",
	}
	if databaseURL != "" {
		env["VERDICTBOT_DATABASE_URL"] = databaseURL
		// The killed process's term of the event sender's lead holds
		// until it expires: the shortest lease (the default, 30 s, would
		// hold the second process's events 15 s past the outage).
		env["VERDICTBOT_LEASE"] = "5s"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second+eventsOutage())
	defer cancel()
	outageStart := time.Now()

	waitLines := func(p *process, n int) {
		t.Helper()
		for len(apptest.FileLines(file)) < n {
			if ctx.Err() != nil {
				t.Fatalf("%d of %d events in the file\n%s", len(apptest.FileLines(file)), n, p.logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	post := func(i int) {
		url := fmt.Sprintf("https://safe.test/ev/%d", i)
		if i%2 == 0 {
			url = fmt.Sprintf("https://login.phish.test/ev/%d", i)
			srv.FlipOnNextScan(url, sim.Scores{Phishing: 0.97})
		}
		if _, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "see <" + url + ">"}); err != nil {
			t.Fatal(err)
		}
	}

	first := startProcess(t, env)
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("did not connect: %v\n%s", err, first.logs.String())
	}
	const firstN, secondN = 8, 4
	for i := range firstN {
		post(i)
	}
	if _, err := fake.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: "channel verbose", UserID: adminUser, ChannelID: secChannel}); err != nil {
		t.Fatal(err)
	}
	waitLines(first, firstN+1)
	first.kill9(t)

	second := startProcess(t, env)
	if err := fake.WaitConnected(ctx, 2); err != nil {
		t.Fatalf("second process did not connect: %v\n%s", err, second.logs.String())
	}
	for i := firstN; i < firstN+secondN; i++ {
		post(i)
	}
	total := firstN + 1 + secondN
	waitLines(second, total)
	if seqs, _, _ := rcv.received(); len(seqs) != 0 {
		t.Fatalf("the receiver got events while down: %v", seqs)
	}
	// The second process's sender fails too (on PostgreSQL only once the
	// killed process's term of the lead expired) and retries at its cap
	// before the receiver comes back.
	for !strings.Contains(second.logs.String(), retryLine) {
		if ctx.Err() != nil {
			t.Fatalf("the second process never tried to deliver during the outage\n%s", second.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(eventsRetriesAtCap)
	if rest := eventsOutage() - time.Since(outageStart); rest > 0 {
		time.Sleep(rest)
	}
	rcv.up(t)
	back := time.Now()
	for {
		seqs, _, _ := rcv.received()
		if len(seqs) >= total {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the receiver got %d of %d events after the outage: %v\n%s", len(seqs), total, seqs, second.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(back)
	time.Sleep(500 * time.Millisecond) // nothing more (no duplicate) arrives
	seqs, bodies, bad := rcv.received()
	if len(seqs) != total || bad != 0 {
		var all []string
		for _, b := range bodies {
			var ev struct{ Unmapped map[string]any }
			_ = json.Unmarshal(b, &ev)
			all = append(all, fmt.Sprintf("%v/%v/%v/%v", ev.Unmapped["kind"], ev.Unmapped["target"], ev.Unmapped["level"], ev.Unmapped["message_ts"]))
		}
		t.Fatalf("received %d events (want %d), %d with a bad signature: %v\n%s", len(seqs), total, bad, seqs, strings.Join(all, "\n"))
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("events out of order or missing: %v", seqs)
		}
	}
	lines := apptest.FileLines(file)
	if len(lines) != total {
		t.Fatalf("%d lines in the file, want %d", len(lines), total)
	}
	kinds := map[string]int{}
	for i, l := range lines {
		if l != string(bodies[i]) {
			t.Errorf("line %d of the file differs from the event the receiver got:\n%s\n%s", i+1, l, bodies[i])
		}
		var ev struct {
			ClassUID int `json:"class_uid"`
			Unmapped struct {
				Kind   string `json:"kind"`
				Target string `json:"target"`
				Level  string `json:"level"`
			} `json:"unmapped"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ClassUID != 2004 {
			t.Fatalf("line %d: %v %s", i+1, err, l)
		}
		kinds[ev.Unmapped.Kind+"/"+ev.Unmapped.Level]++
		if strings.Contains(l, "see <") {
			t.Errorf("an event carries the message's text: %s", l)
		}
	}
	if kinds["verdict/malicious"] != (firstN+secondN)/2 || kinds["verdict/clean"] != (firstN+secondN)/2 || kinds["setting/"] != 1 {
		t.Errorf("kinds: %v", kinds)
	}
	logs := first.logs.String() + second.logs.String()
	for _, s := range []string{secret, "path-token-77"} {
		if strings.Contains(logs, s) {
			t.Errorf("%q appears in the logs", s)
		}
	}
	if !strings.Contains(first.logs.String(), retryLine) {
		t.Errorf("the first process logged no retry during the outage")
	}
	t.Logf("outage %v, SIGKILL in the middle: %d events queued (%d before the kill), all %d delivered in order with valid signatures %v after the receiver came back",
		back.Sub(outageStart).Round(100*time.Millisecond), total, firstN+1, len(seqs), took.Round(time.Millisecond))
	stop(t, second)

}

// findingLine is the part of an event line the tests look at.
type findingLine struct {
	ClassUID   int `json:"class_uid"`
	ActivityID int `json:"activity_id"`
	SeverityID int `json:"severity_id"`
	Unmapped   struct {
		Kind     string `json:"kind"`
		Target   string `json:"target"`
		Level    string `json:"level"`
		Previous string `json:"previous_level"`
		Actor    string `json:"actor"`
		Option   string `json:"option"`
		Setting  string `json:"setting"`
		Value    string `json:"value"`
		Domain   string `json:"domain"`
		Channel  string `json:"channel"`
	} `json:"unmapped"`
}

func readFindings(t *testing.T, path string) []findingLine {
	var out []findingLine
	for _, l := range apptest.FileLines(path) {
		var f findingLine
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, f)
	}
	return out
}

// TestEventsOfAFlipAReportAndSettings: the real wiring emits a recheck
// flip (with the level before), a false-positive report from the card's
// button (with who reported), and the channel setting and allowlist
// changes of /scan, each in the JSON-lines file.
func TestEventsOfAFlipAReportAndSettings(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "events.jsonl")
	h := apptest.StartBot(t, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "quiet",
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "2s,1h",
		"VERDICTBOT_EVENTS_FILE":      file,
	}, sim.Config{})
	d := h.Post("our new landing page <https://promo.flip.test/spring>")
	card := h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") && strings.Contains(b, "Rechecked") })
	// alice posted the link; bob reports it (a poster may not).
	if _, err := h.Slack.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: secChannel, MessageTS: card.TS, ActionID: notify.ActionFalsePositive}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"channel files off", "allow add example.org"} {
		if _, err := h.Slack.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: text, UserID: adminUser, ChannelID: secChannel}); err != nil {
			t.Fatal(err)
		}
	}
	var got []findingLine
	var want map[string]bool
	deadline := time.Now().Add(15 * time.Second)
	for {
		got = readFindings(t, file)
		want = map[string]bool{}
		for _, f := range got {
			u := f.Unmapped
			switch {
			case u.Kind == "verdict" && u.Target == "https://promo.flip.test/spring" && u.Level == "clean" && f.SeverityID == 1:
				want["verdict"] = true
			case u.Kind == "flip" && u.Level == "malicious" && u.Previous == "clean" && f.ActivityID == 2 && f.SeverityID == 4:
				want["flip"] = true
			case u.Kind == "report" && u.Option == "fp" && u.Actor == bob && u.Target == "https://promo.flip.test/spring":
				want["report"] = true
			case u.Kind == "setting" && u.Setting == "files" && u.Value == "off" && u.Actor == adminUser && u.Channel == secChannel:
				want["files"] = true
			case u.Kind == "setting" && u.Setting == "allowlist" && u.Domain == "example.org" && u.Value == "added":
				want["allow"] = true
			}
		}
		if len(want) == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(want) != 5 {
		t.Fatalf("events seen %v; lines:\n%s", want, strings.Join(apptest.FileLines(file), "\n"))
	}
	for _, f := range got {
		if f.ClassUID != 2004 {
			t.Fatalf("class %d", f.ClassUID)
		}
	}
}
