package cards

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// requestMsg is the message at ts in #C1 as a shortcut carries it.
func (e *env) requestMsg(t *testing.T, ts string) *slack.Msg {
	t.Helper()
	m, ok := e.fake.Message("C1", ts)
	if !ok {
		t.Fatalf("no message %s", ts)
	}
	return &slack.Msg{Type: "message", Channel: "C1", User: m.User, Text: m.Text, Timestamp: ts, ThreadTimestamp: m.ThreadTS}
}

// rawCard is the stored record of the card answering (C1, src), as bytes.
func (e *env) rawCard(t *testing.T, src string) string {
	t.Helper()
	rec := e.card(t, src)
	rec.Updated = time.Time{}
	b, _ := json.Marshal(rec)
	return string(b)
}

// TestRequestLeavesAnExistingCardAlone: a request on a message whose card
// is final, or quarantined, begins no generation and changes nothing in
// the record; the answer says what the card says.
func TestRequestLeavesAnExistingCardAlone(t *testing.T) {
	const bad = "https://login.example.net/"
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{bad: verdict.Malicious}}, ModeVerbose)
	ts := e.deliver(t, "see <"+bad+">", nil)
	e.messages.Wait()
	before := e.rawCard(t, ts)
	got := e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, ts), nil, "U0BOB")
	if !strings.Contains(got, "was checked already and found *malicious*") {
		t.Errorf("answer %q", got)
	}
	if after := e.rawCard(t, ts); after != before {
		t.Errorf("the card changed:\nbefore %s\nafter  %s", before, after)
	}

	// Quarantined: the tombstone is left as it is.
	if _, ok := e.messages.Cards.Change("C1", ts, 0, func(r *store.CardRecord) {
		r.Card.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: time.Now()}
	}); !ok {
		t.Fatal("could not mark the card")
	}
	before = e.rawCard(t, ts)
	got = e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, ts), nil, "U0BOB")
	if !strings.Contains(got, "removed by quarantine") || strings.Contains(got, "login.example") {
		t.Errorf("answer %q", got)
	}
	e.messages.Wait()
	if after := e.rawCard(t, ts); after != before {
		t.Errorf("the tombstone changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestRequestShowsAQuietCardPrivately: a quiet channel's clean message has
// a card that was never posted; a request shows it to the asker alone, in
// the thread, without controls, and never posts it; the card is not begun
// again nor marked requested.
func TestRequestShowsAQuietCardPrivately(t *testing.T) {
	const good = "https://docs.example.org/"
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{good: verdict.Clean}}, ModeQuiet)
	e.fake.AddUser(slackfake.User{ID: "U0BOB", Name: "bob"})
	ts := e.deliver(t, "see <"+good+">", nil)
	e.messages.Wait()
	if rec := e.card(t, ts); rec.Card.CardTS != "" || !rec.Card.Final {
		t.Fatalf("a quiet clean card was posted: %+v", rec.Card)
	}
	before := e.rawCard(t, ts)
	for i := range 3 {
		got := e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, ts), nil, "U0BOB")
		if !strings.Contains(got, "was checked already: *clean*") || !strings.Contains(got, "shown to you alone, in the thread") {
			t.Errorf("answer %d: %q", i, got)
		}
	}
	if n := len(e.botReplies(ts)); n != 0 {
		t.Errorf("%d cards posted in a quiet channel on request, want none", n)
	}
	eph := e.fake.Ephemerals("C1", "U0BOB")
	if len(eph) != 3 {
		t.Fatalf("%d private cards, want 3", len(eph))
	}
	for _, p := range eph {
		b := string(p.Blocks)
		if p.ThreadTS != ts || !strings.Contains(b, "Clean") || !strings.Contains(b, "docs[.]example[.]org") || strings.Contains(b, `"actions"`) {
			t.Errorf("private card in thread %q: %s", p.ThreadTS, b)
		}
	}
	if after := e.rawCard(t, ts); after != before {
		t.Errorf("the card changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestRequestResumesAnOrphanedCard: a card a request began, left
// "scanning" by a process that stopped (its job was the request, already
// done), is begun again by the next request instead of staying stuck; a
// card this process is tracking is not.
func TestRequestResumesAnOrphanedCard(t *testing.T) {
	const u = "https://docs.example.org/stuck"
	gate := make(chan struct{})
	checker := &urlChecker{levels: map[string]verdict.Level{u: verdict.Clean}, gates: map[string]chan struct{}{u: gate}}
	e := newEnv(t, checker, ModeOff)
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "see <" + u + ">"})
	// The previous life: a request's card, never finished.
	if err := e.db.PutCard(&store.CardRecord{Gen: 1, Mode: ModeVerbose, Card: card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS,
		RequestedBy: "U0BOB", Lines: []card.Line{{Kind: card.KindURL, Target: u, Level: verdict.Pending}}}}); err != nil {
		t.Fatal(err)
	}
	got := e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0BOB")
	if !strings.Contains(got, "Checking that message") {
		t.Fatalf("answer %q", got)
	}
	if rec := e.card(t, d.TS); rec.Gen != 2 {
		t.Fatalf("gen %d, want 2 (begun again)", rec.Gen)
	}
	// Now this process tracks it: another request only answers.
	got = e.messages.ScanMessage(t.Context(), "C1", e.requestMsg(t, d.TS), nil, "U0CAROL")
	if !strings.Contains(got, "is being checked now") {
		t.Errorf("answer %q", got)
	}
	if rec := e.card(t, d.TS); rec.Gen != 2 {
		t.Errorf("gen %d, want 2", rec.Gen)
	}
	close(gate)
	e.messages.Wait()
	if rec := e.card(t, d.TS); !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Clean {
		t.Errorf("card %+v", rec.Card)
	}
}

