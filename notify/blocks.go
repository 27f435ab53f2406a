package notify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/verdict"
)

// Block Kit limits the renderer keeps to. Sources: docs.slack.dev Block Kit
// reference as restated in Slack's own TypeScript types
// (slackapi/node-slack-sdk packages/types/src, whose doc comments copy
// docs.slack.dev) unless noted.
const (
	// maxBlocks: blocks per message (docs.slack.dev/reference/block-kit/blocks).
	maxBlocks = 50
	// maxSectionText: section text, and any text object (blocks.ts ~429,
	// composition-objects.ts ~144; slack-go TextBlockObject.Validate).
	maxSectionText = 3000
	// maxContextElements: elements of a context block
	// (docs.slack.dev/reference/block-kit/blocks/context-block).
	maxContextElements = 10
	// maxButtonValue: a button's value (block-elements.ts ~41). Section
	// fields (≤ 10, each ≤ 2000, blocks.ts ~435), header text (≤ 150,
	// blocks.ts ~275) and button text (≤ 75, block-elements.ts ~35) are not
	// at risk: the card uses no fields and no header block, and its button
	// labels are fixed and short. block_id and action_id (≤ 255) are short
	// fixed strings too.
	maxButtonValue = 2000
	// maxCardText bounds the sum of all text in a card. Slack documents no
	// such limit, but answers msg_blocks_too_long near 13,200 characters
	// spread over a few blocks (slackapi/bolt-js#2509), and once for 11,341
	// characters of text counted the same way (slackapi/bolt-js#2867): keep
	// well below.
	maxCardText = 10000
)

// LineBlockID is the block_id of the actions block of line i (its index in
// Card.Lines). A click handler finds the category picked on that line in the
// interaction's state: state.values[LineBlockID(i)][ActionCategory].
func LineBlockID(i int) string { return "line-" + strconv.Itoa(i) }

// actionValueVersion prefixes button values so their format can change.
const actionValueVersion = "v1"

// EncodeActionValue is the value of the feedback buttons of a line:
// "v1|<line index>|<category>|<task id>". The category is the one shown on
// the line when the card was drawn; a handler should prefer the one picked
// in the line's select, if any (see LineBlockID). The task id comes last so
// it may contain '|'.
func EncodeActionValue(lineIdx int, taskID string, cat verdict.Category) string {
	return actionValueVersion + "|" + strconv.Itoa(lineIdx) + "|" + string(cat) + "|" + taskID
}

// DecodeActionValue reads a value made by EncodeActionValue.
func DecodeActionValue(v string) (lineIdx int, taskID string, cat verdict.Category, err error) {
	parts := strings.SplitN(v, "|", 4)
	if len(parts) != 4 || parts[0] != actionValueVersion {
		return 0, "", "", fmt.Errorf("notify: action value %q: not a %s value", clip(v, 40, false), actionValueVersion)
	}
	lineIdx, err = strconv.Atoi(parts[1])
	if err != nil || lineIdx < 0 {
		return 0, "", "", fmt.Errorf("notify: action value: bad line index %q", clip(parts[1], 20, false))
	}
	cat, err = verdict.ParseCategory(parts[2])
	if err != nil {
		return 0, "", "", fmt.Errorf("notify: action value: %w", err)
	}
	if parts[3] == "" {
		return 0, "", "", errors.New("notify: action value: empty task id")
	}
	return lineIdx, parts[3], cat, nil
}

// Blocks renders a card as Block Kit, with the notification fallback text.
// It is pure and total: whatever the card holds, the blocks keep to Slack's
// limits (see the constants above). Targets are defanged and shown in code
// spans, so nothing in a card is clickable; all untrusted text is
// sanitized and escaped.
//
// Layout: a summary section (overall level, counts, who asked); per line,
// worst first (displayOrder), a section (level, target, scores or file
// facts, task), then an actions block (category select and the three
// feedback buttons) when Line.Actions is set on a URL line, then a context
// block with the line's reports; then a note on lines that did not fit,
// the skipped targets, the count left out and the notes. When the card
// would be too large, pieces are clipped harder; if it still does not
// fit, the least worrying lines are summarised per level, as "…and 38 more
// links not shown: 38 clean". Each line keeps its index in Card.Lines in
// its block ids and button values, whatever its place on the card, so a
// click reports on the line it was drawn for.
func Blocks(c *card.Card) (blocks []slack.Block, fallback string) {
	fallback = fallbackText(c)
	for _, cp := range []caps{capsFull, capsCompact, capsTight} {
		var complete bool
		blocks, complete = render(c, cp)
		if complete {
			break
		}
	}
	if validate(blocks) != nil {
		// Cannot happen (the tests render thousands of hostile cards);
		// should it, the reader still gets the verdicts.
		blocks = minimalBlocks(c)
	}
	return blocks, fallback
}

