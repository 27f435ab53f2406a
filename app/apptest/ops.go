package apptest

import (
	"io"
	"net/http"
	"regexp"
	"strings"
)

// opsAddrRE finds the ops server's address in the bot's logs.
var opsAddrRE = regexp.MustCompile(`"msg":"serving health and metrics","addr":"([^"]+)"`)

// Get fetches a path of the bot's ops server (its address read from the
// logs) and returns the status code and body.
func (h *Harness) Get(path string) (int, string) {
	h.T.Helper()
	m := opsAddrRE.FindStringSubmatch(h.Logs.String())
	if m == nil {
		h.T.Fatalf("no ops address in the logs")
	}
	resp, err := http.Get("http://" + m[1] + path)
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Metric returns a sample's value from /metrics ("" when absent).
func (h *Harness) Metric(sample string) string {
	h.T.Helper()
	_, body := h.Get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}
