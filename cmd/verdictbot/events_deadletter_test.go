package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// refusingReceiver is a SOC's receiver that refuses (400) every event
// about a target containing "refuse-me" while refusing is on, and takes
// the others; it checks each signature and records what it took.
type refusingReceiver struct {
	t        *testing.T
	secret   []byte
	mu       sync.Mutex
	refusing bool
	refused  int
	// refusedUID is the event id of the refused event.
	refusedUID string
	taken      []takenEvent
}

type takenEvent struct {
	seq    uint64
	uid    string
	target string
}

func (r *refusingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !signedBy(r.secret, body, req.Header) {
		r.t.Errorf("a request without a valid signature: %v", req.Header)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		Metadata struct {
			UID      string `json:"uid"`
			Sequence uint64 `json:"sequence"`
		} `json:"metadata"`
		Unmapped struct {
			Target string `json:"target"`
		} `json:"unmapped"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if seq := req.Header.Get("X-Verdictbot-Sequence"); seq != strconv.FormatUint(ev.Metadata.Sequence, 10) {
		r.t.Errorf("sequence header %s, body %d", seq, ev.Metadata.Sequence)
	}
	if r.refusing && strings.Contains(ev.Unmapped.Target, "refuse-me") {
		r.refused++
		r.refusedUID = ev.Metadata.UID
		http.Error(w, "schema validation failed", http.StatusBadRequest)
		return
	}
	r.taken = append(r.taken, takenEvent{ev.Metadata.Sequence, ev.Metadata.UID, ev.Unmapped.Target})
}

func (r *refusingReceiver) got() ([]takenEvent, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]takenEvent(nil), r.taken...), r.refused
}

// TestEventRefused20TimesIsSetAsideAndRetried: the receiver refuses the
// event of one link every time: after 20 refusals it is set aside as a
// dead letter and the events of the next links flow, in order;
// `verdictbot events list` shows it, `verdictbot events retry` (run as an
// operator runs it, on the state the bot uses) queues it again and the bot
// delivers it under a new sequence number with its event id. On
// PostgreSQL the command runs beside the bot; on the embedded file, with
// the bot stopped (it says so while the bot holds the file).
func TestEventRefused20TimesIsSetAsideAndRetried(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		_, schemaURL := pgtest.Schema(t)
		deadLetterFlow(t, schemaURL)
	})
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		deadLetterFlow(t, "")
	})
}

func deadLetterFlow(t *testing.T, databaseURL string) {
	opts := apptest.Options()
	opts.EventsMinBackoff, opts.EventsMaxBackoff = 10*time.Millisecond, 20*time.Millisecond
	const secret = "whsec-dead-letters-31"
	rcv := &refusingReceiver{t: t, secret: []byte(secret), refusing: true}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dataDir := t.TempDir()
	env := map[string]string{
		"VERDICTBOT_EVENTS_URL": srv.URL + "/in/hook-token-5", "VERDICTBOT_EVENTS_SECRET": secret,
		"VERDICTBOT_DATA_DIR": dataDir,
	}
	if databaseURL != "" {
		env["VERDICTBOT_DATABASE_URL"] = databaseURL
	}
	h := apptest.StartBotOptions(t, env, sim.Config{}, opts)
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				taken, refused := rcv.got()
				t.Fatalf("timed out waiting for %s: taken %+v, %d refusals\n%s", what, taken, refused, h.Logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	h.Post("the form <https://refuse-me.test/form>")
	wait("20 refusals", func() bool { _, n := rcv.got(); return n >= 20 })
	h.Post("the docs <https://docs.clean.test/a>")
	h.Post("more docs <https://docs.clean.test/b>")
	wait("the next events", func() bool { taken, _ := rcv.got(); return len(taken) == 2 })
	taken, refused := rcv.got()
	// The two links are analysed side by side: either verdict may be the
	// first, and its event comes first, in sequence order.
	targets := map[string]bool{taken[0].target: true, taken[1].target: true}
	if refused != 20 || !targets["https://docs.clean.test/a"] || !targets["https://docs.clean.test/b"] || taken[0].seq >= taken[1].seq {
		t.Fatalf("refused %d times, then took %+v; want 20 refusals, then the two next events in order", refused, taken)
	}
	if !strings.Contains(h.Logs.String(), "set aside as a dead letter") || strings.Contains(h.Logs.String(), "hook-token-5") {
		t.Fatalf("the dead letter is not logged, or the URL's path is:\n%s", h.Logs.String())
	}

	if databaseURL == "" {
		// The bot holds the file: the command says to stop it.
		code, _, errOut := runMain(h.Env, "events", "list")
		if code != 1 || !strings.Contains(errOut, "is locked by another process") || !strings.Contains(errOut, "stop the bot first") {
			t.Fatalf("events list beside the bot: exit %d, %q", code, errOut)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runMain(h.Env, "events", "list")
	m := regexp.MustCompile(`(?m)^(\d+)\s+\S+ \S+\s+20\s+400\s+verdict\s+\S+\s+hxxps://refuse-me\[\.\]test/form$`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "dead letters: 1\n") {
		t.Fatalf("events list: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	dead, _ := strconv.ParseUint(m[1], 10, 64)
	if code, _, errOut := runMain(h.Env, "events", "retry", "99999"); code != 1 || !strings.Contains(errOut, "not on the dead-letter list: 99999") {
		t.Fatalf("retry of an unknown sequence: exit %d, %q", code, errOut)
	}

	rcv.mu.Lock()
	rcv.refusing = false
	rcv.mu.Unlock()
	code, out, errOut = runMain(h.Env, "events", "retry", m[1])
	re := regexp.MustCompile(fmt.Sprintf(`dead letter %d queued again as (\d+)\n`, dead))
	again := re.FindStringSubmatch(out)
	if code != 0 || again == nil {
		t.Fatalf("events retry %d: exit %d, stdout %q, stderr %q", dead, code, out, errOut)
	}
	newSeq, _ := strconv.ParseUint(again[1], 10, 64)
	if newSeq <= taken[1].seq {
		t.Fatalf("queued again as %d, not after the last event (%d)", newSeq, taken[1].seq)
	}
	if code, out, _ := runMain(h.Env, "events", "list"); code != 0 || !strings.Contains(out, "dead letters: 0\n") {
		t.Fatalf("events list after the retry: exit %d\n%s", code, out)
	}

	if databaseURL == "" {
		// The file: the event waits in the queue for the next start.
		db, err := bolt.Open(dataDir, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := db.QueuedEvents(0, 10)
		db.Close()
		if err != nil || len(q) != 1 || q[0].Seq != newSeq || !strings.Contains(string(q[0].Body), fmt.Sprintf(`"sequence":%d`, newSeq)) {
			t.Fatalf("queue after the retry: %+v %v", q, err)
		}
		return
	}
	wait("the retried event", func() bool { taken, _ := rcv.got(); return len(taken) == 3 })
	taken, _ = rcv.got()
	rcv.mu.Lock()
	uid := rcv.refusedUID
	rcv.mu.Unlock()
	if taken[2].seq != newSeq || taken[2].target != "https://refuse-me.test/form" || taken[2].uid != uid || uid == "" {
		t.Fatalf("took %+v; want the retried event last, as %d, with the event id %q", taken, newSeq, uid)
	}
}

// TestEventsWebhookRedirectIsNotFollowed: through the bot's own wiring,
// a receiver that answers 302 and then 307 to another server gets the
// event once it answers 2xx; the other server never gets a request (no
// bodiless GET, no body or signature re-posted), and the log says where
// the redirect pointed without the Location's path or query.
func TestEventsWebhookRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	opts := apptest.Options()
	opts.EventsMinBackoff, opts.EventsMaxBackoff = 10*time.Millisecond, 20*time.Millisecond
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+string(b))
		mu.Unlock()
	}))
	defer other.Close()
	const secret = "whsec-redirects-8"
	rcv := &refusingReceiver{t: t, secret: []byte(secret)}
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		n := tries
		mu.Unlock()
		switch n {
		case 1:
			http.Redirect(w, r, other.URL+"/collect/redirect-secret-1?k=q-secret-2", http.StatusFound)
		case 2:
			http.Redirect(w, r, other.URL+"/collect/redirect-secret-1", http.StatusTemporaryRedirect)
		default:
			rcv.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	h := apptest.StartBotOptions(t, map[string]string{"VERDICTBOT_EVENTS_URL": srv.URL + "/hook", "VERDICTBOT_EVENTS_SECRET": secret}, sim.Config{}, opts)
	h.Post("the docs <https://docs.clean.test/redirected>")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if taken, _ := rcv.got(); len(taken) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event was not delivered after the redirects\n%s", h.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing more arrives
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) != 0 || tries != 3 {
		t.Fatalf("the redirect target got %q; %d attempts (want 3)", elsewhere, tries)
	}
	logs := h.Logs.String()
	if !strings.Contains(logs, "a redirect to "+other.URL+"/…, not followed") {
		t.Errorf("the log does not say where the redirect pointed:\n%s", logs)
	}
	for _, s := range []string{"redirect-secret-1", "q-secret-2", secret} {
		if strings.Contains(logs, s) {
			t.Errorf("%q in the logs", s)
		}
	}
}
