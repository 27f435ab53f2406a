package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// CardBook finds posted cards (*cardbook.Book). Edit calls fn with the card
// posted at (channel, cardTS) while no one else changes it, and saves what
// fn did. It returns ErrCardNotFound when there is no such card.
type CardBook interface {
	// EditEmit applies fn to the card posted at (channel, cardTS) and
	// saves it, with the event fn returns (nil: none) queued in the same
	// write (the outbox); it returns that event as queued.
	EditEmit(channel, cardTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error)
	// EditBySourceEmit is EditEmit for the card answering the message at
	// (channel, sourceTS), posted or not.
	EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error)
}

// ErrCardNotFound is returned by CardBook.Edit for an unknown card.
var ErrCardNotFound = card.ErrNotFound

// Reporter sends a verdict disposition to the URL service (*scan.URLs
// implements it): option is "fp", "fn" or "restore". A refusal is a
// *scan.LookupError.
type Reporter interface {
	Report(ctx context.Context, taskID string, category verdict.Category, option string) error
}

// CardPoster updates cards and answers users privately.
type CardPoster interface {
	Update(ctx context.Context, c *card.Card) error
	Ephemeral(ctx context.Context, channel, user, text string, blocks ...slack.Block) error
}

// ReportClaims is where a report's sender claims it (store.State).
type ReportClaims interface {
	ClaimReport(key, holder string, hold time.Duration) (bool, error)
	ReleaseReport(key, holder string) error
}

// reportClaimHold is how long a report's claim lasts if its process dies
// holding it: past the service's answer (30 s) and the card's write.
const reportClaimHold = 2 * time.Minute

// Audit is where feedback keeps its audit trail (store.State).
type Audit interface {
	RecordReport(r store.Report) error
}

// Feedback handles the False positive / False negative / Restore buttons.
type Feedback struct {
	Cards  CardBook
	Rep    Reporter
	Poster CardPoster
	Access *Access
	// Forget drops the cached verdict of a URL once a report changed it.
	Forget func(url string)
	// Audit keeps the audit trail: every report added to a card is
	// recorded there (store.State); nil keeps none.
	Audit Audit
	// Events receives a finding for every report added to a card; nil
	// sends none.
	Events events.Sink
	// TaskCards, if set, returns every card showing a task, so a report
	// already accepted through another card is not sent again.
	TaskCards func(taskID string) ([]card.Card, error)
	// Claims, if set, makes one request at a time, in any process sharing
	// the store, send a report of a task (store.State): two clicks on two
	// cards of one task, handled by two replicas at once, would otherwise
	// both read the cards before either wrote its report there, and both
	// send it.
	Claims ReportClaims
	Log    *slog.Logger
	Now    func() time.Time

	mu      sync.Mutex
	pending map[string]PendingReport
}

// PendingReport is a report sent to the URL service that it has not
// answered yet.
type PendingReport struct {
	User     string
	Channel  string
	TaskID   string
	Option   string
	Category verdict.Category
	Since    time.Time
}

// OutcomeUnreachable is a report's outcome when the service never answered
// it (a network failure or a timeout): it is not known to have landed.
const OutcomeUnreachable = "the service could not be reached"

// Pending returns the reports being sent that the service has not
// answered yet, oldest first.
func (f *Feedback) Pending() []PendingReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]PendingReport, 0, len(f.pending))
	for _, p := range f.pending {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PendingReport) int { return a.Since.Compare(b.Since) })
	return out
}

var optionWords = map[string]string{
	"fp":      "a false positive",
	"fn":      "a false negative",
	"restore": "a restore of the original verdict",
}

// HandleInteraction handles block_actions on verdict cards and ignores the
// rest. It has been acked already.
func (f *Feedback) HandleInteraction(ctx context.Context, cb *slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions {
		return false
	}
	handled := false
	for _, a := range cb.ActionCallback.BlockActions {
		var option string
		switch a.ActionID {
		case notify.ActionFalsePositive:
			option = "fp"
		case notify.ActionFalseNegative:
			option = "fn"
		case notify.ActionRestore:
			option = "restore"
		case notify.ActionCategory:
			handled = true // a pick in the select: read when a button is clicked
			continue
		default:
			continue
		}
		handled = true
		f.click(ctx, cb, a, option)
	}
	return handled
}

