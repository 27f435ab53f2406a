package events_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

var at = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// findings has one finding of every kind.
var findings = []events.Finding{
	{Kind: events.KindVerdict, At: at, Channel: "C1", MessageTS: "1.1", Poster: "U1", TargetKind: "url", Target: "https://evil.example/x",
		Level: verdict.Malicious, Category: "phishing", Scores: verdict.Scores{"phishing": 0.97}, Service: "reputation", TaskID: "t-1"},
	{Kind: events.KindVerdict, At: at, Channel: "C1", MessageTS: "1.2", TargetKind: "file", Target: "invoice.pdf",
		FileSHA256: strings.Repeat("a", 64), Level: verdict.Clean, Service: "sandbox", TaskID: "t-2"},
	{Kind: events.KindFlip, At: at, Channel: "C1", MessageTS: "1.1", TargetKind: "url", Target: "https://evil.example/x",
		Level: verdict.Malicious, Previous: verdict.Clean},
	{Kind: events.KindReport, At: at, Channel: "C1", MessageTS: "1.1", TargetKind: "url", Target: "https://evil.example/x",
		Actor: "U2", Option: "fp", Category: "phishing", Level: verdict.Malicious},
	{Kind: events.KindQuarantine, At: at, Channel: "C1", MessageTS: "1.1", TargetKind: "url", Target: "https://evil.example/x",
		Level: verdict.Malicious, Quarantine: &events.Quarantine{Removed: true, Level: "malicious", Until: at.Add(720 * time.Hour)}},
	{Kind: events.KindRelease, At: at, Channel: "C1", MessageTS: "1.1", TargetKind: "url", Target: "https://evil.example/x",
		Actor: "UADMIN", Level: verdict.Malicious, Quarantine: &events.Quarantine{Removed: true, ReleasedBy: "UADMIN", ReleasedTS: "2.2"}},
	{Kind: events.KindSetting, At: at, Channel: "C1", Actor: "UADMIN", Setting: "mode", Value: "verbose"},
	{Kind: events.KindSetting, At: at, Channel: "C1", Actor: "UADMIN", Setting: "allowlist", Domain: "example.org", Value: "added"},
	{Kind: events.KindTest, At: at},
}

// lookup follows a dotted path in a decoded JSON object.
func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestEventsCarryTheClassRequiredAttributes checks every kind of event
// against OCSF Detection Finding's required attributes (the list and its
// source are in event.go), and the class's fixed values.
func TestEventsCarryTheClassRequiredAttributes(t *testing.T) {
	for _, f := range findings {
		b, err := json.Marshal(events.Build(f, events.Product{Version: "1.2.3"}, events.NewUID()))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, path := range events.RequiredAttributes {
			v, ok := lookup(m, path)
			if !ok || v == nil || v == "" {
				t.Errorf("%s: required attribute %s missing in %s", f.Kind, path, b)
			}
		}
		num := func(p string) int { v, _ := lookup(m, p); n, _ := v.(float64); return int(n) }
		if num("class_uid") != 2004 || num("category_uid") != 2 {
			t.Errorf("%s: class %d category %d", f.Kind, num("class_uid"), num("category_uid"))
		}
		if num("type_uid") != 2004*100+num("activity_id") {
			t.Errorf("%s: type_uid %d, activity_id %d", f.Kind, num("type_uid"), num("activity_id"))
		}
		if v, _ := lookup(m, "time"); int64(v.(float64)) != at.UnixMilli() {
			t.Errorf("%s: time %v, want ms epoch %d", f.Kind, v, at.UnixMilli())
		}
		if s := num("severity_id"); s < 0 || s > 6 {
			t.Errorf("%s: severity_id %d", f.Kind, s)
		}
		for _, p := range []string{"metadata.product.name", "metadata.product.vendor_name", "metadata.uid", "finding_info.title", "unmapped.kind"} {
			if v, ok := lookup(m, p); !ok || v == "" {
				t.Errorf("%s: %s missing", f.Kind, p)
			}
		}
	}
	sev := func(l verdict.Level) int {
		return events.Build(events.Finding{Kind: events.KindVerdict, Level: l}, events.Product{}, "x").SeverityID
	}
	if sev(verdict.Malicious) != 4 || sev(verdict.Suspicious) != 3 || sev(verdict.Clean) != 1 {
		t.Errorf("severity: malicious %d suspicious %d clean %d", sev(verdict.Malicious), sev(verdict.Suspicious), sev(verdict.Clean))
	}
}

