package apptest

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// opsAddrRE finds the ops server's address in the bot's logs.
var opsAddrRE = regexp.MustCompile(`"msg":"serving health and metrics","addr":"([^"]+)"`)

// ListenAnywhere is the VERDICTBOT_HTTP_ADDR of a test: a port the system
// picks when the bot listens, read back with OpsAddr (a port picked before
// and freed could be taken by another test's listener meanwhile).
const ListenAnywhere = "127.0.0.1:0"

// OpsAddr waits up to 15 s for the ops server's address in logs (JSON
// lines: a bot started with VERDICTBOT_HTTP_ADDR=ListenAnywhere).
func OpsAddr(t testing.TB, logs interface{ String() string }) string {
	t.Helper()
	addr, ok := FindOpsAddr(logs, 15*time.Second)
	if !ok {
		t.Fatalf("no ops address in the logs after 15 s:\n%s", logs.String())
	}
	return addr
}

// FindOpsAddr is OpsAddr for a goroutine other than the test's: it waits
// up to wait and says whether the address was found.
func FindOpsAddr(logs interface{ String() string }, wait time.Duration) (string, bool) {
	deadline := time.Now().Add(wait)
	for {
		if m := opsAddrRE.FindStringSubmatch(logs.String()); m != nil {
			return m[1], true
		}
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Get fetches a path of the bot's ops server (its address read from the
// logs) and returns the status code and body.
func (h *Harness) Get(path string) (int, string) {
	h.T.Helper()
	resp, err := http.Get("http://" + OpsAddr(h.T, h.Logs) + path)
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
