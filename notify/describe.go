package notify

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/internal/bytesize"
	"github.com/verdictbot/verdictbot/verdict"
)

// This file holds the wording both renderers share, so the Slack card and
// the terminal text always say the same thing. A markup decides how pieces
// look: mrkdwn (escaped, code spans, Slack dates and mentions) or plain
// text (optionally with ANSI colours).

// markup formats the pieces of a card. Arguments to code and text are
// untrusted and already sanitized, defanged and clipped; words passed to
// strong are ours.
type markup interface {
	// level shows a level with the given title, e.g. ":red_circle: *Malicious*".
	level(l verdict.Level, title string) string
	// code shows a literal (URL, hash, task id) that must not be formatted
	// or linked.
	code(s string) string
	// text shows untrusted prose.
	text(s string) string
	// strong emphasises our own words.
	strong(s string) string
	// emoji returns the emoji (":camera:") or nothing for plain text.
	emoji(name string) string
	// date shows a time in the reader's zone where the medium can.
	date(t time.Time) string
	// user shows a Slack user.
	user(id string) string
}

// caps bound the length of each untrusted piece, measured as escaped mrkdwn
// (see clip). The renderer tries generous caps first and tighter ones when
// the card would not fit Slack's limits.
type caps struct {
	target, detail, problem, outcome int
	word                             int // status, task id, service, family, type, hashes, timestamps
	fileName                         int
	reports                          int // newest reports shown per line
	skipTarget, skipReason, skipText int
	note                             int
}

var (
	capsFull    = caps{target: 300, detail: 300, problem: 300, outcome: 200, word: 140, fileName: 200, reports: 9, skipTarget: 150, skipReason: 120, skipText: 2400, note: 300}
	capsCompact = caps{target: 120, detail: 120, problem: 160, outcome: 100, word: 80, fileName: 100, reports: 3, skipTarget: 80, skipReason: 80, skipText: 1200, note: 160}
	capsTight   = caps{target: 70, detail: 0, problem: 100, outcome: 60, word: 70, fileName: 70, reports: 1, skipTarget: 50, skipReason: 60, skipText: 500, note: 100}
	// capsText is for the terminal: no Slack limits, but keep lines readable.
	capsText = caps{target: 500, detail: 300, problem: 300, outcome: 300, word: 200, fileName: 300, skipTarget: 300, skipReason: 200, note: 500}
)

// levelTitle is the word a card shows for a level. Keep in sync with
// verdict.Level's constants.
func levelTitle(l verdict.Level) string {
	switch l {
	case verdict.Pending:
		return "Scanning…"
	case verdict.Skipped:
		return "Not checked"
	case verdict.Clean:
		return "Clean"
	case verdict.Unknown:
		return "Could not check"
	case verdict.Suspicious:
		return "Suspicious"
	case verdict.Malicious:
		return "Malicious"
	}
	return l.String()
}

// levelEmoji is the Slack emoji for a level. Keep in sync with
// verdict.Level's constants.
func levelEmoji(l verdict.Level) string {
	switch l {
	case verdict.Pending:
		return ":hourglass_flowing_sand:"
	case verdict.Skipped:
		return ":heavy_minus_sign:"
	case verdict.Clean:
		return ":large_green_circle:"
	case verdict.Unknown:
		return ":grey_question:"
	case verdict.Suspicious:
		return ":large_yellow_circle:"
	case verdict.Malicious:
		return ":red_circle:"
	}
	return ":grey_question:"
}

// levelAdvice is the short advice after the card's overall level.
func levelAdvice(l verdict.Level) string {
	switch l {
	case verdict.Malicious:
		return "do not open"
	case verdict.Suspicious:
		return "be careful"
	case verdict.Unknown:
		return "the check could not complete"
	}
	return ""
}

// levelsWorstFirst is the order in which a card shows its lines and counts
// them: what needs attention, what could not be checked, what is still
// being checked, then what is clean and what was not checked on purpose.
// Keep in sync with verdict.Level's constants.
var levelsWorstFirst = []verdict.Level{verdict.Malicious, verdict.Suspicious, verdict.Unknown, verdict.Pending, verdict.Clean, verdict.Skipped}

// displayOrder returns the indices of lines in the order a card shows
// them: worst first (levelsWorstFirst), in message order within a level.
// A line keeps its index everywhere it is named (block ids, button values,
// the terminal's line numbers), whatever its place.
func displayOrder(lines []card.Line) []int {
	rank := func(l verdict.Level) int {
		for r, x := range levelsWorstFirst {
			if x == l {
				return r
			}
		}
		return len(levelsWorstFirst)
	}
	order := make([]int, len(lines))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(lines[a].Level) - rank(lines[b].Level) })
	return order
}

