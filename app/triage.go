package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/cardbook"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/triage"
	"github.com/verdictbot/verdictbot/verdict"
)

// wireTriage builds "Report to security" (package triage): the shortcut
// and reaction, the triage cards in VERDICTBOT_REPORT_CHANNEL (default the
// alert channel), the admins' decisions.
func (a *App) wireTriage() error {
	cfg := a.cfg
	channel := cfg.ReportChannel
	if channel == "" {
		channel = cfg.AlertChannel
	}
	book := &cardbook.Book{Store: a.db}
	a.triage = &triage.Triage{Store: a.db, Slack: a.api, Cards: book, Channel: channel, IncludeText: cfg.ReportIncludeText,
		Ephemeral: func(ctx context.Context, channel, user, text string) error {
			return a.poster.Ephemeral(ctx, channel, user, text)
		},
		Scan: a.messages.ScanMessage, Confirm: a.confirmReported, IsAdmin: a.access.IsAdmin,
		Events: a.sink(), Log: a.log.With("component", "triage")}
	if channel == "" {
		a.log.Info("report to security is off: neither VERDICTBOT_REPORT_CHANNEL nor VERDICTBOT_ALERT_CHANNEL is set")
	}
	if a.reportEmoji() != "" {
		a.bot.SetReactionHandler(a.reportReaction, a.reactionReports)
	}
	a.home.Mine = func(user string, n int) ([]commands.MyReport, error) {
		reps, err := a.triage.Mine(user, n)
		out := make([]commands.MyReport, 0, len(reps))
		for _, r := range reps {
			at := r.Created
			for _, x := range r.Reporters {
				if x.User == user {
					at = x.At
				}
			}
			out = append(out, commands.MyReport{Channel: r.Channel, TS: r.TS, At: at, Outcome: r.Outcome})
		}
		return out, err
	}
	return nil
}

// reportShortcut handles the "Report to security" shortcut: the report is
// taken wherever the reporter is; the message is checked only where the
// bot may read it (shortcutRefusal).
func (a *App) reportShortcut(ctx context.Context, cb *slack.InteractionCallback, raw json.RawMessage) {
	msg := cb.Message.Msg
	canRead := a.shortcutRefusal(ctx, cb) == ""
	answer := a.triage.Report(ctx, cb.Channel.ID, &msg, shortcutMessage(raw), cb.User.ID, triage.ViaShortcut, canRead)
	if canRead {
		if err := a.poster.Ephemeral(ctx, cb.Channel.ID, cb.User.ID, answer); err == nil {
			return
		}
	}
	a.answerShortcut(ctx, cb, answer)
}

// confirmReported acts on a report an admin confirmed malicious: a false
// negative reported to the URL service for each link of the message's
// card, the card marked confirmed (malicious whatever the services said)
// and quarantine applied where the channel has it on.
func (a *App) confirmReported(ctx context.Context, admin string, rep store.UserReport) string {
	book := &cardbook.Book{Store: a.db}
	rec, ok := book.Get(rep.Channel, rep.TS)
	if !ok {
		return "It has no verdict card (no link or file I could check), so it was not removed: remove it by hand if needed."
	}
	reported := 0
	for i, l := range rec.Card.Lines {
		if l.Kind == card.KindURL && l.TaskID != "" && l.Level < verdict.Malicious {
			cat := l.Category
			if cat == "" {
				cat = verdict.CatPhishing
			}
			a.feedback.Report(ctx, commands.ReportRequest{User: admin, Channel: rep.Channel, SourceTS: rep.TS, Line: i,
				TaskID: l.TaskID, Category: cat, Option: "fn"})
			reported++
		}
	}
	_, err := book.EditBySourceEmit(rep.Channel, rep.TS, func(c *card.Card) (*store.Outgoing, error) {
		c.ConfirmedBy = admin
		c.Notes = append(c.Notes, fmt.Sprintf("Confirmed malicious by <@%s> after members reported it to security.", admin))
		return nil, nil
	})
	if err != nil && !errors.Is(err, card.ErrNotFound) {
		a.log.Error("triage: the card could not be marked confirmed", "error", err)
	}
	did := "The message was marked malicious on its card"
	if reported > 0 {
		did += fmt.Sprintf(", and %d link(s) were reported to the URL service as missed", reported)
	}
	if rec, ok = book.Get(rep.Channel, rep.TS); ok {
		c := rec.Card.Clone()
		a.messages.Show(ctx, &c)
		if a.quarantine.On(rep.Channel) {
			a.quarantine.Act(ctx, c)
			if after, ok := book.Get(rep.Channel, rep.TS); ok && after.Card.Quarantine != nil {
				switch after.Card.Quarantine.State {
				case card.QuarantineRemoved:
					return did + "; quarantine removed it."
				case card.QuarantineFailed:
					return did + "; quarantine could not remove it: " + after.Card.Quarantine.Problem
				}
			}
		}
	}
	return did + "."
}

// reportEmoji is VERDICTBOT_REPORT_EMOJI without colons ("" off).
func (a *App) reportEmoji() string { return strings.Trim(a.cfg.ReportEmoji, ":") }

// reactionReports tells, before the ack, whether a reaction reports a
// message to security: the configured emoji on a message.
func (a *App) reactionReports(ev *slackevents.ReactionAddedEvent) bool {
	e := a.reportEmoji()
	return e != "" && ev.Reaction == e && ev.Item.Type == "message" && ev.Item.Channel != "" && ev.Item.Timestamp != ""
}

// reportReaction reports the message reacted to: the reaction arrives only
// from conversations the bot is in, so the message is read with
// conversations.replies (a root, or a reply of a thread).
func (a *App) reportReaction(ctx context.Context, ev *slackevents.ReactionAddedEvent, m bot.Meta) {
	channel, ts := ev.Item.Channel, ev.Item.Timestamp
	msgs, _, _, err := a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts,
		Latest: ts, Inclusive: true, Limit: 1})
	var msg *slack.Msg
	for i := range msgs {
		if msgs[i].Timestamp == ts {
			msg = &msgs[i].Msg
		}
	}
	if err != nil || msg == nil {
		a.log.Warn("report by reaction: the message could not be read", "channel", channel, "ts", ts, "error", notify.ErrorCode(err))
		_ = a.poster.Ephemeral(ctx, channel, ev.User, "I could not read the message you reacted to, so it was not reported; try the *Report to security* shortcut.")
		return
	}
	answer := a.triage.Report(ctx, channel, msg, nil, ev.User, triage.ViaReaction, true)
	if err := a.poster.Ephemeral(ctx, channel, ev.User, answer); err != nil {
		a.log.Warn("report by reaction: the reporter could not be answered", "error", notify.ErrorCode(err))
	}
}
