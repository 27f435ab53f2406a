package cards

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
)

// HistoryNote is the note on a card made by a scan of a channel's history.
const HistoryNote = "Found by a scan of this channel's history."

// HistoryCheck is what ScanHistory began for one message.
type HistoryCheck struct {
	// Links and Files are the targets the message carries; Began is
	// whether a check began (false: nothing to check, or the message had
	// a card already: live handling or an earlier scan checked it).
	Links, Files int
	Began        bool
}

// ScanHistory checks a message read from a channel's history (package
// backfill) as a live one is checked, in ModeBackfill: only when it has no
// card yet (the check and the card's beginning are one store transaction,
// so live handling and the history scan never both check a message), or
// when an earlier history scan's card of it was left unfinished by a
// process that stopped (historyOrphan: begun again, once), a
// card only for what is not clean, with HistoryNote. done is called once
// (its cards final, or at once when nothing began) with whether any of its
// cards is not clean.
func (m *Messages) ScanHistory(ctx context.Context, channel string, msg *slack.Msg, raw json.RawMessage, done func(found bool)) HistoryCheck {
	m.init()
	var hc HistoryCheck
	if m.own(msg) || msg.SubType == "tombstone" || msg.Timestamp == "" {
		done(false)
		return hc
	}
	hc.Links = len(m.Links.ExtractRaw(msg, raw).Targets)
	parts := atomic.Int32{}
	parts.Store(1)
	if len(msg.Files) > 0 && m.Files != nil {
		hc.Files = len(msg.Files)
		parts.Store(2)
	}
	finish := func() {
		if parts.Add(-1) != 0 {
			return
		}
		found := false
		for _, ts := range []string{msg.Timestamp, fileCardTS(msg.Timestamp)} {
			if rec, ok := m.Cards.Get(channel, ts); ok && rec.Mode == ModeBackfill && rec.Card.Level().NeedsAttention() {
				found = true
			}
		}
		done(found)
	}
	if hc.Files > 0 {
		fmsg := *msg
		fmsg.Channel = channel
		job := fileJob{mode: ModeBackfill, onlyNew: true, who: scan.Requester{}}
		job.orphaned = m.historyOrphan(channel, fileCardTS(msg.Timestamp))
		began, _ := m.Files.handle(ctx, channel, &fmsg, job, finish)
		hc.Began = hc.Began || began
	}
	// The history's images are read for QR codes here, in the
	// backfill's own slot (nobody waits for them).
	var qr []QRLink
	if imgs := m.QR.Images(channel, msg.Files); len(imgs) > 0 {
		qr = m.QR.Read(ctx, imgs)
	}
	began, _ := m.scanLinksQR(ctx, channel, msg, raw, ModeBackfill, "", true, m.historyOrphan(channel, msg.Timestamp), bot.Meta{Done: finish}, qr)
	hc.Began = hc.Began || began
	return hc
}

// historyOrphan is the card of ts that an earlier history scan began and
// left unfinished (the process stopped during its check: nothing else
// resumes it), nil for none. Only a history scan's card: a live card's
// check is resumed from the journal.
func (m *Messages) historyOrphan(channel, ts string) *store.CardRecord {
	rec, ok := m.Cards.Get(channel, ts)
	if !ok || rec.Mode != ModeBackfill || !m.orphaned(rec) {
		return nil
	}
	return rec
}
