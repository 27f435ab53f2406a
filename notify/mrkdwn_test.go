package notify

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// hostile are texts a service or a person could send to make an answer
// ping a channel, link somewhere, break out of a code span, or drive the
// reader's terminal.
var hostile = []string{
	"<!channel> <!here> <!everyone> <!subteam^S0ADMINS|@admins> <@U0BOSS>",
	"<https://evil.example/login|click here> & more",
	"https://x.test/?q=`*bold*`<https://evil.example|open>`",
	"https://x.test/?q=` evil.example/login `",
	"```code block``` and `span`",
	"&lt;!channel&gt; &amp; already escaped",
	"\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ bell\x07 \x9b2J csi",
	"line one\nline two\r\noverwritten\rX",
	"left \u202eright-to-left override\u202c \u2066isolate\u2069 zero\u200bwidth \ufeffbom",
	"invalid \xff\xfe utf-8",
	"tag chars \U000e0041\U000e0042",
}

// entity matches what may follow an & in escaped mrkdwn.
var entity = regexp.MustCompile(`&(amp|lt|gt);`)

// checkOutsideText fails when s holds anything Slack would read as markup
// rather than text: a raw < or >, an & that is not one of the three
// entities, a control or invisible character, or a clickable http(s) URL.
func checkOutsideText(t *testing.T, what, s string) {
	t.Helper()
	if strings.ContainsAny(s, "<>") {
		t.Errorf("%s: raw < or > in %q", what, s)
	}
	if strings.Count(s, "&") != len(entity.FindAllString(s, -1)) {
		t.Errorf("%s: an & that is not an entity in %q", what, s)
	}
	for _, r := range s {
		if r != '\ufffd' && unsafeRune(r) { // U+FFFD is what replaces them
			t.Errorf("%s: control or invisible character %U in %q", what, r, s)
		}
	}
	if regexp.MustCompile(`(?i)https?:`).MatchString(s) {
		t.Errorf("%s: a live URL scheme in %q", what, s)
	}
}

func TestCodeIsOneSpanWhateverItHolds(t *testing.T) {
	for _, s := range hostile {
		for name, got := range map[string]string{"Code": Code(s, 300), "CodeURL": CodeURL(s, 300)} {
			checkOutsideText(t, name, got)
			if strings.Count(got, "`") != 2 || !strings.HasPrefix(got, "`") || !strings.HasSuffix(got, "`") {
				t.Errorf("%s(%q) = %q: not exactly one code span", name, s, got)
			}
		}
	}
	// The backtick of the example stays visible, as a lookalike.
	if got := CodeURL("https://x.test/?q=`*bold*`", 200); got != "`hxxps://x[.]test/?q=ˋ*bold*ˋ`" {
		t.Errorf("CodeURL = %q", got)
	}
	if got := Code("", 10); got != "(empty)" {
		t.Errorf("Code(\"\") = %q", got)
	}
	// Cut to the limit, counted escaped.
	if got := Code(strings.Repeat("<", 100), 40); len([]rune(got)) > 42 {
		t.Errorf("Code not cut: %d runes", len([]rune(got)))
	}
}

func TestProseCannotMentionOrLink(t *testing.T) {
	for _, s := range hostile {
		got := Prose(s, 500)
		checkOutsideText(t, "Prose", got)
		if strings.Contains(got, "`") {
			t.Errorf("Prose(%q) = %q: a backtick would open or close a code span", s, got)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("Prose(%q) spans lines: %q", s, got)
		}
	}
	if got := Prose("<!channel> evil.example & co", 100); got != "&lt;!channel&gt; evil[.]example &amp; co" {
		t.Errorf("Prose = %q", got)
	}
	if got := Escape("a < b & c > d"); got != "a &lt; b &amp; c &gt; d" {
		t.Errorf("Escape = %q", got)
	}
}

// checkTerminal fails when s holds anything a terminal would act on.
func checkTerminal(t *testing.T, what, s string, lines bool) {
	t.Helper()
	for _, r := range s {
		if r == '\n' && lines {
			continue
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("%s: %U reaches the terminal in %q", what, r, s)
		}
	}
}

func TestTerminalTextHasNoEscapeSequences(t *testing.T) {
	for _, s := range hostile {
		checkTerminal(t, "TermText", TermText(s), true)
		checkTerminal(t, "TermLine", TermLine(s), false)
		if strings.Count(TermText(s), "\n") != strings.Count(s, "\n") {
			t.Errorf("TermText(%q) changed the line count: %q", s, TermText(s))
		}
	}
	if got := TermText("ok\n\x1b[2Jgone\u202e"); got != "ok\n\ufffd[2Jgone[U+202E]" {
		t.Errorf("TermText = %q", got)
	}
	if got := TermText("plain text, unchanged\n"); got != "plain text, unchanged\n" {
		t.Errorf("TermText changed plain text: %q", got)
	}
}

// TermMrkdwn shows the bot's mrkdwn as a Slack client would, as words,
// and lets no escape sequence through (the shell prints the bot's answers
// with it).
func TestTermMrkdwnShowsReferencesAsWords(t *testing.T) {
	for in, want := range map[string]string{
		// ESC shown as U+FFFD, bidi overrides named (TermText).
		"<@U0YOU> reported `x` &amp; <https://a.test|a link>\x1b[31m": "@U0YOU reported `x` & a link\ufffd[31m",
		"file \u202egnp.exe":                              "file [U+202E]gnp.exe",
		"<#C0SEC|security> and <!here>":                   "#security and @here",
		"<#C0SEC> <!subteam^S0ADMINS|@admins> <!channel>": "#C0SEC @admins @channel",
		"see <https://a.test/x?a=1&amp;b=2>":              "see https://a.test/x?a=1&b=2",
		"&amp;lt;!channel&amp;gt; stays text":             "&lt;!channel&gt; stays text", // one pass
		"&lt;b&gt; &copy; *bold* `code`":                  "<b> &copy; *bold* `code`",
		"two\nlines\r\n":                                  "two\nlines \n", // CR as a space (TermText)
		"plain":                                           "plain",
	} {
		if got := TermMrkdwn(in); got != want {
			t.Errorf("TermMrkdwn(%q) = %q, want %q", in, got, want)
		}
	}
	for _, s := range hostile {
		checkTerminal(t, "TermMrkdwn", TermMrkdwn(s), true)
	}
}

// JSON keeps its values (a machine reads them) but prints nothing a
// terminal acts on: encoding/json leaves DEL, C1 controls and bidi
// overrides raw, TermJSON escapes them.
func TestTermJSONEscapesWhatEncodingJSONLeaves(t *testing.T) {
	type doc struct {
		Family  string `json:"family"`
		Problem string `json:"problem"`
	}
	in := doc{Family: "evil\u009b2J\x7f\u202etxt.exe", Problem: strings.Join(hostile, " | ")}
	raw, err := json.MarshalIndent([]doc{in}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	safe := TermJSON(raw)
	checkTerminal(t, "TermJSON", string(safe), true)
	var out []doc
	if err := json.Unmarshal(safe, &out); err != nil {
		t.Fatalf("TermJSON broke the JSON: %v\n%s", err, safe)
	}
	var want []doc
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0] != want[0] {
		t.Errorf("values changed:\n got %q\nwant %q", out, want)
	}
	if !strings.Contains(string(safe), `\u009b`) || !strings.Contains(string(safe), `\u202e`) || !strings.Contains(string(safe), `\udb40\udc41`) {
		t.Errorf("escapes missing: %s", safe)
	}
}
