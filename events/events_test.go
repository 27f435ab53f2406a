package events_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/store"
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
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries = append(r.tries, time.Now())
	if r.fail != nil {
		if code, ra := r.fail(len(r.tries)); code != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(code)
			return
		}
	}
	// The receiver's own check: HMAC-SHA256 of the raw body, hex, "sha256=" prefix.
	mac := hmac.New(sha256.New, r.secret)
	mac.Write(body)
	if req.Header.Get("X-Verdictbot-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
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
}

func (r *receiver) accepted() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.got...)
}

type rig struct {
	db     *store.DB
	em     *events.Emitter
	sender *events.Sender
	rcv    *receiver
	srv    *httptest.Server
	logs   *bytes.Buffer
}

func newRig(t *testing.T, fail func(n int) (int, string)) *rig {
	db := store.Memory(store.Options{})
	rcv := &receiver{t: t, secret: []byte("s3cret"), fail: fail}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	wake := make(chan struct{}, 1)
	logs := &bytes.Buffer{}
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), nil))
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

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

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

// TestSenderDropsARefusedEvent: a 400 for one event drops it (counted);
// the next ones go through.
func TestSenderDropsARefusedEvent(t *testing.T) {
	r := newRig(t, func(n int) (int, string) {
		if n == 1 {
			return http.StatusBadRequest, ""
		}
		return 0, ""
	})
	var dropped int
	var mu sync.Mutex
	r.sender.OnDropped = func(reason string, n int) { mu.Lock(); dropped += n; mu.Unlock() }
	for range 3 {
		r.em.Emit(context.Background(), findings[0])
	}
	r.run(t)
	waitFor(t, "2 events", 5*time.Second, func() bool { return len(r.rcv.accepted()) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if got := r.rcv.accepted(); got[0] != 2 || got[1] != 3 || dropped != 1 {
		t.Fatalf("accepted %v, dropped %d", got, dropped)
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
	q, _ := r.db.QueuedEvents(10)
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
	q, _ := r.db.QueuedEvents(100)
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

// TestVerify is the receiver's check, as documented in the README.
func TestVerify(t *testing.T) {
	body := []byte(`{"class_uid":2004}`)
	sig := events.Sign([]byte("k"), body)
	if !events.Verify([]byte("k"), body, sig) || events.Verify([]byte("other"), body, sig) || events.Verify([]byte("k"), append(body, ' '), sig) {
		t.Fatal("Verify")
	}
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("signature %q", sig)
	}
}
