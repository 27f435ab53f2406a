package notify

import (
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
)

// ActionQuarantineRelease is the tombstone's "Release message" button
// (admins only): its value is the removed message's ts. Other tools drive
// the bot through this name: keep it.
const ActionQuarantineRelease = "quarantine_release"

// quarantineRows say what quarantine did to the card's message: removed
// (what — the message, or a file card's files deleted workspace-wide —,
// why and when), released (by whom), waiting in the queue or for an
// admin's Remove all, or why it could not be removed.
func quarantineRows(m markup, c *card.Card) []string {
	q := c.Quarantine
	if q == nil {
		return nil
	}
	level := q.Level.String()
	fileCard := strings.HasSuffix(c.SourceTS, "/files")
	switch q.State {
	case card.QuarantineRemoved, card.QuarantineReleased:
		var rows []string
		switch {
		case q.Files:
			what := "The files of this message were deleted from Slack (everywhere they were shared)"
			if len(q.Names) > 0 {
				what = pluralWord(len(q.Names), "The file ", "The files ") + fileNames(m, q.Names) + m.text(" of this message "+
					pluralWord(len(q.Names), "was", "were")+" deleted from Slack (everywhere "+pluralWord(len(q.Names), "it was", "they were")+" shared)")
			} else {
				what = m.text(what)
			}
			rows = append(rows, m.emoji(":no_entry: ")+m.strong("Quarantined:")+" "+what+m.text(" by quarantine ")+m.date(q.At)+
				m.text(": found "+level+" (verdicts and scores below). The message itself stays."),
				m.text("The sandbox keeps the sample for analysts; a deleted file cannot be released."))
		case fileCard:
			why := m.text("a file it shared was found " + level)
			if len(q.Names) > 0 {
				why = m.text("it shared ") + fileNames(m, q.Names) + m.text(", found "+level)
			}
			rows = append(rows, m.emoji(":no_entry: ")+m.strong("Quarantined:")+m.text(" This message was removed by quarantine ")+m.date(q.At)+
				m.text(": ")+why+m.text(" (verdicts and scores below). The file itself was not deleted from Slack; it is no longer shared here."))
		default:
			rows = append(rows, m.emoji(":no_entry: ")+m.strong("Quarantined:")+m.text(" This message was removed by quarantine ")+m.date(q.At)+
				m.text(": it was found "+level+" (verdicts and scores below)."))
		}
		switch {
		case q.Files:
		case q.State == card.QuarantineReleased:
			rows = append(rows, m.emoji(":unlock: ")+m.strong("Released")+m.text(" by ")+m.user(q.ReleasedBy)+m.text(" ")+m.date(q.ReleasedAt)+
				m.text(": the original was posted again in its place."))
		default:
			rows = append(rows, m.text("The author was told privately. An admin can release the message if this is a mistake."))
		}
		return rows
	case card.QuarantineQueued:
		row := m.emoji(":hourglass_flowing_sand: ") + m.strong("Quarantine:") + m.text(" this message was found "+level+" and is queued for removal (removals are paced to Slack's limits).")
		if q.Problem != "" {
			row += m.text(" " + q.Problem)
		}
		return []string{row}
	case card.QuarantineHeld:
		row := m.emoji(":hourglass_flowing_sand: ") + m.strong("Quarantine:") + m.text(" this message was found "+level+" by a recheck; its removal waits for an admin's approval")
		if q.Problem != "" {
			row += m.text(": " + q.Problem)
		} else {
			row += m.text(".")
		}
		return []string{row}
	case card.QuarantineFailed:
		return []string{m.emoji(":warning: ") + m.strong("Not quarantined:") +
			m.text(" this message was found "+level+" but could not be removed: "+q.Problem)}
	}
	return nil
}

// fileNames shows file names as literals.
func fileNames(m markup, names []string) string {
	parts := make([]string, 0, len(names))
	for i, n := range names {
		if i == 5 {
			parts = append(parts, m.text(fmt.Sprintf("and %d more", len(names)-5)))
			break
		}
		parts = append(parts, m.code(showLiteral(n, 100, false)))
	}
	return strings.Join(parts, ", ")
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quarantineBlocks are the tombstone's rows and, while the message is
// removed and releasable, the Release button.
func quarantineBlocks(m markup, c *card.Card) []slack.Block {
	rows := quarantineRows(m, c)
	if len(rows) == 0 {
		return nil
	}
	out := []slack.Block{sectionBlock("quarantine", joinRows(rows, maxSectionText))}
	if q := c.Quarantine; q.State == card.QuarantineRemoved && !q.Files {
		confirm := slack.NewConfirmationBlockObject(plainText("Release the message?"),
			plainText("Post the original message again in its place, links and all. This also reports a false positive to the URL service."),
			plainText("Release"), plainText("Cancel"))
		out = append(out, slack.NewActionBlock("quarantine-actions",
			slack.NewButtonBlockElement(ActionQuarantineRelease, c.SourceTS, plainText("Release message")).WithConfirm(confirm)))
	}
	return out
}