// receiver is a webhook that checks signatures as a SIEM's input would and
// records the sequence numbers it accepted; fail decides an answer first.
type receiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	got    []uint64
	bad    int
	tries  []time.Time
	fail   func(n int) (status int, retryAfter string)
	// answer, if set, decides first from the request's sequence and how
	// many requests carried it: a status (0: check and accept) and
	// headers.
	answer func(seq string, n int) (status int, header map[string]string)
	perSeq map[string]int
	terms  []string // X-Verdictbot-Term of each accepted event
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries = append(r.tries, time.Now())
	if r.answer != nil {
		seq := req.Header.Get("X-Verdictbot-Sequence")
		if r.perSeq == nil {
			r.perSeq = map[string]int{}
		}
		r.perSeq[seq]++
		if code, h := r.answer(seq, r.perSeq[seq]); code != 0 {
			for k, v := range h {
				w.Header().Set(k, v)
			}
			w.WriteHeader(code)
			return
		}
	}
	if r.fail != nil {
		if code, ra := r.fail(len(r.tries)); code != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(code)
			return
		}
	}
	// The receiver's own check, as docs/siem.md shows it: both signatures.
	err := receiverCheck(r.secret, body, req.Header.Get("X-Verdictbot-Signature"), req.Header.Get("X-Verdictbot-Timestamp"), time.Now())
	if err == nil {
		err = filebeatCheck(r.secret, body, req.Header.Get("X-Verdictbot-Signature-256"))
	}
	if err != nil {
		r.t.Errorf("signature: %v", err)
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev events.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		r.t.Errorf("body is not one JSON event: %v", err)
	}
	if h := req.Header.Get("X-Verdictbot-Sequence"); h != strconv.FormatUint(ev.Metadata.Sequence, 10) {
		r.t.Errorf("sequence header %s, body %d", h, ev.Metadata.Sequence)
	}
	r.got = append(r.got, ev.Metadata.Sequence)
	r.terms = append(r.terms, req.Header.Get("X-Verdictbot-Term"))
}

// receiverCheck is what a receiver written from docs/siem.md does, without
// this package: the v1 signature, HMAC-SHA256 of "v1:<timestamp>:<body>",
// with a timestamp within 5 minutes, and the legacy one, HMAC-SHA256 of
// the body, both in X-Verdictbot-Signature as "v1=<hex>,sha256=<hex>".
func receiverCheck(secret, body []byte, header, timestamp string, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %v", timestamp, err)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %d is %v from now", ts, d)
	}
	v1 := hmac.New(sha256.New, secret)
	v1.Write([]byte("v1:" + timestamp + ":"))
	v1.Write(body)
	legacy := hmac.New(sha256.New, secret)
	legacy.Write(body)
	want := "v1=" + hex.EncodeToString(v1.Sum(nil)) + ",sha256=" + hex.EncodeToString(legacy.Sum(nil))
	if !hmac.Equal([]byte(header), []byte(want)) {
		return fmt.Errorf("header %q, want %q", header, want)
	}
	return nil
}

// filebeatCheck is Filebeat's http_endpoint hmac check as the Elastic
// recipe of docs/siem.md configures it (hmac.header X-Verdictbot-Signature-256, type
// sha256, prefix "sha256="): strip the prefix, hex-decode, compare.
func filebeatCheck(secret, body []byte, header string) error {
	got, err := hex.DecodeString(strings.TrimPrefix(header, "sha256="))
	if err != nil {
		return fmt.Errorf("X-Verdictbot-Signature-256 %q: %v", header, err)
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return fmt.Errorf("X-Verdictbot-Signature-256 %q does not match", header)
	}
	return nil
}

