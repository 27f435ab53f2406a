package slackfake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

// replica is one slack-go socketmode client on the shared app, as one bot
// replica would run it: it records every envelope it receives and acks it
// at once, unless stalled.
type replica struct {
	b     *sockBot
	stall atomic.Bool

	mu     sync.Mutex
	connID int                   // the fake's ID of its latest connection (from hello)
	got    []*socketmode.Request // envelopes received, in order
}

func startReplica(t *testing.T, f *slackfake.Server) *replica {
	t.Helper()
	r := &replica{b: runSocket(t, f)}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case ev := <-r.b.sm.Events:
				req := ev.Request
				switch {
				case req == nil:
				case req.Type == "hello":
					id, _ := strconv.Atoi(strings.TrimPrefix(req.DebugInfo.Host, "applink-fake-"))
					r.mu.Lock()
					r.connID = id
					r.mu.Unlock()
				case req.EnvelopeID != "":
					r.mu.Lock()
					r.got = append(r.got, req)
					r.mu.Unlock()
					if !r.stall.Load() {
						_ = r.b.sm.AckCtx(ctx, req.EnvelopeID, nil)
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	return r
}

func (r *replica) conn() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connID
}

func (r *replica) received() []*socketmode.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// startReplicas starts n replicas and waits until each has its hello.
func startReplicas(t *testing.T, ctx context.Context, f *slackfake.Server, n int) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		rs[i] = startReplica(t, f)
	}
	if _, err := f.WaitOpenConns(ctx, n); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for r.conn() == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("a replica saw no hello")
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return rs
}

// waitReceived waits until the replica has received n envelopes.
func (r *replica) waitReceived(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for len(r.received()) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("replica received %d envelopes, want %d", len(r.received()), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func deliverN(t *testing.T, f *slackfake.Server, n int) []slackfake.Delivery {
	t.Helper()
	out := make([]slackfake.Delivery, n)
	for i := range out {
		out[i] = must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: fmt.Sprintf("message %d", i)}))
	}
	return out
}

// TestEnvelopesSpreadOverReplicas: 300 events over 3 connections of one app
// reach exactly one connection each, every connection gets a share under
// the default random policy, and the fake's record matches what each
// client received.
func TestEnvelopesSpreadOverReplicas(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(10*time.Second))
	ctx := testCtx(t)
	rs := startReplicas(t, ctx, f, 3)

	ds := deliverN(t, f, 300)
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}

	byEnvelope := map[string]int{} // envelope_id → replica that received it
	for i, r := range rs {
		got := r.received()
		for _, req := range got {
			if prev, dup := byEnvelope[req.EnvelopeID]; dup {
				t.Errorf("envelope %s reached replicas %d and %d", req.EnvelopeID, prev, i)
			}
			byEnvelope[req.EnvelopeID] = i
			if req.RetryAttempt != 0 {
				t.Errorf("replica %d got a retry %+v", i, req)
			}
		}
		onConn := f.EnvelopesOn(r.conn())
		if len(got) != len(onConn) {
			t.Errorf("replica %d received %d envelopes, the fake wrote %d on its connection %d", i, len(got), len(onConn), r.conn())
		}
		// 300 over 3 at random: about 100 each; under 50 would mean a broken spread.
		if len(got) < 50 {
			t.Errorf("replica %d (connection %d) received %d of 300 envelopes", i, r.conn(), len(got))
		}
		t.Logf("replica %d on connection %d: %d envelopes", i, r.conn(), len(got))
	}
	for _, d := range ds {
		envs := f.EventEnvelopes(d.EventID)
		if len(envs) != 1 || len(envs[0].Acks) != 1 {
			t.Fatalf("event %s: %v", d.EventID, envs)
		}
		if _, ok := byEnvelope[d.EnvelopeID]; !ok {
			t.Errorf("envelope %s (connection %d) reached no replica", d.EnvelopeID, envs[0].ConnID)
		}
	}
	if len(byEnvelope) != 300 {
		t.Errorf("replicas received %d distinct envelopes, want 300", len(byEnvelope))
	}
	for _, c := range f.Conns() {
		if c.Sent != c.Acks || !c.Open() {
			t.Errorf("connection %+v", c)
		}
	}
}

