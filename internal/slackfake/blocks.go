package slackfake

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// Block Kit limits the fake enforces, from Slack's TypeScript types (their
// doc comments copy docs.slack.dev).
const (
	maxBlocks          = 50    // blocks per message
	maxSectionText     = 3000  // section text, text objects
	maxSectionFields   = 10    // section fields
	maxFieldText       = 2000  // each section field
	maxHeaderText      = 150   // header text
	maxMarkdownText    = 12000 // markdown block
	maxBlockID         = 255   // block_id, unique per message
	maxActionID        = 255   // action_id, unique per block
	maxActionsElements = 25    // actions block elements
	maxContextElements = 10    // context block elements
	maxButtonText      = 75    // button text
	maxButtonValue     = 2000  // button value
	maxURL             = 3000  // button url, image_url
)

type blockIssues struct{ msgs []string }

func (b *blockIssues) addf(pointer, format string, args ...any) {
	b.msgs = append(b.msgs, fmt.Sprintf("[ERROR] "+format+" [json-pointer:%s]", append(args, pointer)...))
}

// validateBlocks checks a blocks parameter the way Slack does at the limits
// above. It returns "" when the blocks are acceptable, otherwise the error
// code (invalid_blocks_format for JSON that is not an array of objects,
// invalid_blocks otherwise) and Slack-style messages.
func validateBlocks(raw json.RawMessage) (string, []string) {
	return validateBlocksMax(raw, maxBlocks)
}

// validateBlocksMax is validateBlocks with a limit on the number of blocks
// (50 in a message, 100 in a view).
func validateBlocksMax(raw json.RawMessage, maxN int) (string, []string) {
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "invalid_blocks_format", []string{"[ERROR] " + err.Error()}
	}
	var iss blockIssues
	if len(blocks) > maxN {
		iss.addf("/blocks", "no more than %d items allowed", maxN)
	}
	ids := map[string]bool{}
	for i, b := range blocks {
		ptr := fmt.Sprintf("/blocks/%d", i)
		typ := str(b["type"])
		if typ == "" {
			iss.addf(ptr+"/type", "missing required field: type")
			continue
		}
		if id := str(b["block_id"]); id != "" {
			if runes(id) > maxBlockID {
				iss.addf(ptr+"/block_id", "must be less than %d characters", maxBlockID+1)
			}
			if ids[id] {
				iss.addf(ptr+"/block_id", "duplicate block_id %q", id)
			}
			ids[id] = true
		}
		switch typ {
		case "section":
			checkTextObject(&iss, b["text"], ptr+"/text", maxSectionText)
			var fields []json.RawMessage
			_ = json.Unmarshal(b["fields"], &fields)
			if len(fields) > maxSectionFields {
				iss.addf(ptr+"/fields", "no more than %d items allowed", maxSectionFields)
			}
			for j, f := range fields {
				checkTextObject(&iss, f, fmt.Sprintf("%s/fields/%d", ptr, j), maxFieldText)
			}
			if len(b["text"]) == 0 && len(fields) == 0 {
				iss.addf(ptr, "must provide either text or fields")
			}
			if acc := b["accessory"]; len(acc) > 0 {
				checkElement(&iss, acc, ptr+"/accessory", map[string]bool{})
			}
		case "header":
			if len(b["text"]) == 0 {
				iss.addf(ptr+"/text", "missing required field: text")
			}
			checkTextObject(&iss, b["text"], ptr+"/text", maxHeaderText)
		case "markdown":
			if t := str(b["text"]); runes(t) > maxMarkdownText {
				iss.addf(ptr+"/text", "must be less than %d characters", maxMarkdownText+1)
			}
		case "actions":
			var els []json.RawMessage
			_ = json.Unmarshal(b["elements"], &els)
			if len(els) == 0 {
				iss.addf(ptr+"/elements", "must have at least 1 element")
			}
			if len(els) > maxActionsElements {
				iss.addf(ptr+"/elements", "no more than %d items allowed", maxActionsElements)
			}
			seen := map[string]bool{}
			for j, e := range els {
				checkElement(&iss, e, fmt.Sprintf("%s/elements/%d", ptr, j), seen)
			}
		case "context":
			var els []json.RawMessage
			_ = json.Unmarshal(b["elements"], &els)
			if len(els) > maxContextElements {
				iss.addf(ptr+"/elements", "no more than %d items allowed", maxContextElements)
			}
		case "image":
			checkImage(&iss, b, ptr)
		}
	}
	if len(iss.msgs) > 0 {
		return "invalid_blocks", iss.msgs
	}
	return "", nil
}

func checkTextObject(iss *blockIssues, raw json.RawMessage, ptr string, limit int) {
	if len(raw) == 0 {
		return
	}
	var t struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &t) != nil {
		iss.addf(ptr, "must be a text object")
		return
	}
	if t.Type != "plain_text" && t.Type != "mrkdwn" {
		iss.addf(ptr+"/type", "must be one of plain_text, mrkdwn")
	}
	switch n := runes(t.Text); {
	case n == 0:
		iss.addf(ptr+"/text", "must be more than 0 characters")
	case n > limit:
		iss.addf(ptr+"/text", "must be less than %d characters", limit+1)
	}
}

