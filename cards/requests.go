package cards

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// ScanMessage answers a person who asked about one message — the "Scan
// this message" shortcut, `@verdictbot scan` in a thread — and returns the
// sentence to tell them privately (the caller sends it).
//
// A request never weakens the automatic scan. A message that has a card
// already (scanning, final, quarantined, released, deleted) keeps it as it
// is: same generation, quarantine state and Release button; nothing is
// checked again and the asker is told what the card says. A card a quiet
// channel did not post (a clean message has only a reaction) is shown to
// the asker alone (existingAnswer): a request never makes the bot post in
// a quiet channel. A message quarantine removed is left exactly as it is:
// nothing is re-posted and nothing of the removed message is repeated to
// anyone.
//
// Only a message with no card at all is checked on request: an off
// channel's (the shortcut works there too), one posted before the bot
// joined, one whose own event the request overtook, one whose card a
// stopped process left scanning (orphaned). Its card is begun in the
// message's thread, shown as in a verbose channel and saying who asked,
// and it is the message's card from then on: quarantine and rechecks act
// on it like on any other. The card is begun in one store transaction
// that fails when a card exists (or, for an orphaned one, when it was
// begun again since it was found), and this process counts a card it is
// writing as tracked before the card is in the store: so a request
// repeated or racing another (on any replica) starts one check; the
// others are answered from the card.
func (m *Messages) ScanMessage(ctx context.Context, channel string, msg *slack.Msg, rawMsg json.RawMessage, user string) string {
	m.init()
	if m.own(msg) {
		return "That is one of my own messages; there is nothing in it for me to check."
	}
	linkRec, hasLinkCard := m.Cards.Get(channel, msg.Timestamp)
	if hasLinkCard {
		if s, gone := goneAnswer(linkRec); gone {
			return s
		}
	}
	var orphanLinks *store.CardRecord // a card to begin again
	if hasLinkCard && m.orphaned(linkRec) {
		orphanLinks = linkRec
	}
	if msg.SubType == "tombstone" {
		return "That message was deleted; there is nothing left to check."
	}
	var answers []string
	began := false
	if len(msg.Files) > 0 && m.Files != nil {
		fileRec, ok := m.Cards.Get(channel, fileCardTS(msg.Timestamp))
		if resume := ok && m.orphaned(fileRec); !ok || resume {
			fmsg := *msg
			fmsg.Channel = channel
			job := fileJob{mode: ModeVerbose, requestedBy: user, again: true, onlyNew: true, who: requesterOf(channel, msg, user)}
			if resume {
				job.orphaned = fileRec
			}
			var started bool
			started, fileRec = m.Files.handle(ctx, channel, &fmsg, job, func() {})
			began = began || started
		}
		if fileRec != nil {
			answers = append(answers, m.existingAnswer(ctx, fileRec, "Its files", user))
		}
	}
	if !hasLinkCard || orphanLinks != nil {
		// The links in its images' QR codes are checked with its own, as
		// for a message checked when posted (the asker waits for the
		// images to be read, bounded by QR.Timeout).
		var qr []QRLink
		if imgs := m.QR.Images(channel, msg.Files); len(imgs) > 0 && m.QR.Admit() {
			qr = m.QR.Read(ctx, imgs)
			m.QR.Done()
		}
		var started bool
		started, linkRec = m.scanLinksQR(ctx, channel, msg, rawMsg, ModeVerbose, user, true, orphanLinks, bot.Meta{}, qr)
		began = began || started
	}
	if linkRec != nil {
		answers = append([]string{m.existingAnswer(ctx, linkRec, "That message", user)}, answers...)
	}
	m.Log.Info("scan requested on a message", "channel", channel, "ts", msg.Timestamp, "user", user, "began", began,
		"had_card", len(answers) > 0)
	if began {
		answers = append([]string{"Checking that message; its card will appear in its thread."}, answers...)
	}
	if len(answers) == 0 {
		return "There is nothing in that message for me to check (no links or files)."
	}
	return strings.Join(answers, " ")
}

// orphanAfter is how long a card that is not final may go unwritten before
// a request takes it for one whose tracker is gone, when other processes
// share the store (one of them may be tracking it). Verdicts and progress
// write the card; an analysis that writes nothing for this long is past
// any service's usual pace.
const orphanAfter = 2 * time.Minute