func (r *receiver) accepted() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.got...)
}

type rig struct {
	db     store.State
	em     *events.Emitter
	sender *events.Sender
	rcv    *receiver
	srv    *httptest.Server
	logs   *testutil.SyncBuffer
}

func newRig(t *testing.T, fail func(n int) (int, string)) *rig {
	db := bolt.Memory(bolt.Options{})
	rcv := &receiver{t: t, secret: []byte("s3cret"), fail: fail}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	wake := make(chan struct{}, 1)
	log, logs := testutil.Logger(slog.LevelInfo)
	em := &events.Emitter{Queue: db, Log: log, OnQueued: func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}}
	s := &events.Sender{Queue: db, URL: srv.URL + "/hook/TOKEN123", Secret: rcv.secret, Wake: wake, Poll: 20 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, Log: log}
	return &rig{db: db, em: em, sender: s, rcv: rcv, srv: srv, logs: logs}
}

func (r *rig) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.sender.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func inOrder(got []uint64, n int) bool {
	if len(got) != n {
		return false
	}
	for i, s := range got {
		if s != uint64(i+1) {
			return false
		}
	}
	return true
}

// TestSenderDeliversInOrderAfterFailures: a receiver that fails the first
// attempts (5xx, a refused connection is the e2e test's) gets every event
// afterwards, once, in order, signed; the queue empties.
func TestSenderDeliversInOrderAfterFailures(t *testing.T) {
	r := newRig(t, func(n int) (int, string) {
		if n <= 4 {
			return http.StatusBadGateway, ""
		}
		return 0, ""
	})
	for range 20 {
		r.em.Emit(context.Background(), findings[0])
	}
	r.run(t)
	waitFor(t, "20 events", 5*time.Second, func() bool { return len(r.rcv.accepted()) == 20 })
	if got := r.rcv.accepted(); !inOrder(got, 20) || r.rcv.bad != 0 {
		t.Fatalf("accepted %v, bad signatures %d", got, r.rcv.bad)
	}
	waitFor(t, "an empty queue", time.Second, func() bool { n, _ := r.db.EventsQueued(); return n == 0 })
	if strings.Contains(r.logs.String(), "TOKEN123") {
		t.Fatalf("the webhook's path leaked into the logs:\n%s", r.logs)
	}
}

// TestSenderBacksOffExponentially: the gaps between failed attempts grow.
func TestSenderBacksOffExponentially(t *testing.T) {
	r := newRig(t, func(n int) (int, string) {
		if n <= 4 {
			return http.StatusInternalServerError, ""
		}
		return 0, ""
	})
	r.sender.MinBackoff, r.sender.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	r.em.Emit(context.Background(), findings[0])
	r.run(t)
	waitFor(t, "the event", 5*time.Second, func() bool { return len(r.rcv.accepted()) == 1 })
	r.rcv.mu.Lock()
	tries := r.rcv.tries
	r.rcv.mu.Unlock()
	// Waits: 50, 100, 200, 200 ms.
	want := []time.Duration{50, 100, 200, 200}
	for i, w := range want {
		gap := tries[i+1].Sub(tries[i])
		if gap < w*time.Millisecond || gap > w*time.Millisecond+150*time.Millisecond {
			t.Errorf("wait %d: %v, want about %v ms", i+1, gap, w)
		}
	}
}

