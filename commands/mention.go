package commands

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"

	"github.com/slack-go/slack"
)

// MessageScanner handles someone's request about a message
// (*cards.Messages.ScanMessage): it checks a message that has no card yet
// (the card goes in its thread), never touches one that has, and returns
// the sentence that answers the asker.
type MessageScanner interface {
	ScanMessage(ctx context.Context, channel string, msg *slack.Msg, rawMsg json.RawMessage, user string) string
}

// MentionSlack is what a mention needs of Slack (*slack.Client): the
// thread's root, and a private answer.
type MentionSlack interface {
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
}

// Mention answers `@verdictbot` in a channel: `@verdictbot scan` in a
// thread asks about the thread's first message (checked if it has no card
// yet, its card going in that thread; a card already there, a quarantine
// tombstone included, is left as it is); anything else gets a short help.
// Every answer is private (ephemeral), in the thread.
type Mention struct {
	API     MentionSlack
	Scanner MessageScanner
	// Self returns the bot's user id (its own messages are not scanned).
	Self func() string
	Log  *slog.Logger
}

// MentionHelp is the short help a mention answers with. <url> is escaped
// for mrkdwn, or Slack would render it as a link named "url".
const MentionHelp = "I check the links and files shared in the channels I am in, and answer in the message's thread.\n" +
	"• `@verdictbot scan` in a thread: check the thread's first message\n" +
	"• `/scan &lt;url&gt;`: check a link now · `/scan help`: every command\n" +
	"• Send me a link or a file in my *Messages* tab to have it checked privately.\n" +
	"Open my *Home* tab to see your channels' last verdicts."

var mentionRe = regexp.MustCompile(`<@[A-Z0-9]+(\|[^>]*)?>`)

// Handle answers one app_mention (already acked).
func (m *Mention) Handle(ctx context.Context, user, channel, text, ts, threadTS string) {
	log := m.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if user == "" || (m.Self != nil && user == m.Self()) {
		return
	}
	words := strings.Fields(strings.ToLower(mentionRe.ReplaceAllString(text, " ")))
	reply := func(msg string) {
		opts := []slack.MsgOption{slack.MsgOptionText(msg, false)}
		if threadTS != "" {
			opts = append(opts, slack.MsgOptionTS(threadTS))
		}
		if _, err := m.API.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
			log.Warn("could not answer a mention", "channel", channel, "error", err)
		}
	}
	if len(words) == 0 || words[0] != "scan" {
		reply(MentionHelp)
		return
	}
	if threadTS == "" || threadTS == ts {
		reply("Mention me with `scan` in a reply in a thread, and I check the thread's first message. To check a link now: `/scan &lt;url&gt;`.")
		return
	}
	msgs, _, _, err := m.API.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: threadTS, Limit: 1})
	if err != nil || len(msgs) == 0 || msgs[0].Timestamp != threadTS {
		log.Warn("mention: could not read the thread's first message", "channel", channel, "thread", threadTS, "error", err)
		reply("I could not read this thread's first message, so nothing was checked.")
		return
	}
	root := msgs[0].Msg
	if m.Self != nil && root.User == m.Self() {
		reply("This thread starts with one of my own messages; there is nothing for me to check.")
		return
	}
	root.Channel = channel
	reply(m.Scanner.ScanMessage(ctx, channel, &root, nil, user))
}
