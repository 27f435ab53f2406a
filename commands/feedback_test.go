package commands

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// lateBook is a CardBook whose card's ts becomes known only at known: the
// window between a card's post and the store taking its ts.
type lateBook struct {
	mu    sync.Mutex
	c     card.Card
	known time.Time
}

func (b *lateBook) EditEmit(channel, cardTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Now().Before(b.known) || channel != b.c.Channel || cardTS != b.c.CardTS {
		return nil, ErrCardNotFound
	}
	return fn(&b.c)
}

func (b *lateBook) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if channel != b.c.Channel || sourceTS != b.c.SourceTS {
		return nil, ErrCardNotFound
	}
	return fn(&b.c)
}

type sentReport struct {
	taskID, option string
	cat            verdict.Category
}

type recordingReporter struct {
	mu   sync.Mutex
	sent []sentReport
}

func (r *recordingReporter) Report(_ context.Context, taskID string, cat verdict.Category, option string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sentReport{taskID, option, cat})
	return nil
}

type recordingPoster struct {
	mu      sync.Mutex
	updates []card.Card
	limited int // the next updates refused with Slack's rate limit
	refused int
}

func (p *recordingPoster) Update(_ context.Context, c *card.Card) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limited > 0 {
		p.limited--
		p.refused++
		return &slack.RateLimitedError{RetryAfter: 10 * time.Millisecond}
	}
	p.updates = append(p.updates, *c)
	return nil
}

func (p *recordingPoster) Ephemeral(context.Context, string, string, string, ...slack.Block) error {
	return nil
}

func feedbackCard() card.Card {
	return card.Card{Channel: "C1", SourceTS: "1.1", CardTS: "1.2", Final: true, Lines: []card.Line{
		{Kind: card.KindURL, Target: "https://a.test/", TaskID: "aaaa", Level: verdict.Malicious},
	}}
}

