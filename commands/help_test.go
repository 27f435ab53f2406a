package commands

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// slackLink is mrkdwn's <target|label> and <target> syntax: Slack shows the
// label, or the target, and never the angle brackets.
var slackLink = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)

// slackRenders is mrkdwn as a Slack client shows it: <…> syntax turned into
// its label (an unescaped "<url>" shows as a link named "url"), then the
// entities &lt; &gt; &amp; as characters, without the code, bold and
// italic markers.
func slackRenders(mrkdwn string) string {
	s := slackLink.ReplaceAllStringFunc(mrkdwn, func(m string) string {
		sub := slackLink.FindStringSubmatch(m)
		if sub[2] != "" {
			return sub[2]
		}
		return sub[1]
	})
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	s = strings.NewReplacer("`", "", "*", "", "_(", "(", ")_", ")").Replace(s)
	return s
}

// helpForms returns the usage lines and examples of help as Slack shows it.
func helpForms(t *testing.T, shown string) (usages, examples []string) {
	t.Helper()
	for line := range strings.SplitSeq(shown, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "• "):
			u, _, ok := strings.Cut(strings.TrimPrefix(line, "• "), " — ")
			if !ok {
				t.Fatalf("help line without a description: %q", line)
			}
			usages = append(usages, u)
		case strings.HasPrefix(line, "e.g. "):
			examples = append(examples, strings.TrimPrefix(line, "e.g. "))
		}
	}
	return usages, examples
}

// helpValues fills the placeholders of the real registry's usages with
// values a user would type. A new placeholder must be added here.
var helpValues = map[string]string{
	"url":             "https://login.example.com/verify",
	"task_id":         "5a57c0ffee5a57c0ffee5a57c0ffeed5",
	"md5|sha1|sha256": "44d88612fea8a8f36de82e1278abb02f",
	"category":        "phishing",
	"url|task_id":     "4711",
	"n":               "5",
	"domain":          "example.org",
}

// word is one word of a form: what the user types, and the argument the
// parser must make of it.
type word struct{ typed, arg string }

// placeholderStyles are the ways a user types a placeholder's value after
// reading the help: the value, the value in the help's brackets (as typed,
// and as Slack escapes it), the placeholder's word before the value.
var placeholderStyles = []struct {
	name string
	typ  func(name, value string) string
}{
	{"value", func(_, v string) string { return v }},
	{"<value>", func(_, v string) string { return "<" + v + ">" }},
	{"&lt;value&gt;", func(_, v string) string { return "&lt;" + v + "&gt;" }},
	{"word value", func(name, v string) string {
		w, _, _ := strings.Cut(name, "|")
		return w + " " + v
	}},
}

// splitTop splits s at sep outside <…> and […].
func splitTop(s string, sep rune) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case r == '<' || r == '[':
			depth++
		case r == '>' || r == ']':
			depth--
		case r == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + len(string(r))
		}
	}
	return append(out, s[start:])
}

// expandUsage returns every form a usage allows (optional parts with and
// without, each alternative), with placeholders typed in style.
func expandUsage(t *testing.T, usage string, style func(name, value string) string) [][]word {
	t.Helper()
	forms := [][]word{nil}
	for _, tok := range splitTop(usage, ' ') {
		if tok == "" {
			continue
		}
		var alts [][]word
		switch {
		case strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]"):
			inner := tok[1 : len(tok)-1]
			alts = append(alts, nil)
			if _, ok := helpValues[inner]; ok { // [n]: an optional placeholder
				alts = append(alts, expandUsage(t, "<"+inner+">", style)...)
				v := helpValues[inner]
				alts = append(alts, []word{{"[" + v + "]", v}})
				break
			}
			for _, alt := range splitTop(inner, '|') {
				alts = append(alts, expandUsage(t, alt, style)...)
			}
		case strings.HasPrefix(tok, "<"):
			name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(tok, "<"), "…"), ">")
			v, ok := helpValues[name]
			if !ok {
				t.Fatalf("no value for the placeholder <%s>: add one to helpValues", name)
			}
			alts = append(alts, []word{{style(name, v), v}})
		case strings.Contains(tok, "|"):
			for _, lit := range strings.Split(tok, "|") {
				alts = append(alts, []word{{lit, lit}})
			}
		default:
			alts = append(alts, []word{{tok, tok}})
		}
		var next [][]word
		for _, f := range forms {
			for _, a := range alts {
				next = append(next, append(slices.Clone(f), a...))
			}
		}
		forms = next
	}
	return forms
}

