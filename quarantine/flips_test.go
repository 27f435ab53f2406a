package quarantine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// cardSet is a CardBook of several cards, by source.
type cardSet struct {
	mu    sync.Mutex
	cards map[card.Ref]*card.Card
}

func (s *cardSet) Get(channel, sourceTS string) (*store.CardRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cards[card.Ref{Channel: channel, SourceTS: sourceTS}]
	if !ok {
		return nil, false
	}
	return &store.CardRecord{Card: c.Clone()}, true
}

func (s *cardSet) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cards[card.Ref{Channel: channel, SourceTS: sourceTS}]
	if !ok {
		return nil, card.ErrNotFound
	}
	return fn(c)
}

func (s *cardSet) get(ts string) card.Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cards[card.Ref{Channel: "C0SEC", SourceTS: ts}].Clone()
}

// queueAgainstFake is a Quarantine with its removal queue on a store in
// dir (reopen it to play a restart), the fake Slack and an empty card set.
type queueRig struct {
	t     *testing.T
	q     *Quarantine
	fake  *slackfake.Server
	dir   string
	db    store.State
	cards *cardSet
}

func newQueueRig(t *testing.T, opts ...slackfake.Option) *queueRig {
	t.Helper()
	fake := slackfaketest.Start(t, append([]slackfake.Option{slackfake.WithUserToken(slackfake.UserToken{Token: testAdminToken, User: "U0ADMIN",
		Scopes: []string{"chat:write", "files:write"}})}, opts...)...)
	fake.AddUser(slackfake.User{ID: "U0ADMIN", Name: "secadmin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice"})
	r := &queueRig{t: t, fake: fake, dir: t.TempDir(), cards: &cardSet{cards: map[card.Ref]*card.Card{}}}
	r.open()
	r.q = &Quarantine{
		Admin:   slack.New(testAdminToken, slack.OptionAPIURL(fake.APIURL())),
		Bot:     slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL())),
		Store:   r.db,
		Queue:   r.db,
		Cards:   r.cards,
		Poster:  &updates{},
		Levels:  &settings.Channels{Store: r.db, Defaults: settings.Defaults{Quarantine: "malicious"}},
		FlipMax: 20,
		IsAdmin: func(u string) bool { return u == "U0ADMIN" },
		// Fast pacing for the test: 2 a second.
		DeletesPerMinute: 120,
	}
	return r
}

func (r *queueRig) open() {
	r.t.Helper()
	db, err := bolt.Open(r.dir, bolt.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	r.db = db
	if r.q != nil {
		r.q.Store, r.q.Queue = db, db
	}
}

// restart closes the store (the process stops) and opens it again.
func (r *queueRig) restart() {
	r.t.Helper()
	r.db.Close()
	r.open()
}

// post posts a malicious message of alice's with its final card, marked
// queued, and queues its removal.
func (r *queueRig) post(text string) string {
	r.t.Helper()
	d, err := r.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C0SEC", User: "U0ALICE", Text: text + " <https://login.phish.test/verify>"})
	if err != nil {
		r.t.Fatal(err)
	}
	c := maliciousCard("C0SEC", d.TS)
	now := time.Now()
	rm := &store.Removal{Card: card.Ref{Channel: "C0SEC", SourceTS: d.TS}, Target: "https://login.phish.test/verify", Level: "malicious", Queued: now.Add(-2 * postWait), NextAt: now}
	r.q.Mark(&c, rm)
	r.cards.mu.Lock()
	r.cards.cards[card.Ref{Channel: "C0SEC", SourceTS: d.TS}] = &c
	r.cards.mu.Unlock()
	if err := r.db.QueueRemovals([]store.Removal{*rm}); err != nil {
		r.t.Fatal(err)
	}
	return d.TS
}

// run runs the worker until stop is called.
func (r *queueRig) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.q.RunRemovals(ctx) }()
	return func() { cancel(); <-done }
}

func (r *queueRig) waitDeleted(ts ...string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := r.fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, t := range ts {
			if m, ok := st.Message("C0SEC", t); !ok || !m.Deleted {
				return false
			}
		}
		return true
	})
	if err != nil {
		r.t.Fatalf("not removed: %v", err)
	}
}

