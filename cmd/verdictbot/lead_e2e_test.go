package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// orderedReceiver is the SOC's receiver of the lead test: it checks each
// signature, answers after a short delay (so the queue stays ahead of it)
// and logs each event as it arrives: sequence, the sender's term, kind,
// target, time.
type orderedReceiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	log    []arrival
	bad    int
}

type arrival struct {
	seq    uint64
	term   int64
	kind   string
	target string
	at     time.Time
}

func (r *orderedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	time.Sleep(250 * time.Millisecond) // slower than the links come: a backlog that outlasts the kill
	r.mu.Lock()
	defer r.mu.Unlock()
	if !signedBy(r.secret, body, req.Header) {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		Metadata struct {
			Sequence uint64 `json:"sequence"`
		} `json:"metadata"`
		Unmapped struct {
			Kind   string `json:"kind"`
			Target string `json:"target"`
		} `json:"unmapped"`
	}
	_ = json.Unmarshal(body, &ev)
	term, _ := strconv.ParseInt(req.Header.Get("X-Verdictbot-Term"), 10, 64)
	r.log = append(r.log, arrival{ev.Metadata.Sequence, term, ev.Unmapped.Kind, ev.Unmapped.Target, time.Now()})
}

func (r *orderedReceiver) arrivals() ([]arrival, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log), r.bad
}

// leadTerm is a row of leaders.
type leadTerm struct {
	token  int64
	holder string
	pid    int32
	left   time.Duration // until it expires, unrenewed
	age    time.Duration // since it began
}

// liveTerms reads the live terms of the leads, by job.
func liveTerms(ctx context.Context, conn *pgx.Conn) (map[string]leadTerm, error) {
	rows, err := conn.Query(ctx, `SELECT job, token, holder, pid, (extract(epoch FROM expires - now()) * 1000)::bigint,
		(extract(epoch FROM now() - elected) * 1000)::bigint FROM leaders WHERE expires > now()`)
	if err != nil {
		return nil, err
	}
	out := map[string]leadTerm{}
	for rows.Next() {
		var job string
		var lt leadTerm
		var left, age int64
		if err := rows.Scan(&job, &lt.token, &lt.holder, &lt.pid, &left, &age); err != nil {
			return nil, err
		}
		lt.left, lt.age = time.Duration(left)*time.Millisecond, time.Duration(age)*time.Millisecond
		out[job] = lt
	}
	return out, rows.Err()
}

