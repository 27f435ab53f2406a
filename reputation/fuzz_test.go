package reputation

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bodyTransport answers every request with one canned response, so the
// decoders can be fuzzed without a network.
type bodyTransport struct {
	status int
	ctype  string
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {b.ctype}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// FuzzDecode feeds arbitrary answers to every decoder: none may panic, and
// the key must never appear in an error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"error":false,"task_id":"abc","query_url":{"status":"/api/K/status/abc/","result":"/api/K/result/abc/"}}`,
		`{"status":"completed","error":false}`,
		`{"url":"https://a/","verdict":{"phishing":0.9,"advertising":"1","malicious":null,"illegal":3},"error":false}`,
		`{"error":false,"detail":{"a":[1,2,{}]}}`,
		`{"error":true,"msg":"task not found"}`,
		`{"error":[],"msg":["x"]}`,
		`{"error":"yes"}`,
		`<html>K</html>`,
		``,
		`[1,2]`,
		`{"task_id":1e400}`,
		`{"verdict":[]}`,
	} {
		for _, st := range []int{200, 404, 429, 500} {
			f.Add(st, s)
		}
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 599 {
			status = 200
		}
		const secret = "FUZZKEY"
		c, err := New("http://sim.invalid", secret, WithRetries(-1, time.Millisecond, time.Millisecond),
			WithHTTPClient(&http.Client{Transport: bodyTransport{status, "application/json", []byte(body)}}))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		var errs []error
		_, e := c.Scan(ctx, "https://x/")
		errs = append(errs, e)
		_, e = c.Status(ctx, "t")
		errs = append(errs, e)
		_, e = c.Result(ctx, "t")
		errs = append(errs, e)
		_, e = c.Detail(ctx, "t")
		errs = append(errs, e)
		_, e = c.SearchTaskID(ctx, "https://x/")
		errs = append(errs, e)
		errs = append(errs, c.Report(ctx, "t", Phishing, Restore))
		for _, e := range errs {
			if e != nil && strings.Contains(e.Error(), secret) {
				t.Fatalf("key in error: %v", e)
			}
		}
	})
}