// TestSenderHonoursRetryAfter: a 429 with Retry-After: 1 delays the next
// attempt by a second, not by the backoff.
func TestSenderHonoursRetryAfter(t *testing.T) {
	r := newRig(t, func(n int) (int, string) {
		if n == 1 {
			return http.StatusTooManyRequests, "1"
		}
		return 0, ""
	})
	r.em.Emit(context.Background(), findings[0])
	r.run(t)
	waitFor(t, "the event", 5*time.Second, func() bool { return len(r.rcv.accepted()) == 1 })
	r.rcv.mu.Lock()
	gap := r.rcv.tries[1].Sub(r.rcv.tries[0])
	r.rcv.mu.Unlock()
	if gap < time.Second || gap > 1500*time.Millisecond {
		t.Fatalf("second attempt after %v, want Retry-After's 1s", gap)
	}
}

// TestEmitterDropsTheOldestBeyondTheBound: with room for 3, five events
// leave the newest three queued, two counted as dropped and logged.
func TestEmitterDropsTheOldestBeyondTheBound(t *testing.T) {
	r := newRig(t, nil)
	r.em.MaxQueued = 3
	dropped := 0
	r.em.OnDropped = func(reason string, n int) {
		if reason != "queue_full" {
			t.Errorf("reason %q", reason)
		}
		dropped += n
	}
	for range 5 {
		r.em.Emit(context.Background(), findings[0])
	}
	q, _ := r.db.QueuedEvents(0, 10)
	if dropped != 2 || len(q) != 3 || q[0].Seq != 3 {
		t.Fatalf("dropped %d, queued %d from %d", dropped, len(q), q[0].Seq)
	}
	if !strings.Contains(r.logs.String(), "oldest events were dropped") {
		t.Fatalf("no log line for the drop:\n%s", r.logs)
	}
	r.run(t)
	waitFor(t, "3 events", 5*time.Second, func() bool { return len(r.rcv.accepted()) == 3 })
	if got := r.rcv.accepted(); got[0] != 3 || got[2] != 5 {
		t.Fatalf("accepted %v", got)
	}
}

// TestFileGetsTheQueuedEvents: the file sink's lines are the queued bodies,
// in order, one JSON object per line.
func TestFileGetsTheQueuedEvents(t *testing.T) {
	r := newRig(t, nil)
	var buf bytes.Buffer
	r.em.File = events.NewFile(&buf)
	for _, f := range findings {
		r.em.Emit(context.Background(), f)
	}
	q, _ := r.db.QueuedEvents(0, 100)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(findings) || len(q) != len(findings) {
		t.Fatalf("%d lines, %d queued, want %d", len(lines), len(q), len(findings))
	}
	for i := range lines {
		if lines[i] != string(q[i].Body) {
			t.Fatalf("line %d differs from the queued event:\n%s\n%s", i, lines[i], q[i].Body)
		}
	}
	// Without a queue (file only), events are still written.
	buf.Reset()
	(&events.Emitter{File: events.NewFile(&buf)}).Emit(context.Background(), findings[0])
	if !strings.Contains(buf.String(), `"class_uid":2004`) {
		t.Fatalf("file-only line: %s", buf.String())
	}
	// A nil emitter and a nil sink do nothing.
	var nilEm *events.Emitter
	nilEm.Emit(context.Background(), findings[0])
	events.Emit(context.Background(), nil, findings[0])
}