// A click that arrives between the card's post and the store taking its ts
// waits for the ts instead of telling the user the card changed.
func TestReportOnACardWhoseTSIsNotSavedYetWaitsForIt(t *testing.T) {
	book := &lateBook{c: feedbackCard(), known: time.Now().Add(400 * time.Millisecond)}
	rep, poster := &recordingReporter{}, &recordingPoster{}
	f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{}}
	answer := f.Report(t.Context(), ReportRequest{User: "U1", Channel: "C1", CardTS: "1.2", Line: 0,
		TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.HasPrefix(answer, "Thanks") {
		t.Fatalf("answer %q", answer)
	}
	if len(rep.sent) != 1 || rep.sent[0] != (sentReport{"aaaa", "fp", verdict.CatPhishing}) {
		t.Fatalf("sent %+v", rep.sent)
	}
	if len(poster.updates) != 1 || len(poster.updates[0].Lines[0].Reports) != 1 || poster.updates[0].Lines[0].Reports[0].User != "U1" {
		t.Fatalf("the card was not updated with the audit line: %+v", poster.updates)
	}
}

// A card the store never learns of is not waited for forever: the user is
// told it changed, and nothing is sent.
func TestReportOnAnUnknownCardSaysItChanged(t *testing.T) {
	book := &lateBook{c: feedbackCard()}
	rep, poster := &recordingReporter{}, &recordingPoster{}
	f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{}}
	start := time.Now()
	answer := f.Report(t.Context(), ReportRequest{User: "U1", Channel: "C1", CardTS: "9.9", Line: 0,
		TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(answer, "has changed") {
		t.Fatalf("answer %q", answer)
	}
	if waited := time.Since(start); waited > cardTSWait+time.Second {
		t.Fatalf("waited %v for an unknown card", waited)
	}
	if len(rep.sent) != 0 || len(poster.updates) != 0 {
		t.Fatalf("sent %+v, updates %d", rep.sent, len(poster.updates))
	}
}

// A false positive from the person who brought the link is refused, on
// the card clicked or on any other card showing the task; everything else
// goes through as before.
func TestFalsePositiveFromTheLinksOwnPosterIsRefused(t *testing.T) {
	other := func(poster, requestedBy, task string) card.Card {
		return card.Card{Channel: "C2", SourceTS: "2.1", CardTS: "2.2", Poster: poster, RequestedBy: requestedBy, Final: true,
			Lines: []card.Line{{Kind: card.KindURL, Target: "https://a.test/", TaskID: task, Level: verdict.Malicious}}}
	}
	cases := []struct {
		name                string
		poster, requestedBy string
		others              []card.Card
		user, option        string
		admins              []string
		adminsOnly          bool
		refused             bool
	}{
		{name: "poster fp", poster: "U1", user: "U1", option: "fp", refused: true},
		{name: "poster fn", poster: "U1", user: "U1", option: "fn"},
		{name: "someone else's fp", poster: "U1", user: "U2", option: "fp"},
		{name: "admin poster fp", poster: "U1", user: "U1", option: "fp", admins: []string{"U1"}},
		{name: "admin poster fp, reporters admins", poster: "U1", user: "U1", option: "fp", admins: []string{"U1"}, adminsOnly: true},
		{name: "/scan requester fp", requestedBy: "U3", user: "U3", option: "fp", refused: true},
		{name: "shortcut requester fp on another's message", poster: "U1", requestedBy: "U3", user: "U3", option: "fp"},
		{name: "shortcut: the author still refused", poster: "U1", requestedBy: "U3", user: "U1", option: "fp", refused: true},
		{name: "poster of the task on another card", poster: "U1", others: []card.Card{other("U4", "", "aaaa")}, user: "U4", option: "fp", refused: true},
		{name: "/scan requester of the task on another card", poster: "U1", others: []card.Card{other("", "U4", "aaaa")}, user: "U4", option: "fp", refused: true},
		{name: "poster of another task", poster: "U1", others: []card.Card{other("U4", "", "bbbb")}, user: "U4", option: "fp"},
		{name: "no poster known", user: "U1", option: "fp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := feedbackCard()
			c.Poster, c.RequestedBy = tc.poster, tc.requestedBy
			book := &lateBook{c: c}
			rep, poster := &recordingReporter{}, &recordingPoster{}
			f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{Admins: tc.admins, ReportersAdminsOnly: tc.adminsOnly},
				TaskCards: func(task string) ([]card.Card, error) {
					out := []card.Card{book.c}
					for _, o := range tc.others {
						if o.Lines[0].TaskID == task {
							out = append(out, o)
						}
					}
					return out, nil
				}}
			answer := f.Report(t.Context(), ReportRequest{User: tc.user, Channel: "C1", CardTS: "1.2", Line: 0,
				TaskID: "aaaa", Category: verdict.CatPhishing, Option: tc.option})
			if tc.refused {
				if answer != OwnLinkAnswer || len(rep.sent) != 0 || len(poster.updates) != 0 || len(book.c.Lines[0].Reports) != 0 {
					t.Fatalf("answer %q, sent %v, %d card updates", answer, rep.sent, len(poster.updates))
				}
				return
			}
			if !strings.HasPrefix(answer, "Thanks") || len(rep.sent) != 1 {
				t.Fatalf("answer %q, sent %v", answer, rep.sent)
			}
		})
	}
	// Without TaskCards (a store that cannot list them), the clicked card
	// alone still decides.
	c := feedbackCard()
	c.Poster = "U1"
	f := &Feedback{Cards: &lateBook{c: c}, Rep: &recordingReporter{}, Poster: &recordingPoster{}, Access: &Access{}}
	if a := f.Report(t.Context(), ReportRequest{User: "U1", Channel: "C1", CardTS: "1.2", TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"}); a != OwnLinkAnswer {
		t.Errorf("without TaskCards: %q", a)
	}
}

// The card's update after a report that Slack refuses with 429 once the
// poster's retries are spent (a chat.* storm) is tried again after the
// Retry-After (at least 1 s), not dropped: the audit line is saved on the
// card and nothing else would show it (found by the chaos soak).
func TestReportCardUpdateWaitsOutARateLimitStorm(t *testing.T) {
	book := &lateBook{c: feedbackCard()}
	rep, poster := &recordingReporter{}, &recordingPoster{limited: 1}
	f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{}}
	answer := f.Report(t.Context(), ReportRequest{User: "U1", Channel: "C1", CardTS: "1.2", Line: 0,
		TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.HasPrefix(answer, "Thanks") {
		t.Fatalf("answer %q", answer)
	}
	if poster.refused != 1 || len(poster.updates) != 1 || len(poster.updates[0].Lines[0].Reports) != 1 {
		t.Fatalf("%d refused, %d written (%+v): want the refused update, then the card with its audit line", poster.refused, len(poster.updates), poster.updates)
	}
}

// outageBook is lateBook behind a store that fails: the first edits
// refused (the database stopped), and one edit whose commit went through
// but whose answer was lost (the session killed during COMMIT).
type outageBook struct {
	lateBook
	refuse    int  // edits refused before they run
	lostReply bool // the next edit that adds a report commits, then fails
}

func (b *outageBook) EditEmit(channel, cardTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	if b.refuse > 0 {
		b.refuse--
		b.mu.Unlock()
		return nil, errors.New("postgres: failed to connect to `user=postgres database=test`: connection refused")
	}
	b.mu.Unlock()
	before := len(b.c.Lines[0].Reports)
	out, err := b.lateBook.EditEmit(channel, cardTS, fn)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.lostReply && len(b.c.Lines[0].Reports) > before {
		b.lostReply = false
		return nil, errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	}
	return out, err
}

type flakyAudit struct {
	mu      sync.Mutex
	refuse  int
	reports []store.Report
}

func (a *flakyAudit) RecordReport(r store.Report) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refuse > 0 {
		a.refuse--
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	a.reports = append(a.reports, r)
	return nil
}

// A click handled while the store fails (PostgreSQL stopped, a killed
// session) is delayed, not lost: the report is sent once, the card shows
// it once (a commit whose answer was lost is not made twice), the audit
// trail has it, and the report is not left "being sent" (found by the
// chaos soak: two clicks acked during a PostgreSQL outage never reached
// their cards).
func TestReportWaitsForAStoreThatFails(t *testing.T) {
	book := &outageBook{lateBook: lateBook{c: feedbackCard()}, refuse: 3, lostReply: true}
	audit := &flakyAudit{refuse: 2}
	rep, poster := &recordingReporter{}, &recordingPoster{}
	f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{}, Audit: audit}
	req := ReportRequest{User: "U1", Channel: "C1", CardTS: "1.2", Line: 0, TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"}
	answer := f.Report(t.Context(), req)
	if !strings.HasPrefix(answer, "Thanks") {
		t.Fatalf("answer %q", answer)
	}
	if len(rep.sent) != 1 {
		t.Fatalf("sent %d reports to the service, want 1", len(rep.sent))
	}
	if n := len(book.c.Lines[0].Reports); n != 1 {
		t.Fatalf("the card holds %d reports, want 1: %+v", n, book.c.Lines[0].Reports)
	}
	if len(poster.updates) != 1 || len(poster.updates[0].Lines[0].Reports) != 1 {
		t.Fatalf("card updates %+v: want one, with its report", poster.updates)
	}
	if len(audit.reports) != 1 {
		t.Fatalf("audit trail %+v: want the report once", audit.reports)
	}
	// Not left pending: the same report again is a duplicate of the one
	// made, not one "being sent".
	again := f.Report(t.Context(), ReportRequest{User: "U2", Channel: "C1", CardTS: "1.2", Line: 0, TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(again, "already reported") {
		t.Fatalf("the report again: %q", again)
	}
}

// A click delivered again after the replica that handled it was killed
// between the card's write and its update in Slack finds the person's
// report on the card: it is not sent again, and the card is shown again
// from the store, so that Slack's card shows the report (found by the
// chaos soak: a kill -9 left an acked click's report off its card).
func TestARepeatedClickShowsTheReportTheCardHas(t *testing.T) {
	c := feedbackCard()
	at := time.Date(2026, 11, 28, 4, 47, 0, 0, time.UTC)
	c.Lines[0].Reports = []card.Report{{User: "U1", Option: "fp", Category: verdict.CatPhishing, At: at}}
	book := &lateBook{c: c}
	rep, poster := &recordingReporter{}, &recordingPoster{}
	f := &Feedback{Cards: book, Rep: rep, Poster: poster, Access: &Access{}}
	answer := f.Report(t.Context(), ReportRequest{User: "U1", Channel: "C1", CardTS: "1.2", Line: 0,
		TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(answer, "already reported") {
		t.Fatalf("answer %q", answer)
	}
	if len(rep.sent) != 0 {
		t.Errorf("the report was sent again: %+v", rep.sent)
	}
	if len(poster.updates) != 1 || len(poster.updates[0].Lines[0].Reports) != 1 || poster.updates[0].Lines[0].Reports[0].User != "U1" {
		t.Fatalf("card updates %+v, want the card with U1's report shown once", poster.updates)
	}
	// Someone else's click on the reported card is only answered.
	answer = f.Report(t.Context(), ReportRequest{User: "U2", Channel: "C1", CardTS: "1.2", Line: 0,
		TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(answer, "already reported") || len(poster.updates) != 1 {
		t.Errorf("another person's repeat: %q, %d updates", answer, len(poster.updates))
	}
}

// cardsBook is a CardBook of several cards, listing those of a task.
type cardsBook struct {
	mu    sync.Mutex
	cards []card.Card
}

func (b *cardsBook) EditEmit(channel, cardTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.cards {
		if b.cards[i].Channel == channel && b.cards[i].CardTS == cardTS {
			return fn(&b.cards[i])
		}
	}
	return nil, ErrCardNotFound
}

func (b *cardsBook) EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.cards {
		if b.cards[i].Channel == channel && b.cards[i].SourceTS == sourceTS {
			return fn(&b.cards[i])
		}
	}
	return nil, ErrCardNotFound
}

func (b *cardsBook) TaskCards(task string) ([]card.Card, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []card.Card
	for _, c := range b.cards {
		if slices.ContainsFunc(c.Lines, func(l card.Line) bool { return l.TaskID == task }) || card.ReportsOn(&c, task) {
			cp := c
			cp.Lines = slices.Clone(c.Lines)
			for i := range cp.Lines {
				cp.Lines[i].Reports = slices.Clone(cp.Lines[i].Reports)
			}
			out = append(out, cp)
		}
	}
	return out, nil
}

// gatedReporter holds each report until it is let go, and counts them.
type gatedReporter struct {
	recordingReporter
	called chan struct{}
	gate   chan struct{}
}

func (r *gatedReporter) Report(ctx context.Context, taskID string, cat verdict.Category, option string) error {
	r.called <- struct{}{}
	<-r.gate
	return r.recordingReporter.Report(ctx, taskID, cat, option)
}

// Two clicks on two cards of one task (the same link posted twice),
// handled by two replicas at once, send one report: the second finds the
// report's claim in the shared store while the first is sending it, and
// once it is sent, finds it on the first card (found by the chaos soak:
// both reached the service).
func TestTwoReplicasSendOneReportOfATask(t *testing.T) {
	db, err := bolt.Open(t.TempDir(), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	one, two := feedbackCard(), feedbackCard()
	two.Channel, two.SourceTS, two.CardTS = "C2", "2.1", "2.2"
	book := &cardsBook{cards: []card.Card{one, two}}
	rep := &gatedReporter{called: make(chan struct{}, 4), gate: make(chan struct{})}
	replica := func() *Feedback {
		return &Feedback{Cards: book, Rep: rep, Poster: &recordingPoster{}, Access: &Access{}, TaskCards: book.TaskCards, Claims: db}
	}
	a, b := replica(), replica()
	req := func(user, channel, cardTS string) ReportRequest {
		return ReportRequest{User: user, Channel: channel, CardTS: cardTS, Line: 0, TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"}
	}
	first := make(chan string, 1)
	go func() { first <- a.Report(t.Context(), req("U1", "C1", "1.2")) }()
	<-rep.called // the first is at the service
	second := make(chan string, 1)
	go func() { second <- b.Report(t.Context(), req("U2", "C2", "2.2")) }()
	select {
	case answer := <-second:
		if answer != "That report is already being sent." {
			t.Errorf("the other replica's click while the first is sent: %q", answer)
		}
	case <-rep.called:
		close(rep.gate)
		t.Fatalf("the other replica sent the report too (answers %q, %q)", <-first, <-second)
	}
	close(rep.gate)
	if answer := <-first; !strings.Contains(answer, "Thanks") {
		t.Fatalf("the first click: %q", answer)
	}
	answer := b.Report(t.Context(), req("U2", "C2", "2.2"))
	if !strings.Contains(answer, "already reported") {
		t.Errorf("the other replica's click once it is sent: %q", answer)
	}
	if n := len(rep.sent); n != 1 {
		t.Fatalf("%d reports reached the service, want 1: %+v", n, rep.sent)
	}
	// The claim was let go: another report of the task (a restore by an
	// admin) is not held up by it.
	if ok, err := db.ClaimReport("aaaa|fp|phishing", "someone", time.Minute); err != nil || !ok {
		t.Errorf("the claim after the report: %v, %v", ok, err)
	}
}

// A report stays counted for the analysis it was about when its card's
// line moves on to a newer analysis of the URL (its message was edited
// and scanned again): a click on another card of the older analysis is
// not sent again, and the newer analysis may be reported (found by the
// chaos soak: the older one reached the service twice).
func TestAReportCountsForItsTaskAfterItsLineMovedOn(t *testing.T) {
	one, two := feedbackCard(), feedbackCard()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	one.Lines[0].TaskID = "bbbb"
	one.Lines[0].Reports = []card.Report{{User: "U1", Option: "fp", Category: verdict.CatPhishing, At: at, TaskID: "aaaa"}}
	two.Channel, two.SourceTS, two.CardTS = "C2", "2.1", "2.2"
	book := &cardsBook{cards: []card.Card{one, two}}
	rep := &recordingReporter{}
	f := &Feedback{Cards: book, Rep: rep, Poster: &recordingPoster{}, Access: &Access{}, TaskCards: book.TaskCards}
	answer := f.Report(t.Context(), ReportRequest{User: "U2", Channel: "C2", CardTS: "2.2", Line: 0, TaskID: "aaaa", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(answer, "already reported") || len(rep.sent) != 0 {
		t.Fatalf("the older analysis reported again: %q, sent %+v", answer, rep.sent)
	}
	answer = f.Report(t.Context(), ReportRequest{User: "U2", Channel: "C1", CardTS: "1.2", Line: 0, TaskID: "bbbb", Category: verdict.CatPhishing, Option: "fp"})
	if !strings.Contains(answer, "Thanks") || len(rep.sent) != 1 || rep.sent[0].taskID != "bbbb" {
		t.Fatalf("the newer analysis: %q, sent %+v", answer, rep.sent)
	}
	// The report is kept with its analysis.
	got := book.cards[0].Lines[0].Reports
	if len(got) != 2 || got[1].TaskID != "bbbb" || got[1].User != "U2" {
		t.Errorf("reports on the card: %+v", got)
	}
}
