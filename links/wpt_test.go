package links

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// wptCase is one test of WPT's url/resources/urltestdata.json.
type wptCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Hostname string  `json:"hostname"`
	Failure  bool    `json:"failure"`
}

// wptDepartures are the WPT cases where Normalize deliberately differs from
// the URL Standard, with the reason. Keep it small and honest: every entry
// must still differ (the test fails on a stale entry).
var wptDepartures = map[string]string{
	// Hosts a browser accepts but that are not DNS names: Normalize rejects
	// them as malformed, so they are reported as skipped rather than sent.
	// No such name resolves on the public DNS, so nothing is left unscanned
	// that a click could reach.
	"http://./":                    "empty host label: not a DNS name",
	"http://../":                   "empty host labels: not a DNS name",
	"http://foo.09..":              "empty host labels: not a DNS name",
	"http://!\"$&'()*+,-.;=_`{}~/": "host characters outside [a-z0-9_-]: not a DNS name",
}

// wptConsidered reports whether the case is one Normalize can be judged on:
// Normalize reads absolute URLs only, as the bot only sees absolute links,
// so the input must have an http or https scheme and must not depend on
// its base (an http(s) base of the same scheme makes "http:foo" and
// "http:/foo" relative; two slashes after the scheme make it absolute).
func wptConsidered(c wptCase) bool {
	s := trimControlSpace(c.Input)
	s = removeTabNewline(s)
	n := schemeLen(s)
	if n == 0 {
		return false
	}
	scheme := strings.ToLower(s[:n])
	if scheme != "http" && scheme != "https" {
		return false
	}
	if c.Base == nil || *c.Base == "about:blank" {
		return true
	}
	base := strings.ToLower(*c.Base)
	if !strings.HasPrefix(base, scheme+":") {
		return true
	}
	rest := s[n+1:]
	return len(rest) >= 2 && (rest[0] == '/' || rest[0] == '\\') && (rest[1] == '/' || rest[1] == '\\')
}

// wptWant is the href a service gets: the fragment and userinfo dropped.
func wptWant(href string) string {
	if i := strings.IndexByte(href, '#'); i >= 0 {
		href = href[:i]
	}
	i := strings.Index(href, "://") + 3
	end := len(href)
	if j := strings.IndexByte(href[i:], '/'); j >= 0 {
		end = i + j
	}
	if at := strings.LastIndexByte(href[i:end], '@'); at >= 0 {
		href = href[:i] + href[i+at+1:]
	}
	return href
}

// TestNormalizeAgainstWPT checks Normalize differentially against the WPT
// URL test data (testdata/urltestdata.json, see testdata/README.md): every
// considered case with an http(s) result must give the same host and the
// same href once the fragment and userinfo are dropped, and every case
// expected to fail must fail, unless it is a declared departure.
func TestNormalizeAgainstWPT(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/urltestdata.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var total, considered, wantOK, wantFail, sameHost, sameHref, failAgree, departed int
	seenDeparture := map[string]bool{}
	for _, r := range raw {
		if len(r) > 0 && r[0] == '"' {
			continue // a comment
		}
		var c wptCase
		if err := json.Unmarshal(r, &c); err != nil {
			t.Fatalf("case %s: %v", r, err)
		}
		total++
		if !wptConsidered(c) {
			continue
		}
		if !c.Failure && !strings.HasPrefix(c.Href, "http:") && !strings.HasPrefix(c.Href, "https:") {
			continue // an http(s) input with a non-http(s) result cannot happen; be safe
		}
		considered++
		if c.Failure {
			wantFail++
		} else {
			wantOK++
		}
		got, err := parse(c.Input)
		var diff string
		switch {
		case c.Failure && err == nil:
			diff = "accepted as " + got.url + ", want failure"
		case c.Failure:
			failAgree++
		case err != nil:
			diff = "rejected (" + err.Error() + "), want " + c.Href
		default:
			host := got.host
			if got.addr.Is6() {
				host = "[" + host + "]"
			}
			if host == c.Hostname {
				sameHost++
			} else {
				diff = "host " + host + ", want " + c.Hostname
			}
			if want := wptWant(c.Href); got.url == want {
				sameHref++
			} else if diff == "" {
				diff = "href " + got.url + ", want " + want
			}
		}
		if diff == "" {
			continue
		}
		if reason, ok := wptDepartures[c.Input]; ok {
			departed++
			seenDeparture[c.Input] = true
			t.Logf("departure %q: %s (%s)", c.Input, diff, reason)
			continue
		}
		t.Errorf("Normalize(%q): %s", c.Input, diff)
	}
	for in := range wptDepartures {
		if !seenDeparture[in] {
			t.Errorf("departure %q no longer differs (or is not in the data): remove it", in)
		}
	}
	t.Logf("WPT urltestdata.json: %d cases, %d considered (absolute http/https input); "+
		"%d with an http(s) result: same host %d, same href %d; %d expected to fail: rejected %d; declared departures %d",
		total, considered, wantOK, sameHost, sameHref, wantFail, failAgree, departed)
}