// TestSignAndVerify: the header carries v1 (over the timestamp and the
// body) and the legacy sha256 (over the body); Verify, the legacy check,
// takes the old header and the new one; VerifyTimestamped refuses a
// tampered body or timestamp, another secret, a stale or future
// timestamp (a replay) and a header without v1.
func TestSignAndVerify(t *testing.T) {
	secret, body := []byte("k"), []byte(`{"class_uid":2004}`)
	now := time.Unix(1_800_000_000, 0)
	ts := now.Unix()
	sig := events.Sign(secret, ts, body)
	if err := receiverCheck(secret, body, sig, strconv.FormatInt(ts, 10), now); err != nil {
		t.Fatalf("Sign's header is not the documented one: %v", err)
	}
	legacy := "sha256=" + strings.SplitN(sig, ",sha256=", 2)[1]
	if events.SignLegacy(secret, body) != legacy || filebeatCheck(secret, body, legacy) != nil {
		t.Fatalf("SignLegacy = %q, want %q", events.SignLegacy(secret, body), legacy)
	}
	for _, h := range []string{sig, legacy, "sha256=" + strings.Repeat("0", 64) + ", " + legacy, "v1=x, " + legacy} {
		if !events.Verify(secret, body, h) {
			t.Errorf("Verify refuses %q", h)
		}
	}
	for _, tc := range []struct {
		secret []byte
		body   []byte
		header string
	}{{[]byte("other"), body, sig}, {secret, append(body, ' '), sig}, {secret, body, "v1=" + strings.Repeat("0", 64)}, {secret, body, ""}} {
		if events.Verify(tc.secret, tc.body, tc.header) {
			t.Errorf("Verify takes %q for %s", tc.header, tc.body)
		}
	}
	tsText := strconv.FormatInt(ts, 10)
	w := events.DefaultReplayWindow
	if err := events.VerifyTimestamped(secret, body, sig, tsText, now.Add(4*time.Minute), w); err != nil {
		t.Fatalf("a fresh request: %v", err)
	}
	for _, tc := range []struct {
		name         string
		secret, body []byte
		header, ts   string
		now          time.Time
		want         error
	}{
		{"another secret", []byte("other"), body, sig, tsText, now, events.ErrBadSignature},
		{"tampered body", secret, []byte(`{"class_uid":2005}`), sig, tsText, now, events.ErrBadSignature},
		{"tampered timestamp", secret, body, sig, strconv.FormatInt(ts+1, 10), now, events.ErrBadSignature},
		{"replayed 6 minutes later", secret, body, sig, tsText, now.Add(6 * time.Minute), events.ErrStale},
		{"from the future", secret, body, sig, tsText, now.Add(-6 * time.Minute), events.ErrStale},
		{"no timestamp", secret, body, sig, "", now, events.ErrBadTimestamp},
		{"not seconds", secret, body, sig, "2026-11-25T10:00:00Z", now, events.ErrBadTimestamp},
		{"legacy header only", secret, body, legacy, tsText, now, events.ErrNoSignature},
	} {
		if err := events.VerifyTimestamped(tc.secret, tc.body, tc.header, tc.ts, tc.now, w); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestResequence: a dead letter's body gets its new sequence number, the
// rest of the event as it was; a body that is not an event is refused.
func TestResequence(t *testing.T) {
	ev := events.Build(findings[0], events.Product{Name: "verdictbot"}, "uid-1")
	ev.Metadata.Sequence = 7
	b, _ := json.Marshal(ev)
	out, err := events.Resequence(b, 42)
	if err != nil {
		t.Fatal(err)
	}
	var got events.Event
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Sequence != 42 || got.Metadata.UID != "uid-1" {
		t.Fatalf("metadata %+v", got.Metadata)
	}
	got.Metadata.Sequence = 7
	if !reflectEqualJSON(t, got, ev) {
		t.Fatalf("the rest changed:\n%s\n%s", out, b)
	}
	for _, bad := range []string{"", "[]", "null", `{"metadata":3}`} {
		if _, err := events.Resequence([]byte(bad), 1); err == nil {
			t.Errorf("Resequence(%q) took it", bad)
		}
	}
}

func reflectEqualJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestEventsNameTheWorkspaceAndOrganisation: the Emitter asks where a
// finding was made (by its team, else its channel) and the event carries
// it in OCSF's cloud profile: on Enterprise Grid the account and org are
// the organisation and the org's unit the workspace; outside Grid all
// three are the workspace; a finding whose maker knew its team is not
// asked about by channel.
func TestEventsNameTheWorkspaceAndOrganisation(t *testing.T) {
	var asked [][2]string
	var buf bytes.Buffer
	em := &events.Emitter{File: events.NewFile(&buf), Workspace: func(team, channel string) events.Workspace {
		asked = append(asked, [2]string{team, channel})
		if team == "" {
			team = map[string]string{"C1": "T1", "C2": "T2"}[channel]
		}
		return events.Workspace{EnterpriseID: "E1", EnterpriseName: "Acme Org", TeamID: team, TeamName: map[string]string{"T1": "Acme Sales", "T2": "Acme Eng"}[team]}
	}}
	em.Emit(context.Background(), events.Finding{Kind: events.KindVerdict, Channel: "C1", MessageTS: "1.1", TargetKind: "url", Target: "https://a.test/", Level: verdict.Malicious})
	em.Emit(context.Background(), events.Finding{Kind: events.KindSetting, Channel: "C9", TeamID: "T2", Setting: "mode", Value: "quiet"})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	type wire struct {
		Metadata struct {
			Profiles []string `json:"profiles"`
		} `json:"metadata"`
		Cloud *struct {
			Provider string `json:"provider"`
			Account  struct{ UID, Name, Type string }
			Org      struct {
				UID    string `json:"uid"`
				Name   string `json:"name"`
				OUUID  string `json:"ou_uid"`
				OUName string `json:"ou_name"`
			} `json:"org"`
		} `json:"cloud"`
		Resources []struct{ UID, Type, Name string } `json:"resources"`
		Unmapped  struct {
			TeamID       string `json:"team_id"`
			EnterpriseID string `json:"enterprise_id"`
		} `json:"unmapped"`
	}
	for i, want := range []struct{ team, name string }{{"T1", "Acme Sales"}, {"T2", "Acme Eng"}} {
		var ev wire
		if err := json.Unmarshal([]byte(lines[i]), &ev); err != nil {
			t.Fatal(err)
		}
		c := ev.Cloud
		if c == nil || c.Provider != "Slack" || c.Account.UID != "E1" || c.Account.Name != "Acme Org" ||
			c.Org.UID != "E1" || c.Org.OUUID != want.team || c.Org.OUName != want.name {
			t.Errorf("event %d cloud = %+v, want the org E1 and the workspace %s", i, c, want.team)
		}
		if !slices.Contains(ev.Metadata.Profiles, "cloud") {
			t.Errorf("event %d profiles %v, want cloud", i, ev.Metadata.Profiles)
		}
		found := false
		for _, r := range ev.Resources {
			found = found || (r.Type == "slack_workspace" && r.UID == want.team && r.Name == want.name)
		}
		if !found || ev.Unmapped.TeamID != want.team || ev.Unmapped.EnterpriseID != "E1" {
			t.Errorf("event %d resources %+v unmapped %+v: want the workspace %s", i, ev.Resources, ev.Unmapped, want.team)
		}
	}
	if want := [][2]string{{"", "C1"}, {"T2", "C9"}}; !slices.Equal(asked, want) {
		t.Errorf("asked %v, want %v", asked, want)
	}
	// Outside Grid: the workspace is account, org and unit.
	buf.Reset()
	(&events.Emitter{File: events.NewFile(&buf), Workspace: func(string, string) events.Workspace {
		return events.Workspace{TeamID: "T0", TeamName: "Solo"}
	}}).Emit(context.Background(), events.Finding{Kind: events.KindVerdict, Channel: "C1", MessageTS: "1.1"})
	var ev wire
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil {
		t.Fatal(err)
	}
	if c := ev.Cloud; c == nil || c.Account.UID != "T0" || c.Account.Type != "Slack workspace" || c.Org.UID != "T0" || c.Org.OUUID != "T0" {
		t.Errorf("workspace install: cloud %+v", c)
	}
	// Nothing known: no cloud object at all.
	buf.Reset()
	(&events.Emitter{File: events.NewFile(&buf)}).Emit(context.Background(), events.Finding{Kind: events.KindVerdict, Channel: "C1"})
	if strings.Contains(buf.String(), `"cloud"`) {
		t.Errorf("an event with no workspace known has a cloud object: %s", buf.String())
	}
}