// TestKillingTheLeadersSessionRepeatsNothing runs 2 replicas on one
// database with VERDICTBOT_LEASE=5s. Links stream in (their verdicts and,
// for one in 9 of them, a recheck flip become events) while the events and
// the recheck are led and rechecks fall due every second; in the middle,
// the leaders' database sessions are terminated (pg_terminate_backend on
// the pids in leaders), and links keep coming until their terms are over.
// The receiver's log of event sequence numbers is 1…N, each once, in
// order, with the senders' terms never going back;
// every link was scanned once and rechecked once (the simulator's tasks,
// and one recheck verdict each in the database); each flip was announced
// once. It reports how long each job went without a leader.
func TestKillingTheLeadersSessionRepeatsNothing(t *testing.T) {
	t.Parallel()
	const secret = "whsec-lead-test-77"
	rcv := &orderedReceiver{t: t, secret: []byte(secret)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	const lease = 5 * time.Second
	c := startCluster(t, sim.Config{}, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":     "quiet",
		"VERDICTBOT_LEASE":            lease.String(),
		"VERDICTBOT_RECHECK_SCHEDULE": "@every 1s",
		"VERDICTBOT_RECHECK_AFTER":    "3s,1h",
		"VERDICTBOT_EVENTS_URL":       srv.URL + "/soc",
		"VERDICTBOT_EVENTS_SECRET":    secret,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for range 2 {
		c.spawn()
	}
	connected, cancelConnect := context.WithTimeout(ctx, 15*time.Second)
	defer cancelConnect()
	if _, err := c.slack.WaitOpenConns(connected, 2); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, c.schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())

	// 40 links: 28 over 2.8 s, then, once the lead sessions are killed,
	// one every 500 ms, so that events are queued until the killed terms
	// are over (expired, or released by a holder that stepped down) and
	// the next term of the event sender begins as soon as one may (with
	// nothing queued no replica asks for the lead: the next term began
	// with the next flip, up to 18 s after the kill). The
	// *.flip.test ones (one in 9, over the 4 channels) are clean at the
	// first scan and phishing at the second (the recheck): a flip,
	// announced in the thread (Slack's pace, shared by the 2 replicas,
	// allows a post every 2 s per channel: a card and a reply each).
	var urls, flips []string
	posted := make(chan struct{})
	killedNow := make(chan struct{})
	go func() {
		defer close(posted)
		for i := range 40 {
			if ctx.Err() != nil {
				return
			}
			url := fmt.Sprintf("https://docs%02d.clean.test/page", i)
			if i%9 == 0 {
				url = fmt.Sprintf("https://promo%02d.flip.test/spring", i)
				flips = append(flips, url)
			}
			urls = append(urls, url)
			if _, err := c.slack.DeliverMessage(slackfake.MessageEvent{Channel: fmt.Sprintf("C0LEAD%d", i%4), User: alice, Text: "have a look <" + url + ">"}); err != nil {
				t.Error(err)
			}
			switch {
			case i < 27:
				time.Sleep(100 * time.Millisecond)
			case i == 27:
				select {
				case <-killedNow:
				case <-ctx.Done():
					return
				}
			default:
				time.Sleep(500 * time.Millisecond)
			}
		}
	}()
	defer func() { cancel(); <-posted }() // no post after the test

	// Wait for both leads to be held while events flow and a recheck run
	// has been going for a while (announcing flips), then kill the
	// sessions holding them.
	var killed map[string]leadTerm
	for {
		terms, err := liveTerms(ctx, db)
		arrived, _ := rcv.arrivals()
		if err == nil && terms["events"].pid != 0 && terms["recheck"].pid != 0 && terms["recheck"].age > time.Second &&
			len(arrived) >= 15 && c.sim.Count(sim.ServiceReputation, sim.OpScan) > 25 {
			killed = terms
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the leads were never both held while events flowed: %v %v (%d events)", terms, err, len(arrived))
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids := map[int32]bool{killed["events"].pid: true, killed["recheck"].pid: true}
	for pid := range pids {
		var ok bool
		if err := db.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("terminating the lead session %d: %v %v", pid, ok, err)
		}
	}
	kill := time.Now()
	close(killedNow)
	arrivedAtKill, _ := rcv.arrivals()

	// When each job has a new term.
	handover := map[string]time.Duration{}
	for len(handover) < 2 {
		terms, err := liveTerms(ctx, db)
		for _, job := range []string{"events", "recheck"} {
			if lt, ok := terms[job]; err == nil && ok && lt.token > killed[job].token && handover[job] == 0 {
				handover[job] = time.Since(kill)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no new term after the kill: %v (killed %v)", handover, killed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-posted

	// Every link rechecked, every event delivered, then a quiet spell.
	rechecked := func() int {
		n := 0
		for _, u := range urls {
			if len(c.sim.URLTasks(u)) >= 2 {
				n++
			}
		}
		return n
	}
	flipsSeen := func() int {
		arrived, _ := rcv.arrivals()
		seen := map[string]bool{}
		for _, a := range arrived {
			if a.kind == "flip" {
				seen[a.target] = true
			}
		}
		return len(seen)
	}
	var last int64
	for {
		err := db.QueryRow(ctx, `SELECT last FROM event_seq`).Scan(&last)
		var queued int
		if err == nil {
			err = db.QueryRow(ctx, `SELECT count(*) FROM event_queue`).Scan(&queued)
		}
		arrived, _ := rcv.arrivals()
		if err == nil && rechecked() == len(urls) && flipsSeen() == len(flips) && queued == 0 && len(arrived) >= int(last) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d links rechecked, %d of %d flips announced, %d of %d events received, %d queued (%v)",
				rechecked(), len(urls), flipsSeen(), len(flips), len(arrived), last, queued, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // three more recheck ticks, a lease renewal or two: nothing more may come
	db.QueryRow(ctx, `SELECT last FROM event_seq`).Scan(&last)

	arrived, bad := rcv.arrivals()
	var seqs []uint64
	for _, a := range arrived {
		seqs = append(seqs, a.seq)
	}
	if bad != 0 || len(arrived) != int(last) {
		t.Fatalf("%d events received (%d with a bad signature), %d queued in all: %v", len(arrived), bad, last, seqs)
	}
	for i, a := range arrived {
		if a.seq != uint64(i+1) {
			t.Fatalf("event %d has sequence %d: an event came twice or out of order: %v", i+1, a.seq, seqs)
		}
		if i > 0 && a.term < arrived[i-1].term {
			t.Fatalf("event %d came in term %d after term %d: a replica that lost the lead sent it", a.seq, a.term, arrived[i-1].term)
		}
	}
	flipEvents := map[string]int{}
	for _, a := range arrived {
		if a.kind == "flip" {
			flipEvents[a.target]++
		}
	}
	for _, u := range urls {
		if n := len(c.sim.URLTasks(u)); n != 2 {
			t.Errorf("%s: %d scans, want the first and one recheck", u, n)
		}
		var recheckVerdicts int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM verdicts WHERE target = $1 AND source = 'recheck'`, u).Scan(&recheckVerdicts); err != nil || recheckVerdicts != 1 {
			t.Errorf("%s: %d recheck verdicts recorded (%v), want 1", u, recheckVerdicts, err)
		}
	}
	for _, u := range flips {
		if flipEvents[u] != 1 {
			t.Errorf("%s: %d flip events, want 1", u, flipEvents[u])
		}
	}
	// The first event of a later term: how long the receiver waited.
	var gap time.Duration
	for _, a := range arrived[len(arrivedAtKill):] {
		if a.term > killed["events"].token {
			gap = a.at.Sub(kill)
			break
		}
	}
	for job, d := range handover {
		if d > lease+2*time.Second {
			t.Errorf("%s: the next term began %v after the kill, want within one lease (%v)", job, d, lease)
		}
	}
	var terms []string
	for _, a := range arrived {
		if s := strconv.FormatInt(a.term, 10); len(terms) == 0 || terms[len(terms)-1] != s {
			terms = append(terms, s)
		}
	}
	t.Logf("figures: lease %v; %d events received once each in order over terms %s; %d links scanned once and rechecked once, %d flips announced once; "+
		"lead sessions killed with %d events delivered; events: the killed term had %v left, the next began %v after the kill, its first event reached the receiver %v after it; "+
		"recheck: the killed term (a run going for %v) had %v left, the next began %v after the kill",
		lease, len(arrived), strings.Join(terms, ","), len(urls), len(flips), len(arrivedAtKill),
		killed["events"].left.Round(time.Millisecond), handover["events"].Round(time.Millisecond), gap.Round(time.Millisecond),
		killed["recheck"].age.Round(time.Millisecond), killed["recheck"].left.Round(time.Millisecond), handover["recheck"].Round(time.Millisecond))
}
