package shell

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
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/verdict"
)

// refresh prints every bot message, card change, reaction and private
// answer in the channel not printed yet, in the order they happened. A
// card is printed in full when first seen (and on `show N`), its later
// changes as one compact line each (cardChanges). Cards are read from the
// store (the same card model Slack's Block Kit comes from).
func (s *Session) refresh() {
	var msgs []slackfake.Message
	eph := map[string][]slackfake.Ephemeral{}
	var ups []slackfake.Upload
	botUser := s.fake.BotUserID()
	s.fake.Inspect(func(st *slackfake.State) {
		for _, m := range st.AllMessages() {
			if m.Channel == Channel {
				msgs = append(msgs, m)
			}
		}
		for _, p := range shellPeople {
			eph[p.id] = st.Ephemerals(Channel, p.id)
		}
		ups = st.Uploads(Channel, "")
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	type item struct {
		at   time.Time
		text string
	}
	var items []item
	for _, m := range msgs {
		if !m.Bot {
			if text := s.reactionText(m, botUser); text != "" {
				items = append(items, item{time.Now(), text}) // the reaction came just now
			}
			continue
		}
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
			rec, err := s.db.CardByTS(Channel, m.TS)
			if err != nil {
				continue // its ts is saved just after the post: next time
			}
			at := m.Versions[len(m.Versions)-1].At
			if sh == nil {
				sh = &shownMsg{num: len(s.cards) + 1, card: rec.Card.Clone()}
				s.cards = append(s.cards, m.TS)
				s.shown[m.TS] = sh
				sh.versions, sh.final = len(m.Versions), rec.Card.Final
				items = append(items, item{at, fmt.Sprintf("── card #%d ──\n", sh.num) + byName(notify.Text(&rec.Card, s.color))})
				continue
			}
			sh.versions, sh.final = len(m.Versions), rec.Card.Final
			if changes := cardChanges(sh.num, &sh.card, &rec.Card, s.color); len(changes) > 0 {
				items = append(items, item{at, strings.Join(changes, "\n") + "\n"})
			}
			sh.card = rec.Card.Clone()
		default: // a plain reply (a recheck's mention, an in-channel answer)
			if sh == nil {
				s.shown[m.TS] = &shownMsg{}
				items = append(items, item{m.PostedAt, "verdictbot: " + indent(s.answer(m.Text)) + "\n"})
			}
		}
	}
	for _, p := range shellPeople {
		list := eph[p.id]
		for _, e := range list[min(s.ephSeen[p.id], len(list)):] {
			if e.Deleted || e.Text == "" {
				continue
			}
			to := "» "
			if p.id != s.user.id {
				to = "» (to @" + p.name + ") "
			}
			items = append(items, item{e.At, to + indent(s.answer(e.Text)) + "\n"})
		}
		s.ephSeen[p.id] = len(list)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	for _, it := range items {
		io.WriteString(s.out, it.text)
	}
}

// reactionText describes the bot's reactions on a person's message not
// described yet ("✓ clean, no card (quiet channel): verdictbot reacted
// :white_check_mark: to …"), or "".
func (s *Session) reactionText(m slackfake.Message, botUser string) string {
	var names []string
	for name, users := range m.Reactions {
		if slices.Contains(users, botUser) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		key := m.TS + " " + name
		if s.reacted[key] {
			continue
		}
		s.reacted[key] = true
		what := truncateRunes(strings.Join(strings.Fields(notify.TermMrkdwn(m.Text)), " "), 60)
		fmt.Fprintf(&b, "✓ verdictbot reacted :%s: to %q", termSafe(name), what)
		if name == s.cleanReaction() {
			b.WriteString(" (clean; a quiet channel gets no card)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cleanReaction is the reaction a clean link gets in a quiet channel.
func (s *Session) cleanReaction() string {
	if r := strings.Trim(s.app.Config().CleanReaction, ":"); r != "" {
		return r
	}
	return "white_check_mark" // cards.Messages' default
}

// cardChanges describes what changed on card #num from was to now, one
// line per change: a line's verdict ("card #1 · hxxps://a[.]test/ ·
// scanning → MALICIOUS (phishing 97%)"), a report on a line, a note, a
// target not checked. Progress words alone are not a change.
func cardChanges(num int, was, now *card.Card, color bool) []string {
	head := fmt.Sprintf("card #%d · ", num)
	var out []string
	for i := range now.Lines {
		l := &now.Lines[i]
		var w *card.Line
		if i < len(was.Lines) {
			w = &was.Lines[i]
		}
		switch {
		case w == nil:
			out = append(out, head+lineTarget(l)+" · "+levelWord(l.Level, true, color)+levelDetail(l))
		case w.Level != l.Level || w.Category != l.Category && l.Level >= verdict.Suspicious:
			out = append(out, head+lineTarget(l)+" · "+levelWord(w.Level, false, false)+" → "+levelWord(l.Level, true, color)+levelDetail(l))
		}
		var before int
		if w != nil {
			before = len(w.Reports)
		}
		for _, r := range l.Reports[min(before, len(l.Reports)):] {
			out = append(out, head+fmt.Sprintf("line %d · ", i+1)+reportText(r))
		}
	}
	for _, sk := range now.Skipped[min(len(was.Skipped), len(now.Skipped)):] {
		row := head + "not checked: " + termSafe(links.DefangTruncate(sk.Target, 80))
		if sk.Kind == card.KindFile {
			row = head + "not checked: file " + termSafe(truncateRunes(sk.Target, 80))
		}
		if sk.Reason != "" {
			row += " — " + termSafe(sk.Reason)
		}
		out = append(out, row)
	}
	for _, n := range now.Notes[min(len(was.Notes), len(now.Notes)):] {
		out = append(out, head+"note: "+termSafe(n))
	}
	return out
}

// lineTarget is a card line's target as the card shows it: a URL
// defanged, a file by name.
func lineTarget(l *card.Line) string {
	if l.Kind == card.KindFile {
		name := l.Target
		if l.File != nil && l.File.Name != "" {
			name = l.File.Name
		}
		return "file " + termSafe(truncateRunes(name, 80))
	}
	return termSafe(links.DefangTruncate(l.Target, 80))
}

// levelWord is a level as the card says it: upper case for the new
// verdict (coloured like the card's), lower case for what it was.
func levelWord(l verdict.Level, upper, color bool) string {
	var w string
	switch l {
	case verdict.Pending:
		w = "scanning"
	case verdict.Skipped:
		w = "not checked"
	case verdict.Clean:
		w = "clean"
	case verdict.Unknown:
		w = "could not check"
	case verdict.Suspicious:
		w = "suspicious"
	case verdict.Malicious:
		w = "malicious"
	default:
		w = l.String()
	}
	if !upper {
		return w
	}
	w = strings.ToUpper(w)
	if !color {
		return w
	}
	switch l {
	case verdict.Malicious:
		return "\x1b[31m" + w + "\x1b[0m"
	case verdict.Suspicious:
		return "\x1b[33m" + w + "\x1b[0m"
	case verdict.Clean:
		return "\x1b[32m" + w + "\x1b[0m"
	}
	return w
}

// levelDetail is what decided a line's level, in brackets: the category
// and its score, the file's malscore and family, or the problem.
func levelDetail(l *card.Line) string {
	switch {
	case l.Level == verdict.Unknown && l.Problem != "":
		return " (" + termSafe(truncateRunes(l.Problem, 120)) + ")"
	case l.Kind == card.KindFile && l.File != nil && l.Level >= verdict.Clean && l.Level != verdict.Unknown:
		d := fmt.Sprintf("malscore %.1f/10", l.File.MalScore)
		if l.File.Family != "" {
			d += ", family " + termSafe(truncateRunes(l.File.Family, 40))
		}
		return " (" + d + ")"
	case l.Kind != card.KindFile && l.Level >= verdict.Suspicious && l.Category != "":
		if v, ok := l.Scores[l.Category]; ok {
			return fmt.Sprintf(" (%s %.0f%%)", l.Category, v*100)
		}
		return " (" + string(l.Category) + ")"
	}
	return ""
}

// reportText is a report as the card's audit line says it.
func reportText(r card.Report) string {
	verb := map[string]string{"fp": "reported a false positive", "fn": "reported a false negative",
		"restore": "restored the original verdict"}[r.Option]
	if verb == "" {
		verb = "gave feedback " + termSafe(truncateRunes(r.Option, 20))
	}
	s := byName("@"+termSafe(r.User)) + " " + verb
	if r.Category != "" {
		s += " (" + termSafe(string(r.Category)) + ")"
	}
	if r.Outcome != "" {
		s += " · service said: " + termSafe(truncateRunes(r.Outcome, 200))
	}
	return s
}

// truncateRunes cuts s to at most n runes, with "…" when cut.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
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
// escaped (notify.Escape), and http(s) links in <…>.
func slackText(line string) string {
	var b strings.Builder
	rest := line
	for {
		loc := typedURL.FindStringIndex(rest)
		md := typedLink.FindStringSubmatchIndex(rest)
		if md != nil && (loc == nil || md[0] <= loc[0]) {
			// [label](url): a link with a label, as Slack's composer
			// makes one ("<url|label>").
			b.WriteString(notify.Escape(rest[:md[0]]))
			b.WriteString("<" + notify.Escape(rest[md[4]:md[5]]) + "|" + notify.Escape(rest[md[2]:md[3]]) + ">")
			rest = rest[md[1]:]
			continue
		}
		if loc == nil {
			b.WriteString(notify.Escape(rest))
			return b.String()
		}
		u := strings.TrimRight(rest[loc[0]:loc[1]], ".,;:!?)]}'\"")
		b.WriteString(notify.Escape(rest[:loc[0]]))
		b.WriteString("<" + notify.Escape(u) + ">")
		rest = rest[loc[0]+len(u):]
	}
}

var typedURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>]+`)

// typedLink is a markdown link typed in the shell: [label](https://…).
var typedLink = regexp.MustCompile(`(?i)\[([^\]\n|<>]+)\]\((https?://[^\s<>()|]+)\)`)

var mrkdwnBold = regexp.MustCompile(`\*([^*\n]+)\*`)

// answer is the bot's mrkdwn text for the terminal: *bold* in bold (or
// plain without colours), `code` and _italic_ without their marks, people
// by name.
func (s *Session) answer(text string) string {
	repl := "$1"
	if s.color {
		repl = "\x1b[1m$1\x1b[0m"
	}
	t := notify.TermMrkdwn(text)
	t = mrkdwnCode.ReplaceAllString(t, "$1")
	t = mrkdwnItalic.ReplaceAllString(t, "$1$2$3")
	return byName(mrkdwnBold.ReplaceAllString(t, repl))
}

var (
	mrkdwnCode   = regexp.MustCompile("`([^`\n]+)`")
	mrkdwnItalic = regexp.MustCompile(`(^|[\s(])_([^_\n]+)_($|[\s.,;:)])`)
)

// byName shows the shell's people by name (@you, @alice, @bob) where the
// bot wrote their user ids, as Slack shows a mention.
func byName(s string) string {
	for _, p := range shellPeople {
		s = strings.ReplaceAll(s, "@"+p.id, "@"+p.name)
	}
	return s
}

// termSafe is text from outside (the bot's answers, a service's words, a
// message, a file name) made safe for the terminal by the bot's one
// terminal sanitiser, notify.TermText: no control character (escape
// sequences, OSC 8 hyperlinks, BEL, CR…) gets through, bidi overrides
// are shown as [U+202E], line breaks are kept.
func termSafe(s string) string { return notify.TermText(s) }

// indent indents the lines after the first of a multi-line answer.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
