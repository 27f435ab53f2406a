package quarantine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// HandleInteraction handles the tombstone's Release button and a flip
// request's Remove all, and ignores the rest (it reports whether it
// handled something). It has been acked already.
func (q *Quarantine) HandleInteraction(ctx context.Context, cb *slack.InteractionCallback) bool {
	if q == nil || cb.Type != slack.InteractionTypeBlockActions {
		return false
	}
	handled := false
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID != notify.ActionQuarantineRelease && a.ActionID != ActionQuarantineRemoveAll {
			continue
		}
		handled = true
		channel := cb.Channel.ID
		if channel == "" {
			channel = cb.Container.ChannelID
		}
		var text string
		if a.ActionID == ActionQuarantineRemoveAll {
			text = q.removeAll(ctx, channel, a.Value, cb.User.ID)
		} else {
			text = q.Release(ctx, channel, a.Value, cb.User.ID)
		}
		if err := q.Poster.Ephemeral(ctx, channel, cb.User.ID, text); err != nil {
			q.log().Warn("quarantine: could not answer a release click", "error", err)
		}
	}
	return handled
}

var errNotRemoved = errors.New("not removed")

// Release re-posts a removed message in its place as the bot, saying whose
// it was and who released it (unfurls off), marks the card, records it,
// and reports a false positive for the lines that removed it. Only admins
// may; anyone else gets a refusal and nothing changes. sourceTS is the
// card's source key (the message's ts). It returns the answer for user.
func (q *Quarantine) Release(ctx context.Context, channel, sourceTS, user string) string {
	if q.IsAdmin == nil || !q.IsAdmin(user) {
		return "Only admins can release a quarantined message."
	}
	// A file card's source key is "<ts>/files"; the message is at ts.
	ts, _ := strings.CutSuffix(sourceTS, "/files")
	rec, err := q.Store.Quarantined(channel, ts)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "This message is no longer kept (its retention ended), so it cannot be released."
	case err != nil:
		q.log().Error("quarantine: release lookup failed", "error", err)
		return "Something went wrong on our side; the message was not released."
	case rec.Released():
		return fmt.Sprintf("<@%s> already released this message.", rec.ReleasedBy)
	case rec.FilesDeleted():
		return "Deleted files cannot be released; the sandbox keeps the sample."
	}
	at := q.now()
	// Claim the release on the card, so two clicks post once.
	err = q.edit(channel, sourceTS, func(c *card.Card) error {
		if c.Quarantine == nil || c.Quarantine.State != card.QuarantineRemoved {
			return errNotRemoved
		}
		c.Quarantine.State, c.Quarantine.ReleasedBy, c.Quarantine.ReleasedAt = card.QuarantineReleased, user, at
		return nil
	})
	if err != nil {
		return "This message is not in quarantine (released already, or never removed)."
	}
	posted, err := q.repost(ctx, rec, user)
	if err != nil {
		q.log().Warn("quarantine: release post failed", "channel", channel, "error", slackCode(err))
		q.show(ctx, channel, sourceTS, func(c *card.Card) {
			if c.Quarantine != nil {
				c.Quarantine.State, c.Quarantine.ReleasedBy, c.Quarantine.ReleasedAt = card.QuarantineRemoved, "", time.Time{}
			}
		})
		return fmt.Sprintf("Slack did not take the re-post (%s); the message stays in quarantine.", notify.Code(slackCode(err), 60))
	}
	rec.ReleasedBy, rec.ReleasedAt, rec.ReleasedTS = user, at, posted
	if err := q.Store.PutQuarantined(rec); err != nil {
		q.log().Warn("quarantine: could not record the release", "error", err)
	}
	q.log().Info("quarantine: released", "channel", channel, "ts", rec.TS, "by", user, "posted_ts", posted)
	if q.OnAction != nil {
		q.OnAction("released")
	}
	// The card's note and the release's event in one write.
	snap := q.showEmit(ctx, channel, sourceTS, func(c *card.Card) {
		// Notes are shown as plain text: the user id, not a mention (the
		// tombstone above mentions the admin).
		c.Notes = append(c.Notes, fmt.Sprintf("Released from quarantine %s by admin %s; the original was posted again.",
			at.UTC().Format("2006-01-02 15:04 UTC"), user))
	}, func(c card.Card) (events.Finding, bool) {
		return finding(events.KindRelease, c, &events.Quarantine{Removed: true, Level: rec.Level, ReleasedBy: rec.ReleasedBy, ReleasedTS: rec.ReleasedTS}), true
	})
	// The message's other card (its links', or its files') shows the
	// release too.
	other := ts + "/files"
	if sourceTS != ts {
		other = ts
	}
	q.show(ctx, channel, other, func(c *card.Card) {
		if c.Quarantine != nil && c.Quarantine.State == card.QuarantineRemoved && !c.Quarantine.Files {
			c.Quarantine.State, c.Quarantine.ReleasedBy, c.Quarantine.ReleasedAt = card.QuarantineReleased, user, at
		}
	})
	reported := q.reportFalsePositive(ctx, snap, user, rec)
	answer := "Released: the original message was posted again in its place."
	if len(rec.Files) > 0 {
		answer = "Released: the original message's text was posted again in its place; its files were not (the bot cannot share them again: their author can)."
	}
	if reported != "" {
		answer += " " + reported
	}
	return answer
}