// headline is the card's overall level as shown: the worst line, except that
// while lines are still pending and nothing worrying was found yet the card
// says "Scanning…" (a half-checked message is not clean). It also returns
// how many lines are still pending.
func headline(c *card.Card) (verdict.Level, int) {
	lvl := c.Level()
	if len(c.Lines) == 0 && len(c.Skipped) == 0 && (c.LeftOut > 0 || c.Final) {
		lvl = verdict.Skipped // nothing was checked, and nothing will be
	}
	pending := 0
	for i := range c.Lines {
		if c.Lines[i].Level == verdict.Pending {
			pending++
		}
	}
	if pending > 0 && lvl < verdict.Suspicious {
		lvl = verdict.Pending
	}
	return lvl, pending
}

// headRows are the card's top rows: the overall level with advice, then a
// count of what was checked and who asked.
func headRows(m markup, c *card.Card) []string {
	lvl, pending := headline(c)
	first := m.level(lvl, levelTitle(lvl))
	if a := levelAdvice(lvl); a != "" {
		first += " — " + a
	}
	if pending > 0 && lvl != verdict.Pending {
		first += fmt.Sprintf(" · still checking %d", pending)
	}
	second := summary(c)
	if c.RequestedBy != "" {
		if second != "" {
			second += " · "
		}
		second += "requested by " + m.user(c.RequestedBy)
	}
	if second == "" {
		return []string{first}
	}
	return []string{first, second}
}

// countLevels counts lines per kind and level.
func countLevels(c *card.Card) (links, files int, byLevel map[verdict.Level]int) {
	byLevel = map[verdict.Level]int{}
	for i := range c.Lines {
		if c.Lines[i].Kind == card.KindFile {
			files++
		} else {
			links++
		}
		byLevel[c.Lines[i].Level]++
	}
	return links, files, byLevel
}

// summary is "3 links, 1 file: 1 malicious · 2 clean · 1 scanning · 2 not
// checked", counting every target: lines, skipped ones and those left out
// (which are links).
func summary(c *card.Card) string {
	links, files, byLevel := countLevels(c)
	for i := range c.Skipped {
		if c.Skipped[i].Kind == card.KindFile {
			files++
		} else {
			links++
		}
	}
	links += c.LeftOut
	byLevel[verdict.Skipped] += len(c.Skipped) + c.LeftOut
	var kinds []string
	if links > 0 {
		kinds = append(kinds, plural(links, "link", "links"))
	}
	if files > 0 {
		kinds = append(kinds, plural(files, "file", "files"))
	}
	var parts []string
	for _, l := range []verdict.Level{verdict.Malicious, verdict.Suspicious, verdict.Unknown, verdict.Clean, verdict.Pending, verdict.Skipped} {
		if n := byLevel[l]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, countWord(l)))
		}
	}
	if len(kinds) == 0 {
		return strings.Join(parts, " · ")
	}
	return strings.Join(kinds, ", ") + ": " + strings.Join(parts, " · ")
}

