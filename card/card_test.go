package card

import (
	"testing"

	"github.com/verdictbot/verdictbot/verdict"
)

func TestLevelIsTheWorstLine(t *testing.T) {
	c := Card{Lines: []Line{{Level: verdict.Clean}, {Level: verdict.Malicious}, {Level: verdict.Pending}}}
	if got := c.Level(); got != verdict.Worst(verdict.Clean, verdict.Malicious, verdict.Pending) {
		t.Errorf("Level = %v", got)
	}
	skipped := Card{Skipped: []Skip{{Kind: KindURL, Target: "https://intra.test/", Reason: "private or internal host"}}}
	if got := skipped.Level(); got != verdict.Skipped {
		t.Errorf("a card of skips only: Level = %v, want Skipped", got)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := Card{Notes: []string{"n"}, Skipped: []Skip{{Target: "s"}}, Lines: []Line{{
		Target: "https://a.test/", Scores: verdict.Scores{verdict.CatPhishing: 0.5},
		File: &FileInfo{Name: "f"}, Reports: []Report{{User: "U1"}},
	}}}
	cp := c.Clone()
	c.Notes[0] = "changed"
	c.Skipped[0].Target = "changed"
	c.Lines[0].Scores[verdict.CatPhishing] = 1
	c.Lines[0].File.Name = "changed"
	c.Lines[0].Reports[0].User = "changed"
	c.Lines[0].Target = "changed"
	l := cp.Lines[0]
	if cp.Notes[0] != "n" || cp.Skipped[0].Target != "s" || l.Scores[verdict.CatPhishing] != 0.5 || l.File.Name != "f" ||
		l.Reports[0].User != "U1" || l.Target != "https://a.test/" {
		t.Errorf("the clone shares state with the original: %+v", cp)
	}
}

// TestLevelCountsLinksLeftOut: a message is never clean while one of its
// links is unchecked: links left out past the limit make the card at least
// "could not check", and never lower a worse verdict.
func TestLevelCountsLinksLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Card
		level verdict.Level
	}{
		{"clean lines, none left out", Card{Lines: []Line{{Level: verdict.Clean}, {Level: verdict.Clean}}}, verdict.Clean},
		{"clean lines, one left out", Card{Lines: []Line{{Level: verdict.Clean}}, LeftOut: 1}, verdict.Unknown},
		{"ten clean, 38 left out", Card{Lines: slicesOf(Line{Level: verdict.Clean}, 10), LeftOut: 38}, verdict.Unknown},
		{"malicious stays malicious", Card{Lines: []Line{{Level: verdict.Clean}, {Level: verdict.Malicious}}, LeftOut: 3}, verdict.Malicious},
		{"suspicious stays suspicious", Card{Lines: []Line{{Level: verdict.Suspicious}}, LeftOut: 3}, verdict.Suspicious},
		{"skips and left out", Card{Skipped: []Skip{{Target: "https://files.slack.com/x"}}, Lines: []Line{{Level: verdict.Skipped}}, LeftOut: 2}, verdict.Unknown},
		{"skips only", Card{Skipped: []Skip{{Target: "https://files.slack.com/x"}}}, verdict.Skipped},
		{"still scanning", Card{Lines: []Line{{Level: verdict.Pending}}, LeftOut: 2}, verdict.Unknown},
	} {
		if got := tc.c.Level(); got != tc.level {
			t.Errorf("%s: Level = %v, want %v", tc.name, got, tc.level)
		}
	}
}

func slicesOf(l Line, n int) []Line {
	out := make([]Line, n)
	for i := range out {
		out[i] = l
	}
	return out
}

// TestAnswersMessage: quarantine and rechecks act on every card about a
// message, whoever asked for it; only /scan's own cards are not about one.
func TestAnswersMessage(t *testing.T) {
	for _, tc := range []struct {
		c    Card
		want bool
	}{
		{Card{SourceTS: "1700000000.000100"}, true},
		{Card{SourceTS: "1700000000.000100", RequestedBy: "U0ALICE"}, true},
		{Card{SourceTS: "1700000000.000100/files", RequestedBy: "U0ALICE"}, true},
		{Card{SourceTS: ScanRequestPrefix + "1700000000123456789", RequestedBy: "U0ALICE"}, false},
		{Card{}, false},
	} {
		if got := tc.c.AnswersMessage(); got != tc.want {
			t.Errorf("%+v: AnswersMessage = %v, want %v", tc.c, got, tc.want)
		}
	}
}
