package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Verdict classes a URL falls into; they pick the detail's page title.
const (
	classPhishing    = "phishing"
	classAdvertising = "advertising"
	classMalicious   = "malicious"
	classIllegal     = "illegal"
	classClean       = "clean"
	classOther       = "other"
)

// Fixed score sets of the rule table (an assumption: deterministic verdicts).
// The three minor scores of each set are ≤ 0.05.
var classScores = map[string]Scores{
	classPhishing:    {Phishing: 0.97, Advertising: 0.02, Malicious: 0.05, Illegal: 0.01},
	classAdvertising: {Phishing: 0.03, Advertising: 0.90, Malicious: 0.04, Illegal: 0.01},
	classMalicious:   {Phishing: 0.04, Advertising: 0.02, Malicious: 0.95, Illegal: 0.03},
	classIllegal:     {Phishing: 0.02, Advertising: 0.05, Malicious: 0.03, Illegal: 0.90},
	classClean:       {},
}

// ScoresFor returns the unit-scale scores the rule table gives rawURL. It
// ignores FlipOnNextScan and the alternation of flip.test, which depend on
// scan history.
func ScoresFor(rawURL string) Scores {
	_, s := classify(rawURL)
	return s
}

// classify applies the rule table to rawURL: host and path, lowercased,
// first match wins.
func classify(rawURL string) (string, Scores) {
	host, path := hostPath(rawURL)
	switch {
	case strings.HasSuffix(host, ".phish.test") || strings.Contains(host, "phish") ||
		(!hasLabel(host, "example") && (strings.Contains(path, "/login") ||
			strings.Contains(path, "/verify") || strings.Contains(path, "/account"))):
		return classPhishing, classScores[classPhishing]
	case hasWord(host, "ads") || hasWord(path, "ads") ||
		strings.Contains(host+path, "advert") || strings.Contains(host+path, "doubleclick"):
		return classAdvertising, classScores[classAdvertising]
	case strings.Contains(host, "malware") || strings.Contains(host, "evil") ||
		strings.HasSuffix(path, ".exe") || strings.HasSuffix(path, ".apk"):
		return classMalicious, classScores[classMalicious]
	case strings.Contains(host, "casino") || strings.Contains(host, "gambl") || strings.Contains(host, "illegal"):
		return classIllegal, classScores[classIllegal]
	case inDomain(host, "example.com") || inDomain(host, "example.org") || inDomain(host, "clean.test"):
		return classClean, classScores[classClean]
	}
	return classOther, hashScores(rawURL)
}

// hashScores derives four stable scores in [0, 0.2) with 4 decimals from
// the SHA-256 of the trimmed URL.
func hashScores(rawURL string) Scores {
	h := sha256.Sum256([]byte(strings.TrimSpace(rawURL)))
	v := func(i int) float64 { return float64(binary.BigEndian.Uint16(h[2*i:])%2000) / 10000 }
	return Scores{Phishing: v(0), Advertising: v(1), Malicious: v(2), Illegal: v(3)}
}

// hostPath returns the lowercased host and path of rawURL. A URL without a
// scheme ("evil.test/x") is read as http.
func hostPath(rawURL string) (host, path string) {
	s := strings.TrimSpace(rawURL)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		u, err = url.Parse("http://" + s)
		if err != nil {
			return "", strings.ToLower(s)
		}
	}
	return strings.ToLower(u.Hostname()), strings.ToLower(u.Path)
}

// inDomain reports whether host is domain or a subdomain of it.
func inDomain(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// hasLabel reports whether one dot-separated label of host is label.
func hasLabel(host, label string) bool {
	for l := range strings.SplitSeq(host, ".") {
		if l == label {
			return true
		}
	}
	return false
}

// hasWord reports whether w occurs in s with no letter on either side, so
// "ads" matches "ads.example.net" and "/ads/", not "/downloads".
func hasWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isLetter(s[j-1])) && (end == len(s) || !isLetter(s[end])) {
			return true
		}
		i = j + 1
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// Sentinel hosts of the URL service (an assumption), matched as the host or a
// subdomain of it.
const (
	hostPending  = "pending.test"  // never completes
	hostFail     = "fail.test"     // ends in status failed
	hostNoResult = "noresult.test" // completed, but no result record
	hostSlow     = "slow.test"     // 10× the profile durations
	hostFlip     = "flip.test"     // alternates clean / phishing per scan
)

// durationHost parses the per-task duration host "d<N>s.test" (or a
// subdomain of it): the task takes exactly N seconds, N ≤ 86400.
func durationHost(host string) (time.Duration, bool) {
	if i := strings.LastIndex(host, "."); i >= 0 {
		if j := strings.LastIndex(host[:i], "."); j >= 0 {
			host = host[j+1:]
		}
	}
	name, ok := strings.CutSuffix(host, "s.test")
	if !ok || len(name) < 2 || name[0] != 'd' || !isDigits(name[1:], 5) {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n > 86400 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// wireScore is a score or malscore as a JSON number that always shows a
// decimal point (0.0, 97.0, 0.97), as Python's json module writes floats.
type wireScore float64

// MarshalJSON implements json.Marshaler.
func (f wireScore) MarshalJSON() ([]byte, error) {
	v := float64(f)
	b := strconv.AppendFloat(nil, v, 'f', -1, 64)
	if v == math.Trunc(v) {
		b = append(b, '.', '0')
	}
	return b, nil
}

// wireVerdict is the verdict object of result and detail, in spec order.
type wireVerdict struct {
	Phishing    wireScore `json:"phishing"`
	Advertising wireScore `json:"advertising"`
	Malicious   wireScore `json:"malicious"`
	Illegal     wireScore `json:"illegal"`
}

// toWire scales unit-scale scores to the configured scale, rounded to 4
// decimals.
func toWire(s Scores, scale float64) wireVerdict {
	r := func(v float64) wireScore { return wireScore(math.Round(v*scale*1e4) / 1e4) }
	return wireVerdict{r(s.Phishing), r(s.Advertising), r(s.Malicious), r(s.Illegal)}
}

// verdictTypes are the accepted verdict_type values of the disposition
// operation (ASSUMPTION: all four keys).
var verdictTypes = []string{"phishing", "advertising", "malicious", "illegal"}

// field returns a pointer to the score named t, or nil.
func (s *Scores) field(t string) *float64 {
	switch t {
	case "phishing":
		return &s.Phishing
	case "advertising":
		return &s.Advertising
	case "malicious":
		return &s.Malicious
	case "illegal":
		return &s.Illegal
	}
	return nil
}

// categories lists the verdict types scoring at least half the scale.
func (s Scores) categories() []string {
	out := []string{}
	for _, t := range verdictTypes {
		if *s.field(t) >= 0.5 {
			out = append(out, t)
		}
	}
	return out
}

// pageTitle is the detail's page_title per verdict class.
var pageTitle = map[string]string{
	classPhishing:    "Sign in to your account",
	classAdvertising: "Special offer just for you",
	classMalicious:   "Download will start shortly",
	classIllegal:     "Online casino",
	classClean:       "Example Domain",
	classOther:       "Welcome",
}
