package notify

import (
	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
)

// ActionQuarantineRelease is the tombstone's "Release message" button
// (admins only): its value is the removed message's ts. Other tools drive
// the bot through this name: keep it.
const ActionQuarantineRelease = "quarantine_release"

// quarantineRows say what quarantine did to the card's message: removed
// (why and when), released (by whom), or why it could not be removed.
func quarantineRows(m markup, c *card.Card) []string {
	q := c.Quarantine
	if q == nil {
		return nil
	}
	level := q.Level.String()
	switch q.State {
	case card.QuarantineRemoved, card.QuarantineReleased:
		what := "This message was removed"
		if q.Files {
			what = "The files of this message were removed"
		}
		rows := []string{m.emoji(":no_entry: ") + m.strong("Quarantined:") + m.text(" "+what+" by quarantine ") + m.date(q.At) +
			m.text(": it was found "+level+" (verdicts and scores below).")}
		switch {
		case q.Files:
			rows = append(rows, m.text("The sandbox keeps the sample for analysts; a removed file cannot be released."))
		case q.State == card.QuarantineReleased:
			rows = append(rows, m.emoji(":unlock: ")+m.strong("Released")+m.text(" by ")+m.user(q.ReleasedBy)+m.text(" ")+m.date(q.ReleasedAt)+
				m.text(": the original was posted again in its place."))
		default:
			rows = append(rows, m.text("The author was told privately. An admin can release the message if this is a mistake."))
		}
		return rows
	case card.QuarantineFailed:
		return []string{m.emoji(":warning: ") + m.strong("Not quarantined:") +
			m.text(" this message was found "+level+" but could not be removed: "+q.Problem)}
	}
	return nil
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
