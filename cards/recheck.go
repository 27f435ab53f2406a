package cards

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Replier posts plain thread replies and alerts (*notify.Poster).
type Replier interface {
	Reply(ctx context.Context, channel, threadTS, text string) error
}

// FlipRemover takes the removals a recheck flip calls for
// (*quarantine.Quarantine): they are queued, paced and journalled rather
// than done under the announcement.
type FlipRemover interface {
	// Plan returns, for the cards showing url as they stand before its
	// flip to level, the removal each card's change must queue (by card;
	// none for a card the flip does not bring to its channel's quarantine
	// level). It may write what the removals share (a batch waiting for an
	// admin) before returning.
	Plan(ctx context.Context, url string, level verdict.Level, cards []card.Card) map[card.Ref]*store.Removal
	// Mark shows on a card the removal queued for it (queued, or waiting
	// for an admin).
	Mark(c *card.Card, r *store.Removal)
	// Shown is told that the card of a queued removal was shown with the
	// flip: its removal may go now (it updates the card).
	Shown(ref card.Ref)
}

// Announcer tells Slack about verdicts a recheck changed: every card that
// shows the URL is updated (and posted, if a quiet channel never showed
// it), a reply in each thread says what changed and mentions the person who
// posted the link, and the alert channel gets a summary. A card the flip
// brings to its channel's quarantine level has its removal queued in the
// same write that shows the flip (Remover), or, without a Remover, is
// handed to Messages.Act.
//
// It also puts the outcome of a deferred check (a link not checked at
// first because its poster had sent too many links that hour) on the
// cards that show the link as not checked yet, whatever it is: a verdict
// (quarantine acts on it as on a flip; the thread reply and the alert
// summary come only when it is suspicious or malicious, so that a flood's
// harmless links make no noise), or the reason it could not be checked.
// Cards that show a verdict of the link already are changed only if the
// level differs. A card whose line was not settled yet, or that could not
// be written, or that is not posted yet, has the check deferred again
// (Deferrals), so the next run brings it its outcome.
type Announcer struct {
	Messages *Messages
	Replier  Replier
	// Remover, if set, takes the flip's removals (quarantine.Quarantine).
	Remover FlipRemover
	// AlertChannel is VERDICTBOT_ALERT_CHANNEL ("" for none).
	AlertChannel string
	// TeamURL returns the workspace URL (auth.test), for thread links.
	TeamURL func() string
	Now     func() time.Time
}

// cardChange is how one change concerns one card's line for its URL.
type cardChange int

const (
	changeNone     cardChange = iota // nothing to do on this card
	changeFlip                       // the line shows another verdict: it flips
	changeDeferred                   // the line says "not checked yet": it gets the deferred check's outcome
	changeNotReady                   // the line is still being settled (deferred checks only): later
	changeShown                      // the line shows this very flip already (a run before wrote it): show the card only
)

// showsVerdict reports whether l shows the verdict v already: its task and
// level (the service's, when the message's own signals raised the line).
// A recheck's verdict comes from a task of its own, so a line that shows
// it was written by this flip's announcement before (a run Slack refused
// the card, or that stopped after the write).
func showsVerdict(l card.Line, v scan.URLVerdict) bool {
	return v.TaskID != "" && l.TaskID == v.TaskID && (l.Level == v.Level || l.ServiceLevel == v.Level)
}

// isDeferredLine reports whether l shows its URL as not checked yet, its
// check deferred (scan.DeferredProblem).
func isDeferredLine(l card.Line) bool {
	return l.Kind == card.KindURL && l.Level == verdict.Unknown && l.Problem == scan.DeferredProblem
}

// concerns says how ch concerns line l (a line showing ch's URL).
func concerns(ch scan.Change, l card.Line) cardChange {
	switch {
	case isDeferredLine(l):
		return changeDeferred
	case !ch.Target.Deferred && ch.Now.Err == nil && showsVerdict(l, ch.Now):
		return changeShown
	case !ch.Target.Deferred:
		return changeFlip // a recheck's flip: every card that shows the URL
	case l.Level == verdict.Pending:
		return changeNotReady
	case ch.Now.Err != nil || l.Level == ch.Now.Level:
		return changeNone // a failure changes no verdict; the same verdict, nothing
	}
	return changeFlip
}

