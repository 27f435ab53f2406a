package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/backfill"
	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/store"
)

// wireBackfill builds the history scans (/scan channel backfill, and
// VERDICTBOT_BACKFILL_ON_JOIN when the bot joins a channel).
func (a *App) wireBackfill() error {
	// The history is read with its messages' JSON (shared messages'
	// links are only there); the token goes only to SLACK_API_URL.
	web := &backfill.WebAPI{URL: apiURL(a.cfg.SlackAPIURL), Token: a.cfg.SlackBotToken.Reveal(), HTTP: slackHTTP()}
	a.backfill = &backfill.Runner{Slack: backfillSlack{WebAPI: web, Client: a.api}, Store: a.db, Scanner: a.messages, Owner: replicaID(),
		Solo: a.cfg.DatabaseURL == "", PerMinute: a.opts.BackfillPerMinute, Log: a.log.With("component", "backfill")}
	a.scan.Backfill = backfillCommands{a}
	if a.cfg.BackfillOnJoin != "" {
		a.bot.SetJoinHandler(a.joined, func(ev *slackevents.MemberJoinedChannelEvent) bool {
			return ev.User != "" && ev.User == a.bot.Identity().UserID
		})
	}
	return nil
}

// joined starts the on-join backfill of a channel the bot was added to.
func (a *App) joined(ctx context.Context, ev *slackevents.MemberJoinedChannelEvent, _ bot.Meta) {
	window, _ := config.Window(a.cfg.BackfillOnJoin)
	if _, err := a.backfill.Start(ctx, ev.Channel, window, ""); err != nil && !errors.Is(err, backfill.ErrRunning) {
		a.log.Warn("backfill on join not started", "channel", ev.Channel, "error", err)
	}
}

// backfillCommands is the backfill as /scan channel backfill sees it.
type backfillCommands struct{ a *App }

func (b backfillCommands) Start(ctx context.Context, channel, window, by string) (string, error) {
	d, err := backfill.ParseWindow(window, b.a.cfg.BackfillMax)
	if err != nil {
		return "", &commands.UserError{Text: err.Error()}
	}
	bf, err := b.a.backfill.Start(ctx, channel, d, by)
	if errors.Is(err, backfill.ErrRunning) {
		return "", &commands.UserError{Text: "This channel's history is being checked already: " + backfill.Describe(bf)}
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Checking this channel's history, the last %d days, quietly: a progress message follows in the channel, "+
		"and a card only for what is not clean. `/scan channel backfill stop` stops it.", int(d/(24*time.Hour))), nil
}

func (b backfillCommands) Stop(channel, by string) (string, error) {
	bf, err := b.a.backfill.Stop(channel, by)
	if errors.Is(err, store.ErrNotFound) {
		return "", &commands.UserError{Text: "No history check of this channel is running."}
	}
	if err != nil {
		return "", err
	}
	return backfill.Describe(bf), nil
}

func (b backfillCommands) Status(channel string) (string, bool) {
	bf, err := b.a.db.Backfill(channel)
	if err != nil {
		return "", false
	}
	return backfill.Describe(bf), true
}

// backfillSlack is the Web API a backfill calls: the history read with its
// JSON, the progress message posted with the bot's client.
type backfillSlack struct {
	*backfill.WebAPI
	*slack.Client
}