// TestEveryHelpFormParses renders /scan help as Slack shows it, takes each
// usage line (every alternative, with and without its optional parts, its
// placeholders typed as a value, <value>, &lt;value&gt; and "word value")
// and each example, and feeds them to the parser: each must run the
// command it documents with the values typed, never a placeholder.
func TestEveryHelpFormParses(t *testing.T) {
	t.Parallel()
	r := NewScanRegistry(nil)
	shown := slackRenders(r.Help())
	usages, examples := helpForms(t, shown)
	if len(usages) != len(r.Names()) {
		t.Fatalf("%d usage lines for %d commands:\n%s", len(usages), len(r.Names()), shown)
	}
	expect := func(form string) string {
		fields := strings.Fields(strings.TrimPrefix(form, r.Slash))
		if len(fields) > 0 {
			if _, ok := r.Lookup(fields[0]); ok {
				return fields[0]
			}
		}
		return ""
	}
	tried := map[string]bool{}
	check := func(typed, name string, args []string) {
		if tried[typed] {
			return
		}
		tried[typed] = true
		p := r.Parse(strings.TrimPrefix(typed, r.Slash))
		if p.Command == nil {
			t.Errorf("%q is refused: %s", typed, p.Reply)
			return
		}
		if p.Command.Name != name {
			t.Errorf("%q runs %q, want %q", typed, p.Command.Name, name)
		}
		if args != nil && !slices.Equal(p.Args, args) {
			t.Errorf("%q gives the arguments %q, want %q", typed, p.Args, args)
		}
		for _, a := range p.Args {
			if strings.ContainsAny(a, "<>[]&") || isPlaceholder(p.Command, a) {
				t.Errorf("%q gives the argument %q: a placeholder or markup", typed, a)
			}
		}
	}
	for _, u := range usages {
		if !strings.HasPrefix(u, r.Slash) {
			t.Fatalf("usage %q does not start with %s", u, r.Slash)
		}
		name := expect(u)
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(u, r.Slash), " "+name))
		for _, st := range placeholderStyles {
			for _, f := range expandUsage(t, rest, st.typ) {
				typed, args := []string{r.Slash}, []string{}
				if name != "" {
					typed = append(typed, name)
				}
				for _, w := range f {
					typed = append(typed, w.typed)
					args = append(args, strings.Fields(w.arg)...)
				}
				if name == "help" {
					args = nil
				}
				check(strings.Join(typed, " "), name, args)
			}
		}
	}
	seen := map[string]bool{}
	for _, ex := range examples {
		check(ex, expect(ex), nil)
		seen[expect(ex)] = true
	}
	for _, n := range r.Names() {
		c, _ := r.Lookup(n)
		if len(c.Examples) != 1 {
			t.Errorf("%s: %d examples, want one", r.UsageOf(c), len(c.Examples))
		}
		if !seen[n] && n != "help" {
			t.Errorf("the help shows no example of %s", r.UsageOf(c))
		}
	}
	forms := slices.Sorted(func(yield func(string) bool) {
		for f := range tried {
			if !yield(f) {
				return
			}
		}
	})
	t.Logf("%d forms parsed:\n%s", len(forms), strings.Join(forms, "\n"))
}

// TestHelpFormsAgree: the Slack, App Home, terminal and Markdown forms show
// the same usages, descriptions and examples.
func TestHelpFormsAgree(t *testing.T) {
	t.Parallel()
	r := NewScanRegistry(nil)
	slackShown := slackRenders(r.Help())
	home := slackRenders(r.HomeHelp())
	term := r.TerminalHelp()
	table := r.MarkdownTable()
	for _, e := range r.HelpEntries() {
		for _, s := range []string{e.Usage, e.Description, e.Example} {
			for form, text := range map[string]string{"/scan help": slackShown, "HomeHelp": home, "TerminalHelp": term,
				"docs/usage.md table": strings.ReplaceAll(table, `\|`, "|")} {
				if !strings.Contains(text, s) {
					t.Errorf("%s lacks %q:\n%s", form, s, text)
				}
			}
		}
	}
	for _, raw := range []string{r.Help(), r.HomeHelp()} {
		if m := slackLink.FindString(raw); m != "" {
			t.Errorf("the mrkdwn help holds %q, which Slack shows as a link", m)
		}
	}
	if len(r.HomeHelp()) > 3000 || len(r.Help()) > 3000 {
		t.Errorf("help is %d characters (Home %d); a section block holds 3,000", len(r.Help()), len(r.HomeHelp()))
	}
	if strings.ContainsAny(term, "`*&") {
		t.Errorf("terminal help holds mrkdwn:\n%s", term)
	}
}
