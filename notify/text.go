package notify

import (
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/verdict"
)

// textMaxLines bounds the lines the terminal shows of one card; the rest
// are summarised per level, as on the card in Slack.
const textMaxLines = 25

// Text renders a card for a terminal (verdictbot shell): the same
// information as Blocks, one fact per line, targets defanged, untrusted
// text stripped of control characters (no escape sequences get through).
// Lines are shown worst first, at most textMaxLines, the rest summarised
// per level ("…and 38 more links not shown: 38 clean"). Each keeps its
// number in the message (from 1, as Card.Lines), and the feedback buttons
// become typed actions on that number: "[fp 1] [fn 1] [restore 1]". With
// color, level words are coloured with ANSI SGR codes: red malicious,
// yellow suspicious, green clean, grey not checked, bold could not check.
func Text(c *card.Card, color bool) string {
	m := plain{color: color}
	var b strings.Builder
	for _, r := range headRows(m, c) {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	for _, r := range quarantineRows(m, c) {
		b.WriteString(r + "\n")
	}
	if q := c.Quarantine; q != nil && q.State == card.QuarantineRemoved && !q.Files {
		b.WriteString("[release]\n")
	}
	order := displayOrder(c.Lines)
	for k, i := range order {
		if k == textMaxLines {
			b.WriteString(moreRow(c.Lines, order[k:]) + "\n")
			break
		}
		l := &c.Lines[i]
		n := strconv.Itoa(i + 1)
		indent := strings.Repeat(" ", len(n)+2)
		for j, r := range lineRows(m, l, capsText) {
			if j == 0 {
				b.WriteString(n + ". ")
			} else {
				b.WriteString(indent)
			}
			b.WriteString(r)
			b.WriteByte('\n')
		}
		for j := range l.Reports {
			b.WriteString(indent + reportRow(m, &l.Reports[j], capsText) + "\n")
		}
		if l.Actions && l.Kind != card.KindFile && l.TaskID != "" {
			b.WriteString(indent + "[fp " + n + "] [fn " + n + "] [restore " + n + "] (category: " + string(lineCategory(l)) + ")\n")
		}
	}
	if len(c.Skipped) > 0 {
		b.WriteString(m.paint(verdict.Skipped, "Not checked:") + "\n")
		for i := range c.Skipped {
			s := &c.Skipped[i]
			row := "  - " + skipTarget(m, s, capsText.skipTarget)
			if s.Reason != "" {
				row += " — " + showText(s.Reason, capsText.skipReason)
			}
			b.WriteString(m.paint(verdict.Skipped, row) + "\n")
		}
	}
	if c.LeftOut > 0 {
		b.WriteString(m.paint(verdict.Skipped, leftOutRow(c)) + "\n")
	}
	for _, n := range c.Notes {
		if s := showText(n, capsText.note); s != "" {
			b.WriteString("Note: " + s + "\n")
		}
	}
	return b.String()
}

// plain is the markup of terminal text.
type plain struct{ color bool }

// ANSI SGR sequences (ECMA-48 §8.3.117).
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrGrey   = "\x1b[90m"
)

// paint colours s for level l when colours are on.
func (p plain) paint(l verdict.Level, s string) string {
	if !p.color {
		return s
	}
	var sgr string
	switch l {
	case verdict.Malicious:
		sgr = sgrRed
	case verdict.Suspicious:
		sgr = sgrYellow
	case verdict.Clean:
		sgr = sgrGreen
	case verdict.Skipped:
		sgr = sgrGrey
	case verdict.Unknown:
		sgr = sgrBold
	default:
		return s
	}
	return sgr + s + sgrReset
}

func (p plain) level(l verdict.Level, title string) string {
	return p.paint(l, strings.ToUpper(title))
}

func (plain) code(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

func (plain) text(s string) string    { return s }
func (plain) strong(s string) string  { return s }
func (plain) emoji(string) string     { return "" }
func (plain) date(t time.Time) string { return dateFallback(t) }
func (plain) user(id string) string {
	if id == "" {
		return "someone"
	}
	return "@" + showText(id, 40)
}