func (r *queueRig) waitQueueEmpty() {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if q, h, err := r.db.RemovalCounts(); err == nil && q == 0 && h == 0 {
			return
		}
	}
	r.t.Fatal("the queue did not empty")
}

func deletesOf(fake *slackfake.Server, ts string) int {
	n := 0
	for _, c := range fake.Calls("chat.delete") {
		if c.Params.Get("ts") == ts {
			n++
		}
	}
	return n
}

// TestQueuedRemovalsArePacedAndEachDoneOnce: the worker removes the queued
// messages one at a time at its pace (Slack's own limit on chat.delete is
// never met), each with one chat.delete, and every card becomes the
// tombstone.
func TestQueuedRemovalsArePacedAndEachDoneOnce(t *testing.T) {
	// Slack's limit here is twice the worker's pace, so a call that reaches
	// the fake late (a busy machine) is not taken for one sent too soon.
	r := newQueueRig(t, slackfake.WithRateLimits(slackfake.RateLimits{DeletesPerMinute: 240, DeleteBurst: 1}))
	var tss []string
	for i := range 4 {
		tss = append(tss, r.post(strings.Repeat("x", i+1)))
	}
	stop := r.run()
	defer stop()
	r.waitDeleted(tss...)
	r.waitQueueEmpty()
	calls := r.fake.Calls("chat.delete")
	if len(calls) != 4 {
		t.Fatalf("%d chat.delete calls for 4 messages", len(calls))
	}
	// Paced at 2 a second: the 3 gaps span at least 1.5 s, less what one
	// late arrival can take off (0.25 s); no gap is under half the pace.
	if span := calls[len(calls)-1].Time.Sub(calls[0].Time); span < 1250*time.Millisecond {
		t.Errorf("4 chat.delete calls within %v: not paced (2 a second)", span)
	}
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Time.Sub(calls[i-1].Time); gap < 250*time.Millisecond {
			t.Errorf("chat.delete %d came %v after the one before: not paced (2 a second)", i, gap)
		}
	}
	if n := r.fake.RateLimited()["chat.delete"]; n != 0 {
		t.Errorf("Slack refused %d chat.delete calls (429)", n)
	}
	for _, ts := range tss {
		if st := r.cards.get(ts).Quarantine; st == nil || st.State != card.QuarantineRemoved {
			t.Errorf("card of %s: %+v", ts, st)
		}
	}
}

// TestQueuedRemovalResumesAfterAStop: a process that stopped after
// claiming a card for removal but before chat.delete, and one that
// stopped after chat.delete but before the queue knew: after the restart
// each message is removed, with exactly one chat.delete, and its card is
// the tombstone.
func TestQueuedRemovalResumesAfterAStop(t *testing.T) {
	r := newQueueRig(t)
	// 1. Claimed (card says removed), not deleted; the process stops.
	first := r.post("first")
	if _, ok, err := r.db.ClaimRemoval(time.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	r.cards.mu.Lock()
	r.cards.cards[card.Ref{Channel: "C0SEC", SourceTS: first}].Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: time.Now()}
	r.cards.mu.Unlock()
	r.restart()
	stop := r.run()
	r.waitDeleted(first)
	r.waitQueueEmpty()
	stop()
	if n := deletesOf(r.fake, first); n != 1 {
		t.Fatalf("%d chat.delete calls for the first message", n)
	}
	if _, err := r.db.Quarantined("C0SEC", first); err != nil {
		t.Fatalf("the original of the first message was not kept: %v", err)
	}

	// 2. Deleted, but the queue still has it; the process stops.
	second := r.post("second")
	rm, ok, err := r.db.ClaimRemoval(time.Now())
	if !ok || err != nil || rm.Card.SourceTS != second {
		t.Fatalf("claim: %+v %v %v", rm, ok, err)
	}
	if out, _ := r.q.act(t.Context(), r.cards.get(second), true); out != outcomeRemoved {
		t.Fatalf("act: %v", out)
	}
	r.restart()
	stop = r.run()
	r.waitQueueEmpty()
	stop()
	if n := deletesOf(r.fake, second); n != 1 {
		t.Fatalf("%d chat.delete calls for the second message, want 1", n)
	}
	for _, ts := range []string{first, second} {
		if st := r.cards.get(ts).Quarantine; st == nil || st.State != card.QuarantineRemoved {
			t.Errorf("card of %s: %+v", ts, st)
		}
	}
}

