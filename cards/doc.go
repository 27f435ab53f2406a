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
// bot) delivers the events (bot.Meta, bot.Identity); cmd/verdictbot wires the
// two together.
package cards
