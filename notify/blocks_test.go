package notify

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/verdict"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./notify -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s\n(run with -update if the change is intended)", path, got)
	}
}

func sortedNames(m map[string]*card.Card) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestBlocksGolden(t *testing.T) {
	cards := sampleCards()
	for _, name := range sortedNames(cards) {
		t.Run(name, func(t *testing.T) {
			c := cards[name]
			blocks, fallback := Blocks(c)
			checkCard(t, blocks, fallback)
			got, err := json.MarshalIndent(struct {
				Fallback string        `json:"fallback"`
				Blocks   []slack.Block `json:"blocks"`
			}{fallback, blocks}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".golden.json", append(got, '\n'))
		})
	}
}

// TestBlocksGoldenFacts spells out, independently of the golden files, the
// facts a reader relies on.
func TestBlocksGoldenFacts(t *testing.T) {
	cards := sampleCards()
	js := func(c *card.Card) (string, string) {
		b, fb := Blocks(c)
		return mustJSON(t, b), fb
	}

	s, fb := js(cards["malicious_audit"])
	for _, want := range []string{
		`:red_circle: *Malicious* — do not open`,
		"requested by <@U0ANALYST>",
		"`hxxps://paypal[.]com[.]account-check[.]example/login?user=a&amp;b=&lt;c&gt;`",
		"*phishing 97%*",
		`reported a false positive (phishing) · <!date^1795342800^{date_short_pretty} {time}|2026-11-22 10:20 UTC>`,
		`service said: task not completed yet`,
		`"action_id":"verdict_category"`, `"action_id":"verdict_fp"`, `"action_id":"verdict_fn"`, `"action_id":"verdict_restore"`,
		`"block_id":"line-0"`, `"style":"danger"`,
		`"value":"v1|0|phishing|t-301"`,
		`Rechecked 2026-11-22 10:15 UTC: now malicious.`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("malicious card lacks %s", want)
		}
	}
	if fb != "verdictbot: 1 malicious link in this message" {
		t.Errorf("fallback = %q", fb)
	}
	// The page title is attacker-controlled: it must not format, link or mention.
	if !strings.Contains(s, "`Log in *now* – ˋPayPalˋ &lt;script&gt; &amp; see hxxps://paypal[.]com[.]account-check[.]example/a`") {
		t.Errorf("detail not shown as an escaped, defanged code span:\n%s", s)
	}

	s, fb = js(cards["scanning"])
	if !strings.Contains(s, `:hourglass_flowing_sand: *Scanning…*`) || !strings.Contains(s, "(queued)") {
		t.Errorf("scanning card: %s", s)
	}
	if fb != "verdictbot: scanning 2 links and 1 file…" {
		t.Errorf("fallback = %q", fb)
	}
	if strings.Contains(s, "verdict_fp") {
		t.Error("pending lines must have no feedback buttons")
	}

	s, _ = js(cards["file_screenshots"])
	for _, want := range []string{"file `invoice.pdf.exe`", "734 kB", "malscore *8.5*/10", "family `Emotet`",
		"SHA256 `e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`", "added 2026-11-22 10:00:01",
		"2 screenshots in this thread"} {
		if !strings.Contains(s, want) {
			t.Errorf("file card lacks %q", want)
		}
	}

	s, fb = js(cards["skipped_leftout"])
	for _, want := range []string{"`hxxp://10[.]0[.]0[.]5/admin` — private or internal host",
		"5 more links were not checked (limit 10 per message), so this message cannot be called clean",
		":grey_question: *Could not check* — the check could not complete"} {
		if !strings.Contains(s, want) {
			t.Errorf("skipped card lacks %q", want)
		}
	}
	// Links left out past the limit: the message is not clean.
	if fb != "verdictbot: could not check 5 links in this message" {
		t.Errorf("fallback = %q", fb)
	}

	s, fb = js(cards["could_not_check"])
	if !strings.Contains(s, ":grey_question: *Could not check*") || !strings.Contains(s, "did not answer in time") {
		t.Errorf("could-not-check card: %s", s)
	}
	if fb != "verdictbot: could not check 1 link in this message" {
		t.Errorf("fallback = %q", fb)
	}
}

