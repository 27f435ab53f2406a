package quarantine

import (
	"context"
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

const testAdminToken = "xoxp-1000000001-4000000004-quarantinetesttoken"

// oneCard is a CardBook holding one card.
type oneCard struct {
	mu sync.Mutex
	c  card.Card
}

func (b *oneCard) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if channel != b.c.Channel || sourceTS != b.c.SourceTS {
		return nil, card.ErrNotFound
	}
	return fn(&b.c)
}

func (b *oneCard) Get(channel, sourceTS string) (*store.CardRecord, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if channel != b.c.Channel || sourceTS != b.c.SourceTS {
		return nil, false
	}
	return &store.CardRecord{Card: b.c.Clone()}, true
}

func (b *oneCard) get() card.Card {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Clone()
}

type updates struct {
	mu    sync.Mutex
	cards []card.Card
}

func (u *updates) Update(_ context.Context, c *card.Card) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cards = append(u.cards, c.Clone())
	return nil
}

func (u *updates) Ephemeral(context.Context, string, string, string, ...slack.Block) error {
	return nil
}

// quarantineAgainstFake is a Quarantine of malicious messages with real
// Slack clients against the fake Slack and a real store on disk.
func quarantineAgainstFake(t *testing.T) (*Quarantine, *slackfake.Server, store.State, *updates) {
	t.Helper()
	fake := slackfaketest.Start(t, slackfake.WithUserToken(slackfake.UserToken{Token: testAdminToken, User: "U0ADMIN", Scopes: []string{"chat:write", "files:write"}}))
	fake.AddUser(slackfake.User{ID: "U0ADMIN", Name: "secadmin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice"})
	db, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	up := &updates{}
	q := &Quarantine{
		Admin:  slack.New(testAdminToken, slack.OptionAPIURL(fake.APIURL())),
		Bot:    slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL())),
		Store:  db,
		Poster: up,
		Levels: &settings.Channels{Store: db, Defaults: settings.Defaults{Quarantine: "malicious"}},
	}
	return q, fake, db, up
}

// postMalicious posts alice's message with a phishing link in C0SEC and
// returns its ts and a card book holding its final malicious card.
func postMalicious(t *testing.T, fake *slackfake.Server, q *Quarantine, text string) (string, *oneCard) {
	t.Helper()
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: "C0SEC", User: "U0ALICE", Text: text + " <https://login.phish.test/verify>"})
	if err != nil {
		t.Fatal(err)
	}
	book := &oneCard{c: maliciousCard("C0SEC", d.TS)}
	q.Cards = book
	return d.TS, book
}