// repost posts the original as the bot, in its thread when it was a reply,
// with unfurls off and without a single mention (see quiet.go): the
// header names the admin and the author, the text, blocks and attachments
// show every mention as plain text.
func (q *Quarantine) repost(ctx context.Context, rec store.Quarantined, admin string) (string, error) {
	var teams []string
	if q.Teams != nil {
		teams = q.Teams()
	}
	qt := newQuieter(ctx, q.Bot, teams...)
	author := "someone"
	if rec.User != "" {
		author = qt.user(rec.User, "")
	}
	head := fmt.Sprintf(":unlock: Released from quarantine by %s: a message from %s, removed %s.", qt.user(admin, ""), author,
		rec.RemovedAt.UTC().Format("2006-01-02 15:04 UTC"))
	text := head
	if body := qt.text(rec.Text); body != "" {
		text += "\n" + body
	}
	if note := notRepostedFiles(rec); note != "" {
		text += "\n" + note
	}
	opts := []slack.MsgOption{slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl(),
		slack.MsgOptionParse(false), slack.MsgOptionLinkNames(false), slack.MsgOptionText(text, false)}
	if rec.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
	}
	var full []slack.MsgOption
	if atts := qt.attachments(rec.Attachments); len(atts) > 0 {
		full = append(full, slack.MsgOptionAttachments(atts...))
	}
	if blocks := qt.blocks(rec.Blocks); len(blocks) > 0 {
		set := []slack.Block{slack.NewContextBlock("released", slack.NewTextBlockObject(slack.MarkdownType, head, false, true))}
		for _, b := range blocks {
			set = append(set, rawBlock(b))
		}
		if note := notRepostedFiles(rec); note != "" {
			set = append(set, slack.NewContextBlock("not-reposted", slack.NewTextBlockObject(slack.MarkdownType, note, false, true)))
		}
		full = append(full, slack.MsgOptionBlocks(set...))
	}
	if len(full) > 0 {
		_, ts, err := q.Bot.PostMessageContext(ctx, rec.Channel, append(slices.Clip(opts), full...)...)
		if err == nil {
			return ts, nil
		}
		if code := slackCode(err); code != "invalid_blocks" && code != "invalid_attachments" {
			return "", err
		}
		// Blocks or attachments Slack will not take back as they were:
		// the text then.
	}
	_, ts, err := q.Bot.PostMessageContext(ctx, rec.Channel, opts...)
	return ts, err
}

// notRepostedFiles says which files of a released message are not posted
// again ("" for none): a bot cannot share a member's file, so a message
// removed for a file it shared comes back as its text and this line.
func notRepostedFiles(rec store.Quarantined) string {
	if rec.FilesDeleted() || len(rec.Files) == 0 {
		return ""
	}
	var names []string
	for _, f := range rec.Files {
		names = append(names, "`"+strings.ReplaceAll(plainName(f.Name), "`", "'")+"`")
	}
	what := "the file"
	if len(names) > 1 {
		what = "the files"
	}
	return fmt.Sprintf("_Not posted again: %s %s (the bot cannot share a file again; its author can)._", what, strings.Join(names, ", "))
}

// reportFalsePositive reports, once per task, the lines whose verdict
// removed the message; it returns what the user is told ("" for none).
func (q *Quarantine) reportFalsePositive(ctx context.Context, c card.Card, user string, rec store.Quarantined) string {
	if q.FalsePositive == nil {
		return ""
	}
	threshold, err := verdict.ParseLevel(rec.Level)
	if err != nil {
		threshold = verdict.Suspicious
	}
	if t, ok := Threshold(q.Level(rec.Channel)); ok && t < threshold {
		threshold = t
	}
	seen := map[string]bool{}
	var out string
	for i, l := range c.Lines {
		if l.Kind != card.KindURL || l.TaskID == "" || l.Level < threshold || seen[l.TaskID] {
			continue
		}
		seen[l.TaskID] = true
		out = q.FalsePositive(ctx, user, c.Channel, c.SourceTS, i, l.TaskID, l.Category)
	}
	return out
}
