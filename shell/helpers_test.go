package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/sim"
)

// The helpers the shell's tests share with cmd/verdictbot's end-to-end
// tests (copied from there: main_test.go, run_test.go, files_test.go,
// check_test.go, hostile_test.go), so that these tests run the shell with
// the same DNS, services and hostile proxy.

// e2eKey is the API key the tests give the services.
const e2eKey = "sim-key-e2e-9f3a"

const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// quickSandbox finishes a sandbox task in 0.45 s, so the bot's first status
// check (after about a second) finds it reported.
var quickSandbox = sim.Profile{Name: "e2e-files", URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
	SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
	SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testHosts is the DNS the tests see (through VERDICTBOT_RESOLVE_HOSTS's
// real wiring, as testOptions' Resolver): these names resolve as listed, every other name is
// NXDOMAIN at once, so no test depends on the machine's resolver.
var testHosts = hostTable{
	"localtest.me":          {"127.0.0.1"},
	"127.0.0.1.nip.io":      {"127.0.0.1"},
	"jira.corp.example.com": {"10.20.30.40"},
	// Would be malicious if sent (the simulator flags "phish" hosts).
	"sso.phish-intranet.test": {"10.9.8.7", "fd00::7"},
	"public.phish-mixed.test": {"10.9.8.7", "93.184.215.14"},
}

type hostTable map[string][]string

// testOptions are the options every test starts from: the wiring as in
// production, but for the DNS (testHosts).
func testOptions() Options { return Options{App: app.Options{Resolver: testHosts}} }

func (h hostTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := h[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// hostileService is a real HTTP proxy in front of the simulator that
// plays a compromised or careless analysis service: once turned on, it
// rewrites, in every JSON answer, the string values of the keys it was
// given (at any depth) with text meant to make the bot ping, link, break
// out of a code span or drive a terminal. Off, it passes everything as
// is, so analyses run normally first.
type hostileService struct {
	URL    string
	on     atomic.Bool
	fields map[string]string
	// only, if set, limits the rewriting to request paths containing it.
	only string

	mu   sync.Mutex
	hits map[string]int // rewritten key → count
}

// startHostileService proxies target (a simulator's base URL).
func startHostileService(t *testing.T, target string, fields map[string]string) *hostileService {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileService{fields: fields, hits: map[string]int{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Del("Accept-Encoding") // plain bodies, to rewrite
	}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if !h.on.Load() || (h.only != "" && !strings.Contains(resp.Request.URL.Path, h.only)) ||
			!strings.Contains(resp.Header.Get("Content-Type"), "json") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var v any
		if json.Unmarshal(body, &v) == nil {
			v = h.rewrite(v)
			body, _ = json.Marshal(v)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

func (h *hostileService) rewrite(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if repl, ok := h.fields[k]; ok {
				if _, isString := val.(string); isString {
					x[k] = repl
					h.mu.Lock()
					h.hits[k]++
					h.mu.Unlock()
					continue
				}
			}
			x[k] = h.rewrite(val)
		}
	case []any:
		for i := range x {
			x[i] = h.rewrite(x[i])
		}
	}
	return v
}

// rewritten reports how many values of key were replaced.
func (h *hostileService) rewritten(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[key]
}