// TestQueuedRemovalRetriesPassingFailuresThenSaysSo: Slack failing
// chat.delete for a while leaves the card queued, saying it tries again,
// and the removal is done once Slack answers; failing for good (every
// try) ends with the card saying Slack kept failing, and the queue empty.
func TestQueuedRemovalRetriesPassingFailuresThenSaysSo(t *testing.T) {
	oldWaits, oldBackoff, oldPoll := retryWaits, retryBackoff, removalPoll
	retryWaits = []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	retryBackoff, removalPoll = []time.Duration{100 * time.Millisecond}, 20*time.Millisecond
	t.Cleanup(func() { retryWaits, retryBackoff, removalPoll = oldWaits, oldBackoff, oldPoll })
	r := newQueueRig(t)
	r.q.DeletesPerMinute = 6000 // every try is paced: keep the test short
	var retried int
	var mu sync.Mutex
	r.q.OnFlip = func(event string, n int) {
		mu.Lock()
		defer mu.Unlock()
		if event == "retried" {
			retried += n
		}
	}
	ts := r.post("flaky")
	// The first attempt's four tries fail (5xx).
	r.fake.InjectFault(slackfake.Fault{Method: "chat.delete", Times: 4, Status: 503})
	stop := r.run()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if st := r.cards.get(ts).Quarantine; st != nil && st.State == card.QuarantineQueued && strings.Contains(st.Problem, "tries again") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("the card never said the removal is tried again: %+v", r.cards.get(ts).Quarantine)
	}
	r.waitDeleted(ts)
	r.waitQueueEmpty()
	stop()
	if st := r.cards.get(ts).Quarantine; st == nil || st.State != card.QuarantineRemoved {
		t.Fatalf("card: %+v", st)
	}
	mu.Lock()
	if retried != 1 {
		t.Errorf("%d retries counted, want 1", retried)
	}
	mu.Unlock()

	// Failing for good: the card says so after maxRemovalAttempts.
	gone := r.post("never")
	r.fake.InjectFault(slackfake.Fault{Method: "chat.delete", Times: 1000, Status: 502})
	stop = r.run()
	defer stop()
	r.waitQueueEmpty()
	if st := r.cards.get(gone).Quarantine; st == nil || st.State != card.QuarantineFailed || !strings.Contains(st.Problem, "kept failing") {
		t.Fatalf("card after every try failed: %+v", st)
	}
	if m, _ := r.fake.Message("C0SEC", gone); m.Deleted {
		t.Fatal("deleted despite the faults")
	}
}

