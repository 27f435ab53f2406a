package verdict

import "testing"

func TestThresholdLevels(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		s    Scores
		want Level
		why  Category
	}{
		{Scores{}, Clean, CatPhishing},
		{Scores{CatPhishing: 0.97}, Malicious, CatPhishing},
		{Scores{CatPhishing: 0.5}, Suspicious, CatPhishing},
		{Scores{CatPhishing: 0.49, CatIllegal: 0.1}, Clean, CatPhishing},
		{Scores{CatAdvertising: 0.9}, Suspicious, CatAdvertising},
		{Scores{CatAdvertising: 1}, Suspicious, CatAdvertising},
		{Scores{CatAdvertising: 0.9, CatMalicious: 0.95}, Malicious, CatMalicious},
		{Scores{CatIllegal: 0.8}, Malicious, CatIllegal},
	} {
		got, why := th.Level(tc.s)
		if got != tc.want || why != tc.why {
			t.Errorf("%v: %s/%s, want %s/%s", tc.s, got, why, tc.want, tc.why)
		}
	}
}

func TestParseBand(t *testing.T) {
	for in, want := range map[string]Band{"0.5,0.8": {0.5, 0.8}, " 50 , 80 ": {0.5, 0.8}, "off": {2, 2}, "0,1": {0, 1}, "0.8,off": {0.8, 2}, "80,OFF": {0.8, 2}} {
		got, err := ParseBand(in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0.5", "a,b", "0.9,0.5", "-1,0.5", "200,300", "1,2,3", "off,0.5"} {
		if _, err := ParseBand(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMalscoreBandEdges(t *testing.T) {
	for score, want := range map[float64]Level{0: Clean, 2.0: Clean, 2.1: Suspicious, 6.0: Suspicious, 6.1: Malicious, 10: Malicious} {
		if got := MalscoreLevel(score); got != want {
			t.Errorf("%v: %s, want %s", score, got, want)
		}
	}
}

func TestWorstAndParse(t *testing.T) {
	if Worst(Clean, Unknown, Skipped) != Unknown || Worst() != Pending || Worst(Suspicious, Malicious) != Malicious {
		t.Fatal("Worst order")
	}
	for l := Pending; l <= Malicious; l++ {
		if p, err := ParseLevel(l.Key()); err != nil || p != l {
			t.Errorf("%s: %v %v", l, p, err)
		}
	}
	if _, err := ParseCategory("PHISHING"); err != nil {
		t.Error(err)
	}
	if _, err := ParseCategory("spam"); err == nil {
		t.Error("spam accepted")
	}
}