func maliciousCard(channel, ts string) card.Card {
	return card.Card{Channel: channel, ThreadTS: ts, SourceTS: ts, CardTS: "1795000000.000900", Final: true,
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://login.phish.test/verify", Level: verdict.Malicious}}}
}

// TestRemovedBeforeARestartIsNotTakenForAPersonsDeletion: the process
// removed a message and stopped before its job was done; after the
// restart the job runs again on a card begun afresh and finds the message
// gone. The original kept for release shows the removal was quarantine's:
// the card is the tombstone again, and no failure is counted.
func TestRemovedBeforeARestartIsNotTakenForAPersonsDeletion(t *testing.T) {
	q, fake, db, up := quarantineAgainstFake(t)
	var failures []string
	q.OnFailure = func(reason string) { failures = append(failures, reason) }
	ts, book := postMalicious(t, fake, q, "urgent")

	// The first run removes it (and keeps the original).
	q.Act(t.Context(), book.get())
	if m, ok := fake.Message("C0SEC", ts); !ok || !m.Deleted {
		t.Fatal("the message was not removed")
	}
	removed := book.get().Quarantine
	if removed == nil || removed.State != card.QuarantineRemoved {
		t.Fatalf("card after the removal: %+v", removed)
	}

	// The restart: the job runs again, its card begun afresh.
	book.mu.Lock()
	book.c = maliciousCard("C0SEC", ts)
	book.mu.Unlock()
	q.Act(t.Context(), book.get())
	got := book.get().Quarantine
	if got == nil || got.State != card.QuarantineRemoved || !got.At.Equal(removed.At) {
		t.Fatalf("card after the job ran again: %+v, want the removal of %v", got, removed.At)
	}
	if len(failures) != 0 {
		t.Fatalf("failures counted: %v", failures)
	}
	if last := up.cards[len(up.cards)-1]; last.Quarantine == nil || last.Quarantine.State != card.QuarantineRemoved {
		t.Fatalf("Slack was last shown %+v", last.Quarantine)
	}

	// Once released, the job running again shows the release.
	rec, err := db.Quarantined("C0SEC", ts)
	if err != nil {
		t.Fatal(err)
	}
	rec.ReleasedBy, rec.ReleasedAt, rec.ReleasedTS = "U0ADMIN", time.Now(), "1795000001.000100"
	if err := db.PutQuarantined(rec); err != nil {
		t.Fatal(err)
	}
	book.mu.Lock()
	book.c = maliciousCard("C0SEC", ts)
	book.mu.Unlock()
	q.Act(t.Context(), book.get())
	if got := book.get().Quarantine; got == nil || got.State != card.QuarantineReleased || got.ReleasedBy != "U0ADMIN" {
		t.Fatalf("card after a release and the job again: %+v", got)
	}
}

// TestDeletedByAPersonStillSaysSo: a message its author deleted before
// quarantine got to it was not quarantine's: the card says it was already
// deleted, and the failure is counted.
func TestDeletedByAPersonStillSaysSo(t *testing.T) {
	q, fake, _, _ := quarantineAgainstFake(t)
	var failures []string
	q.OnFailure = func(reason string) { failures = append(failures, reason) }
	ts, book := postMalicious(t, fake, q, "urgent")
	if _, err := fake.DeleteMessage("C0SEC", ts); err != nil {
		t.Fatal(err)
	}
	q.Act(t.Context(), book.get())
	if got := book.get().Quarantine; got == nil || got.State != card.QuarantineFailed {
		t.Fatalf("card: %+v", got)
	}
	if len(failures) != 1 || failures[0] != ReasonAlreadyDeleted {
		t.Fatalf("failures %v", failures)
	}
}

// TestRemovalRetriesPassingSlackFailures: Slack's 429 and a 5xx page on
// chat.delete are tried again (the 429 after its Retry-After), and the
// message is removed; a refusal is not tried again.
func TestRemovalRetriesPassingSlackFailures(t *testing.T) {
	old := retryWaits
	retryWaits = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	t.Cleanup(func() { retryWaits = old })
	q, fake, _, _ := quarantineAgainstFake(t)
	var failures []string
	q.OnFailure = func(reason string) { failures = append(failures, reason) }
	ts, book := postMalicious(t, fake, q, "urgent")
	fake.InjectFault(slackfake.Fault{Method: "conversations.history", Times: 1, Status: 502})
	fake.RateLimit("chat.delete", 1, time.Second)
	fake.InjectFault(slackfake.Fault{Method: "chat.delete", Times: 1, Status: 503})
	start := time.Now()
	q.Act(t.Context(), book.get())
	if m, ok := fake.Message("C0SEC", ts); !ok || !m.Deleted {
		t.Fatalf("the message was not removed (failures %v)", failures)
	}
	if got := book.get().Quarantine; got == nil || got.State != card.QuarantineRemoved || len(failures) != 0 {
		t.Fatalf("card %+v, failures %v", got, failures)
	}
	if n := len(fake.Calls("chat.delete")); n != 3 {
		t.Fatalf("%d chat.delete calls, want 3 (429, 503, then the deletion)", n)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("took %v: the 429's Retry-After of 1 s was not waited", took)
	}

	// A refusal is an answer: one call, and the card says why.
	fake.Fail("chat.delete", 1, "cant_delete_message")
	_, book2 := postMalicious(t, fake, q, "again")
	q.Act(t.Context(), book2.get())
	if n := len(fake.Calls("chat.delete")); n != 4 {
		t.Fatalf("%d chat.delete calls, want 4: a refusal was tried again", n)
	}
	if got := book2.get().Quarantine; got == nil || got.State != card.QuarantineFailed || len(failures) != 1 || failures[0] != ReasonNotAllowed {
		t.Fatalf("card %+v, failures %v", got, failures)
	}
}

// TestActWhoeverAskedForTheScan: a message's card is acted on whoever
// asked for it — a card a person requested, or one an earlier version
// stored with RequestedBy on a channel message (an upgrade), is removed
// like any other. A /scan card (no message of its own), a card in a DM
// with the bot, and a card that could not be checked in full (links left
// out: "could not check", below every quarantine level) are left alone.
func TestActWhoeverAskedForTheScan(t *testing.T) {
	q, fake, _, _ := quarantineAgainstFake(t)
	ts, book := postMalicious(t, fake, q, "asked about")
	book.mu.Lock()
	book.c.RequestedBy = "U0BOB"
	book.mu.Unlock()
	q.Act(t.Context(), book.get())
	if m, ok := fake.Message("C0SEC", ts); !ok || !m.Deleted {
		t.Fatal("a message someone asked about was not removed")
	}
	if got := book.get().Quarantine; got == nil || got.State != card.QuarantineRemoved {
		t.Fatalf("card: %+v", got)
	}

	for _, tc := range []struct {
		name string
		edit func(c *card.Card)
	}{
		{"a /scan card", func(c *card.Card) {
			c.SourceTS = card.ScanRequestPrefix + "1795000000123456789"
			c.RequestedBy = "U0BOB"
		}},
		{"a DM with the bot", func(c *card.Card) { c.Channel = "D0ALICE"; c.RequestedBy = "U0ALICE" }},
		{"links left out, the rest clean", func(c *card.Card) { c.Lines[0].Level = verdict.Clean; c.LeftOut = 12 }},
	} {
		ts, book := postMalicious(t, fake, q, tc.name)
		book.mu.Lock()
		tc.edit(&book.c)
		book.mu.Unlock()
		calls := len(fake.Calls("chat.delete"))
		q.Act(t.Context(), book.get())
		if m, _ := fake.Message("C0SEC", ts); m.Deleted || len(fake.Calls("chat.delete")) != calls {
			t.Errorf("%s: the message was removed", tc.name)
		}
		if got := book.get().Quarantine; got != nil {
			t.Errorf("%s: card marked %+v", tc.name, got)
		}
	}
}

// rerunBook is a CardBook whose edits run their function twice, as a
// shared write of the embedded store does when another write of its
// commit fails (cardbook.Book.Shared): the first run on the card as it
// was, thrown away; then between reads (once) the card changes, and the
// second run is the one kept.
type rerunBook struct {
	*oneCard
	between func(c *card.Card)
}

func (b *rerunBook) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if channel != b.c.Channel || sourceTS != b.c.SourceTS {
		return nil, card.ErrNotFound
	}
	thrown := b.c.Clone()
	_, _ = fn(&thrown)
	if b.between != nil {
		b.between(&b.c)
		b.between = nil
	}
	return fn(&b.c)
}

// TestARemovalClaimRunTwiceGoesByTheRunKept: the claim on the card that
// a removal makes before deleting the message may run twice (a shared
// write); when the run kept finds the message already removed (another
// job claimed it meanwhile), nothing is deleted again, however the first
// run went.
func TestARemovalClaimRunTwiceGoesByTheRunKept(t *testing.T) {
	q, fake, _, _ := quarantineAgainstFake(t)
	ts, book := postMalicious(t, fake, q, "urgent")
	q.Cards = &rerunBook{oneCard: book, between: func(c *card.Card) {
		c.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: time.Now()}
	}}
	q.Act(t.Context(), book.get())
	if m, ok := fake.Message("C0SEC", ts); !ok || m.Deleted {
		t.Fatalf("the message was deleted (found %v): the claim's thrown-away run decided", ok)
	}
	if n := len(fake.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d chat.delete calls, want 0", n)
	}
}
