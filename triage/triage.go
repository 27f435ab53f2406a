// Package triage is "Report to security": any member of a channel reports a
// message they find suspicious (the report_message shortcut, or a reaction
// with VERDICTBOT_REPORT_EMOJI), most useful exactly when the services say
// clean. The reporter is thanked privately and told what happens next; the
// reports of one message gather on one triage card in the security channel
// (VERDICTBOT_REPORT_CHANNEL), which lists the message's links and files
// with their verdicts (checked now if they were not) and carries the
// admins' buttons: Confirm malicious (a false negative reported to the
// services, the message quarantined where its channel has quarantine on,
// the reporters told), Not a threat (the reporters told) and Assign to me.
//
// Privacy: the triage card names the message (permalink, channel, author)
// and its links defanged; it never copies the message's text into another
// conversation unless VERDICTBOT_REPORT_INCLUDE_TEXT is set. Reports are
// kept in the state layer (store.UserReport), shared by the replicas, and
// are OCSF events (kind user_report) with the reporter as the actor.
package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
)

// The shortcut's callback id and the triage card's action ids: contracts
// with manifest.yaml and with people's clients.
const (
	ShortcutReport = "report_message"
	ActionConfirm  = "report_confirm"
	ActionDismiss  = "report_dismiss"
	ActionAssign   = "report_assign"
)

// Outcomes of a triaged report (store.UserReport.Outcome).
const (
	OutcomeMalicious  = "malicious"
	OutcomeNotAThreat = "not_a_threat"
)

// Ways a report is made (store.Reporter.Via).
const (
	ViaShortcut = "shortcut"
	ViaReaction = "reaction"
)

// DefaultPerHour is how many messages one person may report in an hour
// (shared by the replicas): enough for a phishing wave, not for a flood
// of the security channel.
const DefaultPerHour = 10

// DefaultVerdictWait is how long a triage card waits for the verdicts of
// the message's links before showing them as they are.
const DefaultVerdictWait = 3 * time.Minute

// Store keeps the reports (store.State).
type Store interface {
	AddUserReport(channel, ts string, r store.Reporter, fn func(rep *store.UserReport)) (store.UserReport, bool, error)
	UpdateUserReport(channel, ts string, fn func(rep *store.UserReport) error) (store.UserReport, error)
	UserReport(channel, ts string) (store.UserReport, error)
	UserReportByTriage(channel, ts string) (store.UserReport, error)
	UserReportsBy(user string, n int) ([]store.UserReport, error)
	UserReportsSince(user string, since time.Time) (int, error)
}

// Slack is the part of the Web API the triage calls with the bot token.
type Slack interface {
	PostMessageContext(ctx context.Context, channel string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channel, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	GetPermalinkContext(ctx context.Context, params *slack.PermalinkParameters) (string, error)
}

// Cards reads the verdict cards of messages (cardbook.Book).
type Cards interface {
	Get(channel, sourceTS string) (*store.CardRecord, bool)
}

// Triage handles reports. Set the fields, then use it; Close waits for the
// triage cards still waiting for verdicts.
type Triage struct {
	Store Store
	Slack Slack
	Cards Cards
	// Ephemeral answers a person privately in a conversation.
	Ephemeral func(ctx context.Context, channel, user, text string) error
	// Scan checks the message's links and files as the "Scan this
	// message" shortcut does (its card in its thread); nil: not checked.
	Scan func(ctx context.Context, channel string, msg *slack.Msg, raw json.RawMessage, user string) string
	// Confirm acts on a report an admin confirmed malicious (reports a
	// false negative, quarantines where the channel has it on) and says
	// what was done, in one sentence.
	Confirm func(ctx context.Context, admin string, rep store.UserReport) string
	// IsAdmin decides who may triage.
	IsAdmin func(user string) bool
	// Channel is VERDICTBOT_REPORT_CHANNEL (default: the alert channel);
	// "": reporting is off.
	Channel string
	// IncludeText is VERDICTBOT_REPORT_INCLUDE_TEXT.
	IncludeText bool
	// PerHour bounds one person's reports (default DefaultPerHour).
	PerHour int
	// VerdictWait: DefaultVerdictWait when zero.
	VerdictWait time.Duration
	Events      events.Sink
	Log         *slog.Logger
	Now         func() time.Time

	mu      sync.Mutex
	waiting map[string]bool // triage cards waiting for verdicts, by message
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
}

func (t *Triage) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Triage) log() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