// TestHeldRemovalsWaitForAnAdminsRemoveAll: Plan holds more removals than
// FlipMax under a batch; the request is posted in the alert channel (the
// link defanged, the count, the channels by count, the button); nothing
// is removed before an admin's Remove all; a non-admin's is refused;
// the admin's removes them all, once, however often it is pressed.
func TestHeldRemovalsWaitForAnAdminsRemoveAll(t *testing.T) {
	r := newQueueRig(t)
	r.fake.AddChannel(slackfake.Channel{ID: "C0ALERTS", Name: "sec-alerts"})
	r.q.FlipMax, r.q.AlertChannel = 2, "C0ALERTS"
	var refs []card.Card
	var tss []string
	for i := range 3 {
		d, err := r.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C0SEC", User: "U0ALICE", Text: strings.Repeat("y", i+1) + " <https://promo.flip.test/a>"})
		if err != nil {
			t.Fatal(err)
		}
		c := maliciousCard("C0SEC", d.TS)
		refs, tss = append(refs, c), append(tss, d.TS)
	}
	plan := r.q.Plan(t.Context(), "https://promo.flip.test/a", verdict.Malicious, refs)
	if len(plan) != 3 {
		t.Fatalf("plan: %d removals", len(plan))
	}
	var rs []store.Removal
	for i := range refs {
		rm := plan[card.Ref{Channel: "C0SEC", SourceTS: tss[i]}]
		if rm == nil || !rm.Held || rm.Batch == "" {
			t.Fatalf("removal %d: %+v", i, rm)
		}
		r.q.Mark(&refs[i], rm)
		if refs[i].Quarantine.State != card.QuarantineHeld || !strings.Contains(refs[i].Quarantine.Problem, "Remove all in the alert channel") {
			t.Fatalf("card %d: %+v", i, refs[i].Quarantine)
		}
		r.cards.cards[card.Ref{Channel: "C0SEC", SourceTS: tss[i]}] = &refs[i]
		rm.Card = card.Ref{Channel: "C0SEC", SourceTS: tss[i]}
		rs = append(rs, *rm)
	}
	if err := r.db.QueueRemovals(rs); err != nil {
		t.Fatal(err)
	}
	for _, ts := range tss {
		r.q.Shown(card.Ref{Channel: "C0SEC", SourceTS: ts}) // as the announcement does
	}
	stop := r.run()
	defer stop()
	var request slackfake.Message
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.fake.WaitFor(ctx, func(st *slackfake.State) bool {
		for _, m := range st.Messages("C0ALERTS", "") {
			if m.Bot && strings.Contains(string(m.Blocks), ActionQuarantineRemoveAll) {
				request = m
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no request in the alert channel: %v", err)
	}
	blocks := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(request.Blocks))
	for _, want := range []string{"hxxps://promo[.]flip[.]test/a", "3 messages", "3 in <#C0SEC>", "FLIP_MAX=2"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the request lacks %q: %s", want, request.Blocks)
		}
	}
	if strings.Contains(string(request.Blocks), "https://promo.flip.test") {
		t.Errorf("the request holds the live link: %s", request.Blocks)
	}
	time.Sleep(300 * time.Millisecond) // a few polls of the worker
	if n := len(r.fake.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d messages removed before an admin's approval", n)
	}
	press := func(user string) string {
		cb := &slack.InteractionCallback{Type: slack.InteractionTypeBlockActions, User: slack.User{ID: user},
			Channel: slack.Channel{GroupConversation: slack.GroupConversation{Conversation: slack.Conversation{ID: "C0ALERTS"}}}}
		var batch string
		for _, rm := range rs {
			batch = rm.Batch
		}
		cb.ActionCallback.BlockActions = []*slack.BlockAction{{ActionID: ActionQuarantineRemoveAll, Value: batch}}
		before := len(r.fake.Ephemerals("C0ALERTS", user))
		r.q.HandleInteraction(t.Context(), cb)
		eph := r.fake.Ephemerals("C0ALERTS", user)
		if len(eph) != before+1 {
			return ""
		}
		return eph[len(eph)-1].Text
	}
	r.q.Poster = &ephemeralPoster{fake: r.fake, bot: slack.New(r.fake.BotToken(), slack.OptionAPIURL(r.fake.APIURL()))}
	if got := press("U0ALICE"); !strings.Contains(got, "Only admins") {
		t.Fatalf("a non-admin's Remove all: %q", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(r.fake.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d messages removed after a non-admin's press", n)
	}
	if got := press("U0ADMIN"); !strings.Contains(got, "Approved: 3 messages") {
		t.Fatalf("the admin's Remove all: %q", got)
	}
	if got := press("U0ADMIN"); !strings.Contains(got, "approved these removals already") {
		t.Fatalf("a second press: %q", got)
	}
	r.waitDeleted(tss...)
	r.waitQueueEmpty()
	for _, ts := range tss {
		if n := deletesOf(r.fake, ts); n != 1 {
			t.Errorf("%d chat.delete calls for %s", n, ts)
		}
	}
	if m, _ := r.fake.Message("C0ALERTS", request.TS); !strings.Contains(m.Text, "Approved by @secadmin") || strings.Contains(string(m.Blocks), ActionQuarantineRemoveAll) {
		t.Errorf("the request after the approval: %q %s", m.Text, m.Blocks)
	}
}

// ephemeralPoster answers privately through the fake (the rest of Poster
// is not used).
type ephemeralPoster struct {
	fake *slackfake.Server
	bot  *slack.Client
}

func (p *ephemeralPoster) Update(context.Context, *card.Card) error { return nil }

func (p *ephemeralPoster) Ephemeral(ctx context.Context, channel, user, text string, _ ...slack.Block) error {
	_, err := p.bot.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false))
	return err
}
