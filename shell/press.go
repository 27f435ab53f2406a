package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/verdict"
)

// press clicks a feedback button: args are the line number, then
// optionally a category and "@<card number>" (default: the last card).
func (s *Session) press(option string, args []string) error {
	usage := fmt.Errorf("usage: %s <line> [category] [@card], e.g. %s 1", option, option)
	if len(args) == 0 || len(args) > 3 {
		return usage
	}
	line, err := strconv.Atoi(args[0])
	if err != nil || line < 1 {
		return usage
	}
	var cat verdict.Category
	cardNum := 0
	for _, a := range args[1:] {
		if n, ok := strings.CutPrefix(a, "@"); ok {
			if cardNum, err = strconv.Atoi(strings.TrimPrefix(n, "#")); err != nil || cardNum < 1 {
				return usage
			}
			continue
		}
		if cat, err = verdict.ParseCategory(a); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if cardNum == 0 {
		cardNum = len(s.cards)
	}
	var ts string
	if cardNum >= 1 && cardNum <= len(s.cards) {
		ts = s.cards[cardNum-1]
	}
	s.mu.Unlock()
	if ts == "" {
		if cardNum == 0 {
			return errors.New("there is no card yet")
		}
		return fmt.Errorf("there is no card #%d", cardNum)
	}
	action := map[string]string{"fp": notify.ActionFalsePositive, "fn": notify.ActionFalseNegative, "restore": notify.ActionRestore}[option]
	msg, ok := s.fake.Message(Channel, ts)
	value := ""
	if ok && !msg.Deleted {
		value = buttonValue(msg.Blocks, notify.LineBlockID(line-1), action)
	}
	if value == "" {
		return fmt.Errorf("card #%d has no %s button on line %d (only checked links have them)", cardNum, option, line)
	}
	if cat != "" { // what picking another category in the line's menu does
		idx, task, _, err := notify.DecodeActionValue(value)
		if err != nil {
			return err
		}
		value = notify.EncodeActionValue(idx, task, cat)
	}
	_, err = s.fake.DeliverBlockAction(slackfake.BlockAction{UserID: s.who().id, Channel: Channel, MessageTS: ts, ActionID: action, Value: value})
	return err
}

// buttonValue returns the value of the element actionID in the block
// blockID of a message's blocks, as Slack holds them.
func buttonValue(blocks []byte, blockID, actionID string) string {
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return ""
	}
	for _, b := range bs {
		if b.BlockID != blockID {
			continue
		}
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}