func (t *Triage) stopped() chan struct{} {
	t.once.Do(func() { t.stop = make(chan struct{}) })
	return t.stop
}

// Close stops the waits for verdicts and waits for them to end.
func (t *Triage) Close() {
	if t == nil {
		return
	}
	s := t.stopped()
	t.mu.Lock()
	select {
	case <-s:
	default:
		close(s)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// Answers to the reporter.
const (
	answerOff      = "Reporting to security is not set up in this workspace (no report channel): ask your admins. Nothing was sent."
	answerAgain    = "You already reported this message; the security team has it. I will tell you what they decide."
	answerTooMany  = "You have reported %d messages in the last hour, the most I take from one person; please wait a while, or tell the security team directly."
	answerFailed   = "Something went wrong on our side and the report was not recorded; please try again in a minute."
	answerNoText   = "I could not read that message, so nothing was reported."
	answerThanks   = "Thank you: the message was reported to the security team (<#%s>). They will look at it, and I will tell you what they decide in my Messages tab."
	answerChecking = " Meanwhile I am checking its links and files."
	answerNotIn    = " I am not in that conversation, so I could not check its links; the team will look at it themselves."
)

// Report records user's report of msg in channel (raw: the message's JSON
// as Slack sent it, for what slack-go does not decode) and returns the
// private answer for the reporter. canRead says whether the bot may read
// the conversation (it is a member): otherwise the message is reported
// but not scanned.
func (t *Triage) Report(ctx context.Context, channel string, msg *slack.Msg, raw json.RawMessage, user, via string, canRead bool) string {
	if t.Channel == "" {
		t.log().Info("report to security refused: no report channel set", "user", user)
		return answerOff
	}
	if msg == nil || msg.Timestamp == "" {
		return answerNoText
	}
	per := t.PerHour
	if per <= 0 {
		per = DefaultPerHour
	}
	n, err := t.Store.UserReportsSince(user, t.now().Add(-time.Hour))
	if err != nil {
		t.log().Error("report to security: counting the reporter's reports failed", "error", err)
		return answerFailed
	}
	if n >= per {
		t.log().Warn("report to security refused: the reporter's hourly limit", "user", user, "reports", n)
		return fmt.Sprintf(answerTooMany, n)
	}
	rep, added, err := t.Store.AddUserReport(channel, msg.Timestamp, store.Reporter{User: user, At: t.now(), Via: via},
		func(r *store.UserReport) {
			r.Author, r.AuthorTeam = msg.User, msg.Team
			if msg.ThreadTimestamp != "" && msg.ThreadTimestamp != msg.Timestamp {
				r.ThreadTS = msg.ThreadTimestamp
			}
		})
	if err != nil {
		t.log().Error("report to security not recorded", "error", err)
		return answerFailed
	}
	if !added {
		return answerAgain
	}
	t.log().Info("message reported to security", "channel", channel, "ts", msg.Timestamp, "reporter", user, "via", via,
		"reports", len(rep.Reporters))
	events.Emit(ctx, t.Events, events.Finding{Kind: events.KindUserReport, Channel: channel, MessageTS: msg.Timestamp,
		ThreadTS: rep.ThreadTS, Poster: rep.Author, Actor: user})
	answer := fmt.Sprintf(answerThanks, t.Channel)
	if canRead && t.Scan != nil {
		m := *msg
		m.Channel = channel
		t.Scan(ctx, channel, &m, raw, user)
		answer += answerChecking
	} else if !canRead {
		answer += answerNotIn
	}
	text := ""
	if t.IncludeText || channel == t.Channel {
		text = msg.Text
	}
	t.show(ctx, rep, canRead, text)
	if canRead {
		t.awaitVerdicts(rep.Channel, rep.TS, text)
	}
	return answer
}

// show posts the report's triage card, or updates it. The first reporter
// posts it; a report made while another replica posts it waits for its ts.
func (t *Triage) show(ctx context.Context, rep store.UserReport, canRead bool, text string) {
	if rep.TriageTS == "" && len(rep.Reporters) > 1 {
		for i := 0; i < 50 && rep.TriageTS == ""; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			if r, err := t.Store.UserReport(rep.Channel, rep.TS); err == nil {
				rep = r
			}
		}
	}
	blocks, fallback := t.render(ctx, rep, canRead, text)
	opts := []slack.MsgOption{slack.MsgOptionText(fallback, false), slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
	if rep.TriageTS != "" {
		if _, _, _, err := t.Slack.UpdateMessageContext(ctx, rep.TriageChannel, rep.TriageTS, opts...); err != nil {
			t.log().Warn("triage card update failed", "channel", rep.TriageChannel, "error", slackCode(err))
		}
		return
	}
	ch, ts, err := t.Slack.PostMessageContext(ctx, t.Channel, opts...)
	if err != nil {
		t.log().Error("triage card not posted: is the bot in the report channel?", "channel", t.Channel, "error", slackCode(err))
		return
	}
	if _, err := t.Store.UpdateUserReport(rep.Channel, rep.TS, func(r *store.UserReport) error {
		r.TriageChannel, r.TriageTS = ch, ts
		return nil
	}); err != nil {
		t.log().Error("the triage card's ts was not recorded", "error", err)
	}
}

// awaitVerdicts re-renders the triage card once the message's card is
// final (at most VerdictWait), in a goroutine of its own: one per message.
func (t *Triage) awaitVerdicts(channel, ts, text string) {
	key := channel + "/" + ts
	t.mu.Lock()
	if t.waiting == nil {
		t.waiting = map[string]bool{}
	}
	select {
	case <-t.stopped():
		t.mu.Unlock()
		return
	default:
	}
	if t.waiting[key] {
		t.mu.Unlock()
		return
	}
	t.waiting[key] = true
	t.wg.Add(1)
	t.mu.Unlock()
	wait := t.VerdictWait
	if wait <= 0 {
		wait = DefaultVerdictWait
	}
	go func() {
		defer t.wg.Done()
		defer func() { t.mu.Lock(); delete(t.waiting, key); t.mu.Unlock() }()
		deadline := time.Now().Add(wait)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.stopped():
				return
			case <-tick.C:
			}
			if t.final(channel, ts) || time.Now().After(deadline) {
				break
			}
		}
		rep, err := t.Store.UserReport(channel, ts)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t.show(ctx, rep, true, text)
	}()
}