func TestHeadlineWhileScanning(t *testing.T) {
	c := &card.Card{Lines: []card.Line{
		{Target: "https://a.example/", Level: verdict.Clean},
		{Target: "https://b.example/", Level: verdict.Pending},
	}}
	blocks, _ := Blocks(c)
	if s := sectionText(blocks[0]); !strings.HasPrefix(s, ":hourglass_flowing_sand: *Scanning…*") {
		t.Errorf("clean + pending should read as scanning, got %q", s)
	}
	c.Lines[0].Level = verdict.Malicious
	blocks, fb := Blocks(c)
	if s := sectionText(blocks[0]); !strings.HasPrefix(s, ":red_circle: *Malicious* — do not open · still checking 1") {
		t.Errorf("malicious + pending should warn at once, got %q", s)
	}
	if fb != "verdictbot: 1 malicious link in this message (still checking)" {
		t.Errorf("fallback = %q", fb)
	}
	empty := &card.Card{Final: true}
	if _, fb := Blocks(empty); fb != "verdictbot: nothing to check" {
		t.Errorf("empty card fallback = %q", fb)
	}
}

func sectionText(b slack.Block) string {
	if s, ok := b.(*slack.SectionBlock); ok && s.Text != nil {
		return s.Text.Text
	}
	return ""
}

func TestActionValueRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		idx  int
		task string
		cat  verdict.Category
	}{
		{0, "t-1", verdict.CatPhishing},
		{9, "abc|def|ghi", verdict.CatIllegal},
		{123, "ünïcode-✓", verdict.CatAdvertising},
	} {
		v := EncodeActionValue(tc.idx, tc.task, tc.cat)
		idx, task, cat, err := DecodeActionValue(v)
		if err != nil || idx != tc.idx || task != tc.task || cat != tc.cat {
			t.Errorf("DecodeActionValue(%q) = %d, %q, %q, %v", v, idx, task, cat, err)
		}
	}
	for _, bad := range []string{"", "v1", "v2|0|phishing|t", "v1|-1|phishing|t", "v1|x|phishing|t", "v1|0|spam|t", "v1|0|phishing|"} {
		if _, _, _, err := DecodeActionValue(bad); err == nil {
			t.Errorf("DecodeActionValue(%q) accepted", bad)
		}
	}
}

func TestSanitize(t *testing.T) {
	in := "a\nb\tc\x1b[31md\u202egnp.exe\u200b\xffz"
	want := "a b c\uFFFD[31md[U+202E]gnp.exe[U+200B]\uFFFDz"
	if got := sanitize(in); got != want {
		t.Errorf("sanitize = %q, want %q", got, want)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 50) + "🙂&<>" + strings.Repeat("b", 50) + ".exe"
	for _, limit := range []int{1, 2, 5, 10, 33, 60, 200} {
		for _, tail := range []bool{false, true} {
			got := clip(long, limit, tail)
			if !utf8.ValidString(got) {
				t.Fatalf("clip(%d, %v) split a rune: %q", limit, tail, got)
			}
			if n := textLen(escapeMrkdwn(got)); n > limit {
				t.Errorf("clip(%d, %v) = %q costs %d", limit, tail, got, n)
			}
		}
	}
	if got := clip(long, 40, true); !strings.HasSuffix(got, ".exe") || !strings.Contains(got, "…") {
		t.Errorf("a middle clip should keep the end: %q", got)
	}
	if got := clip("short", 10, true); got != "short" {
		t.Errorf("clip changed a short string: %q", got)
	}
}

