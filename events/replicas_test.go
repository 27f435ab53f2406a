package events_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestReplicasOnPostgresSendOneAtATime: three replicas on one database
// queue events concurrently and each runs a sender; the advisory lock
// (State.Lead "events") lets one send at a time, so the receiver gets
// every event once, in sequence order.
func TestReplicasOnPostgresSendOneAtATime(t *testing.T) {
	_, url := pgtest.Schema(t)
	rcv := &receiver{t: t, secret: []byte("s3cret")}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ems []*events.Emitter
	for i := range 3 {
		db, err := pg.Open(ctx, url, pg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		em := &events.Emitter{Queue: db}
		ems = append(ems, em)
		s := &events.Sender{Queue: db, URL: srv.URL, Secret: rcv.secret, Lead: db.Lead, Poll: time.Duration(5+i) * time.Millisecond,
			MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	const each = 40
	var emit sync.WaitGroup
	for _, em := range ems {
		emit.Go(func() {
			for range each {
				em.Emit(context.Background(), findings[0])
			}
		})
	}
	emit.Wait()
	waitFor(t, "every event", 30*time.Second, func() bool { return len(rcv.accepted()) >= 3*each })
	time.Sleep(100 * time.Millisecond) // no duplicate follows
	cancel()
	wg.Wait()
	if got := rcv.accepted(); !inOrder(got, 3*each) {
		t.Fatalf("received %d events, want %d in order: %v", len(got), 3*each, got)
	}
}

// TestKilledLeadSessionSendsNothingTwice: two replicas on PostgreSQL each
// run a sender with a 2 s lease; while the leader sends a stream of events
// to a slow receiver, its lead session is terminated (pg_terminate_backend
// on the pid in leaders). The leader stops within its term and the other
// replica (or it, on a new session) leads the next term: the receiver gets
// every event once, in sequence order, and the terms in the order they
// were held.
func TestKilledLeadSessionSendsNothingTwice(t *testing.T) {
	_, url := pgtest.Schema(t)
	rcv := &receiver{t: t, secret: []byte("s3cret")}
	var kill func()
	var once sync.Once
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond) // the queue stays ahead of the receiver
		rcv.ServeHTTP(w, r)
		if len(rcv.accepted()) == 40 {
			once.Do(kill)
		}
	})
	srv := httptest.NewServer(slow)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var dbs []*pg.DB
	const lease = 2 * time.Second
	for range 2 {
		db, err := pg.Open(ctx, url, pg.Options{Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
		s := &events.Sender{Queue: db, URL: srv.URL, Secret: rcv.secret, Lead: db.Lead, Poll: 10 * time.Millisecond,
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	var killedAt time.Time
	kill = func() {
		var pid int32
		var ok bool
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		err = conn.QueryRow(context.Background(),
			`SELECT pid, pg_terminate_backend(pid) FROM leaders WHERE job = 'events'`).Scan(&pid, &ok)
		if err != nil || !ok {
			t.Errorf("terminating the lead session: %v %v", ok, err)
		}
		killedAt = time.Now()
	}
	const n = 150
	em := &events.Emitter{Queue: dbs[1]}
	for range n {
		em.Emit(context.Background(), findings[0])
	}
	waitFor(t, "every event", 60*time.Second, func() bool { return len(rcv.accepted()) >= n })
	time.Sleep(300 * time.Millisecond) // no duplicate follows
	cancel()
	wg.Wait()
	got := rcv.accepted()
	if !inOrder(got, n) {
		t.Fatalf("received %d events, want %d once each in order: %v", len(got), n, got)
	}
	rcv.mu.Lock()
	terms := append([]string(nil), rcv.terms...)
	tries := append([]time.Time(nil), rcv.tries...)
	rcv.mu.Unlock()
	handover := time.Duration(0)
	for i := 1; i < len(terms); i++ {
		a, _ := strconv.Atoi(terms[i-1])
		b, _ := strconv.Atoi(terms[i])
		if b < a {
			t.Fatalf("event %d came in term %d after term %d: %v", i+1, b, a, terms)
		}
		if i >= 40 && b > a && handover == 0 {
			handover = tries[i].Sub(killedAt)
		}
	}
	if terms[0] == terms[len(terms)-1] {
		t.Fatalf("one term sent everything (%s): the kill did not end it", terms[0])
	}
	if handover > lease+lease/2 {
		t.Errorf("the next term sent its first event %v after the kill, want within one lease (%v)", handover, lease)
	}
	t.Logf("lease %v: %d events, each once in order; the first event of the next term %v after the kill", lease, n, handover.Round(time.Millisecond))
}
