package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// HostileService is a real HTTP proxy in front of the simulator that
// plays a compromised or careless analysis service: once turned on, it
// rewrites, in every JSON answer, the string values of the keys it was
// given (at any depth) with text meant to make the bot ping, link, break
// out of a code span or drive a terminal. Off, it passes everything as
// is, so analyses run normally first.
type HostileService struct {
	// URL is the proxy's base URL, to give the bot as a service's.
	URL string
	// On turns the rewriting on.
	On atomic.Bool
	// Only, if set, limits the rewriting to request paths containing it.
	// Set it before the bot's first request.
	Only string

	fields map[string]string
	mu     sync.Mutex
	hits   map[string]int // rewritten key → count
}

// StartHostileService proxies target (a simulator's base URL), replacing
// the string value of each key of fields with the key's value once On;
// the proxy closes when the test ends.
func StartHostileService(t *testing.T, target string, fields map[string]string) *HostileService {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &HostileService{fields: fields, hits: map[string]int{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Del("Accept-Encoding") // plain bodies, to rewrite
	}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if !h.On.Load() || (h.Only != "" && !strings.Contains(resp.Request.URL.Path, h.Only)) ||
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

// rewrite replaces, in the decoded JSON v, the string values of the keys
// of h.fields, counting each.
func (h *HostileService) rewrite(v any) any {
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

// Rewritten reports how many values of key were replaced.
func (h *HostileService) Rewritten(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[key]
}