// lineOf returns the line of c that shows url.
func lineOf(c *card.Card, url string) (card.Line, bool) {
	for _, l := range c.Lines {
		if l.Target == url {
			return l, true
		}
	}
	return card.Line{}, false
}

// Announce implements scan.Recheck.OnChange: it returns the URLs whose
// change is not shown on every card yet (notShown), for the next run to
// show again.
func (a *Announcer) Announce(ctx context.Context, changes []scan.Change) (unshown []string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	var summary []string
	worst := verdict.Pending
	for _, ch := range changes {
		lines, shown := a.announce(ctx, ch, now())
		if !shown {
			unshown = append(unshown, ch.Target.Target)
		}
		for _, line := range lines {
			summary = append(summary, line)
			worst = verdict.Worst(worst, ch.Now.Level)
		}
	}
	if a.AlertChannel == "" || len(summary) == 0 {
		return unshown
	}
	head := fmt.Sprintf(":rotating_light: The recheck changed %d verdict(s):", len(summary))
	if worst < verdict.Suspicious {
		head = fmt.Sprintf(":information_source: The recheck changed %d verdict(s):", len(summary))
	}
	body := head + "\n" + strings.Join(summary, "\n")
	if err := a.Replier.Reply(ctx, a.AlertChannel, "", body); err != nil {
		a.Messages.Log.Warn("recheck alert failed", "channel", a.AlertChannel, "error", err)
	}
	return unshown
}

// notShown reports whether err, from showing a card or writing it, means
// that Slack may still show the card as it was: Slack or the network
// failing for a while, the store refusing the write, or the process
// shutting down. An answer such as a deleted message is not: there is
// nothing to show again.
func notShown(err error) bool {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return false
	}
	if _, ok := notify.Passing(err); ok {
		return true
	}
	var se slack.SlackErrorResponse
	return !errors.As(err, &se) // a closed Poster, an ended context, the store
}