// final reports whether the message's verdict cards are all final.
func (t *Triage) final(channel, ts string) bool {
	rec, ok := t.Cards.Get(channel, ts)
	frec, fok := t.Cards.Get(channel, ts+"/files")
	if !ok && !fok {
		return false
	}
	return (!ok || rec.Card.Final) && (!fok || frec.Card.Final)
}

// render is the triage card's blocks and notification text.
func (t *Triage) render(ctx context.Context, rep store.UserReport, canRead bool, text string) ([]slack.Block, string) {
	md := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	var blocks []slack.Block
	blocks = append(blocks, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "Message reported to security", true, false)))
	where := fmt.Sprintf("<#%s>", rep.Channel)
	if link, err := t.Slack.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: rep.Channel, Ts: rep.TS}); err == nil && link != "" {
		where = fmt.Sprintf("<%s|a message> in <#%s>", link, rep.Channel)
	} else {
		where = "a message in " + where
	}
	author := "someone"
	if rep.Author != "" {
		author = "<@" + rep.Author + ">"
	}
	blocks = append(blocks, slack.NewSectionBlock(md(fmt.Sprintf("%s posted by %s.", capitalize(where), author)), nil, nil))
	var who []string
	for _, r := range rep.Reporters {
		who = append(who, "<@"+r.User+">")
	}
	count := "1 report"
	if len(rep.Reporters) != 1 {
		count = fmt.Sprintf("%d reports", len(rep.Reporters))
	}
	first := rep.Created
	if len(rep.Reporters) > 0 {
		first = rep.Reporters[0].At
	}
	blocks = append(blocks, slack.NewContextBlock("", md(fmt.Sprintf("Reported by %s (%s), first at %s", strings.Join(who, ", "), count,
		first.UTC().Format("2006-01-02 15:04 UTC")))))
	if text != "" {
		blocks = append(blocks, slack.NewSectionBlock(md(quote(text)), nil, nil))
	}
	blocks = append(blocks, slack.NewSectionBlock(md(t.verdicts(rep, canRead)), nil, nil))
	status := "*Open*: an admin decides."
	switch rep.Outcome {
	case OutcomeMalicious:
		status = fmt.Sprintf(":red_circle: *Confirmed malicious* by <@%s>, %s.", rep.DecidedBy, rep.DecidedAt.UTC().Format("2006-01-02 15:04 UTC"))
	case OutcomeNotAThreat:
		status = fmt.Sprintf(":white_check_mark: *Not a threat*, said <@%s>, %s.", rep.DecidedBy, rep.DecidedAt.UTC().Format("2006-01-02 15:04 UTC"))
	default:
		if rep.Assignee != "" {
			status = fmt.Sprintf("*Open*, assigned to <@%s>.", rep.Assignee)
		}
	}
	blocks = append(blocks, slack.NewSectionBlock(md(status), nil, nil))
	if rep.Outcome == "" {
		confirm := slack.NewButtonBlockElement(ActionConfirm, "confirm", slack.NewTextBlockObject(slack.PlainTextType, "Confirm malicious", false, false))
		confirm.Style = slack.StyleDanger
		dismiss := slack.NewButtonBlockElement(ActionDismiss, "dismiss", slack.NewTextBlockObject(slack.PlainTextType, "Not a threat", false, false))
		assign := slack.NewButtonBlockElement(ActionAssign, "assign", slack.NewTextBlockObject(slack.PlainTextType, "Assign to me", false, false))
		blocks = append(blocks, slack.NewActionBlock("triage", confirm, dismiss, assign))
	}
	return blocks, fmt.Sprintf("Message reported to security (%s)", count)
}

