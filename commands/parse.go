package commands

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/verdictbot/verdictbot/notify"
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
		return Parsed{Reply: fmt.Sprintf("I could not read that: %s. Try `%s help`.", notify.Prose(err.Error(), 100), r.Slash)}
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
		bare, has := r.commands[""]
		switch {
		case has && looksLikeURL(words[0]):
			// The bare form takes URLs: /scan https://… (or example.com/path).
			c, args = bare, words
		case has && isPlaceholder(bare, verb):
			// The help's placeholder typed as a word: /scan url https://…
			c, args = bare, words
		default:
			reply := fmt.Sprintf("%s is not a %s command.", notify.Code(words[0], 40), r.Slash)
			if near := r.closest(verb); near != "" {
				reply += fmt.Sprintf(" Did you mean %s?", code(r.Slash+" "+near))
			}
			return Parsed{Reply: reply + "\n" + r.Help()}
		}
	}
	args, hint := r.dropPlaceholders(c, args)
	if hint != "" {
		return Parsed{Reply: hint}
	}
	if len(args) < c.MinArgs || (c.MaxArgs >= 0 && len(args) > c.MaxArgs) {
		what := "Not enough arguments"
		if len(args) >= c.MinArgs {
			what = "Too many arguments"
		}
		reply := fmt.Sprintf("%s. Usage: %s — %s", what, code(r.UsageOf(c)), notify.Escape(c.Description))
		if len(c.Examples) > 0 {
			reply += fmt.Sprintf(". For example %s.", code(c.Examples[0]))
		}
		return Parsed{Reply: reply}
	}
	return Parsed{Command: c, Args: args}
}

// placeholderRe finds the placeholders of a usage: <task_id>,
// <md5|sha1|sha256>, and bracketed single words ([n], [domain]); [on|off]
// are literal choices, not placeholders.
var placeholderRe = regexp.MustCompile(`<([^<>]+)>|\[([a-z_]+)\]`)

// placeholders returns the words standing for values in c's usage
// ("task_id", "md5", "sha1"…), lower case.
func placeholders(c *Command) []string {
	var words []string
	for _, m := range placeholderRe.FindAllStringSubmatch(c.Usage, -1) {
		inner := m[1] + m[2]
		for w := range strings.SplitSeq(inner, "|") {
			words = append(words, strings.ToLower(strings.TrimRight(w, "…")))
		}
	}
	return words
}

func isPlaceholder(c *Command, word string) bool {
	return slices.Contains(placeholders(c), strings.ToLower(word))
}

// dropPlaceholders removes a placeholder typed as a word in front of its
// value (/scan status task_id 4711, /scan hash sha256 <digest>). A
// placeholder with no value after it is answered with what to type.
func (r *Registry) dropPlaceholders(c *Command, args []string) ([]string, string) {
	out := args[:0:0]
	for i, a := range args {
		if !isPlaceholder(c, a) {
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && !isPlaceholder(c, args[i+1]) {
			continue // the value follows
		}
		hint := fmt.Sprintf("%s stands for a value: type the value itself in its place.", code("<"+strings.ToLower(a)+">"))
		if len(c.Examples) > 0 {
			hint += fmt.Sprintf(" For example %s.", code(c.Examples[0]))
		}
		return nil, hint + " Usage: " + code(r.UsageOf(c))
	}
	return out, ""
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

// unescape turns HTML entities back into characters, <https://x|label>
// (and a value typed in the help's angle brackets, <4711>) into
// https://x, <@U1|name> into U1-style mentions kept as <@U1>, and a value
// typed in the help's square brackets ([10]) into the value.
func unescape(w string) string {
	w = html.UnescapeString(w)
	if len(w) > 2 && strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
		return w[1 : len(w)-1]
	}
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
	return w
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