// announce shows one change on the cards it concerns and returns the
// alert channel's summary lines for it; allShown is false when a card may
// still show the URL as it was (notShown), for the change to be announced
// again by the next run (the cards it reached then are only shown again:
// changeShown).
func (a *Announcer) announce(ctx context.Context, ch scan.Change, at time.Time) (summary []string, allShown bool) {
	allShown = true
	m := a.Messages
	url := ch.Target.Target
	when := at.UTC().Format("2006-01-02 15:04 UTC")
	// Card prose: the URL's own backticks would form code spans there, so
	// they are shown as "ˋ", as in code spans.
	shown := strings.ReplaceAll(links.DefangTruncate(url, 120), "`", "ˋ")
	m.Log.Info("recheck changed a verdict", "url", links.Defang(url), "was", ch.Was.Key(), "now", ch.Now.Level.Key(),
		"cards", len(ch.Target.Cards), "deferred", ch.Target.Deferred, "failed", ch.Now.Err != nil)
	// The cards the change concerns, as they stand before it.
	var before, again []card.Card
	young := map[card.Ref]bool{} // cards written within deferAgainWithin
	for _, ref := range ch.Target.Cards {
		rec, err := m.Cards.st.Card(ref)
		if err != nil {
			allShown = allShown && !notShown(err)
			continue
		}
		young[ref] = at.Sub(rec.Updated) < deferAgainWithin
		l, ok := lineOf(&rec.Card, url)
		if !ok {
			continue // an edit took the link out of the message
		}
		k := concerns(ch, l)
		if k == changeDeferred && rec.Card.CardTS == "" && young[ref] {
			// Its first post is under way (a deferred line is always
			// shown): were its outcome shown first, the post could land
			// after it, with the line as it was.
			k = changeNotReady
		}
		switch k {
		case changeFlip, changeDeferred:
			before = append(before, rec.Card.Clone())
		case changeShown:
			again = append(again, rec.Card.Clone())
		case changeNotReady:
			if young[ref] {
				a.deferAgain(url, ref)
			}
		}
	}
	var removals map[card.Ref]*store.Removal
	if a.Remover != nil && ch.Now.Err == nil && len(before) > 0 {
		removals = a.Remover.Plan(ctx, url, ch.Now.Level, before)
	}
	for _, c := range before {
		ref := card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}
		var (
			kind    cardChange
			was     verdict.Level
			reports []card.Report
		)
		// The change's event rides in the card's write (the outbox).
		var outs []*store.Outgoing
		flip := func(rec *store.CardRecord) {
			outs = nil
			kind, reports = changeNone, reports[:0]
			for i := range rec.Card.Lines {
				l := &rec.Card.Lines[i]
				if l.Target != url {
					continue
				}
				k := concerns(ch, *l)
				if k != changeFlip && k != changeDeferred {
					continue
				}
				kind, was = k, ch.Was
				if k == changeDeferred || ch.Target.Deferred {
					was = l.Level
				}
				reports = append(reports, l.Reports...)
				keep := l.Reports
				*l = urlLine(*l, ch.Now)
				l.Reports = keep // analysts see their reports beside the new verdict
			}
			switch {
			case kind == changeNone:
				return
			case kind == changeDeferred && ch.Now.Err != nil:
				rec.Card.Notes = append(rec.Card.Notes, fmt.Sprintf("Checked %s at low priority (deferred: its poster had sent too many links that hour): %s could not be checked.", when, shown))
			case kind == changeDeferred:
				rec.Card.Notes = append(rec.Card.Notes, fmt.Sprintf("Checked %s at low priority (deferred: its poster had sent too many links that hour): %s is %s.", when, shown, ch.Now.Level))
			default:
				rec.Card.Notes = append(rec.Card.Notes, fmt.Sprintf("Rechecked %s: %s is now %s (was %s).", when, shown, ch.Now.Level, was))
			}
			if !ch.Target.Deferred {
				rec.Card.Final = true
			}
			if f, ok := a.finding(&rec.Card, url, kind, was, ch); ok {
				if o := events.Prepare(a.Messages.Events, f); o != nil {
					rec.Outbox = append(rec.Outbox, o)
					outs = rec.Outbox
				}
			}
		}
		var snap card.Card
		ok := false
		if r := removals[ref]; r != nil {
			// The flip and its removal in one write: a stop after it
			// resumes the removal; a stop before it never showed it.
			var err error
			snap, err = m.Cards.ChangeQueue(ref.Channel, ref.SourceTS, func(rec *store.CardRecord) *store.Removal {
				flip(rec)
				if q := rec.Card.Quarantine; kind == changeNone || (q != nil && (q.State == card.QuarantineRemoved || q.State == card.QuarantineReleased)) {
					return nil
				}
				a.Remover.Mark(&rec.Card, r)
				return r
			})
			if err != nil {
				m.Log.Error("could not show a recheck flip and queue its removal", "channel", ref.Channel, "ts", ref.SourceTS, "error", err)
			}
			ok = err == nil
			allShown = allShown && !notShown(err)
		} else {
			var err error
			snap, err = m.Cards.change(ref.Channel, ref.SourceTS, 0, "", flip, false)
			ok = err == nil
			allShown = allShown && !notShown(err)
		}
		if !ok {
			if ch.Target.Deferred && young[ref] {
				a.deferAgain(url, ref) // its outcome comes with the next run
			}
			continue
		}
		if kind == changeNone {
			continue // the card changed since it was read: nothing for it now
		}
		if len(outs) > 0 {
			events.Committed(a.Messages.Events, outs)
		} else if f, ok := a.finding(&snap, url, kind, was, ch); ok {
			events.Emit(ctx, a.Messages.Events, f)
		}
		if err := m.showOnce(ctx, &snap); notShown(err) {
			allShown = false
		}
		if a.Remover == nil {
			m.act(ctx, &snap)
		} else if removals[ref] != nil {
			a.Remover.Shown(ref) // its card is shown: the tombstone updates it
		}
		text, line := a.words(&snap, url, kind, was, ch, reports)
		if text != "" {
			if err := a.Replier.Reply(ctx, snap.Channel, snap.ThreadTS, text); err != nil {
				m.Log.Warn("recheck reply failed", "channel", snap.Channel, "error", err)
			}
		}
		if line != "" {
			summary = append(summary, line)
		}
	}
	// The cards this change reached before (a run Slack or the store
	// refused, or that stopped): shown as they are, without a second note,
	// reply or event.
	for i := range again {
		if err := m.showOnce(ctx, &again[i]); notShown(err) {
			allShown = false
		}
	}
	return summary, allShown
}

