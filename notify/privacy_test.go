package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/verdict"
)

// A line withheld because its host resolves inside the network reads "Not
// checked" with the reason, in the card and in the terminal; a line whose
// query was stripped says the query was not sent.
func TestWithheldAndQueryNotSentLines(t *testing.T) {
	c := &card.Card{Final: true, Lines: []card.Line{
		{Kind: card.KindURL, Target: "http://localtest.me/admin", Level: verdict.Skipped, Problem: "resolves to a private address"},
	}}
	blocks, fb := Blocks(c)
	raw, _ := json.Marshal(blocks)
	for _, want := range []string{"Not checked", "localtest[.]me", "resolves to a private address", "1 link: 1 not checked"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("card lacks %q: %s", want, raw)
		}
	}
	if strings.Contains(string(raw), ActionFalsePositive) {
		t.Error("a withheld line has feedback buttons")
	}
	if fb != "verdictbot: 1 link not checked" {
		t.Errorf("fallback %q", fb)
	}
	if txt := Text(c, false); !strings.Contains(txt, "resolves to a private address") || !strings.Contains(txt, "NOT CHECKED") && !strings.Contains(txt, "Not checked") {
		t.Errorf("text:\n%s", txt)
	}

	q := &card.Card{Final: true, Lines: []card.Line{
		{Kind: card.KindURL, Target: "https://app.example.com/magic", Level: verdict.Clean, QueryNotSent: true, TaskID: "0123456789abcdef0123456789abcdef"},
		{Kind: card.KindURL, Target: "https://example.org/", Level: verdict.Clean},
	}}
	blocks, _ = Blocks(q)
	raw, _ = json.Marshal(blocks)
	if n := strings.Count(string(raw), "query not sent"); n != 1 {
		t.Errorf("%d lines say the query was not sent, want 1: %s", n, raw)
	}
	if txt := Text(q, false); strings.Count(txt, "query not sent") != 1 {
		t.Errorf("text:\n%s", txt)
	}
}