// checkCard fails the test unless blocks keep to every Slack limit the
// renderer promises, escape all untrusted text and link nothing.
func checkCard(t testing.TB, blocks []slack.Block, fallback string) {
	t.Helper()
	if len(blocks) == 0 || len(blocks) > maxBlocks {
		t.Fatalf("%d blocks, want 1..%d", len(blocks), maxBlocks)
	}
	ids := map[string]bool{}
	var texts []string
	checkText := func(where string, o *slack.TextBlockObject, max int) {
		t.Helper()
		if o == nil {
			t.Errorf("%s: missing text", where)
			return
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%s: %v (%q)", where, err, clip(o.Text, 200, true))
		}
		if n := textLen(o.Text); n > max {
			t.Errorf("%s: %d characters, limit %d", where, n, max)
		}
		if !utf8.ValidString(o.Text) {
			t.Errorf("%s: invalid UTF-8", where)
		}
		if o.Type == slack.MarkdownType {
			texts = append(texts, o.Text)
		}
	}
	for i, b := range blocks {
		where := fmt.Sprintf("block %d (%s)", i, b.BlockType())
		id := b.ID()
		if id == "" || len(id) > 255 || ids[id] {
			t.Errorf("%s: block_id %q empty, too long or repeated", where, id)
		}
		ids[id] = true
		switch b := b.(type) {
		case *slack.SectionBlock:
			checkText(where, b.Text, maxSectionText)
			if len(b.Fields) > 10 {
				t.Errorf("%s: %d fields", where, len(b.Fields))
			}
			for _, f := range b.Fields {
				checkText(where+" field", f, 2000)
			}
		case *slack.ContextBlock:
			els := b.ContextElements.Elements
			if len(els) == 0 || len(els) > maxContextElements {
				t.Errorf("%s: %d elements", where, len(els))
			}
			for _, e := range els {
				o, ok := e.(*slack.TextBlockObject)
				if !ok {
					t.Errorf("%s: element %T", where, e)
					continue
				}
				checkText(where+" element", o, 3000)
			}
		case *slack.ActionBlock:
			els := b.Elements.ElementSet
			if len(els) == 0 || len(els) > 25 {
				t.Errorf("%s: %d elements", where, len(els))
			}
			actionIDs := map[string]bool{}
			for _, e := range els {
				switch e := e.(type) {
				case *slack.ButtonBlockElement:
					checkText(where+" button", e.Text, 75)
					if len(e.Value) > maxButtonValue {
						t.Errorf("%s: value of %d bytes", where, len(e.Value))
					}
					if _, _, _, err := DecodeActionValue(e.Value); err != nil {
						t.Errorf("%s: %v", where, err)
					}
					if e.URL != "" {
						t.Errorf("%s: button links to %q", where, e.URL)
					}
					if e.Confirm != nil {
						checkText(where+" confirm title", e.Confirm.Title, 100)
						checkText(where+" confirm text", e.Confirm.Text, 300)
						checkText(where+" confirm button", e.Confirm.Confirm, 30)
						checkText(where+" deny button", e.Confirm.Deny, 30)
					}
					if len(e.ActionID) > 255 || actionIDs[e.ActionID] {
						t.Errorf("%s: action_id %q", where, e.ActionID)
					}
					actionIDs[e.ActionID] = true
				case *slack.SelectBlockElement:
					if len(e.Options) == 0 || len(e.Options) > 100 {
						t.Errorf("%s: %d options", where, len(e.Options))
					}
					found := false
					for _, o := range e.Options {
						checkText(where+" option", o.Text, 75)
						if len(o.Value) > 150 {
							t.Errorf("%s: option value %q", where, o.Value)
						}
						if e.InitialOption != nil && o.Value == e.InitialOption.Value {
							found = true
						}
					}
					if e.InitialOption != nil && !found {
						t.Errorf("%s: initial option %q is not an option", where, e.InitialOption.Value)
					}
					actionIDs[e.ActionID] = true
				default:
					t.Errorf("%s: unexpected element %T", where, e)
				}
			}
		default:
			t.Errorf("%s: unexpected block %T", where, b)
		}
	}
	if n := blocksText(blocks); n > maxCardText {
		t.Errorf("card holds %d characters of text, budget %d", n, maxCardText)
	}
	if err := validate(blocks); err != nil {
		t.Errorf("validate: %v", err)
	}
	for _, s := range texts {
		checkMrkdwn(t, s)
	}
	if fallback == "" || strings.Contains(fallback, "://") || strings.ContainsAny(fallback, "<>&`") {
		t.Errorf("fallback %q is empty or carries a URL or markup", fallback)
	}
	// Slack must accept its own decoding of what we send.
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var back slack.Blocks
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Errorf("slack-go cannot read the blocks back: %v", err)
	} else if len(back.BlockSet) != len(blocks) {
		t.Errorf("read back %d blocks of %d", len(back.BlockSet), len(blocks))
	}
}

