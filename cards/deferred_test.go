package cards

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/scan/scanstore"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// cappedChecker refuses every link of the user capped (their allowance is
// used up) and answers the others from levels, recording the verdicts as
// the pipeline's memory does.
type cappedChecker struct {
	capped string
	levels map[string]verdict.Level
	mem    *scanstore.URLMemory
}

func (c *cappedChecker) Check(_ context.Context, url string, o scan.CheckOptions) scan.URLVerdict {
	if o.For.User == c.capped {
		return scan.URLVerdict{URL: url, Level: verdict.Unknown, Err: scan.ErrOverAllowance, Problem: scan.OverAllowanceProblem}
	}
	v := scan.URLVerdict{URL: url, TaskID: "task-" + url, Level: c.levels[url], CheckedAt: time.Now()}
	c.mem.Finished(v, "scan")
	return v
}

// failingDefer is a store whose deferrals fail.
type failingDefer struct{ store.State }

func (failingDefer) DeferCheck(string, card.Ref, time.Time) error {
	return errors.New("disk full")
}

const (
	capped = "U0CAPPED"
	other  = "U0OTHER"
	alerts = "C0ALERTS"
)

func newDeferEnv(t *testing.T, levels map[string]verdict.Level) (*env, *scanstore.URLMemory, *Announcer) {
	t.Helper()
	mem := &scanstore.URLMemory{}
	e := newEnv(t, &cappedChecker{capped: capped, levels: levels, mem: mem}, ModeQuiet)
	mem.DB = e.db
	e.messages.Deferrals = mem
	a := &Announcer{Messages: e.messages, Replier: e.poster, AlertChannel: alerts}
	return e, mem, a
}

// deliverAs puts user's message in #C1, hands it to Handle and waits for
// its card to be final.
func (e *env) deliverAs(t *testing.T, user, text string) string {
	t.Helper()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: user, Text: text})
	msg, _ := e.fake.Message("C1", d.TS)
	ev := &slackevents.MessageEvent{Type: "message", Channel: "C1", ChannelType: "channel", User: user, Text: msg.Text, TimeStamp: d.TS,
		Message: &slack.Msg{Type: "message", Channel: "C1", User: user, Text: msg.Text, Timestamp: d.TS}}
	e.messages.Handle(t.Context(), ev, bot.Meta{EventID: "Ev" + d.TS})
	e.messages.Wait()
	return d.TS
}

func (e *env) lineOf(t *testing.T, ts, url string) card.Line {
	t.Helper()
	l, ok := lineOf(&e.card(t, ts).Card, url)
	if !ok {
		t.Fatalf("card %s has no line for %s", ts, url)
	}
	return l
}

// dueDeferred returns the deferred check of url as the recheck lists it.
func dueDeferred(t *testing.T, mem *scanstore.URLMemory, url string) (scan.DueURL, bool) {
	t.Helper()
	due, err := mem.DueDeferred(time.Now().Add(time.Second), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d.Target == url {
			return d, true
		}
	}
	return scan.DueURL{}, false
}

// A link refused for its poster's allowance is deferred before its card
// shows it: the line says it will be checked at low priority, the card is
// shown in a quiet channel, and the recheck lists the link with the card.
// A store that cannot take the deferral leaves the line saying "not
// checked", with no promise.
func TestRefusedLinkIsDeferredBeforeItsCardSaysSo(t *testing.T) {
	const u = "https://evil.test/deferred"
	e, mem, _ := newDeferEnv(t, nil)
	ts := e.deliverAs(t, capped, "see <"+u+">")
	if l := e.lineOf(t, ts, u); l.Level != verdict.Unknown || l.Problem != scan.DeferredProblem {
		t.Fatalf("line %+v", l)
	}
	if rec := e.card(t, ts); rec.Card.CardTS == "" {
		t.Fatal("the card of a deferred link was not shown in a quiet channel")
	}
	d, ok := dueDeferred(t, mem, u)
	if !ok || !d.Deferred || len(d.Cards) != 1 || d.Cards[0] != (card.Ref{Channel: "C1", SourceTS: ts}) {
		t.Fatalf("deferred check %+v (listed: %v)", d, ok)
	}

	mem.DB = failingDefer{e.db}
	stop := make(chan struct{})
	close(stop)
	mem.Stop = stop // no retries: the store is failing for good
	const v = "https://evil.test/not-deferred"
	ts = e.deliverAs(t, capped, "see <"+v+">")
	if l := e.lineOf(t, ts, v); l.Problem != scan.OverAllowanceProblem {
		t.Fatalf("a link whose deferral failed: %+v", l)
	}
}

