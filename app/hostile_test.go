package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

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

// outsideCode is the text of a mrkdwn message outside its code spans
// (what Slack formats and links).
func outsideCode(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i := 0; i < len(parts); i += 2 {
		b.WriteString(parts[i])
		b.WriteByte(' ')
	}
	return b.String()
}

// mustBeInertMrkdwn fails unless text, posted as mrkdwn, can neither
// mention, link nor leave a code span: no raw < or >, every & an entity,
// an even number of backticks, and none of the words in inside (the
// payload a hostile value carried) outside a code span.
func mustBeInertMrkdwn(t *testing.T, what, text string, inside ...string) {
	t.Helper()
	rest := ourMrkdwnTokens.ReplaceAllString(text, "")
	if strings.ContainsAny(rest, "<>") {
		t.Errorf("%s: a raw < or > (a mention or link) in %q", what, text)
	}
	if strings.Count(rest, "&") != len(mrkdwnEntity.FindAllString(rest, -1)) {
		t.Errorf("%s: an & that is not an entity in %q", what, text)
	}
	if strings.Count(text, "`")%2 != 0 {
		t.Errorf("%s: an odd number of backticks (a span left open) in %q", what, text)
	}
	out := outsideCode(text)
	for _, w := range inside {
		if strings.Contains(out, w) {
			t.Errorf("%s: %q escaped its code span in %q", what, w, text)
		}
	}
}

var (
	// ourMrkdwnTokens are the only <…> sequences the bot writes itself:
	// user and channel references, dates and permalinks to threads.
	ourMrkdwnTokens = regexp.MustCompile(`<@[UW][A-Z0-9]+>|<#[CG][A-Z0-9]+>|<!date\^[^<>]*>|<https?://[^<>|]*/archives/[^<>|]*\|a thread>`)
	mrkdwnEntity    = regexp.MustCompile(`&(amp|lt|gt);`)
)