var (
	// ourTokens are the only angle-bracket sequences a card may hold.
	ourTokens = regexp.MustCompile(`<@[UW][A-Z0-9]+>|<!date\^\d+\^\{date_short_pretty\} \{time\}\|[0-9: -]+UTC>`)
	// entities are the only escapes.
	entities = regexp.MustCompile(`&(amp|lt|gt);`)
	// liveURL is an http(s) URL Slack would link.
	liveURL = regexp.MustCompile(`(?i)(^|[^a-z0-9+.\-])https?://`)
)

// checkMrkdwn fails unless s escapes &, <, > except in our own tokens, and
// holds no live http(s) URL.
func checkMrkdwn(t testing.TB, s string) {
	t.Helper()
	rest := ourTokens.ReplaceAllString(s, "")
	if strings.ContainsAny(rest, "<>") {
		t.Errorf("unescaped < or > in %q", clip(s, 300, true))
	}
	if strings.Contains(entities.ReplaceAllString(rest, ""), "&") {
		t.Errorf("unescaped & in %q", clip(s, 300, true))
	}
	if liveURL.MatchString(s) {
		t.Errorf("live URL in %q", clip(s, 300, true))
	}
}

// nasty are strings that have broken renderers before.
var nasty = []string{
	"",
	"`",
	"```code```",
	"*bold* _it_ ~strike~ > quote",
	"<!channel> <@U123> <https://evil.example|click> &amp; &",
	"line\nbreak\r\n\ttab",
	"\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
	"\u202egnp.exe", "zero\u200bwidth\u2060joiner\ufeff",
	"🙂👩‍👩‍👧‍👦🇫🇷", "e\u0301\u0301\u0301", "日本語のテキスト", "עברית العربية",
	"\xff\xfe invalid utf8 \xc3",
	"HTTPS://EVIL.EXAMPLE/UPPER",
	"https://evil.example/" + strings.Repeat("a/", 2500),
	strings.Repeat("&<>", 1000),
	strings.Repeat("🙂", 3000),
}

// randomText draws a string mixing ordinary and nasty pieces.
func randomText(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return nasty[r.IntN(len(nasty))]
	case 1:
		return fmt.Sprintf("Page %d – see https://h%d.bad-host.example/x and bad-host.example", r.IntN(100), r.IntN(100))
	case 2:
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(nasty[r.IntN(len(nasty))])
			b.WriteString(" ")
		}
		return b.String()
	}
	return "ordinary text"
}

// randomTarget draws a URL on bad-host.example, sometimes long or odd.
func randomTarget(r *rand.Rand) string {
	base := fmt.Sprintf("https://h%d.bad-host.example", r.IntN(1000))
	switch r.IntN(6) {
	case 0:
		return base + "/" + strings.Repeat("x", r.IntN(6000))
	case 1:
		return base + "/" + nasty[r.IntN(len(nasty))]
	case 2:
		return "HTTP://" + strings.ToUpper(base[8:]) + "/?a=1&b=<2>"
	case 3:
		return base + "/" + strings.Repeat("🙂&", r.IntN(2000))
	}
	return base + "/login"
}

