// Package notify turns a chat-neutral verdict card (package card) into
// Block Kit (and into text for the terminal) and posts or updates it in a
// Slack thread, paced to Slack's rate limits. It knows nothing of the
// analysis services' wire formats: the card lifecycle fills the card from
// scan results. It also holds the bot's one escaping of outside text, for
// mrkdwn (mrkdwn.go: Escape, Prose, Code) and for a terminal (terminal.go:
// TermText, TermLine, TermJSON, TermMrkdwn).
package notify

// Action ids of the feedback controls on a URL line. Other tools drive the
// bot through these names: keep them.
const (
	ActionFalsePositive = "verdict_fp"
	ActionFalseNegative = "verdict_fn"
	ActionRestore       = "verdict_restore"
	// ActionCategory is the select that picks which category the buttons
	// on the same line report for (the top category by default).
	ActionCategory = "verdict_category"
)
