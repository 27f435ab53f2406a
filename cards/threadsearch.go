package cards

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/notify"
)

// ThreadSearch finds our cards in a thread with conversations.replies.
type ThreadSearch struct {
	API  *slack.Client
	Self func() bot.Identity
}

// FindCard returns the ts of our card answering sourceTS in the thread, or
// "" when there is none. It recognises the card by its summary block id.
func (f *ThreadSearch) FindCard(ctx context.Context, channel, threadTS, sourceTS string) (string, error) {
	want := notify.SummaryBlockID(&card.Card{SourceTS: sourceTS})
	cursor := ""
	for range 20 { // at most 20 pages of 200 replies
		msgs, more, next, err := f.API.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: threadTS, Limit: 200, Cursor: cursor})
		if err != nil {
			return "", fmt.Errorf("conversations.replies: %w", err)
		}
		self := f.Self()
		for _, msg := range msgs {
			if msg.BotID != self.BotID && msg.User != self.UserID {
				continue
			}
			for _, b := range msg.Blocks.BlockSet {
				if b.ID() == want {
					return msg.Timestamp, nil
				}
			}
		}
		if !more || next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", nil
}