// TestAnnouncerGivesADeferredCheckToTheCardsWaitingForIt: a deferred
// check's verdict replaces the "not checked yet" line (note, reply to the
// poster, alert summary for a malicious verdict); a card that shows the
// same verdict already is left alone; a harmless verdict updates its card
// quietly; a failure says why on the card, with no reply; a card whose
// line is not settled yet, or whose first post is under way, defers the
// check again.
func TestAnnouncerGivesADeferredCheckToTheCardsWaitingForIt(t *testing.T) {
	const (
		evil     = "https://evil.test/shared"
		clean    = "https://example.org/harmless"
		fails    = "https://fail.test/x"
		unposted = "https://evil.test/unposted"
	)
	e, mem, a := newDeferEnv(t, map[string]verdict.Level{evil: verdict.Malicious, clean: verdict.Clean})
	e.fake.AddChannel(slackfake.Channel{ID: alerts, Name: "alerts"})
	seen := e.deliverAs(t, other, "<"+evil+">") // checked: malicious
	waiting := e.deliverAs(t, capped, "<"+evil+">")
	harmless := e.deliverAs(t, capped, "<"+clean+">")
	failing := e.deliverAs(t, capped, "<"+fails+">")
	// A card whose line for evil is not settled yet.
	pending := "1700000000.000900"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.db.PutCard(&store.CardRecord{Card: card.Card{Channel: "C1", ThreadTS: pending, SourceTS: pending, Poster: capped,
		Lines: []card.Line{{Kind: card.KindURL, Target: evil, Level: verdict.Pending, Status: "queued"}}}}))
	must(mem.Defer(evil, card.Ref{Channel: "C1", SourceTS: pending}))
	// A card whose deferred line is settled but whose first post is
	// under way.
	posting := "1700000000.000950"
	must(e.db.PutCard(&store.CardRecord{PostStarted: true, Card: card.Card{Channel: "C1", ThreadTS: posting, SourceTS: posting, Poster: capped, Final: true,
		Lines: []card.Line{{Kind: card.KindURL, Target: unposted, Level: verdict.Unknown, Problem: scan.DeferredProblem}}}}))
	must(mem.Defer(unposted, card.Ref{Channel: "C1", SourceTS: posting}))

	due := map[string]scan.DueURL{}
	var done []func()
	for _, u := range []string{evil, clean, fails, unposted} {
		d, ok := dueDeferred(t, mem, u)
		if !ok {
			t.Fatalf("%s is not deferred", u)
		}
		_, _, end, ok, err := mem.ClaimDeferred(u, d.DueAt, time.Now().Add(time.Second), 0)
		if err != nil || !ok {
			t.Fatalf("claim %s: %v %v", u, ok, err)
		}
		due[u], done = d, append(done, end)
	}
	before := e.card(t, seen).Card
	a.Announce(t.Context(), []scan.Change{
		{Target: due[evil], Was: verdict.Malicious, Now: scan.URLVerdict{URL: evil, TaskID: "t-evil", Level: verdict.Malicious, CheckedAt: time.Now()}},
		{Target: due[clean], Was: verdict.Unknown, Now: scan.URLVerdict{URL: clean, TaskID: "t-clean", Level: verdict.Clean, CheckedAt: time.Now()}},
		{Target: due[fails], Was: verdict.Unknown, Now: scan.URLVerdict{URL: fails, Level: verdict.Unknown, Err: errors.New("failed"),
			Problem: "the URL service could not analyse it", CheckedAt: time.Now()}},
		{Target: due[unposted], Was: verdict.Unknown, Now: scan.URLVerdict{URL: unposted, TaskID: "t-unposted", Level: verdict.Malicious, CheckedAt: time.Now()}},
	})
	for _, end := range done {
		end()
	}

	// The card waiting for evil: its verdict, a note, a reply to its poster.
	if l := e.lineOf(t, waiting, evil); l.Level != verdict.Malicious || l.TaskID != "t-evil" || l.Problem != "" || !l.Actions {
		t.Errorf("the waiting card's line: %+v", l)
	}
	notes := strings.Join(e.card(t, waiting).Card.Notes, "\n")
	if !strings.Contains(notes, "at low priority") || !strings.Contains(notes, "is malicious") {
		t.Errorf("the waiting card's notes: %q", notes)
	}
	replied := func(ts string) []string {
		var out []string
		for _, m := range e.botReplies(ts) {
			if len(m.Blocks) == 0 { // not the card
				out = append(out, m.Text)
			}
		}
		return out
	}
	if r := replied(waiting); len(r) != 1 || !strings.Contains(r[0], "<@"+capped+">") || !strings.Contains(r[0], "checked at low priority") {
		t.Errorf("replies in the waiting card's thread: %q", r)
	}
	// The card that showed malicious already: untouched, no reply.
	if after := e.card(t, seen).Card; !slices.Equal(after.Notes, before.Notes) || after.Lines[0].TaskID != before.Lines[0].TaskID {
		t.Errorf("a card showing the verdict already was changed: %+v", after)
	}
	if r := replied(seen); len(r) != 0 {
		t.Errorf("a reply on the card that showed the verdict already: %q", r)
	}
	// Harmless: the card says so, nobody is pinged.
	if l := e.lineOf(t, harmless, clean); l.Level != verdict.Clean {
		t.Errorf("the harmless link's line: %+v", l)
	}
	if r := replied(harmless); len(r) != 0 {
		t.Errorf("a reply about a harmless deferred link: %q", r)
	}
	// A failure: the card says why, nobody is pinged.
	if l := e.lineOf(t, failing, fails); l.Level != verdict.Unknown || l.Problem != "the URL service could not analyse it" {
		t.Errorf("the failed check's line: %+v", l)
	}
	if notes := strings.Join(e.card(t, failing).Card.Notes, "\n"); !strings.Contains(notes, "could not be checked") {
		t.Errorf("the failed check's notes: %q", notes)
	}
	if r := replied(failing); len(r) != 0 {
		t.Errorf("a reply about a failed deferred check: %q", r)
	}
	// The alert channel: the malicious one only.
	var summary []string
	for _, m := range e.fake.Messages(alerts, "") {
		summary = append(summary, m.Text)
	}
	if len(summary) != 1 || !strings.Contains(summary[0], "checked late") || strings.Contains(summary[0], "harmless") || strings.Contains(summary[0], "fail") {
		t.Errorf("alert channel: %q", summary)
	}
	// The unsettled card and the one being posted: deferred again, left
	// as they are; the others are done.
	if _, ok := dueDeferred(t, mem, evil); !ok {
		t.Error("a card whose line was not settled did not get the check again")
	}
	if _, ok := dueDeferred(t, mem, unposted); !ok {
		t.Error("a card being posted did not get the check again")
	}
	if l := e.lineOf(t, posting, unposted); !isDeferredLine(l) {
		t.Errorf("a card being posted was changed under its post: %+v", l)
	}
	for _, u := range []string{clean, fails} {
		if _, ok := dueDeferred(t, mem, u); ok {
			t.Errorf("%s is still deferred after its outcome was shown", u)
		}
	}
}
