package commands

import (
	"fmt"
	"html"
	"strings"
	"unicode"
)

// Parsed is the outcome of parsing a /scan text: a command to run with its
// arguments, or a reply to give the user (usage, "did you mean").
type Parsed struct {
	Command *Command
	Args    []string
	// Reply, when set, is the answer: nothing runs.
	Reply string
}

// Parse splits the text of /scan and finds its command. It is a pure
// function of the registry and the text. Slack may send links and mentions
// escaped (<https://x|x>, <@U1|name>, &amp;) when the command's
// should_escape is on; both forms are accepted.
func (r *Registry) Parse(text string) Parsed {
	words, err := splitWords(text)
	if err != nil {
		return Parsed{Reply: fmt.Sprintf("I could not read that: %s. Try `%s help`.", err, r.Slash)}
	}
	if len(words) == 0 {
		return Parsed{Reply: r.Help()}
	}
	verb := strings.ToLower(words[0])
	if verb == "help" || verb == "-h" || verb == "--help" || verb == "?" {
		if c, ok := r.commands["help"]; ok {
			return Parsed{Command: c, Args: words[1:]}
		}
		return Parsed{Reply: r.Help()}
	}
	c, ok := r.commands[verb]
	args := words[1:]
	if !ok {
		// The bare form takes URLs: /scan https://… (or example.com/path).
		if bare, has := r.commands[""]; has && looksLikeURL(words[0]) {
			c, args = bare, words
		} else {
			reply := fmt.Sprintf("`%s` is not a %s command.", words[0], r.Slash)
			if near := r.closest(verb); near != "" {
				reply += fmt.Sprintf(" Did you mean `%s %s`?", r.Slash, near)
			}
			return Parsed{Reply: reply + "\n" + r.Help()}
		}
	}
	if len(args) < c.MinArgs || (c.MaxArgs >= 0 && len(args) > c.MaxArgs) {
		what := "Not enough arguments"
		if len(args) >= c.MinArgs {
			what = "Too many arguments"
		}
		return Parsed{Reply: fmt.Sprintf("%s. Usage: `%s` — %s", what, r.UsageOf(c), c.Description)}
	}
	return Parsed{Command: c, Args: args}
}

// splitWords splits on white space, honouring double and single quotes,
// and turns Slack's escaped forms back into what the user typed.
func splitWords(text string) ([]string, error) {
	text = strings.TrimSpace(text)
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, ch := range text {
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
				continue
			}
			cur.WriteRune(ch)
		case ch == '"' || ch == '\'' || ch == '“' || ch == '”':
			if ch == '“' || ch == '”' {
				ch = '”'
			}
			quote, inWord = ch, true
		case unicode.IsSpace(ch):
			if inWord {
				words = append(words, unescape(cur.String()))
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("a quote is not closed")
	}
	if inWord {
		words = append(words, unescape(cur.String()))
	}
	return words, nil
}

// unescape turns <https://x|label> into https://x, <@U1|name> into U1-style
// mentions kept as <@U1>, and HTML entities back into characters.
func unescape(w string) string {
	if strings.HasPrefix(w, "<") && strings.HasSuffix(w, ">") {
		inner := w[1 : len(w)-1]
		if i := strings.IndexByte(inner, '|'); i >= 0 {
			inner = inner[:i]
		}
		if strings.HasPrefix(inner, "@") || strings.HasPrefix(inner, "#") || strings.HasPrefix(inner, "!") {
			return "<" + inner + ">"
		}
		w = inner
	}
	return html.UnescapeString(w)
}

// looksLikeURL reports whether a word is meant as a link.
func looksLikeURL(w string) bool {
	lw := strings.ToLower(w)
	if strings.Contains(lw, "://") || strings.HasPrefix(lw, "hxxp") {
		return true // any scheme: the handler says which are not scanned
	}
	// example.com/path or sub.example.org: a dot, no spaces, a letter TLD.
	host := lw
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	dot := strings.LastIndexByte(host, '.')
	return dot > 0 && dot < len(host)-2 && strings.IndexFunc(host[dot+1:], func(r rune) bool { return r < 'a' || r > 'z' }) < 0
}

// closest returns the command name nearest to verb, if it is near.
func (r *Registry) closest(verb string) string {
	best, dist := "", 3
	for name := range r.commands {
		if name == "" {
			continue
		}
		d := editDistance(verb, name)
		if strings.HasPrefix(name, verb) && len(verb) >= 2 {
			d = 0
		}
		if d < dist || (d == dist && name < best) {
			best, dist = name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