func (f *Feedback) logger() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Log
}

func (f *Feedback) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

func (f *Feedback) click(ctx context.Context, cb *slack.InteractionCallback, a *slack.BlockAction, option string) {
	user := cb.User.ID
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	cardTS := cb.Container.MessageTs
	if cardTS == "" {
		cardTS = cb.Message.Timestamp
	}
	tell := func(text string) {
		if err := f.Poster.Ephemeral(ctx, channel, user, text); err != nil {
			f.logger().Warn("could not answer a feedback click", "error", err)
		}
	}
	lineIdx, taskID, cat, err := notify.DecodeActionValue(a.Value)
	if err != nil {
		f.logger().Warn("feedback button with an unreadable value", "action", a.ActionID, "error", err)
		tell("That button is from an older card and can no longer be used; run `/scan` on the link again.")
		return
	}
	// The select on the same line may have picked another category.
	if st := cb.BlockActionState; st != nil {
		if v, ok := st.Values[a.BlockID][notify.ActionCategory]; ok && v.SelectedOption.Value != "" {
			if c, err := verdict.ParseCategory(v.SelectedOption.Value); err == nil {
				cat = c
			}
		}
	}
	tell(f.Report(ctx, ReportRequest{User: user, Channel: channel, CardTS: cardTS, Line: lineIdx,
		TaskID: taskID, Category: cat, Option: option}))
}

// ReportRequest is one verdict report, from a card's button or from
// `/scan report`: both go through Feedback.Report, so they are scoped,
// deduplicated and audited alike.
type ReportRequest struct {
	User string
	// Channel, and CardTS (the posted card, for buttons) or SourceTS (the
	// message the card answers, for /scan report), name the card.
	Channel  string
	CardTS   string
	SourceTS string
	// Line is the card line the report is about; it must show TaskID.
	Line     int
	TaskID   string
	Category verdict.Category
	Option   string // fp, fn, restore
}

// cardTSWait is how long a click on a card whose ts the store does not
// know yet waits for it: a card is posted first and its ts saved after, so
// a click in between (a fast clicker, a slow disk, another replica) finds
// no card for a moment.
const cardTSWait = 3 * time.Second