// verdicts lists the message's links and files with their verdicts.
func (t *Triage) verdicts(rep store.UserReport, canRead bool) string {
	if !canRead {
		return "_I am not in that conversation, so its links and files were not checked._"
	}
	var lines []string
	final := true
	for _, ts := range []string{rep.TS, rep.TS + "/files"} {
		rec, ok := t.Cards.Get(rep.Channel, ts)
		if !ok {
			continue
		}
		final = final && rec.Card.Final
		for _, l := range rec.Card.Lines {
			name := l.Target
			if l.File != nil && l.File.Name != "" {
				name = l.File.Name
			}
			if l.Kind == card.KindURL {
				name = links.Defang(name)
			}
			lines = append(lines, fmt.Sprintf("• `%s`: *%s*", strings.ReplaceAll(name, "`", "'"), levelWord(l)))
		}
		if quarantined := rec.Card.Quarantine; quarantined != nil && quarantined.State == card.QuarantineRemoved {
			lines = append(lines, "_The message was removed by quarantine._")
		}
	}
	if len(lines) == 0 {
		if _, ok := t.Cards.Get(rep.Channel, rep.TS); !ok {
			return "_Its links and files are being checked._"
		}
		return "_No link or file in it to check._"
	}
	head := "*Links and files:*"
	if !final {
		head = "*Links and files* (still being checked):"
	}
	return head + "\n" + strings.Join(lines, "\n")
}

func levelWord(l card.Line) string {
	w := l.Level.Key()
	if l.Category != "" && l.Level.Key() != "clean" {
		w += " (" + string(l.Category) + ")"
	}
	return w
}