// render draws the card with the given caps and reports whether every
// line fitted.
func render(c *card.Card, cp caps) ([]slack.Block, bool) {
	m := mrkdwn{}
	head := []slack.Block{sectionBlock(SummaryBlockID(c), strings.Join(headRows(m, c), "\n"))}
	head = append(head, quarantineBlocks(m, c)...)
	tail := tailBlocks(m, c, cp)
	roomBlocks := maxBlocks - len(head) - len(tail) - 1 // one for the "more" note
	roomText := maxCardText - blocksText(head) - blocksText(tail) - 300
	var body []slack.Block
	order := displayOrder(c.Lines)
	shown := 0
	for _, i := range order {
		lb := lineBlocks(m, i, &c.Lines[i], cp)
		n := blocksText(lb)
		if len(lb) > roomBlocks || n > roomText {
			break
		}
		body = append(body, lb...)
		roomBlocks -= len(lb)
		roomText -= n
		shown++
	}
	if shown < len(c.Lines) {
		body = append(body, contextBlock("more", moreRow(c.Lines, order[shown:])))
	}
	out := make([]slack.Block, 0, len(head)+len(body)+len(tail))
	out = append(append(append(out, head...), body...), tail...)
	return out, shown == len(c.Lines)
}

// lineBlocks draws line i: its section, its actions, its audit trail.
func lineBlocks(m markup, i int, l *card.Line, cp caps) []slack.Block {
	blocks := []slack.Block{sectionBlock(LineBlockID(i)+"-verdict", joinRows(lineRows(m, l, cp), maxSectionText))}
	if l.Actions && l.Kind != card.KindFile {
		if a := actionsBlock(i, l); a != nil {
			blocks = append(blocks, a)
		}
	}
	if len(l.Reports) > 0 && cp.reports > 0 {
		reports := l.Reports
		keep := min(cp.reports, maxContextElements-1)
		var rows []string
		if hidden := len(reports) - keep; hidden > 0 {
			rows = append(rows, plural(hidden, "earlier report", "earlier reports")+" not shown")
			reports = reports[hidden:]
		}
		for j := range reports {
			rows = append(rows, reportRow(m, &reports[j], cp))
		}
		blocks = append(blocks, contextBlock(LineBlockID(i)+"-audit", rows...))
	}
	return blocks
}

// lineCategory is the category a line's controls start on: Line.Category,
// or the top-scoring one when that is not a known category.
func lineCategory(l *card.Line) verdict.Category {
	if c, err := verdict.ParseCategory(string(l.Category)); err == nil {
		return c
	}
	c, _ := l.Scores.Top()
	return c
}

// categoryLabels are the select's option texts.
var categoryLabels = map[verdict.Category]string{
	verdict.CatPhishing:    "Phishing",
	verdict.CatAdvertising: "Advertising",
	verdict.CatMalicious:   "Malicious",
	verdict.CatIllegal:     "Illegal",
}

