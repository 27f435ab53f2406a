package events_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

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
