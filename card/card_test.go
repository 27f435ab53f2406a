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