// actionsBlock is a line's feedback controls: the category select and the
// False positive / False negative / Restore buttons, all in one block with
// block_id LineBlockID(i). nil when the task id is missing or too long for
// a button value.
func actionsBlock(i int, l *card.Line) slack.Block {
	cat := lineCategory(l)
	value := EncodeActionValue(i, l.TaskID, cat)
	if l.TaskID == "" || len(value) > maxButtonValue {
		return nil
	}
	opts := make([]*slack.OptionBlockObject, 0, len(verdict.Categories))
	var initial *slack.OptionBlockObject
	for _, c := range verdict.Categories {
		o := slack.NewOptionBlockObject(string(c), plainText(categoryLabels[c]), nil)
		opts = append(opts, o)
		if c == cat {
			initial = o
		}
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Category"), ActionCategory, opts...)
	sel.InitialOption = initial
	confirm := slack.NewConfirmationBlockObject(
		plainText("Restore the verdict?"),
		plainText("Ask the service to put back its original score for the chosen category, undoing earlier false positive or false negative reports on this link."),
		plainText("Restore"),
		plainText("Cancel"),
	)
	return slack.NewActionBlock(LineBlockID(i),
		sel,
		slack.NewButtonBlockElement(ActionFalsePositive, value, plainText("False positive")),
		slack.NewButtonBlockElement(ActionFalseNegative, value, plainText("False negative")),
		slack.NewButtonBlockElement(ActionRestore, value, plainText("Restore")).
			WithStyle(slack.StyleDanger).WithConfirm(confirm),
	)
}

// tailBlocks are the skipped targets, the count left out and the notes.
func tailBlocks(m markup, c *card.Card, cp caps) []slack.Block {
	var out []slack.Block
	if len(c.Skipped) > 0 {
		rows := []string{m.strong("Not checked:")}
		used := 0
		for i := range c.Skipped {
			s := &c.Skipped[i]
			row := "• " + skipTarget(m, s, cp.skipTarget)
			if s.Reason != "" {
				row += " — " + m.text(showText(s.Reason, cp.skipReason))
			}
			if used+textLen(row) > cp.skipText {
				rows = append(rows, "…and "+plural(len(c.Skipped)-i, "more target", "more targets")+" not checked")
				break
			}
			used += textLen(row) + 1
			rows = append(rows, row)
		}
		out = append(out, sectionBlock("skipped", joinRows(rows, maxSectionText)))
	}
	if c.LeftOut > 0 {
		out = append(out, contextBlock("left-out", leftOutRow(c)))
	}
	if len(c.Notes) > 0 {
		var rows []string
		for i, n := range c.Notes {
			if i == maxContextElements-1 && len(c.Notes) > maxContextElements {
				rows = append(rows, "…and "+plural(len(c.Notes)-i, "more note", "more notes"))
				break
			}
			if s := m.text(showText(n, cp.note)); s != "" {
				rows = append(rows, s)
			}
		}
		if len(rows) > 0 {
			out = append(out, contextBlock("notes", rows...))
		}
	}
	return out
}

// skipTarget shows a skipped target: a defanged URL, or "file <name>".
func skipTarget(m markup, s *card.Skip, limit int) string {
	if s.Kind == card.KindFile {
		return "file " + m.code(showLiteral(s.Target, limit, true))
	}
	return m.code(showURL(s.Target, limit))
}

// moreRow summarises the lines (indices into lines) that were not drawn,
// per level, worst first: "…and 38 more links not shown: 36 clean, 2
// scanning". Lines are drawn worst first, so these are the least
// worrying; should one be bad, it is still announced.
func moreRow(lines []card.Line, hidden []int) string {
	by := map[verdict.Level]int{}
	files := 0
	for _, i := range hidden {
		by[lines[i].Level]++
		if lines[i].Kind == card.KindFile {
			files++
		}
	}
	var parts []string
	for _, l := range levelsWorstFirst {
		if by[l] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[l], countWord(l)))
		}
	}
	one, many := "more target", "more targets"
	switch files {
	case 0:
		one, many = "more link", "more links"
	case len(hidden):
		one, many = "more file", "more files"
	}
	return "…and " + plural(len(hidden), one, many) + " not shown: " + strings.Join(parts, ", ")
}

// minimalBlocks is the card reduced to its summary and one short row per
// target, with no controls: what the poster sends when Slack rejects the
// full card (invalid_blocks, msg_blocks_too_long), so the verdict still
// reaches the thread.
func minimalBlocks(c *card.Card) []slack.Block {
	m := mrkdwn{}
	out := []slack.Block{sectionBlock(SummaryBlockID(c), headRows(m, c)[0])}
	var rows []string
	used := 0
	for n, i := range displayOrder(c.Lines) {
		l := &c.Lines[i]
		row := m.level(l.Level, levelTitle(l.Level)) + " · "
		if l.Kind == card.KindFile {
			row += "file " + m.code(showLiteral(l.Target, 60, true))
		} else {
			row += m.code(showURL(l.Target, 80))
		}
		if used+textLen(row)+1 > 2800 {
			rows = append(rows, "…and "+plural(len(c.Lines)-n, "more target", "more targets"))
			break
		}
		used += textLen(row) + 1
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		out = append(out, sectionBlock("lines", joinRows(rows, maxSectionText)))
	}
	return out
}

// joinRows joins rows with newlines, dropping trailing rows if the result
// would exceed limit (and, as a last resort, clipping the first).
func joinRows(rows []string, limit int) string {
	for n := len(rows); n > 0; n-- {
		s := strings.Join(rows[:n], "\n")
		if textLen(s) <= limit {
			return s
		}
	}
	if len(rows) == 0 {
		return " "
	}
	out, used := make([]rune, 0, limit), 0
	for _, r := range rows[0] {
		if used+runeLen(r) > limit-1 {
			break
		}
		out = append(out, r)
		used += runeLen(r)
	}
	return string(out) + ellipsis
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func mrkdwnText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func sectionBlock(id, text string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwnText(text), nil, nil, slack.SectionBlockOptionBlockID(id))
}

