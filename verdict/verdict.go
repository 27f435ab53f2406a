// Package verdict is the vocabulary the bot's packages share about an
// analysis outcome: levels, categories, scores and the thresholds that turn
// scores into a level. It knows nothing of Slack or of the services' wire
// formats.
package verdict

import (
	"fmt"
	"strconv"
	"strings"
)

// Level is how worried a reader should be. Levels are ordered: a message's
// level is the worst of its targets' (Unknown ranks between Clean and
// Suspicious: a check that could not complete is not a clean bill).
type Level int

// Levels, in increasing order of concern. Keep in sync with String,
// ParseLevel and the card's description in docs/usage.md.
const (
	Pending    Level = iota // not finished yet
	Skipped                 // not checked on purpose (allowlisted, private, too large)
	Clean                   // checked, nothing found
	Unknown                 // could not check (service error, timeout, failed analysis)
	Suspicious              // worth a look
	Malicious               // do not open
)

func (l Level) String() string {
	switch l {
	case Pending:
		return "pending"
	case Skipped:
		return "skipped"
	case Clean:
		return "clean"
	case Unknown:
		return "could not check"
	case Suspicious:
		return "suspicious"
	case Malicious:
		return "malicious"
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// Key is a stable one-word name for storage and metrics labels.
func (l Level) Key() string {
	if l == Unknown {
		return "unknown"
	}
	return l.String()
}

// ParseLevel reads a Key.
func ParseLevel(s string) (Level, error) {
	for l := Pending; l <= Malicious; l++ {
		if l.Key() == s || l.String() == s {
			return l, nil
		}
	}
	return Pending, fmt.Errorf("unknown level %q", s)
}

// Worst returns the most concerning of the levels (Pending if none).
func Worst(levels ...Level) Level {
	w := Pending
	for _, l := range levels {
		if l > w {
			w = l
		}
	}
	return w
}

// NeedsAttention reports whether the level warrants a card in a quiet channel.
func (l Level) NeedsAttention() bool { return l >= Suspicious }

// Category is one of the URL service's four score categories (spec §2).
type Category string

// The four categories, in the spec's order.
const (
	CatPhishing    Category = "phishing"
	CatAdvertising Category = "advertising"
	CatMalicious   Category = "malicious"
	CatIllegal     Category = "illegal"
)

// Categories lists the categories in the spec's order.
var Categories = []Category{CatPhishing, CatAdvertising, CatMalicious, CatIllegal}

// ParseCategory accepts a category name, case-insensitively.
func ParseCategory(s string) (Category, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, c := range Categories {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown category %q (want phishing, advertising, malicious or illegal)", s)
}

// Scores are the four category scores on a 0–1 scale.
type Scores map[Category]float64

// Top returns the highest-scoring category (the first in spec order on ties).
func (s Scores) Top() (Category, float64) {
	best, score := CatPhishing, s[CatPhishing]
	for _, c := range Categories[1:] {
		if v := s[c]; v > score {
			best, score = c, v
		}
	}
	return best, score
}

// Band is a pair of thresholds on a 0–1 score: at or above Suspicious the
// category makes a URL suspicious, at or above Malicious malicious. A
// threshold above 1 disables that level for the category.
type Band struct {
	Suspicious float64
	Malicious  float64
}

// Thresholds maps each category to its band.
type Thresholds map[Category]Band

// DefaultThresholds are the bands used when VERDICTBOT_THRESHOLD_* are not
// set. CatPhishing, malicious and illegal content are treated alike; advertising
// is never worse than suspicious (an ad is a nuisance, not a threat). These
// are our choice: the spec documents no score range or cut-offs.
func DefaultThresholds() Thresholds {
	return Thresholds{
		CatPhishing:    {Suspicious: 0.5, Malicious: 0.8},
		CatAdvertising: {Suspicious: 0.8, Malicious: 2},
		CatMalicious:   {Suspicious: 0.5, Malicious: 0.8},
		CatIllegal:     {Suspicious: 0.5, Malicious: 0.8},
	}
}

// ParseBand reads "S,M" (two numbers in 0–1, or 0–100 which are divided by
// 100), for example "0.5,0.8". Either number may be "off" to disable that
// level ("0.8,off": never worse than suspicious); "off" alone disables the
// category.
func ParseBand(s string) (Band, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Band{Suspicious: 2, Malicious: 2}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return Band{}, fmt.Errorf("%q: want two thresholds \"suspicious,malicious\", e.g. 0.5,0.8, or off", s)
	}
	var v [2]float64
	var off [2]bool
	for i, p := range parts {
		if strings.EqualFold(strings.TrimSpace(p), "off") {
			off[i] = true
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 {
			return Band{}, fmt.Errorf("%q: %q is not a non-negative number", s, p)
		}
		v[i] = f
	}
	if v[0] > 1 || v[1] > 1 {
		if v[0] > 100 || v[1] > 100 {
			return Band{}, fmt.Errorf("%q: thresholds are 0-1 (or 0-100)", s)
		}
		v[0], v[1] = v[0]/100, v[1]/100
	}
	for i := range off {
		if off[i] {
			v[i] = 2 // above any 0–1 score
		}
	}
	if off[0] && !off[1] {
		return Band{}, fmt.Errorf("%q: cannot turn suspicious off and keep malicious", s)
	}
	if v[0] > v[1] {
		return Band{}, fmt.Errorf("%q: the suspicious threshold is above the malicious one", s)
	}
	return Band{Suspicious: v[0], Malicious: v[1]}, nil
}

// Level returns the level the scores reach, and the category that decided it
// (the top category when clean).
func (t Thresholds) Level(s Scores) (Level, Category) {
	level, why := Clean, Category("")
	for _, c := range Categories {
		b, ok := t[c]
		if !ok {
			continue
		}
		v := s[c]
		switch {
		case v >= b.Malicious && level < Malicious:
			level, why = Malicious, c
		case v >= b.Suspicious && level < Suspicious:
			level, why = Suspicious, c
		}
	}
	if why == "" {
		why, _ = s.Top()
	}
	return level, why
}

// MalscoreLevel bands a sandbox malscore (0–10) as the sandbox spec does:
// 0–2 clean, 2–6 suspicious, 6–10 malicious, with the edges going to the
// lower band as CAPE's web UI draws them (≤2.0 clean, ≤6.0 suspicious).
func MalscoreLevel(score float64) Level {
	switch {
	case score <= 2.0:
		return Clean
	case score <= 6.0:
		return Suspicious
	}
	return Malicious
}
