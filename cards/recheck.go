package cards

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// Announce implements scan.Recheck.OnChange.
func (a *Announcer) Announce(ctx context.Context, changes []scan.Change) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	m := a.Messages
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	var summary []string
	for _, ch := range changes {
		url := ch.Target.Target
		what := fmt.Sprintf("%s is now *%s* (was %s)", notify.CodeURL(url, 200), ch.Now.Level, ch.Was)
		// The note is card prose: the URL's own backticks would form code
		// spans there, so they are shown as "ˋ", as in code spans.
		note := fmt.Sprintf("Rechecked %s: %s is now %s (was %s).", now().UTC().Format("2006-01-02 15:04 UTC"),
			strings.ReplaceAll(links.DefangTruncate(url, 120), "`", "ˋ"), ch.Now.Level, ch.Was)
		m.Log.Info("recheck changed a verdict", "url", links.Defang(url), "was", ch.Was.Key(), "now", ch.Now.Level.Key(), "cards", len(ch.Target.Cards))
		var removals map[card.Ref]*store.Removal
		if a.Remover != nil {
			var before []card.Card
			for _, ref := range ch.Target.Cards {
				if rec, ok := m.Cards.Get(ref.Channel, ref.SourceTS); ok {
					before = append(before, rec.Card.Clone())
				}
			}
			removals = a.Remover.Plan(ctx, url, ch.Now.Level, before)
		}
		for _, ref := range ch.Target.Cards {
			var reports []card.Report
			flip := func(rec *store.CardRecord) {
				reports = reports[:0]
				for i := range rec.Card.Lines {
					l := &rec.Card.Lines[i]
					if l.Target != url {
						continue
					}
					reports = append(reports, l.Reports...)
					keep := l.Reports
					*l = urlLine(*l, ch.Now)
					l.Reports = keep // analysts see their reports beside the new verdict
				}
				rec.Card.Notes = append(rec.Card.Notes, note)
				rec.Card.Final = true
			}
			var snap card.Card
			ok := false
			if r := removals[ref]; r != nil {
				// The flip and its removal in one write: a stop after it
				// resumes the removal; a stop before it never showed it.
				var err error
				snap, err = m.Cards.ChangeQueue(ref.Channel, ref.SourceTS, func(rec *store.CardRecord) *store.Removal {
					flip(rec)
					if q := rec.Card.Quarantine; q != nil && (q.State == card.QuarantineRemoved || q.State == card.QuarantineReleased) {
						return nil
					}
					a.Remover.Mark(&rec.Card, r)
					return r
				})
				if err != nil {
					m.Log.Error("could not show a recheck flip and queue its removal", "channel", ref.Channel, "ts", ref.SourceTS, "error", err)
					continue
				}
				ok = true
			} else {
				snap, ok = m.Cards.Change(ref.Channel, ref.SourceTS, 0, flip)
			}
			if !ok {
				continue
			}
			for _, l := range snap.Lines {
				if l.Target == url {
					f := events.LineFinding(events.KindFlip, &snap, l)
					f.Previous = ch.Was
					events.Emit(ctx, m.Events, f)
					break
				}
			}
			m.show(ctx, &snap)
			if a.Remover == nil {
				m.act(ctx, &snap)
			} else if removals[ref] != nil {
				a.Remover.Shown(ref) // its card is shown: the tombstone updates it
			}
			text := what
			if snap.Poster != "" {
				text = fmt.Sprintf("%s a link you shared was checked again: %s.", notify.Mention(snap.Poster), what)
			} else {
				text = "A link in this thread was checked again: " + what + "."
			}
			if len(reports) > 0 {
				r := reports[len(reports)-1]
				text += fmt.Sprintf(" Earlier, %s reported %s (%s) on it.", notify.Mention(r.User), reportWords[r.Option], r.Category)
			}
			if err := a.Replier.Reply(ctx, snap.Channel, snap.ThreadTS, text); err != nil {
				m.Log.Warn("recheck reply failed", "channel", snap.Channel, "error", err)
			}
			summary = append(summary, fmt.Sprintf("• %s in %s", what, a.threadLink(snap.Channel, snap.ThreadTS)))
		}
	}
	if a.AlertChannel == "" || len(summary) == 0 {
		return
	}
	head := fmt.Sprintf(":rotating_light: The recheck changed %d verdict(s):", len(summary))
	if worst := worstNow(changes); worst < verdict.Suspicious {
		head = fmt.Sprintf(":information_source: The recheck changed %d verdict(s):", len(summary))
	}
	body := head + "\n" + strings.Join(summary, "\n")
	if err := a.Replier.Reply(ctx, a.AlertChannel, "", body); err != nil {
		m.Log.Warn("recheck alert failed", "channel", a.AlertChannel, "error", err)
	}
}

var reportWords = map[string]string{"fp": "a false positive", "fn": "a false negative", "restore": "a restore"}

func worstNow(changes []scan.Change) verdict.Level {
	w := verdict.Pending
	for _, c := range changes {
		w = verdict.Worst(w, c.Now.Level)
	}
	return w
}

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