// finding is the change's finding for the card's line: a flip, or the
// first verdict of a deferred check (its failure was emitted already, as
// the line's "could not check"); none for no change.
func (a *Announcer) finding(snap *card.Card, url string, kind cardChange, was verdict.Level, ch scan.Change) (events.Finding, bool) {
	if kind == changeNone || (kind == changeDeferred && ch.Now.Err != nil) {
		return events.Finding{}, false
	}
	l, ok := lineOf(snap, url)
	if !ok {
		return events.Finding{}, false
	}
	if kind == changeDeferred {
		return events.LineFinding(events.KindVerdict, snap, l), true
	}
	f := events.LineFinding(events.KindFlip, snap, l)
	f.Previous = was
	return f, true
}

// words returns the thread reply (mentioning whoever posted the link) and
// the alert channel's summary line for one card's change ("" for none: a
// deferred check that found nothing to attend to, or failed, changes the
// card only).
func (a *Announcer) words(snap *card.Card, url string, kind cardChange, was verdict.Level, ch scan.Change, reports []card.Report) (reply, summary string) {
	where := a.threadLink(snap.Channel, snap.ThreadTS)
	if kind == changeDeferred {
		if ch.Now.Err != nil || !ch.Now.Level.NeedsAttention() {
			return "", ""
		}
		what := fmt.Sprintf("%s is *%s*", notify.CodeURL(url, 200), ch.Now.Level)
		reply = fmt.Sprintf("A link in this thread, not checked at first (too many links from its poster that hour), was checked at low priority: %s.", what)
		if snap.Poster != "" {
			reply = fmt.Sprintf("%s a link you shared, not checked at first (too many links from you that hour), was checked at low priority: %s.", notify.Mention(snap.Poster), what)
		}
		return reply, fmt.Sprintf("• %s (checked late: too many links from its poster that hour) in %s", what, where)
	}
	what := fmt.Sprintf("%s is now *%s* (was %s)", notify.CodeURL(url, 200), ch.Now.Level, was)
	if snap.Poster != "" {
		reply = fmt.Sprintf("%s a link you shared was checked again: %s.", notify.Mention(snap.Poster), what)
	} else {
		reply = "A link in this thread was checked again: " + what + "."
	}
	if len(reports) > 0 {
		r := reports[len(reports)-1]
		reply += fmt.Sprintf(" Earlier, %s reported %s (%s) on it.", notify.Mention(r.User), reportWords[r.Option], r.Category)
	}
	return reply, fmt.Sprintf("• %s in %s", what, where)
}

// deferAgainWithin bounds deferAgain to cards written within the last
// hour (the cap's window): a line is left unsettled for a moment (between
// the deferral and the card's write) or while its message is rescanned,
// not for hours; a card a stopped process left scanning is not deferred
// again run after run.
const deferAgainWithin = time.Hour

// deferAgain defers url's check again for the card ref, so that the next
// run brings the card the outcome this one could not.
func (a *Announcer) deferAgain(url string, ref card.Ref) {
	m := a.Messages
	if m.Deferrals == nil {
		return
	}
	if err := m.Deferrals.Defer(url, ref); err != nil {
		m.Log.Warn("could not defer a link's check again for a card its check missed", "channel", ref.Channel, "ts", ref.SourceTS, "error", err)
	}
}

var reportWords = map[string]string{"fp": "a false positive", "fn": "a false negative", "restore": "a restore"}

// threadLink is a Slack link to a thread: a permalink when the workspace URL
// is known, else the channel mention.
func (a *Announcer) threadLink(channel, threadTS string) string {
	base := ""
	if a.TeamURL != nil {
		base = strings.TrimSuffix(a.TeamURL(), "/")
	}
	if base == "" {
		return fmt.Sprintf("<#%s>", channel)
	}
	return fmt.Sprintf("<%s/archives/%s/p%s|a thread> in <#%s>", base, channel, strings.ReplaceAll(threadTS, ".", ""), channel)
}
