package notify

import (
	"regexp"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/card"
)

func TestTextGolden(t *testing.T) {
	cards := sampleCards()
	for _, name := range sortedNames(cards) {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".golden.txt", []byte(Text(cards[name], false)))
		})
	}
	t.Run("malicious_audit_color", func(t *testing.T) {
		golden(t, "malicious_audit.color.golden.txt", []byte(Text(cards["malicious_audit"], true)))
	})
}

func TestTextFacts(t *testing.T) {
	c := sampleCards()["malicious_audit"]
	s := Text(c, false)
	for _, want := range []string{
		"1. MALICIOUS · hxxps://paypal[.]com[.]account-check[.]example/login?user=a&b=<c>",
		"[fp 1] [fn 1] [restore 1] (category: phishing)",
		"[fp 2] [fn 2] [restore 2] (category: advertising)",
		"@U0ANALYST reported a false positive (phishing) · 2026-11-22 10:20 UTC",
		"service said: task not completed yet",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Error("plain text holds escape sequences")
	}

	colored := Text(c, true)
	for _, want := range []string{"\x1b[31mMALICIOUS\x1b[0m", "\x1b[33mSUSPICIOUS\x1b[0m", "\x1b[32mCLEAN\x1b[0m"} {
		if !strings.Contains(colored, want) {
			t.Errorf("coloured text lacks %q", want)
		}
	}
	skipped := Text(sampleCards()["skipped_leftout"], true)
	if !strings.Contains(skipped, "\x1b[90m  - hxxp://10[.]0[.]0[.]5/admin — private or internal host\x1b[0m") {
		t.Errorf("skipped targets should be grey:\n%q", skipped)
	}
	// Only our own SGR sequences, never one from the data.
	sgr := regexp.MustCompile(`\x1b\[(0|1|31|32|33|90)m`)
	evil := &card.Card{Lines: []card.Line{{Target: "https://x.example/\x1b[2J", Detail: "\x1b]0;pwned\x07"}}}
	if rest := sgr.ReplaceAllString(Text(evil, true), ""); strings.ContainsRune(rest, '\x1b') {
		t.Errorf("escape sequence from the data reached the terminal: %q", rest)
	}
}