func TestDeliveryPolicies(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithDeliveryPolicy(slackfake.RoundRobinDelivery()))
	ctx := testCtx(t)
	rs := startReplicas(t, ctx, f, 3)

	deliverN(t, f, 30)
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	ids := f.OpenConnIDs()
	var seq []int
	for _, e := range f.Envelopes() {
		seq = append(seq, e.ConnID)
	}
	for i, id := range seq {
		if want := ids[i%3]; id != want {
			t.Fatalf("round robin: envelope %d on connection %d, want %d (sequence %v)", i, id, want, seq)
		}
	}

	target := rs[1].conn()
	f.SetDeliveryPolicy(slackfake.DeliverToConnection(target))
	deliverN(t, f, 10)
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.EnvelopesOn(target)); n != 20 {
		t.Errorf("connection %d has %d envelopes, want 10 round robin + 10 directed", target, n)
	}

	// The same seed gives the same choices over the same connections.
	pick := func(p slackfake.DeliveryPolicy) []int {
		var out []int
		for range 20 {
			out = append(out, p([]int{1, 2, 3}, slackfake.Envelope{}))
		}
		return out
	}
	if a, b := pick(slackfake.RandomDelivery(7)), pick(slackfake.RandomDelivery(7)); !slices.Equal(a, b) {
		t.Errorf("RandomDelivery(7) not reproducible: %v vs %v", a, b)
	}
}

// TestStalledReplicaEventsGoToAnother: a replica that stops acking gets its
// events redelivered, after the ack window, to another connection with
// retry_attempt 1 and retry_reason "timeout", and each event is acked once.
func TestStalledReplicaEventsGoToAnother(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(300*time.Millisecond))
	ctx := testCtx(t)
	rs := startReplicas(t, ctx, f, 3)
	staller := rs[0]
	staller.stall.Store(true)
	stalled := staller.conn()
	// First attempts round robin; retries anywhere but the stalled replica,
	// so every retry is acked (under the default random policy a retry may
	// land on it again, as on Slack).
	rr := slackfake.RoundRobinDelivery()
	f.SetDeliveryPolicy(func(open []int, env slackfake.Envelope) int {
		if env.RetryAttempt == 0 {
			return rr(open, env)
		}
		others := slices.DeleteFunc(open, func(id int) bool { return id == stalled })
		return others[len(env.EventID)%len(others)]
	})

	ds := deliverN(t, f, 30)
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}

	redelivered := 0
	for _, d := range ds {
		envs := f.EventEnvelopes(d.EventID)
		acks := 0
		for _, e := range envs {
			acks += len(e.Acks)
		}
		if acks != 1 {
			t.Errorf("event %s acked %d times: %v", d.EventID, acks, envs)
		}
		if envs[0].ConnID != stalled {
			if len(envs) != 1 {
				t.Errorf("event %s first went to a live replica but was redelivered: %v", d.EventID, envs)
			}
			continue
		}
		redelivered++
		if len(envs) != 2 || envs[0].Acked() || !envs[0].TimedOut {
			t.Fatalf("event %s sent to the stalled connection: %v", d.EventID, envs)
		}
		r := envs[1]
		if r.RetryAttempt != 1 || r.RetryReason != "timeout" || r.ConnID == stalled || !r.Acked() {
			t.Errorf("retry of event %s: %v", d.EventID, r)
		}
		if r.Acks[0].ConnID != r.ConnID {
			t.Errorf("retry %s acked on connection %d, sent on %d", r.ID, r.Acks[0].ConnID, r.ConnID)
		}
	}
	if redelivered != 10 {
		t.Errorf("%d events went first to the stalled connection, want 10 (round robin over 3)", redelivered)
	}
	// The live replicas saw the retries as slack-go reports them.
	retries := 0
	for _, r := range rs[1:] {
		for _, req := range r.received() {
			if req.RetryAttempt == 1 && req.RetryReason == "timeout" {
				retries++
			}
		}
	}
	if retries != 10 || len(staller.received()) != 10 {
		t.Errorf("live replicas received %d retries, the stalled one %d envelopes; want 10 and 10", retries, len(staller.received()))
	}
}

