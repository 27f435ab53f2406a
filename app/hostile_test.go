package app_test

import (
	"regexp"
	"strings"
	"testing"
)

// outsideCode is the text of a mrkdwn message outside its code spans
// (what Slack formats and links).
func outsideCode(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i := 0; i < len(parts); i += 2 {
		b.WriteString(parts[i])
		b.WriteByte(' ')
	}
	return b.String()
}

// mustBeInertMrkdwn fails unless text, posted as mrkdwn, can neither
// mention, link nor leave a code span: no raw < or >, every & an entity,
// an even number of backticks, and none of the words in inside (the
// payload a hostile value carried) outside a code span.
func mustBeInertMrkdwn(t *testing.T, what, text string, inside ...string) {
	t.Helper()
	rest := ourMrkdwnTokens.ReplaceAllString(text, "")
	if strings.ContainsAny(rest, "<>") {
		t.Errorf("%s: a raw < or > (a mention or link) in %q", what, text)
	}
	if strings.Count(rest, "&") != len(mrkdwnEntity.FindAllString(rest, -1)) {
		t.Errorf("%s: an & that is not an entity in %q", what, text)
	}
	if strings.Count(text, "`")%2 != 0 {
		t.Errorf("%s: an odd number of backticks (a span left open) in %q", what, text)
	}
	out := outsideCode(text)
	for _, w := range inside {
		if strings.Contains(out, w) {
			t.Errorf("%s: %q escaped its code span in %q", what, w, text)
		}
	}
}

var (
	// ourMrkdwnTokens are the only <…> sequences the bot writes itself:
	// user and channel references, dates and permalinks to threads.
	ourMrkdwnTokens = regexp.MustCompile(`<@[UW][A-Z0-9]+>|<#[CG][A-Z0-9]+>|<!date\^[^<>]*>|<https?://[^<>|]*/archives/[^<>|]*\|a thread>`)
	mrkdwnEntity    = regexp.MustCompile(`&(amp|lt|gt);`)
)