func contextBlock(id string, rows ...string) *slack.ContextBlock {
	elems := make([]slack.MixedElement, 0, len(rows))
	for _, r := range rows {
		elems = append(elems, mrkdwnText(r))
	}
	return slack.NewContextBlock(id, elems...)
}

// blocksText is the total text of blocks, counted as Slack's aggregate limit
// presumably counts it: every text object (labels, options and confirm
// dialogs included), in UTF-16 units. Blocks of a type this package does
// not build count as over budget, so none can slip past the limit.
func blocksText(blocks []slack.Block) int {
	n := 0
	if !textObjects(blocks, func(o *slack.TextBlockObject) { n += textLen(o.Text) }) {
		return maxCardText + 1
	}
	return n
}

// validate checks blocks against the limits Blocks promises, calling
// slack-go's TextBlockObject.Validate on every text object.
func validate(blocks []slack.Block) error {
	if len(blocks) == 0 || len(blocks) > maxBlocks {
		return fmt.Errorf("%d blocks", len(blocks))
	}
	var err error
	known := textObjects(blocks, func(o *slack.TextBlockObject) {
		if err == nil {
			err = o.Validate()
		}
	})
	switch {
	case err != nil:
		return err
	case !known:
		return errors.New("unknown block or element type")
	case blocksText(blocks) > maxCardText:
		return errors.New("too much text")
	}
	return nil
}

// textObjects calls fn for every text object in blocks of the types this
// package builds, and reports whether it met only those types.
func textObjects(blocks []slack.Block, fn func(*slack.TextBlockObject)) bool {
	visit := func(objs ...*slack.TextBlockObject) {
		for _, o := range objs {
			if o != nil {
				fn(o)
			}
		}
	}
	confirm := func(c *slack.ConfirmationBlockObject) {
		if c != nil {
			visit(c.Title, c.Text, c.Confirm, c.Deny)
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			visit(b.Text)
			visit(b.Fields...)
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				o, ok := e.(*slack.TextBlockObject)
				if !ok {
					return false
				}
				visit(o)
			}
		case *slack.ActionBlock:
			for _, e := range b.Elements.ElementSet {
				switch e := e.(type) {
				case *slack.ButtonBlockElement:
					visit(e.Text)
					confirm(e.Confirm)
				case *slack.SelectBlockElement:
					visit(e.Placeholder)
					confirm(e.Confirm)
					for _, o := range e.Options {
						visit(o.Text)
					}
					if e.InitialOption != nil {
						visit(e.InitialOption.Text)
					}
				default:
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// mrkdwn is the markup of Slack cards.
type mrkdwn struct{}

func (mrkdwn) level(l verdict.Level, title string) string {
	return levelEmoji(l) + " *" + escapeMrkdwn(title) + "*"
}

// code wraps s in a code span, which Slack neither formats nor links. A
// code span cannot hold a backtick, so those show as "ˋ" (U+02CB).
func (mrkdwn) code(s string) string {
	if s == "" {
		return "(empty)"
	}
	return "`" + escapeMrkdwn(strings.ReplaceAll(s, "`", "ˋ")) + "`"
}

func (mrkdwn) text(s string) string     { return escapeMrkdwn(s) }
func (mrkdwn) strong(s string) string   { return "*" + escapeMrkdwn(s) + "*" }
func (mrkdwn) emoji(name string) string { return name }

// date is Slack's date token, shown in the reader's time zone, with a UTC
// fallback for clients that cannot
// (docs.slack.dev/messaging/formatting-message-text#date-formatting).
func (mrkdwn) date(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), dateFallback(t))
}

// user mentions a Slack user id; anything else is shown as escaped text.
func (mrkdwn) user(id string) string {
	if slackUserID.MatchString(id) {
		return "<@" + id + ">"
	}
	if id == "" {
		return "someone"
	}
	return escapeMrkdwn(showText(id, 40))
}

// SummaryBlockID is the block_id of a card's first block: "summary", then
// the ts of the message the card answers. It lets the bot recognise its own
// card in a thread (after a crash between posting a card and saving its ts)
// without any other marker. Block ids are at most 255 characters (Slack
// Block Kit reference); a ts is about 17.
func SummaryBlockID(c *card.Card) string {
	if c.SourceTS == "" {
		return "summary"
	}
	return "summary:" + c.SourceTS
}