// TestDroppedConnectionUnackedGoToAnother: a connection that drops with
// unacked envelopes (a replica killed mid-stream) has them redelivered on
// the other open connections.
func TestDroppedConnectionUnackedGoToAnother(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(300*time.Millisecond))
	ctx := testCtx(t)
	rs := startReplicas(t, ctx, f, 3)
	victim := rs[2]
	victim.stall.Store(true) // it got the events but dies before acking
	dead := victim.conn()
	f.SetDeliveryPolicy(slackfake.DeliverToConnection(dead))
	ds := deliverN(t, f, 10)
	victim.waitReceived(t, ctx, 10)
	if n := len(f.EnvelopesOn(dead)); n != 10 {
		t.Fatalf("%d envelopes on connection %d, want 10", n, dead)
	}

	// The replica restarts: its new connection acks; the 10 it held are lost with the old one.
	victim.stall.Store(false)
	f.SetDeliveryPolicy(slackfake.RoundRobinDelivery())
	if err := f.DropConn(dead); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		envs := f.EventEnvelopes(d.EventID)
		if len(envs) != 2 || envs[0].ConnID != dead || envs[0].Acked() {
			t.Fatalf("event %s: %v", d.EventID, envs)
		}
		r := envs[1]
		if r.RetryAttempt != 1 || r.RetryReason != "timeout" || r.ConnID == dead || len(r.Acks) != 1 {
			t.Errorf("event %s after the drop: %v", d.EventID, r)
		}
	}
	for _, c := range f.Conns() {
		if c.ID == dead && c.Open() {
			t.Errorf("dropped connection still open: %+v", c)
		}
	}
	if err := f.DropConn(dead); err == nil {
		t.Error("DropConn of a closed connection succeeded")
	}
}

// TestOnlyConnectionDroppedGetsItsEventsBackOnReconnect: with a single
// connection, the unacked events of a dropped socket come back to the same
// client on its next connection.
func TestOnlyConnectionDroppedGetsItsEventsBackOnReconnect(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(300*time.Millisecond))
	ctx := testCtx(t)
	r := startReplicas(t, ctx, f, 1)[0]
	r.stall.Store(true)
	first := r.conn()
	ds := deliverN(t, f, 3)
	r.waitReceived(t, ctx, 3)
	r.stall.Store(false) // the client restarts: it acks what it gets from now on
	if err := f.DropConn(first); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	second := r.conn()
	if second == first {
		t.Fatalf("still on connection %d", first)
	}
	for _, d := range ds {
		envs := f.EventEnvelopes(d.EventID)
		if n := len(envs); n != 2 || envs[1].ConnID != second || envs[1].RetryAttempt != 1 || !envs[1].Acked() {
			t.Errorf("event %s: %v", d.EventID, envs)
		}
	}
}

// rawSocket opens a Socket Mode WebSocket the way slack-go does and returns
// it with its first frame.
func rawSocket(t *testing.T, ctx context.Context, f *slackfake.Server) (*websocket.Conn, map[string]any) {
	t.Helper()
	_, u, err := newAPI(f).StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var frame map[string]any
	if err := json.Unmarshal(data, &frame); err != nil {
		t.Fatal(err)
	}
	return ws, frame
}