// countWord is a level in a count: "2 clean", "1 could not be checked".
func countWord(l verdict.Level) string {
	switch l {
	case verdict.Pending:
		return "scanning"
	case verdict.Skipped:
		return "not checked"
	case verdict.Unknown:
		return "could not be checked"
	}
	return l.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fallbackText is the card's notification text: a short plain sentence with no
// URL, target or user-supplied text in it, e.g. "verdictbot: 1 malicious
// link in this message".
func fallbackText(c *card.Card) string {
	lvl, _ := headline(c)
	links, files, _ := countLevels(c)
	atLevel := func(l verdict.Level) string {
		var ln, fn int
		for i := range c.Lines {
			if c.Lines[i].Level != l {
				continue
			}
			if c.Lines[i].Kind == card.KindFile {
				fn++
			} else {
				ln++
			}
		}
		adj := l.String() + " "
		if l == verdict.Unknown {
			adj = ""
		}
		return kindsPhrase(ln, fn, adj)
	}
	var s string
	switch lvl {
	case verdict.Malicious, verdict.Suspicious:
		s = atLevel(lvl) + " in this message"
		if !c.Final {
			s += " (still checking)"
		}
	case verdict.Unknown:
		if c.LeftOut > 0 {
			// Links past the limit were never sent: they count as links
			// that could not be checked.
			ln, fn := 0, 0
			for i := range c.Lines {
				if c.Lines[i].Level == verdict.Unknown && c.Lines[i].Kind == card.KindFile {
					fn++
				} else if c.Lines[i].Level == verdict.Unknown {
					ln++
				}
			}
			s = "could not check " + kindsPhrase(ln+c.LeftOut, fn, "") + " in this message"
			break
		}
		s = "could not check " + atLevel(verdict.Unknown) + " in this message"
	case verdict.Clean:
		s = kindsPhrase(links, files, "") + " checked, all clean"
		if len(c.Skipped)+c.LeftOut > 0 {
			s += fmt.Sprintf(" (%d not checked)", len(c.Skipped)+c.LeftOut)
		}
	case verdict.Pending:
		s = "scanning " + kindsPhrase(links, files, "") + "…"
	default: // Skipped, or nothing at all
		sl, sf := c.LeftOut, 0
		for i := range c.Skipped {
			if c.Skipped[i].Kind == card.KindFile {
				sf++
			} else {
				sl++
			}
		}
		for i := range c.Lines { // withheld after extraction (host resolves inside the network)
			if c.Lines[i].Level != verdict.Skipped {
				continue
			}
			if c.Lines[i].Kind == card.KindFile {
				sf++
			} else {
				sl++
			}
		}
		if sl+sf > 0 {
			s = kindsPhrase(sl, sf, "") + " not checked"
		} else {
			s = "nothing to check"
		}
	}
	return "verdictbot: " + s
}

// kindsPhrase is "1 malicious link and 2 malicious files".
func kindsPhrase(links, files int, adj string) string {
	var parts []string
	if links > 0 || files == 0 {
		parts = append(parts, plural(links, adj+"link", adj+"links"))
	}
	if files > 0 {
		parts = append(parts, plural(files, adj+"file", adj+"files"))
	}
	return strings.Join(parts, " and ")
}

// lineRows are the rows describing one line (reports excluded): the level
// and target first, then scores or file facts, problem, detail, and the
// task.
func lineRows(m markup, l *card.Line, cp caps) []string {
	first := m.level(l.Level, levelTitle(l.Level))
	if l.Level == verdict.Pending && l.Status != "" {
		first += " (" + m.text(showText(l.Status, 40)) + ")"
	}
	first += " · "
	if l.Kind == card.KindFile {
		name := l.Target
		if l.File != nil && l.File.Name != "" {
			name = l.File.Name
		}
		first += "file " + m.code(showLiteral(name, cp.fileName, true))
	} else if l.Via != "" {
		first += "QR code in " + m.code(showLiteral(l.Via, cp.fileName, true)) + " links to " + m.code(showURL(l.Target, cp.target))
	} else {
		first += m.code(showURL(l.Target, cp.target))
	}
	rows := []string{first}
	// The lure the message itself shows, before the service's scores.
	for _, sg := range l.Signals {
		rows = append(rows, strings.TrimSpace(m.emoji(":warning:")+" "+m.text(showText(sg.Reason, cp.problem))))
	}
	if len(l.Signals) > 0 && l.ServiceLevel >= verdict.Skipped && l.ServiceLevel < l.Level {
		rows = append(rows, "URL service's verdict: "+m.strong(levelTitle(l.ServiceLevel)))
	}

	if l.Kind != card.KindFile && len(l.Scores) > 0 {
		var sc []string
		for _, cat := range verdict.Categories {
			v, ok := l.Scores[cat]
			s := string(cat) + " " + percent(v, ok)
			if cat == l.Category && l.Level >= verdict.Suspicious {
				s = m.strong(s)
			}
			sc = append(sc, s)
		}
		rows = append(rows, strings.Join(sc, " · "))
	}
	if l.Kind == card.KindFile && l.File != nil {
		rows = append(rows, fileRows(m, l, cp)...)
	}
	if l.Problem != "" {
		rows = append(rows, m.text(showText(l.Problem, cp.problem)))
	}
	if l.Detail != "" && cp.detail > 0 {
		rows = append(rows, m.code(showText(l.Detail, cp.detail)))
	}
	var meta []string
	if l.QueryNotSent {
		meta = append(meta, "query not sent")
	}
	if l.TaskID != "" {
		t := "task " + m.code(showLiteral(l.TaskID, cp.word, true))
		if l.Service != "" {
			t = m.text(showText(l.Service, cp.word)) + " " + t
		}
		meta = append(meta, t)
	}
	if l.Cached {
		meta = append(meta, "(cached)")
	}
	if !l.CheckedAt.IsZero() {
		meta = append(meta, "checked "+m.date(l.CheckedAt))
	}
	if len(meta) > 0 {
		rows = append(rows, strings.Join(meta, " · "))
	}
	switch {
	case l.File != nil && l.File.Screenshots > 0:
		rows = append(rows, strings.TrimSpace(m.emoji(":camera:")+" "+
			plural(l.File.Screenshots, "screenshot", "screenshots")+" in this thread"))
	case l.File != nil && l.File.ScreenshotsWithheld:
		rows = append(rows, strings.TrimSpace(m.emoji(":camera:")+" Screenshots withheld: the message was quarantined"))
	case l.File != nil && l.File.ScreenshotsFailed:
		rows = append(rows, strings.TrimSpace(m.emoji(":camera:")+" Screenshots could not be fetched"))
	}
	return rows
}

// fileRows are a file line's facts: type, size, malscore and family; the
// three hashes; the sandbox's timestamps as given.
func fileRows(m markup, l *card.Line, cp caps) []string {
	f := l.File
	var rows, info []string
	if f.Type != "" {
		info = append(info, m.code(showLiteral(f.Type, cp.word, false)))
	}
	if f.Size > 0 {
		info = append(info, bytesize.Format(f.Size))
	}
	// A malscore exists once the analysis finished (verdict.MalscoreLevel).
	if l.Level >= verdict.Clean && l.Level != verdict.Unknown || f.MalScore > 0 {
		info = append(info, "malscore "+m.strong(strconv.FormatFloat(clampScore(f.MalScore), 'f', 1, 64))+"/10")
	}
	if f.Family != "" {
		info = append(info, "family "+m.code(showLiteral(f.Family, cp.word, false)))
	}
	if len(info) > 0 {
		rows = append(rows, strings.Join(info, " · "))
	}
	for _, h := range []struct{ name, v string }{{"MD5", f.MD5}, {"SHA1", f.SHA1}, {"SHA256", f.SHA256}} {
		if h.v != "" {
			rows = append(rows, h.name+" "+m.code(showLiteral(h.v, cp.word, true)))
		}
	}
	var times []string
	for _, t := range []struct{ name, v string }{{"added", f.AddedOn}, {"started", f.StartedOn}, {"done", f.DoneOn}} {
		if t.v != "" {
			times = append(times, t.name+" "+m.text(showText(t.v, cp.word)))
		}
	}
	if len(times) > 0 {
		rows = append(rows, "sandbox "+strings.Join(times, " · "))
	}
	return rows
}

// clampScore keeps a malscore printable: NaN and negatives print as 0.
func clampScore(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	if math.IsInf(v, 1) {
		return 10
	}
	return v
}

// percent prints a 0–1 score as "92%" ("n/a" when missing or not a number).
func percent(v float64, ok bool) string {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(math.Round(v*100), 'f', 0, 64) + "%"
}

// reportRow is one audit entry: "<@U123> reported a false positive
// (phishing) · <date> · service said: task not completed yet".
func reportRow(m markup, r *card.Report, cp caps) string {
	var verb string
	switch r.Option {
	case "fp":
		verb = "reported a false positive"
	case "fn":
		verb = "reported a false negative"
	case "restore":
		verb = "restored the original verdict"
	default:
		verb = "gave feedback " + m.code(showLiteral(r.Option, 20, false))
	}
	s := m.user(r.User) + " " + verb
	if r.Category != "" {
		s += " (" + m.text(showText(string(r.Category), 20)) + ")"
	}
	if !r.At.IsZero() {
		s += " · " + m.date(r.At)
	}
	if r.Outcome != "" {
		s += " · " + strings.TrimSpace(m.emoji(":warning:")+" service said: "+m.text(showText(r.Outcome, cp.outcome)))
	}
	return s
}

// leftOutRow is "3 more links were not checked (limit 50 per message), so
// this message cannot be called clean": links past VERDICTBOT_MAX_LINKS
// make the card "could not check" (card.Card.Level).
func leftOutRow(c *card.Card) string {
	s := plural(c.LeftOut, "more link was", "more links were") + " not checked"
	if c.MaxLinks > 0 {
		s += fmt.Sprintf(" (limit %d per message)", c.MaxLinks)
	}
	return s + ", so this message cannot be called clean"
}

// dateFallback is how a time reads where Slack cannot localise it.
func dateFallback(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// slackUserID matches Slack user ids (U…, W… for Enterprise Grid), the only
// strings the card turns into mentions.
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,30}$`)