func checkElement(iss *blockIssues, raw json.RawMessage, ptr string, actionIDs map[string]bool) {
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) != nil {
		iss.addf(ptr, "must be an object")
		return
	}
	if id := str(e["action_id"]); id != "" {
		if runes(id) > maxActionID {
			iss.addf(ptr+"/action_id", "must be less than %d characters", maxActionID+1)
		}
		if actionIDs[id] {
			iss.addf(ptr+"/action_id", "duplicate action_id %q", id)
		}
		actionIDs[id] = true
	}
	switch str(e["type"]) {
	case "button":
		checkTextObject(iss, e["text"], ptr+"/text", maxButtonText)
		if v := str(e["value"]); runes(v) > maxButtonValue {
			iss.addf(ptr+"/value", "must be less than %d characters", maxButtonValue+1)
		}
		if u := str(e["url"]); runes(u) > maxURL {
			iss.addf(ptr+"/url", "must be less than %d characters", maxURL+1)
		}
	case "image":
		checkImage(iss, e, ptr)
	case "static_select":
		checkStaticSelect(iss, e, ptr)
	}
}

// maxSelectOptions is the most options a static select may have.
const maxSelectOptions = 100

// checkStaticSelect checks a static select's options and that its
// initial_option is one of them (Slack refuses a view otherwise).
func checkStaticSelect(iss *blockIssues, e map[string]json.RawMessage, ptr string) {
	var opts []struct {
		Text  json.RawMessage `json:"text"`
		Value string          `json:"value"`
	}
	_ = json.Unmarshal(e["options"], &opts)
	if len(opts) == 0 && len(e["option_groups"]) == 0 {
		iss.addf(ptr+"/options", "must provide either options or option_groups")
	}
	if len(opts) > maxSelectOptions {
		iss.addf(ptr+"/options", "no more than %d items allowed", maxSelectOptions)
	}
	values := map[string]bool{}
	for j, o := range opts {
		checkTextObject(iss, o.Text, fmt.Sprintf("%s/options/%d/text", ptr, j), 75)
		values[o.Value] = true
	}
	if init := e["initial_option"]; len(init) > 0 {
		var io struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(init, &io) != nil || !values[io.Value] {
			iss.addf(ptr+"/initial_option", "must match one of the provided options")
		}
	}
}

// checkImage checks an image block or element: image_url or slack_file, and
// a slack_file names its file by id or url, not both.
func checkImage(iss *blockIssues, b map[string]json.RawMessage, ptr string) {
	u := str(b["image_url"])
	var sf struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	hasFile := len(b["slack_file"]) > 0 && json.Unmarshal(b["slack_file"], &sf) == nil
	switch {
	case u == "" && !hasFile:
		iss.addf(ptr, "must provide either image_url or slack_file")
	case u != "" && hasFile:
		iss.addf(ptr, "must provide only one of image_url or slack_file")
	case hasFile && (sf.ID == "") == (sf.URL == ""):
		iss.addf(ptr+"/slack_file", "must provide exactly one of id or url")
	}
	if runes(u) > maxURL {
		iss.addf(ptr+"/image_url", "must be less than %d characters", maxURL+1)
	}
	if str(b["alt_text"]) == "" {
		iss.addf(ptr+"/alt_text", "missing required field: alt_text")
	}
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// richTextBlocks renders a message text as the rich_text block a Slack client
// attaches to what a user types: <url|label> becomes a link element (not
// HTML-escaped), <@U…> a user, <#C…|name> a channel, <!here> a broadcast,
// <!subteam^S…> a user group, and the rest text with &amp; &lt; &gt;
// unescaped.
func richTextBlocks(text string) json.RawMessage {
	var els []map[string]any
	addText := func(t string) {
		if t != "" {
			els = append(els, map[string]any{"type": "text", "text": html.UnescapeString(t)})
		}
	}
	for text != "" {
		open := strings.IndexByte(text, '<')
		if open < 0 {
			addText(text)
			break
		}
		end := strings.IndexByte(text[open:], '>')
		if end < 0 {
			addText(text)
			break
		}
		addText(text[:open])
		inner := text[open+1 : open+end]
		text = text[open+end+1:]
		target, label, _ := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"):
			els = append(els, map[string]any{"type": "user", "user_id": target[1:]})
		case strings.HasPrefix(target, "#"):
			els = append(els, map[string]any{"type": "channel", "channel_id": target[1:]})
		case strings.HasPrefix(target, "!subteam^"):
			els = append(els, map[string]any{"type": "usergroup", "usergroup_id": strings.TrimPrefix(target, "!subteam^")})
		case strings.HasPrefix(target, "!"):
			els = append(els, map[string]any{"type": "broadcast", "range": target[1:]})
		default:
			link := map[string]any{"type": "link", "url": html.UnescapeString(target)}
			if label != "" {
				link["text"] = html.UnescapeString(label)
			}
			els = append(els, link)
		}
	}
	if len(els) == 0 {
		return nil
	}
	b, _ := json.Marshal([]any{map[string]any{
		"type":     "rich_text",
		"block_id": randomID("", 5),
		"elements": []any{map[string]any{"type": "rich_text_section", "elements": els}},
	}})
	return b
}