// orphaned reports whether rec is a card that is not final and that no
// one is analysing any more: a request's card the process stopped in the
// middle of (its job was the request, already done, so nothing resumes
// it). A request begins it again rather than leaving it "scanning"
// forever; an automatic card is resumed from the journal anyway, and
// beginning it again costs no analysis (a cached or joined verdict). With
// one process (PeerPostWait 0) a card this process is not tracking has no
// tracker; with several, it must also have gone unwritten for orphanAfter.
func (m *Messages) orphaned(rec *store.CardRecord) bool {
	if rec.Card.Final || rec.Deleted || m.Cards.Tracking(rec.Card.Channel, rec.Card.SourceTS) {
		return false
	}
	return m.PeerPostWait == 0 || time.Since(rec.Updated) > orphanAfter
}

// genOf is rec's generation, 0 for no card (Cards.BeginIfAt).
func genOf(rec *store.CardRecord) int {
	if rec == nil {
		return 0
	}
	return rec.Gen
}

// goneAnswer is the answer about a message quarantine removed (or
// released) or someone deleted: gone is true, and nothing else is done.
// It repeats nothing of the message, only what the card in the thread
// already shows.
func goneAnswer(rec *store.CardRecord) (string, bool) {
	c := &rec.Card
	if q := c.Quarantine; q != nil && !q.Files {
		switch q.State {
		case card.QuarantineRemoved:
			return fmt.Sprintf("That message was removed by quarantine: it was found *%s*. It stays removed and nothing was checked again; the card in its thread says why, and only an admin can release it.", q.Level), true
		case card.QuarantineReleased:
			return fmt.Sprintf("That message was removed by quarantine and later released by <@%s>; the card in its thread says so. Nothing was checked again.", q.ReleasedBy), true
		}
	}
	if rec.Deleted {
		return "That message was deleted; its card in the thread keeps the verdict for the record. Nothing was checked again.", true
	}
	return "", false
}

// existingAnswer tells the asker (user) what the card rec (the message's
// own) says; what is "That message" or "Its files". Nothing is posted to
// the channel: a quiet channel's card that was not shown (a clean
// message's: the channel shows cards only for what needs attention) is
// shown to the asker alone, in the thread. So asking about messages never
// makes a quiet channel noisy, nor spends the channel's posting pace that
// verdicts need.
func (m *Messages) existingAnswer(ctx context.Context, rec *store.CardRecord, what, user string) string {
	c := rec.Card.Clone()
	if q := c.Quarantine; q != nil && q.Files && q.State == card.QuarantineRemoved {
		return fmt.Sprintf("%s were removed by quarantine: found *%s*. Nothing was checked again; the card in the thread says why.", what, q.Level)
	}
	// A quiet channel's card, not posted: a verbose card (a verbose
	// channel's, a request's) is shown by its own tracker.
	quiet := c.CardTS == "" && !rec.PostStarted && rec.Mode != ModeVerbose
	if !c.Final {
		if quiet {
			return what + " is being checked now; nothing was started again. In this channel its card appears in the thread if anything needs attention, and a clean message gets a ✅: ask again then to see the details."
		}
		return what + " is being checked now: its card in the thread shows the verdict once it is in. Nothing was started again."
	}
	see := "see its card in the thread"
	switch {
	case quiet:
		if err := m.Poster.EphemeralCard(ctx, &c, user); err != nil {
			m.Log.Warn("could not show a card privately", "channel", c.Channel, "error", err)
			see = "its card could not be shown to you"
			break
		}
		see = "its card is shown to you alone, in the thread (this channel shows cards only for what needs attention)"
	case c.CardTS == "" && !rec.PostStarted:
		see = "its card could not be posted in the thread" // Slack refused it (the log says why)
	}
	return fmt.Sprintf("%s %s; %s. Nothing was checked again.", what, checkedPhrase(c.Level()), see)
}

// checkedPhrase says what a final card found, for an answer.
func checkedPhrase(l verdict.Level) string {
	switch l {
	case verdict.Malicious, verdict.Suspicious:
		return fmt.Sprintf("was checked already and found *%s*", l)
	case verdict.Clean:
		return "was checked already: *clean*"
	case verdict.Unknown:
		return "was checked already but *could not be checked in full*"
	}
	return "has nothing that could be sent for checking"
}