func randomCard(r *rand.Rand) *card.Card {
	c := &card.Card{Channel: "C1", ThreadTS: "1.2", Final: r.IntN(2) == 0}
	if r.IntN(3) == 0 {
		c.RequestedBy = []string{"U0ABC", "not-an-id <@U1>", ""}[r.IntN(3)]
	}
	nLines := r.IntN(12)
	if r.IntN(4) == 0 {
		nLines = r.IntN(120)
	}
	for range nLines {
		l := card.Line{
			Kind:     card.KindURL,
			Target:   randomTarget(r),
			Level:    verdict.Level(r.IntN(6)),
			Category: verdict.Categories[r.IntN(4)],
			Service:  "reputation",
			TaskID:   fmt.Sprintf("t-%d", r.IntN(1e6)),
			Status:   randomText(r),
			Cached:   r.IntN(2) == 0,
			Actions:  r.IntN(2) == 0,
		}
		if r.IntN(5) == 0 {
			// Literals (task ids, file names, hashes, types) are shown
			// exactly, in code spans, with only their links defanged: draw
			// them from strings without bare host names.
			l.TaskID = nasty[r.IntN(len(nasty))]
		}
		if r.IntN(2) == 0 {
			l.Scores = urlScores(r.Float64(), r.Float64()*2, -r.Float64(), math.NaN())
		}
		if r.IntN(2) == 0 {
			l.Detail = randomText(r)
		}
		if r.IntN(3) == 0 {
			l.Problem = randomText(r)
		}
		if r.IntN(2) == 0 {
			l.CheckedAt = testTime
		}
		if r.IntN(4) == 0 {
			l.Kind = card.KindFile
			l.Target = "file-" + nasty[r.IntN(len(nasty))] // names are not host-defanged, only links
			lit := func() string { return nasty[r.IntN(len(nasty))] }
			l.File = &card.FileInfo{Name: l.Target, Type: lit(), Size: r.Int64N(1 << 40), MD5: lit(),
				SHA1: strings.Repeat("a", 40), SHA256: lit(), MalScore: r.Float64() * 10, Family: lit(),
				AddedOn: randomText(r), StartedOn: "2026-11-22", DoneOn: randomText(r), Screenshots: r.IntN(4)}
		}
		for range r.IntN(3) * r.IntN(12) {
			l.Reports = append(l.Reports, card.Report{
				User: []string{"U0ABC", "W0XYZ", "bad<user>", ""}[r.IntN(4)], Option: []string{"fp", "fn", "restore", randomText(r)}[r.IntN(4)],
				Category: verdict.Categories[r.IntN(4)], At: testTime.Add(time.Duration(r.IntN(1000)) * time.Minute), Outcome: []string{"", randomText(r)}[r.IntN(2)],
			})
		}
		c.Lines = append(c.Lines, l)
	}
	for range r.IntN(3) * r.IntN(30) {
		c.Skipped = append(c.Skipped, card.Skip{Target: randomTarget(r), Reason: randomText(r)})
	}
	if r.IntN(3) == 0 {
		c.LeftOut, c.MaxLinks = r.IntN(100), 10
	}
	for range r.IntN(3) * r.IntN(15) {
		c.Notes = append(c.Notes, randomText(r))
	}
	return c
}

