package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/triage"
)

// interaction routes block actions (feedback buttons) and the "Scan this
// message" shortcut.
func (a *App) interaction(ctx context.Context, cb *slack.InteractionCallback, raw json.RawMessage) {
	if cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == triage.ShortcutReport {
		a.reportShortcut(ctx, cb, raw)
		return
	}
	if a.triage.HandleInteraction(ctx, cb) {
		return
	}
	if cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == commands.ShortcutScanMessage {
		channel := cb.Channel.ID
		msg := cb.Message.Msg
		if msg.Timestamp == "" {
			a.log.Warn("shortcut without a message", "channel", channel)
			if err := a.poster.Ephemeral(ctx, channel, cb.User.ID, "I could not read that message, so nothing was checked."); err != nil {
				a.log.Warn("shortcut reply failed", "error", err)
			}
			return
		}
		if why := a.shortcutRefusal(ctx, cb); why != "" {
			a.answerShortcut(ctx, cb, why)
			return
		}
		msg.Channel = channel
		// The answer is private. Asking about a message leaves its card as
		// it is; only a message with no card gets one, in its thread
		// (cards.Messages.ScanMessage).
		answer := a.messages.ScanMessage(ctx, channel, &msg, shortcutMessage(raw), cb.User.ID)
		if err := a.poster.Ephemeral(ctx, channel, cb.User.ID, answer); err != nil {
			a.log.Warn("shortcut reply failed", "error", err)
		}
		return
	}
	if a.quarantine.HandleInteraction(ctx, cb) {
		return
	}
	if a.home.HandleInteraction(ctx, cb) {
		return
	}
	a.feedback.HandleInteraction(ctx, cb)
}

// Answers to the shortcut used where it may not scan.
const (
	shortcutForeignDM = "I cannot scan messages in a direct message or group DM that I am not part of, so nothing was sent " +
		"for checking. To have a link checked privately, send it to me in my *Messages* tab."
	shortcutDMUnknown = "I could not check whether I am part of this conversation, so nothing was sent for checking; " +
		"try again in a minute, or send the link to me in my *Messages* tab."
	shortcutNotMember = "I am not in this channel, so nothing was sent for checking: I check only the channels I was " +
		"invited to. Invite me (`/invite @verdictbot`) to have its links and files checked, or send the link to me in my *Messages* tab."
	shortcutChannelUnknown = "I could not check whether I am in this channel, so nothing was sent for checking; " +
		"try again in a minute, or send the link to me in my *Messages* tab."
)

// shortcutRefusal says why the shortcut may not scan the message it was
// used on ("" when it may). Slack sends the shortcut from any conversation
// the clicker is in, message included, so this is decided before anything
// is scanned, with conversations.info (bot token): the shortcut works only
// where the bot was invited, as the automatic scan does. A DM only when it
// is the clicker's own DM with the bot (DESIGN: direct messages are never
// read, except what a person sends the bot itself); a group DM, a private
// or a public channel only when the bot is a member (a private
// conversation the bot is not in is channel_not_found to it). A lookup
// that fails otherwise refuses too: nothing is sent while in doubt.
func (a *App) shortcutRefusal(ctx context.Context, cb *slack.InteractionCallback) string {
	ch := cb.Channel
	direct := strings.HasPrefix(ch.ID, "D") || ch.Name == "directmessage" || ch.IsIM ||
		strings.HasPrefix(ch.Name, "mpdm-") || ch.IsMpIM
	notIn, unknown := shortcutNotMember, shortcutChannelUnknown
	if direct {
		notIn, unknown = shortcutForeignDM, shortcutDMUnknown
	}
	info, err := a.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: ch.ID})
	switch {
	case err != nil && notify.ErrorCode(err) == "channel_not_found":
		return notIn // a private conversation the bot is not in
	case err != nil:
		a.log.Warn("shortcut: could not look the conversation up; nothing scanned", "channel", ch.ID, "error", notify.ErrorCode(err))
		return unknown
	case info.IsIM:
		if info.User == cb.User.ID {
			return "" // the person's own DM with the bot
		}
		return shortcutForeignDM
	case info.IsMember:
		return ""
	case info.IsMpIM:
		return shortcutForeignDM
	}
	return shortcutNotMember
}

// answerShortcut answers the shortcut's user privately through its
// response_url, which works in any conversation (chat.postEphemeral does
// not where the bot is not).
func (a *App) answerShortcut(ctx context.Context, cb *slack.InteractionCallback, text string) {
	a.log.Info("shortcut refused in a direct conversation", "channel", cb.Channel.ID, "user", cb.User.ID)
	if cb.ResponseURL == "" {
		return
	}
	_, _, err := a.api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(cb.ResponseURL, slack.ResponseTypeEphemeral),
		slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if err != nil {
		a.log.Warn("shortcut reply failed", "error", notify.ErrorCode(err))
	}
}

// shortcutMessage returns the JSON of the message a shortcut was used on
// (the payload's "message" member), or nil.
func shortcutMessage(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"message_blocks"`)) {
		return nil // nothing links.Policy.ExtractRaw reads from it
	}
	var p struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	return p.Message
}

// respond answers a command privately, through its response_url when it
// has one.
func (a *App) respond(ctx context.Context, req *commands.Request, text string) error {
	if req.ResponseURL == "" {
		return a.poster.Ephemeral(ctx, req.Channel, req.User, text)
	}
	_, _, err := a.api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(req.ResponseURL, slack.ResponseTypeEphemeral),
		slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	return err
}