// edit applies fn to the card r names. A card named by its ts that the
// store does not know yet is waited for, up to cardTSWait.
func (f *Feedback) edit(ctx context.Context, r ReportRequest, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error) {
	if r.CardTS == "" {
		return f.Cards.EditBySourceEmit(r.Channel, r.SourceTS, fn)
	}
	deadline := time.Now().Add(cardTSWait)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		out, err := f.Cards.EditEmit(r.Channel, r.CardTS, fn)
		if !errors.Is(err, ErrCardNotFound) || time.Now().Add(pause).After(deadline) {
			return out, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// Report sends a verdict report for a card line and returns the answer for
// the user. It checks the user may send it (a false positive from whoever
// brought the link, on any card of its task, is refused unless they are
// an admin: OwnLinkAnswer), refuses a report already accepted for the task
// (on any card) or being sent, sends it to the URL service, adds the audit
// line to the card, records it, and forgets the cached verdict of the
// line's URL once the service accepted it.
func (f *Feedback) Report(ctx context.Context, r ReportRequest) string {
	option, cat, taskID := r.Option, r.Category, r.TaskID
	if !f.Access.CanReport(r.User, option) {
		if option == "restore" {
			return "Only admins can restore a verdict."
		}
		return "Only admins can report verdicts in this workspace."
	}
	// A false positive clears a link for everyone; its own poster may not
	// send one (admins excepted), on any card showing the task.
	ownCheck := option == "fp" && !f.Access.IsAdmin(r.User)
	key := fmt.Sprintf("%s|%s|%s", taskID, option, cat)
	// The claim is taken before the cards are read: a report sent by
	// another request is on its card by the time that request lets go of
	// the claim, so this one finds it there. Its holder is the person and
	// the card: the same click delivered again (its replica was killed)
	// takes over its own claim.
	if f.Claims != nil {
		holder := fmt.Sprintf("%s|%s|%s%s", r.User, r.Channel, r.CardTS, r.SourceTS)
		var ok bool
		err := f.untilStored(ctx, func() (err error) { ok, err = f.Claims.ClaimReport(key, holder, reportClaimHold); return err })
		switch {
		case err != nil:
			f.logger().Error("feedback: report claim failed", "error", err)
			return "Something went wrong on our side; the report was not sent."
		case !ok:
			return "That report is already being sent."
		}
		defer func() {
			if err := f.Claims.ReleaseReport(key, holder); err != nil {
				f.logger().Warn("feedback: report claim not released; it lapses", "error", err)
			}
		}()
	}
	// A report the service accepted for this task on another card (the same
	// link posted twice) counts too: the service keeps one verdict per task.
	var earlier []cardReport
	if f.TaskCards != nil {
		var cards []card.Card
		err := f.untilStored(ctx, func() (err error) { cards, err = f.TaskCards(taskID); return err })
		if err != nil {
			f.logger().Error("feedback: task lookup failed", "error", err)
			return "Something went wrong on our side; the report was not sent."
		}
		for i := range cards {
			shows := false
			for _, l := range cards[i].Lines {
				for _, rep := range l.Reports {
					if rep.On(l, taskID) {
						earlier = append(earlier, cardReport{Report: rep, card: &cards[i]})
					}
				}
				shows = shows || l.TaskID == taskID
			}
			if ownCheck && shows && BroughtBy(&cards[i], r.User) {
				f.refusedOwn(r, cards[i].Channel)
				return OwnLinkAnswer
			}
		}
	}

	var target string
	lineIdx := r.Line
	// claimedHere: this request marked the report pending (a claim
	// retried after a failed commit finds its own mark, not another's).
	claimedHere := false
	// again: the card, when this person's report is on it already (a
	// click delivered again after the replica that handled it was killed
	// between the card's write and its update in Slack).
	var again *card.Card
	defer func() {
		if claimedHere {
			f.mu.Lock()
			delete(f.pending, key)
			f.mu.Unlock()
		}
	}()
	// claim checks the report may be sent and marks it pending, in the
	// card's edit (no event: nothing is reported yet).
	claim := func(c *card.Card) error {
		if lineIdx < 0 || lineIdx >= len(c.Lines) || c.Lines[lineIdx].TaskID != taskID {
			return errStale
		}
		if ownCheck && BroughtBy(c, r.User) {
			return errOwnLink
		}
		l := &c.Lines[lineIdx]
		target = l.Target
		all := slices.Clone(earlier)
		for _, rep := range l.Reports {
			if rep.On(*l, taskID) {
				all = append(all, cardReport{Report: rep}) // this card's
			}
		}
		slices.SortStableFunc(all, func(a, b cardReport) int { return a.At.Compare(b.At) })
		if last := lastAccepted(all, cat); last != nil && last.Option == option {
			here := last.card == nil || (last.card.Channel == c.Channel && last.card.SourceTS == c.SourceTS)
			if here && last.User == r.User {
				cp := *c
				again = &cp
			}
			return &duplicateError{r: last.Report, here: here, card: last.card}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.pending == nil {
			f.pending = map[string]PendingReport{}
		}
		if claimedHere {
			return nil
		}
		if _, busy := f.pending[key]; busy {
			return &duplicateError{}
		}
		f.pending[key] = PendingReport{User: r.User, Channel: r.Channel, TaskID: taskID, Option: option, Category: cat, Since: f.now()}
		claimedHere = true
		return nil
	}
	err := f.untilStored(ctx, func() error {
		_, err := f.edit(ctx, r, func(c *card.Card) (*store.Outgoing, error) { return nil, claim(c) })
		return err
	})
	var dup *duplicateError
	if errors.As(err, &dup) && again != nil && again.CardTS != "" {
		// The card in Slack may not show the report yet: it is shown
		// again from the store (an update is idempotent).
		if uerr := notify.UntilAdmitted(ctx, func() error { return f.Poster.Update(ctx, again) }); uerr != nil {
			f.logger().Warn("card update after a repeated report failed", "error", uerr)
		}
	}
	switch {
	case errors.As(err, &dup):
		switch {
		case dup.r.User == "":
			return "That report is already being sent."
		case f.mayName(ctx, r.User, dup):
			return fmt.Sprintf("%s already reported %s (%s) for task %s %s; it was not sent again.", notify.Mention(dup.r.User), optionWords[option], cat, notify.Code(taskID, 40), slackDate(dup.r.At))
		}
		// Made on a card of a conversation the reporter is not in: that
		// it was made is said (the service keeps one verdict per task), not
		// who made it, nor when, nor where.
		return fmt.Sprintf("%s (%s) was already reported for task %s; it was not sent again.", capitalise(optionWords[option]), cat, notify.Code(taskID, 40))
	case errors.Is(err, errOwnLink):
		f.refusedOwn(r, r.Channel)
		return OwnLinkAnswer
	case errors.Is(err, errStale), errors.Is(err, ErrCardNotFound):
		return "This card has changed since it was shown; reload it and try again."
	case err != nil:
		f.logger().Error("feedback: card lookup failed", "error", err)
		return "Something went wrong on our side; the report was not sent."
	}

	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	rerr := f.Rep.Report(rctx, taskID, cat, option)
	cancel()
	rep := card.Report{User: r.User, Option: option, Category: cat, At: f.now(), TaskID: taskID}
	if rerr != nil {
		var le *scan.LookupError
		switch {
		case errors.Is(rerr, scan.ErrNotFound):
			rep.Outcome = "the service no longer has this task"
		case errors.As(rerr, &le) && le.Message != "":
			rep.Outcome = le.Message
		default:
			rep.Outcome = OutcomeUnreachable
		}
		f.logger().Warn("verdict report refused", "task_id", taskID, "option", option, "category", string(cat), "error", rerr)
	}
	var saved *card.Card
	var out *store.Outgoing
	// The report's event rides in the write that adds it to the card. The
	// service has the report now: a store that fails (a database restart,
	// a killed session) is waited for, or the card would never show it.
	// A commit whose answer was lost may have been made: the report is
	// not added twice.
	err = f.untilStored(ctx, func() (err error) {
		out, err = f.edit(ctx, r, func(c *card.Card) (*store.Outgoing, error) {
			saved = nil
			if lineIdx >= len(c.Lines) {
				return nil, nil
			}
			if slices.ContainsFunc(c.Lines[lineIdx].Reports, func(x card.Report) bool {
				return x.User == rep.User && x.Option == rep.Option && x.Category == rep.Category && x.At.Equal(rep.At)
			}) {
				cp := *c
				saved = &cp
				return nil, nil
			}
			c.Lines[lineIdx].Reports = append(c.Lines[lineIdx].Reports, rep)
			cp := *c
			saved = &cp
			return events.Prepare(f.Events, reportFinding(saved, lineIdx, rep)), nil
		})
		return err
	})
	if err != nil {
		f.logger().Warn("could not add a report to its card", "task_id", taskID, "error", err)
	}
	if err == nil && saved != nil {
		if saved.CardTS != "" { // a card never posted (quiet channel, clean link) has nothing to update
			// A 429 storm outlasting the poster's retries is waited out:
			// the report is saved on the card, and nothing else would
			// write its audit line to Slack.
			if uerr := notify.UntilAdmitted(ctx, func() error { return f.Poster.Update(ctx, saved) }); uerr != nil {
				f.logger().Warn("card update after a report failed", "error", uerr)
			}
		}
		f.recorded(saved, lineIdx, rep, out)
	}
	if rerr != nil {
		return fmt.Sprintf("The URL service did not accept the report: %s.", notify.Prose(rep.Outcome, 300))
	}
	if f.Forget != nil && target != "" {
		f.Forget(target)
	}
	return fmt.Sprintf("Thanks: %s (%s) was reported to the URL service for task %s.", capitalise(optionWords[option]), cat, notify.Code(taskID, 40))
}

// reportFinding is the finding of a report added to line of card c.
func reportFinding(c *card.Card, line int, r card.Report) events.Finding {
	e := events.LineFinding(events.KindReport, c, c.Lines[line])
	e.At, e.Actor, e.Option, e.Outcome, e.Category = r.At, r.User, r.Option, r.Outcome, r.Category
	return e
}

// recorded writes a report added to line of card c to the audit trail and
// sends its finding, unless it was queued with the card's write (out).
func (f *Feedback) recorded(c *card.Card, line int, r card.Report, out *store.Outgoing) {
	l := c.Lines[line]
	if f.Audit != nil {
		err := f.untilStored(context.Background(), func() error {
			return f.Audit.RecordReport(store.Report{Target: l.Target, TaskID: l.TaskID, User: r.User, Option: r.Option,
				Category: r.Category, At: r.At, Outcome: r.Outcome, Card: card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}})
		})
		if err != nil {
			f.logger().Warn("could not record a report in the audit trail", "error", err)
		}
	}
	if out != nil {
		events.Committed(f.Events, []*store.Outgoing{out})
		return
	}
	events.Emit(context.Background(), f.Events, reportFinding(c, line, r))
}

// untilStored runs op until it succeeds or fails for a reason of its own
// (a card not found or changed, a duplicate, the reporter's own link: the
// answers), retrying a store that fails with backoff for up to
// store.RetryWindow or until ctx ends: a click is acked before it is handled, so a database
// restart or a killed session must delay its report, not lose it.
func (f *Feedback) untilStored(ctx context.Context, op func() error) error {
	told := false
	return store.Retry(ctx.Done(), store.RetryWindow, func() error {
		err := op()
		if err != nil && !told && !feedbackAnswer(err) {
			f.logger().Warn("feedback: the store failed; retrying", "error", err)
			told = true
		}
		return err
	}, feedbackAnswer)
}

// feedbackAnswer reports whether err is an answer to a report (a card not
// found or changed, a duplicate, the reporter's own link), not a failure
// of the store.
func feedbackAnswer(err error) bool {
	var dup *duplicateError
	return errors.Is(err, ErrCardNotFound) || errors.Is(err, errStale) || errors.Is(err, errOwnLink) || errors.As(err, &dup)
}

var (
	errStale   = errors.New("card line changed")
	errOwnLink = errors.New("the reporter brought the link")
)

// OwnLinkAnswer is the answer to a false-positive report from the person
// who brought the link (BroughtBy): nothing is sent to the service.
const OwnLinkAnswer = "You shared this link (or asked me to check it), so you cannot report it as a false positive: " +
	"a false positive clears the link for everyone. Nothing was sent; ask someone else, or a security admin, to review it."

// BroughtBy reports whether user brought the links of card c to the bot:
// the author of the message it answers (c.Poster: in a channel, in a
// thread, or in their direct message with the bot), or, for a card with
// no message author (/scan <url>), the person who asked for it. Someone
// who used the shortcut or a mention on another person's message did not.
// The poster is per message: the same link in two messages has two.
func BroughtBy(c *card.Card, user string) bool {
	if user == "" {
		return false
	}
	if c.Poster != "" {
		return c.Poster == user
	}
	return c.RequestedBy == user
}

// refusedOwn logs a false positive refused because its reporter brought
// the link (an audit line: someone tried to clear their own link).
func (f *Feedback) refusedOwn(r ReportRequest, channel string) {
	f.logger().Info("false positive refused: the reporter brought the link", "audit", true, "user", r.User,
		"channel", r.Channel, "card_channel", channel, "task_id", r.TaskID, "category", string(r.Category))
}

// cardReport is a report and the card it was made on (nil: the card being
// reported on).
type cardReport struct {
	card.Report
	card *card.Card
}

// duplicateError is a report already accepted for the task: r, made on the
// card being reported on (here) or on card.
type duplicateError struct {
	r    card.Report
	here bool
	card *card.Card
}

func (e *duplicateError) Error() string { return "already reported" }

// mayName reports whether the earlier report dup may be shown to user
// with its author: it was made on the card being reported on (which user
// sees), or on a card of a conversation user is in (Access.Scope). When
// that cannot be told, it is not shown.
func (f *Feedback) mayName(ctx context.Context, user string, dup *duplicateError) bool {
	if dup.here {
		return true
	}
	sc, err := f.Access.Scope(ctx, user)
	if err != nil {
		f.logger().Warn("feedback: could not check the reporter's access; the earlier report's author is not named", "error", err)
		return false
	}
	return sc.Card(dup.card)
}

// lastAccepted returns the newest report for cat that the service accepted.
func lastAccepted(rs []cardReport, cat verdict.Category) *cardReport {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Category == cat && rs[i].Outcome == "" {
			return &rs[i]
		}
	}
	return nil
}

func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}