// TestBlocksProperties renders many generated cards — up to 120 lines,
// 6,000-character URLs, odd unicode, control characters, Slack markup in
// every field — and checks each against Slack's limits and the card's
// promises.
func TestBlocksProperties(t *testing.T) {
	t.Parallel()
	n := 400
	switch {
	case testing.Short():
		n = 50
	case raceEnabled:
		n = 120
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		c := randomCard(r)
		blocks, fallback := Blocks(c)
		checkCard(t, blocks, fallback)
		raw, _ := json.Marshal(blocks)
		if j := bytes.Index(bytes.ToLower(raw), []byte("bad-host.example")); j >= 0 {
			t.Errorf("card %d shows an undefanged host: …%s…", i, raw[max(0, j-200):min(len(raw), j+100)])
		}
		// Every line is shown or counted.
		shown := 0
		for _, b := range blocks {
			if strings.HasSuffix(b.ID(), "-verdict") {
				shown++
			}
		}
		if shown < len(c.Lines) {
			more := ""
			for _, b := range blocks {
				if b.ID() == "more" {
					more = b.(*slack.ContextBlock).ContextElements.Elements[0].(*slack.TextBlockObject).Text
				}
			}
			re := regexp.MustCompile(fmt.Sprintf(`^…and %d more (link|file|target)s? not shown: `, len(c.Lines)-shown))
			if !re.MatchString(more) {
				t.Errorf("card %d shows %d of %d lines; more note %q, want it to match %s", i, shown, len(c.Lines), more, re)
			}
			// The lines drawn are the worst ones.
			if hidden, shown := hiddenWorst(c, blocks); hidden > shown {
				t.Errorf("card %d: a line more worrying than one drawn is hidden", i)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		checkCard(t, minimalBlocks(c), fallback)
		text := Text(c, false)
		if strings.ContainsRune(text, '\x1b') || liveURL.MatchString(text) || strings.Contains(strings.ToLower(text), "bad-host.example") {
			t.Fatalf("card %d: text rendering leaks escapes or live URLs:\n%s", i, clip(text, 2000, false))
		}
	}
}

// TestBlocksTenFullLines checks that a realistic worst case — ten URL lines
// (the default limit) with controls, long URLs and several reports each —
// is shown whole.
func TestBlocksTenFullLines(t *testing.T) {
	c := &card.Card{Channel: "C1", Final: true}
	for i := range 10 {
		l := card.Line{Kind: card.KindURL, Target: "https://very-long-subdomain.bad-host.example/" + strings.Repeat("path/", 200),
			Level: verdict.Malicious, Category: verdict.CatPhishing, Scores: urlScores(0.9, 0, 0, 0),
			Service: "reputation", TaskID: fmt.Sprintf("t-%d", i), Actions: true, Detail: strings.Repeat("title ", 100)}
		for j := range 4 {
			l.Reports = append(l.Reports, card.Report{User: "U0ABC", Option: "fp", Category: verdict.CatPhishing, At: testTime.Add(time.Duration(j) * time.Minute), Outcome: "task not completed yet"})
		}
		c.Lines = append(c.Lines, l)
	}
	blocks, fb := Blocks(c)
	checkCard(t, blocks, fb)
	for _, b := range blocks {
		if b.ID() == "more" {
			t.Fatalf("ten lines should all fit, got a more note")
		}
	}
	if got := strings.Count(mustJSON(t, blocks), `"action_id":"verdict_fp"`); got != 10 {
		t.Errorf("%d lines have controls, want 10", got)
	}
}

// mustJSON marshals v without HTML escaping, so tests can look for "<" and
// "&amp;" as Slack will see them.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	// slack-go's own MarshalJSON methods escape HTML regardless.
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(b.String())
}

// FuzzBlocks checks the invariants on a one-line card built from fuzzed
// strings.
func FuzzBlocks(f *testing.F) {
	for _, s := range nasty {
		f.Add(s, s, s)
	}
	f.Add("https://evil.example/a", "Title https://x.example", "note")
	f.Fuzz(func(t *testing.T, target, detail, note string) {
		c := &card.Card{Channel: "C1", Final: true,
			Lines: []card.Line{{Kind: card.KindURL, Target: target, Level: verdict.Malicious, Category: verdict.CatPhishing,
				Scores: urlScores(1, 0, 0, 0), TaskID: "t-1", Actions: true, Detail: detail, Problem: note,
				Reports: []card.Report{{User: "U0ABC", Option: "fp", At: testTime, Outcome: note}}}},
			Skipped: []card.Skip{{Target: target, Reason: note}},
			Notes:   []string{note},
		}
		blocks, fb := Blocks(c)
		checkCard(t, blocks, fb)
		for _, s := range []string{Text(c, false), Text(c, true)} {
			if liveURL.MatchString(s) {
				t.Fatalf("live URL in text: %q", s)
			}
		}
	})
}

func FuzzDecodeActionValue(f *testing.F) {
	f.Add(EncodeActionValue(3, "t|1", verdict.CatIllegal))
	f.Add("v1|0|phishing|")
	f.Fuzz(func(t *testing.T, v string) {
		idx, task, cat, err := DecodeActionValue(v)
		if err != nil {
			return
		}
		if again := EncodeActionValue(idx, task, cat); again != v {
			// Accepted values round-trip up to the category's case.
			if _, _, cat2, _ := DecodeActionValue(again); cat2 != cat {
				t.Fatalf("%q decoded to %d %q %q, which encodes as %q", v, idx, task, cat, again)
			}
		}
	})
}

// shownLines returns the indices (into Card.Lines) of the lines a card's
// blocks draw, in the order drawn.
func shownLines(blocks []slack.Block) []int {
	var out []int
	for _, b := range blocks {
		if id, ok := strings.CutSuffix(b.ID(), "-verdict"); ok {
			n, _ := strconv.Atoi(strings.TrimPrefix(id, "line-"))
			out = append(out, n)
		}
	}
	return out
}

// rankOf is a level's place in the card's order (0: shown first).
func rankOf(l verdict.Level) int { return slices.Index(levelsWorstFirst, l) }

// hiddenWorst returns the best rank among the lines not drawn and the
// worst among those drawn: drawn worst first, the first is never below
// the second.
func hiddenWorst(c *card.Card, blocks []slack.Block) (hidden, shown int) {
	drawn := map[int]bool{}
	hidden, shown = len(levelsWorstFirst), -1
	for _, i := range shownLines(blocks) {
		drawn[i] = true
		shown = max(shown, rankOf(c.Lines[i].Level))
	}
	for i := range c.Lines {
		if !drawn[i] {
			hidden = min(hidden, rankOf(c.Lines[i].Level))
		}
	}
	return len(levelsWorstFirst) - hidden, len(levelsWorstFirst) - shown
}

// TestBlocksManyLines: a hundred links cannot all be drawn; the bad one,
// last in the message, is drawn first, its buttons still name its own
// line, and the note says how many are not shown and what they are.
func TestBlocksManyLines(t *testing.T) {
	c := &card.Card{Channel: "C1", Final: true}
	for i := range 100 {
		c.Lines = append(c.Lines, card.Line{Kind: card.KindURL, Target: fmt.Sprintf("https://h%d.example/", i), Level: verdict.Clean,
			Category: verdict.CatPhishing, Scores: urlScores(0, 0, 0, 0), TaskID: fmt.Sprintf("t-%d", i), Actions: true})
	}
	c.Lines[99].Level = verdict.Malicious
	blocks, fb := Blocks(c)
	checkCard(t, blocks, fb)
	if len(blocks) != maxBlocks {
		t.Errorf("%d blocks; the card should use all %d", len(blocks), maxBlocks)
	}
	if shown := shownLines(blocks); len(shown) == 0 || shown[0] != 99 {
		t.Fatalf("lines drawn %v: the malicious line (99) should come first", shown)
	}
	if blocks[1].ID() != LineBlockID(99)+"-verdict" || blocks[2].ID() != LineBlockID(99) {
		t.Errorf("second and third blocks %q, %q: want the malicious line's section and controls", blocks[1].ID(), blocks[2].ID())
	}
	if !strings.Contains(mustJSON(t, blocks[2]), `"value":"`+EncodeActionValue(99, "t-99", verdict.CatPhishing)+`"`) {
		t.Errorf("the malicious line's buttons do not name line 99: %s", mustJSON(t, blocks[2]))
	}
	more := blocks[len(blocks)-1].(*slack.ContextBlock).ContextElements.Elements[0].(*slack.TextBlockObject).Text
	if !regexp.MustCompile(`^…and \d+ more links not shown: \d+ clean$`).MatchString(more) {
		t.Errorf("more note %q", more)
	}
	if s := sectionText(blocks[0]); !strings.HasPrefix(s, ":red_circle: *Malicious*") {
		t.Errorf("summary %q should reflect the malicious line", s)
	}
}

// TestBlocks200Lines: the most links a message can have checked
// (links.MaxMaxLinks) render as a card Slack accepts — at most 50 blocks,
// every text object within its limit, the card's total text within
// bounds — with the worst lines first and the rest summarised per level;
// the terminal text summarises the same way.
func TestBlocks200Lines(t *testing.T) {
	c := &card.Card{Channel: "C1", SourceTS: "1.2", Final: true, LeftOut: 7, MaxLinks: 200}
	levels := map[int]verdict.Level{13: verdict.Malicious, 150: verdict.Suspicious, 199: verdict.Malicious, 42: verdict.Unknown, 77: verdict.Pending}
	for i := range 200 {
		lvl, ok := levels[i]
		if !ok {
			lvl = verdict.Clean
		}
		l := card.Line{Kind: card.KindURL, Target: fmt.Sprintf("https://h%d.example/%s", i, strings.Repeat("p/", 40)), Level: lvl,
			Category: verdict.CatPhishing, Scores: urlScores(0.1, 0.2, 0.3, 0.4), Service: "reputation",
			TaskID: fmt.Sprintf("%032x", i), Actions: lvl != verdict.Pending && lvl != verdict.Unknown, Detail: "Title", CheckedAt: testTime}
		if lvl == verdict.Unknown {
			l.Problem = "The URL service did not answer in time."
		}
		c.Lines = append(c.Lines, l)
	}
	for i := range 30 {
		c.Skipped = append(c.Skipped, card.Skip{Target: fmt.Sprintf("https://files.slack.com/f%d", i), Reason: "allowlisted domain"})
	}
	blocks, fb := Blocks(c)
	checkCard(t, blocks, fb)
	if err := validate(blocks); err != nil {
		t.Fatalf("validate: %v", err)
	}
	shown := shownLines(blocks)
	if len(shown) < 5 || !slices.Equal(shown[:5], []int{13, 199, 150, 42, 77}) {
		t.Fatalf("lines drawn %v: want the malicious (13, 199), suspicious (150), could-not-check (42) and scanning (77) lines first", shown)
	}
	var more string
	for _, b := range blocks {
		if b.ID() == "more" {
			more = b.(*slack.ContextBlock).ContextElements.Elements[0].(*slack.TextBlockObject).Text
		}
	}
	if want := fmt.Sprintf("…and %d more links not shown: %d clean", 200-len(shown), 200-len(shown)); more != want {
		t.Errorf("more note %q, want %q", more, want)
	}
	all := mustJSON(t, blocks)
	for _, want := range []string{"7 more links were not checked (limit 200 per message)", "Not checked:", ":red_circle: *Malicious*"} {
		if !strings.Contains(all, want) {
			t.Errorf("card lacks %q", want)
		}
	}
	if fb != "verdictbot: 2 malicious links in this message" {
		t.Errorf("fallback %q", fb)
	}

	text := Text(c, false)
	lines := strings.Split(text, "\n")
	var numbered []string
	for _, l := range lines {
		if m := regexp.MustCompile(`^(\d+)\. `).FindStringSubmatch(l); m != nil {
			numbered = append(numbered, m[1])
		}
	}
	if len(numbered) != textMaxLines || !slices.Equal(numbered[:5], []string{"14", "200", "151", "43", "78"}) {
		t.Errorf("terminal lines %v: want %d, worst first, numbered as in the message", numbered, textMaxLines)
	}
	if want := fmt.Sprintf("…and %d more links not shown: %d clean", 200-textMaxLines, 200-textMaxLines); !strings.Contains(text, want) {
		t.Errorf("terminal text lacks %q", want)
	}
}

func TestValidate(t *testing.T) {
	long := sectionBlock("a", strings.Repeat("x", maxSectionText+1))
	if validate([]slack.Block{long}) == nil {
		t.Error("a 3001-character section passed")
	}
	if validate([]slack.Block{slack.NewDividerBlock()}) == nil {
		t.Error("an unknown block type passed")
	}
	many := make([]slack.Block, maxBlocks+1)
	for i := range many {
		many[i] = sectionBlock(fmt.Sprint(i), "x")
	}
	if validate(many) == nil {
		t.Error("51 blocks passed")
	}
}
