package main

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // screenshot sizes
	_ "image/png"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
)

// refresh prints every bot message, card change and private answer in the
// channel not printed yet, in the order they happened. Cards are rendered
// from the store (the same card model Slack's Block Kit comes from).
func (s *shell) refresh() {
	var msgs []slackfake.Message
	var eph []slackfake.Ephemeral
	var ups []slackfake.Upload
	s.fake.Inspect(func(st *slackfake.State) {
		for _, m := range st.AllMessages() {
			if m.Bot && m.Channel == shellChannel {
				msgs = append(msgs, m)
			}
		}
		eph = st.Ephemerals(shellChannel, shellUser)
		ups = st.Uploads(shellChannel, "")
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	type item struct {
		at   time.Time
		text string
	}
	var items []item
	for _, m := range msgs {
		sh := s.shown[m.TS]
		switch {
		case m.Deleted:
		case len(m.Files) > 0: // the bot's uploads: sandbox screenshots
			if sh == nil {
				s.shown[m.TS] = &shownMsg{}
				items = append(items, item{m.PostedAt, uploadText(m, ups)})
			}
		case len(m.Blocks) > 0: // a card
			if sh != nil && sh.final && sh.versions == len(m.Versions) {
				continue
			}
			rec, err := s.db.CardByTS(shellChannel, m.TS)
			if err != nil {
				continue // its ts is saved just after the post: next time
			}
			if sh == nil {
				sh = &shownMsg{num: len(s.cards) + 1}
				s.cards = append(s.cards, m.TS)
				s.shown[m.TS] = sh
			}
			sh.versions, sh.final = len(m.Versions), rec.Card.Final
			key := cardKey(&rec.Card)
			if key == sh.key {
				continue // only progress words changed
			}
			head := fmt.Sprintf("── card #%d ──\n", sh.num)
			if sh.key != "" {
				head = fmt.Sprintf("── card #%d, updated ──\n", sh.num)
			}
			sh.key = key
			items = append(items, item{m.Versions[len(m.Versions)-1].At, head + notify.Text(&rec.Card, s.color)})
		default: // a plain reply (a recheck's mention, an in-channel answer)
			if sh == nil {
				s.shown[m.TS] = &shownMsg{}
				items = append(items, item{m.PostedAt, "verdictbot: " + indent(s.answer(m.Text)) + "\n"})
			}
		}
	}
	for _, e := range eph[min(s.ephSeen, len(eph)):] {
		if !e.Deleted && e.Text != "" {
			items = append(items, item{e.At, "» " + indent(s.answer(e.Text)) + "\n"})
		}
	}
	s.ephSeen = len(eph)
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	for _, it := range items {
		io.WriteString(s.out, it.text)
	}
}

// cardKey is the card's text without progress words ("submitted",
// "pending"…): a change of those alone is not printed again.
func cardKey(c *card.Card) string {
	cp := c.Clone()
	for i := range cp.Lines {
		cp.Lines[i].Status = ""
	}
	return notify.Text(&cp, false)
}

// uploadText describes the bot's upload: "[screenshot 0001.jpg, 64×48 JPEG]".
func uploadText(m slackfake.Message, ups []slackfake.Upload) string {
	var b strings.Builder
	for _, id := range m.Files {
		i := slices.IndexFunc(ups, func(u slackfake.Upload) bool { return u.FileID == id })
		if i < 0 {
			b.WriteString("[screenshot]\n")
			continue
		}
		u := ups[i]
		desc := termSafe(u.Filename)
		if ic, format, err := image.DecodeConfig(bytes.NewReader(u.Content)); err == nil {
			desc += fmt.Sprintf(", %d×%d %s", ic.Width, ic.Height, strings.ToUpper(format))
		}
		b.WriteString("[screenshot " + desc + "]\n")
	}
	return b.String()
}

// slackText is a typed line as a Slack client sends it: &, < and >
// escaped, and http(s) links in <…>.
func slackText(line string) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var b strings.Builder
	rest := line
	for {
		loc := typedURL.FindStringIndex(rest)
		if loc == nil {
			b.WriteString(esc.Replace(rest))
			return b.String()
		}
		u := strings.TrimRight(rest[loc[0]:loc[1]], ".,;:!?)]}'\"")
		b.WriteString(esc.Replace(rest[:loc[0]]))
		b.WriteString("<" + esc.Replace(u) + ">")
		rest = rest[loc[0]+len(u):]
	}
}

var typedURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>]+`)

// slackRef is a Slack mrkdwn reference: <@U…>, <#C…|name>, <url|label>.
var slackRef = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)

// plainText turns the bot's mrkdwn into terminal text: references shown
// as words, entities unescaped, control characters removed.
func plainText(s string) string {
	s = slackRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := slackRef.FindStringSubmatch(m)
		target, label := sub[1], sub[2]
		switch {
		case strings.HasPrefix(target, "@"):
			return "@" + strings.TrimPrefix(target, "@")
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			return "@" + target[1:]
		case label != "":
			return label
		}
		return target
	})
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return termSafe(s)
}

var mrkdwnBold = regexp.MustCompile(`\*([^*\n]+)\*`)

// answer is the bot's mrkdwn text for the terminal: *bold* in bold (or
// plain without colours).
func (s *shell) answer(text string) string {
	repl := "$1"
	if s.color {
		repl = "\x1b[1m$1\x1b[0m"
	}
	return mrkdwnBold.ReplaceAllString(plainText(text), repl)
}

// termSafe removes control characters (escape sequences included) but
// newlines and tabs.
func termSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return -1
		}
		return r
	}, s)
}

// indent indents the lines after the first of a multi-line answer.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
