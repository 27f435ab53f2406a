// Package cards runs the lifecycle of verdict cards: it turns the links and
// files of a Slack message into a card in the message's thread, posts it
// (paced per channel), updates it in place as verdicts come in, finishes it
// as the channel's mode asks, finds a card posted before a crash in the
// thread, and announces the verdicts a recheck changed. One generic tracker
// serves URL lines and file lines. Cards live in the state layer
// (CardStore): the write that shows a verdict also links its target to the
// card (CardSettler), so a recheck finds the cards to update. The pipelines
// (package scan) analyse; their own memory is package scan/scanstore.
// It also holds UserCap, the per-requester allowance both pipelines take
// from (VERDICTBOT_USER_LINKS_PER_HOUR), keyed by the requesters of
// messages as this package names them. The Socket Mode adapter (package
// bot) delivers the events; cmd/verdictbot wires the two together.
package cards

import "encoding/json"

// Identity is who the bot is in the workspace (the adapter learns it at
// start), so that the bot's own messages and files are not scanned.
type Identity struct {
	UserID, BotID, AppID string
}

// Meta is what the lifecycle needs of an event's delivery.
type Meta struct {
	EventID string
	// Replayed is true for a job resumed after a restart.
	Replayed bool
	// Done is called once the work the event asked for is complete (the
	// card is final), so the delivery can be forgotten. Safe to call more
	// than once; nil for work not tied to an event (the shortcut).
	Done func()
	// Raw is the inner event's JSON as Slack sent it (nil when unknown).
	Raw json.RawMessage
}