// HandleInteraction handles a click on a triage card's buttons (true: it
// was one).
func (t *Triage) HandleInteraction(ctx context.Context, cb *slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return false
	}
	action := cb.ActionCallback.BlockActions[0].ActionID
	switch action {
	case ActionConfirm, ActionDismiss, ActionAssign:
	default:
		return false
	}
	channel, ts, user := cb.Channel.ID, cb.Message.Timestamp, cb.User.ID
	if cb.Container.MessageTs != "" {
		ts = cb.Container.MessageTs
	}
	answer := func(text string) {
		if t.Ephemeral != nil {
			if err := t.Ephemeral(ctx, channel, user, text); err != nil {
				t.log().Warn("triage answer failed", "error", slackCode(err))
			}
		}
	}
	if t.IsAdmin == nil || !t.IsAdmin(user) {
		answer("Only admins can triage reported messages.")
		return true
	}
	rep, err := t.Store.UserReportByTriage(channel, ts)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			answer("I do not know that report any more (it is older than the retention).")
		} else {
			t.log().Error("triage: report lookup failed", "error", err)
			answer("Something went wrong on our side; try again in a minute.")
		}
		return true
	}
	var decided bool
	rep, err = t.Store.UpdateUserReport(rep.Channel, rep.TS, func(r *store.UserReport) error {
		decided = false
		if r.Outcome != "" {
			return nil
		}
		switch action {
		case ActionAssign:
			r.Assignee = user
		case ActionConfirm, ActionDismiss:
			r.Outcome, r.DecidedBy, r.DecidedAt, decided = OutcomeNotAThreat, user, t.now(), true
			if action == ActionConfirm {
				r.Outcome = OutcomeMalicious
			}
		}
		return nil
	})
	if err != nil {
		t.log().Error("triage: decision not recorded", "error", err)
		answer("Something went wrong on our side; the decision was not recorded. Try again in a minute.")
		return true
	}
	if !decided && action != ActionAssign {
		answer(fmt.Sprintf("That report was already decided by <@%s>.", rep.DecidedBy))
		return true
	}
	did := ""
	if decided {
		t.log().Info("reported message triaged", "channel", rep.Channel, "ts", rep.TS, "outcome", rep.Outcome, "by", user)
		if rep.Outcome == OutcomeMalicious && t.Confirm != nil {
			did = t.Confirm(ctx, user, rep)
		}
		events.Emit(ctx, t.Events, events.Finding{Kind: events.KindUserReport, Channel: rep.Channel, MessageTS: rep.TS,
			ThreadTS: rep.ThreadTS, Poster: rep.Author, Actor: user, Option: rep.Outcome, Outcome: did})
	}
	_, isCard := t.Cards.Get(rep.Channel, rep.TS)
	t.show(ctx, rep, isCard || did != "", "")
	if decided {
		t.tellReporters(ctx, rep, did)
	}
	return true
}

// tellReporters tells each reporter the outcome, in their DM with the bot.
func (t *Triage) tellReporters(ctx context.Context, rep store.UserReport, did string) {
	link := fmt.Sprintf("the message you reported in <#%s>", rep.Channel)
	if p, err := t.Slack.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: rep.Channel, Ts: rep.TS}); err == nil && p != "" {
		link = fmt.Sprintf("<%s|the message you reported> in <#%s>", p, rep.Channel)
	}
	text := fmt.Sprintf("The security team looked at %s: not a threat. Thank you for reporting it; keep doing so when something looks wrong.", link)
	if rep.Outcome == OutcomeMalicious {
		text = fmt.Sprintf("The security team looked at %s: it is malicious. Thank you, your report helped.", link)
		if did != "" {
			text += " " + did
		}
	}
	for _, r := range rep.Reporters {
		if r.Told {
			continue
		}
		if _, _, err := t.Slack.PostMessageContext(ctx, r.User, slack.MsgOptionText(text, false),
			slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()); err != nil {
			t.log().Warn("a reporter could not be told the outcome", "user", r.User, "error", slackCode(err))
			continue
		}
		user := r.User
		if _, err := t.Store.UpdateUserReport(rep.Channel, rep.TS, func(x *store.UserReport) error {
			for i := range x.Reporters {
				if x.Reporters[i].User == user {
					x.Reporters[i].Told = true
				}
			}
			return nil
		}); err != nil {
			t.log().Warn("that a reporter was told was not recorded", "error", err)
		}
	}
}

// Mine returns user's latest reports (newest first, at most n), for the
// App Home.
func (t *Triage) Mine(user string, n int) ([]store.UserReport, error) {
	if t == nil || t.Store == nil {
		return nil, nil
	}
	return t.Store.UserReportsBy(user, n)
}

func quote(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func slackCode(err error) string {
	if c := notify.ErrorCode(err); c != "" {
		return c
	}
	if err != nil {
		return "error"
	}
	return ""
}