// TestQuietCardThatCouldNotBeCheckedIsShownWhereItMatters: in a quiet
// channel a card that could not be checked in full is shown when links
// were left out past the limit, or when the channel has quarantine on;
// otherwise (a service error, no quarantine) it stays a log line. None of
// them gets the clean reaction.
func TestQuietCardThatCouldNotBeCheckedIsShownWhereItMatters(t *testing.T) {
	const down, good = "https://down.example.org/", "https://docs.example.org/"
	for _, tc := range []struct {
		name       string
		text       string
		quarantine bool
		shown      bool
	}{
		{"a service error, no quarantine", "<" + down + ">", false, false},
		{"a service error, quarantine on", "<" + down + ">", true, true},
		{"a link left out, no quarantine", strings.Repeat("<"+good+"> ", 1) + manyLinks(10), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			levels := map[string]verdict.Level{down: verdict.Unknown, good: verdict.Clean}
			for i := range 10 {
				levels[siteLink(i)] = verdict.Clean
			}
			e := newEnv(t, &urlChecker{levels: levels}, ModeQuiet)
			e.messages.Quarantined = func(string) bool { return tc.quarantine }
			var unchecked int
			e.messages.OnUnchecked = func(_ card.Kind, n int) { unchecked += n }
			ts := e.deliver(t, tc.text, nil)
			e.messages.Wait()
			if got := len(e.botReplies(ts)) == 1; got != tc.shown {
				t.Errorf("card shown: %v, want %v", got, tc.shown)
			}
			if m, _ := e.fake.Message("C1", ts); len(m.Reactions) != 0 {
				t.Errorf("reactions %v", m.Reactions)
			}
			c := rec(e, t, ts)
			if c.Level() != verdict.Unknown {
				t.Errorf("level %v", c.Level())
			}
			for _, l := range c.Lines {
				if l.Level == verdict.Pending {
					t.Fatalf("a line is still pending: %+v", c.Lines)
				}
			}
			if wantLeft := rec(e, t, ts).LeftOut; unchecked != wantLeft {
				t.Errorf("OnUnchecked counted %d, the card left out %d", unchecked, wantLeft)
			}
		})
	}
}

// manyLinks is n distinct links (the test policy checks 10 per message).
func manyLinks(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("<" + siteLink(i) + "> ")
	}
	return b.String()
}

func siteLink(i int) string { return "https://site" + string(rune('a'+i)) + ".example.org/" }

func rec(e *env, t *testing.T, ts string) card.Card { return e.card(t, ts).Card }