// TestEleventhConnectionRefused: an app has at most 10 connections; the
// 11th WebSocket gets Slack's too_many_websockets disconnect instead of
// hello and is closed; once one closes, a new one is accepted.
func TestEleventhConnectionRefused(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithEchoOwnMessages(false), slackfake.WithDisconnectGrace(200*time.Millisecond))
	ctx := testCtx(t)
	var socks []*websocket.Conn
	for i := 1; i <= 10; i++ {
		ws, hello := rawSocket(t, ctx, f)
		if hello["type"] != "hello" || hello["num_connections"] != float64(i) {
			t.Fatalf("connection %d: first frame %v", i, hello)
		}
		socks = append(socks, ws)
	}

	ws, frame := rawSocket(t, ctx, f)
	if frame["type"] != "disconnect" || frame["reason"] != "too_many_websockets" {
		t.Fatalf("11th connection: first frame %v, want a too_many_websockets disconnect", frame)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, data, err := ws.ReadMessage(); err == nil {
		t.Fatalf("11th connection got another frame: %s", data)
	}
	var open, refused int
	f.Inspect(func(st *slackfake.State) { open, refused = st.OpenConnections(), st.RefusedConnections() })
	if open != 10 || refused != 1 {
		t.Errorf("open %d, refused %d; want 10 and 1", open, refused)
	}
	// Nothing is routed to the refused socket: events go to the 10.
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "x"}))
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { e, _ := st.Envelope(d.EnvelopeID); return !e.SentAt.IsZero() }); err != nil {
		t.Fatal(err)
	}
	if env, _ := f.Envelope(d.EnvelopeID); env.ConnID < 1 || env.ConnID > 10 {
		t.Errorf("event routed to connection %d", env.ConnID)
	}

	_ = socks[0].Close()
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { return st.OpenConnections() == 9 }); err != nil {
		t.Fatal(err)
	}
	if _, hello := rawSocket(t, ctx, f); hello["type"] != "hello" || hello["num_connections"] != float64(10) {
		t.Errorf("connection after one closed: first frame %v", hello)
	}
}

// TestSlashCommandsAndInteractionsAreNotRedelivered: Slack retries events,
// not slash commands nor interactions: unacked, they stay delivered once,
// on one connection, while an unacked event sent at the same time is
// retried.
func TestSlashCommandsAndInteractionsAreNotRedelivered(t *testing.T) {
	t.Parallel()
	const window = 150 * time.Millisecond
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false),
		slackfake.WithAckTimeout(window))
	ctx := testCtx(t)
	rs := startReplicas(t, ctx, f, 2)
	for _, r := range rs {
		r.stall.Store(true)
	}
	cmd := must[slackfake.Delivery](t)(f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: "https://x.test", UserID: alice, ChannelID: chanSec}))
	act := must[slackfake.Delivery](t)(f.DeliverInteraction(map[string]any{"type": "shortcut", "callback_id": "scan", "trigger_id": "1.2.3", "user": map[string]any{"id": alice}}))
	ev := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "y"}))

	// The event is retried (proof that the window passed, several times)…
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { return len(st.EventEnvelopes(ev.EventID)) >= 3 }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * window)
	// …the command and the interaction are not.
	var types []string
	for _, e := range f.Envelopes() {
		if e.Type != slackfake.EnvelopeEventsAPI {
			types = append(types, e.Type)
			if e.SentAt.IsZero() || e.TimedOut || e.RetryAttempt != 0 {
				t.Errorf("%v", e)
			}
		}
	}
	if !slices.Equal(types, []string{slackfake.EnvelopeSlashCommands, slackfake.EnvelopeInteractive}) {
		t.Errorf("non-event envelopes %v, want one slash command and one interaction", types)
	}
	seen := map[string]int{}
	for _, r := range rs {
		for _, req := range r.received() {
			seen[req.EnvelopeID]++
		}
	}
	if seen[cmd.EnvelopeID] != 1 || seen[act.EnvelopeID] != 1 {
		t.Errorf("the replicas received the command %d times and the interaction %d times, want 1 and 1", seen[cmd.EnvelopeID], seen[act.EnvelopeID])
	}
}
