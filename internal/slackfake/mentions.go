package slackfake

import (
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Mentions returns who a message notifies, as Slack would when it is
// posted: "here", "channel", "everyone", "subteam:S…" for a user group and
// "user:U…" for a person, sorted, each once. Tests of what the bot posts
// assert on it (a quarantine release must notify nobody).
//
// The rules, from Slack's formatting docs (docs.slack.dev/messaging/
// formatting-message-text: "Mentioning users", "Mentioning groups",
// "Special mentions"; the text object's verbatim field; chat.postMessage's
// parse and link_names):
//
//   - in the message text, in mrkdwn text objects (blocks, attachments'
//     blocks) and in attachments' text fields: <@U…>, <@W…>, <!here>,
//     <!channel>, <!everyone> and <!subteam^S…>, each with or without a
//     |label;
//   - rich_text blocks: user, usergroup and broadcast elements;
//   - a plain @here, @channel or @everyone in a mrkdwn text object whose
//     verbatim is not true ("certain mentions will be automatically
//     parsed"), and in the message text when the post asked for
//     parse=full or link_names.
//
// Undocumented, and modelled strictly so that a test errs on the side of a
// ping: a control sequence written with HTML entities (&lt;!channel&gt;,
// &#60;@U1&#62;) or with invisible format characters inside it
// (zero-width spaces, joiners) counts as the sequence itself.
func (m Message) Mentions() []string {
	seen := map[string]bool{}
	parsed := m.Params.Get("parse") == "full"
	if v, ok := boolParam(m.Params, "link_names"); ok && v {
		parsed = true
	}
	mentionsInText(m.Text, parsed, seen)
	var blocks []any
	if json.Unmarshal(m.Blocks, &blocks) == nil {
		mentionsInJSON(blocks, seen)
	}
	var atts []map[string]any
	if json.Unmarshal(m.Attachments, &atts) == nil {
		for _, a := range atts {
			for _, k := range []string{"text", "pretext", "title", "footer", "author_name", "fallback"} {
				if s, ok := a[k].(string); ok {
					mentionsInText(s, false, seen)
				}
			}
			if fields, ok := a["fields"].([]any); ok {
				for _, f := range fields {
					if fm, ok := f.(map[string]any); ok {
						if s, ok := fm["value"].(string); ok {
							mentionsInText(s, false, seen)
						}
						if s, ok := fm["title"].(string); ok {
							mentionsInText(s, false, seen)
						}
					}
				}
			}
			mentionsInJSON(a["blocks"], seen)
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mentionRE matches a mention control sequence once entities are decoded
// and invisible characters removed.
var mentionRE = regexp.MustCompile(`<(?:@([A-Za-z0-9]+)|!(here|channel|everyone)|!subteam\^([A-Za-z0-9]+))(?:\|[^>]*)?>`)

// plainBroadcastRE matches a plain @here, @channel or @everyone.
var plainBroadcastRE = regexp.MustCompile(`(?:^|[^\w@])@(here|channel|everyone)\b`)

// normalizeMentionText decodes HTML entities (repeatedly: &amp;lt; too)
// and drops invisible format characters (Unicode Cf).
func normalizeMentionText(s string) string {
	for range 3 {
		d := html.UnescapeString(s)
		if d == s {
			break
		}
		s = d
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

func mentionsInText(s string, plain bool, seen map[string]bool) {
	n := normalizeMentionText(s)
	for _, m := range mentionRE.FindAllStringSubmatch(n, -1) {
		switch {
		case m[1] != "":
			seen["user:"+m[1]] = true
		case m[2] != "":
			seen[m[2]] = true
		case m[3] != "":
			seen["subteam:"+m[3]] = true
		}
	}
	if plain {
		for _, m := range plainBroadcastRE.FindAllStringSubmatch(n, -1) {
			seen[m[1]] = true
		}
	}
}

// mentionsInJSON walks blocks (or any part of them).
func mentionsInJSON(v any, seen map[string]bool) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			mentionsInJSON(e, seen)
		}
	case map[string]any:
		typ, _ := x["type"].(string)
		switch typ {
		case "user":
			if id, ok := x["user_id"].(string); ok {
				seen["user:"+id] = true
			}
		case "usergroup":
			if id, ok := x["usergroup_id"].(string); ok {
				seen["subteam:"+id] = true
			}
		case "broadcast":
			if r, ok := x["range"].(string); ok {
				seen[r] = true
			}
		case "mrkdwn", "markdown":
			if s, ok := x["text"].(string); ok {
				verbatim, _ := x["verbatim"].(bool)
				mentionsInText(s, !verbatim && typ == "mrkdwn", seen)
			}
			return
		case "plain_text", "text":
			return // shown as typed
		}
		for _, e := range x {
			mentionsInJSON(e, seen)
		}
	}
}
