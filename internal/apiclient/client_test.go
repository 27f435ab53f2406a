package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "s3cr3t-KEY_with+odd chars"

var errTaskNotFound = errors.New("task not found")

// setup starts a server for handler under /prefix and returns a client for it.
func setup(t *testing.T, handler http.HandlerFunc, mod func(*Config)) (*Client, *httptest.Server, *[]Event) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	events := &[]Event{}
	cfg := Config{
		Service: "reputation", BaseURL: srv.URL + "/gw/v1", Prefix: "api", APIKey: testKey,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Sentinels:      map[string]error{"task not found": errTaskNotFound},
		RateLimitTexts: []string{"rate limit exceeded"}, QuotaTexts: []string{"quota exceeded"},
		Observe: func(e Event) { mu.Lock(); *events = append(*events, e); mu.Unlock() },
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv, events
}

// assertNoSecret fails if the key shows up in s in any URL form.
func assertNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, f := range newRedactor(testKey).forms {
		if strings.Contains(s, f) {
			t.Fatalf("secret leaked in %q", s)
		}
	}
}

// errChainText returns the text of err and of every error it wraps.
func errChainText(err error) string {
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		b.WriteString(e.Error())
		b.WriteString("\n")
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				b.WriteString(errChainText(x))
			}
		}
	}
	return b.String()
}

func TestURLEscapesKeyAndSegmentsWithTrailingSlash(t *testing.T) {
	t.Parallel()
	var got string
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		fmt.Fprint(w, `{"error":false}`)
	}, nil)
	err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"status", "a/b?c"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "/gw/v1/api/s3cr3t-KEY_with+odd%20chars/status/a%2Fb%3Fc/"
	if got != want {
		t.Fatalf("path = %q, want %q", got, want)
	}
	for _, bad := range []string{"..", ".", ""} {
		err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"status", bad}}, nil)
		if err == nil || !strings.Contains(err.Error(), "invalid path segment") {
			t.Errorf("segment %q: err = %v", bad, err)
		}
	}
}

func TestErrorFieldDecidesBeforeStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		status   int
		body     string
		wantKind error
		wantMsg  string
	}{
		{"200 with error true", 200, `{"error": true, "msg": "task not found"}`, errTaskNotFound, "task not found"},
		{"404 with error true", 404, `{"error": true, "msg": "task not found"}`, errTaskNotFound, "task not found"},
		{"error as list", 200, `{"error": ["boom"], "error_value": "Task does not exist"}`, nil, "Task does not exist"},
		{"error_value list", 200, `{"error": true, "error_value": ["a", "b"]}`, nil, "a; b"},
		{"drf detail 405", 405, `{"detail": "Method \"PUT\" not allowed."}`, nil, "Method \"PUT\" not allowed."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}, nil)
			err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"status", "x"}}, nil)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %T %v, want *APIError", err, err)
			}
			if ae.Message != tc.wantMsg {
				t.Errorf("message = %q, want %q", ae.Message, tc.wantMsg)
			}
			if tc.wantKind != nil && !errors.Is(err, tc.wantKind) {
				t.Errorf("errors.Is(%v) = false", tc.wantKind)
			}
		})
	}
}

func TestSuccessWithEmptyErrorList(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"error": [], "data": {"id": 1042}}`)
	}, nil)
	var out struct {
		Data struct{ ID ID } `json:"data"`
	}
	if err := c.DoJSON(t.Context(), Request{Op: "view", Method: "GET", Path: []string{"v"}}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Data.ID != "1042" {
		t.Fatalf("id = %q", out.Data.ID)
	}
}

func TestRetriesServerErrorsForReads(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html><body>Bad gateway</body></html>")
			return
		}
		io.WriteString(w, `{"error":false,"status":"completed"}`)
	}, nil)
	var out struct{ Status string }
	if err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"status", "x"}}, &out); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 || out.Status != "completed" {
		t.Fatalf("attempts = %d, status %q", n.Load(), out.Status)
	}
}

func TestGivesUpAfterMaxRetriesWithLastError(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(500)
		fmt.Fprintf(w, "<html>crash %d</html>", n.Load())
	}, func(c *Config) { c.MaxRetries = 2 })
	err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 500 || !strings.Contains(he.Snippet, "crash 3") {
		t.Fatalf("err = %v, want the third 500", err)
	}
	if n.Load() != 3 {
		t.Fatalf("attempts = %d, want 3", n.Load())
	}
	if ReasonOf(err) != ReasonServer {
		t.Fatalf("reason = %q", ReasonOf(err))
	}
}

func TestDocumentedErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(500) // strict-HTTP style
		io.WriteString(w, `{"error":true,"msg":"failed to get result"}`)
	}, nil)
	err := c.DoJSON(t.Context(), Request{Op: "result", Method: "GET", Path: []string{"r"}}, nil)
	if err == nil || n.Load() != 1 {
		t.Fatalf("attempts = %d, err = %v", n.Load(), err)
	}
}

func TestSubmissionNeverSentTwiceOnceWritten(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"500", "html200", "hangup"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				io.Copy(io.Discard, r.Body)
				switch mode {
				case "500":
					w.WriteHeader(500)
				case "html200":
					w.Header().Set("Content-Type", "text/html")
					io.WriteString(w, "<html>maintenance</html>")
				case "hangup":
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
				}
			}, nil)
			body, _ := JSONBody(map[string]string{"url": "https://x.test/"})
			err := c.DoJSON(t.Context(), Request{Op: "scan", Budget: Run, Method: "POST", Path: []string{"scan"}, Body: body, ContentType: "application/json", Submission: true}, nil)
			if err == nil {
				t.Fatal("want an error")
			}
			if n.Load() != 1 {
				t.Fatalf("server saw %d submissions, want 1", n.Load())
			}
			assertNoSecret(t, errChainText(err))
		})
	}
}

func TestSubmissionRetriedWhenNeverWrittenAndOn429(t *testing.T) {
	t.Parallel()
	// Dial failure: nothing can have reached a server, so all attempts are made.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	var attempts atomic.Int32
	c, err := New(Config{Service: "reputation", BaseURL: "http://" + addr, Prefix: "api", APIKey: testKey,
		MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		Observe: func(e Event) {
			if !e.IsWait {
				attempts.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := JSONBody(map[string]string{"url": "https://x.test/"})
	err = c.DoJSON(t.Context(), Request{Op: "scan", Budget: Run, Method: "POST", Path: []string{"scan"}, Body: body, Submission: true}, nil)
	if err == nil || attempts.Load() != 3 {
		t.Fatalf("attempts = %d, err = %v", attempts.Load(), err)
	}
	if ReasonOf(err) != ReasonTransport {
		t.Fatalf("reason = %s", ReasonOf(err))
	}
	assertNoSecret(t, errChainText(err))

	// 429: the server refused it, so it is sent again after Retry-After.
	var n atomic.Int32
	var gap atomic.Int64
	var first time.Time
	c2, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":true,"msg":"rate limit exceeded"}`)
			return
		}
		gap.Store(int64(time.Since(first)))
		io.WriteString(w, `{"error":false,"task_id":"abc"}`)
	}, nil)
	var out struct {
		TaskID ID `json:"task_id"`
	}
	err = c2.DoJSON(t.Context(), Request{Op: "scan", Budget: Run, Method: "POST", Path: []string{"scan"}, Body: body, Submission: true}, &out)
	if err != nil || out.TaskID != "abc" {
		t.Fatalf("err = %v, task %q", err, out.TaskID)
	}
	if time.Duration(gap.Load()) < 900*time.Millisecond {
		t.Fatalf("retried after %s, want Retry-After (1s) honoured", time.Duration(gap.Load()))
	}
}

func TestRetryAfterBeyondDeadlineReturnsRateLimitError(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
		io.WriteString(w, `{"detail":"Request was throttled. Expected available in 30 seconds."}`)
	}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := c.DoJSON(ctx, Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Second {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("waited although the Retry-After outlasts the deadline")
	}
	if ReasonOf(err) != ReasonRateLimited {
		t.Fatal(ReasonOf(err))
	}
}

func TestQuotaIsNotRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(429)
		io.WriteString(w, `{"error":true,"msg":"quota exceeded"}`)
	}, nil)
	err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	if ReasonOf(err) != ReasonQuota || n.Load() != 1 {
		t.Fatalf("reason %s after %d attempts: %v", ReasonOf(err), n.Load(), err)
	}
}

func TestKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	// Every failure path: HTML body echoing the path, a redirect elsewhere,
	// a timeout, a refused connection, an undecodable body.
	cases := map[string]http.HandlerFunc{
		"html echo": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(404)
			fmt.Fprintf(w, "<html><body>Page not found: %s</body></html>", r.URL.Path)
		},
		"json echo": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"error":true,"msg":"bad path %s"}`, r.URL.RawPath)
		},
		"redirect elsewhere": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://other.invalid"+r.URL.Path, http.StatusMovedPermanently)
		},
		"timeout": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		},
		"garbage json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"error": false, "status": %q`, r.URL.Path)
		},
		"not json": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "plain %s", r.URL.Path)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _, _ := setup(t, h, func(c *Config) { c.Timeout = 100 * time.Millisecond; c.MaxRetries = 1 })
			var out struct{ Status string }
			err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"status", "x"}}, &out)
			if err == nil {
				t.Fatal("want an error")
			}
			assertNoSecret(t, errChainText(err))
			assertNoSecret(t, fmt.Sprintf("%+v %#v", err, err))
		})
	}
	// Refused connection.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c, _ := New(Config{Service: "sandbox", BaseURL: "http://" + addr, Prefix: "apineo", APIKey: testKey, MaxRetries: -1})
	err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	if err == nil {
		t.Fatal("want an error")
	}
	assertNoSecret(t, errChainText(err))
}

func TestTimeoutKeepsItsKind(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}, func(c *Config) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = -1 })
	err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	if ReasonOf(err) != ReasonTimeout {
		t.Fatalf("reason = %s (%v)", ReasonOf(err), err)
	}
}

func TestCancellationStopsRetries(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			cancel()
		}
		w.WriteHeader(503)
	}, func(c *Config) { c.MinBackoff = 50 * time.Millisecond })
	err := c.DoJSON(ctx, Request{Op: "status", Method: "GET", Path: []string{"s"}}, nil)
	if err == nil || n.Load() != 1 {
		t.Fatalf("attempts %d, err %v", n.Load(), err)
	}
}

func TestGETFollowsSameHostRedirectOnly(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/old/") {
			if r.Method == "POST" {
				posts.Add(1)
			}
			http.Redirect(w, r, strings.Replace(r.URL.EscapedPath(), "/old/", "/new/", 1), http.StatusMovedPermanently)
			return
		}
		if r.Method != "GET" {
			t.Errorf("redirect followed for %s", r.Method)
		}
		io.WriteString(w, `{"error":false,"status":"pending"}`)
	}, nil)
	var out struct{ Status string }
	if err := c.DoJSON(t.Context(), Request{Op: "status", Method: "GET", Path: []string{"old"}}, &out); err != nil || out.Status != "pending" {
		t.Fatalf("GET: %v %q", err, out.Status)
	}
	body, _ := JSONBody(map[string]string{"url": "u"})
	err := c.DoJSON(t.Context(), Request{Op: "scan", Budget: Run, Method: "POST", Path: []string{"old"}, Body: body, Submission: true}, nil)
	if err == nil || posts.Load() != 1 {
		t.Fatalf("POST: err %v, posts %d", err, posts.Load())
	}
	assertNoSecret(t, errChainText(err))
}

func TestBudgetsAreSeparateAndEnforced(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	times := map[string][]time.Time{}
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := r.URL.Query().Get("b")
		_ = b
		kind := "report"
		if r.Method == "POST" {
			kind = "run"
		}
		times[kind] = append(times[kind], time.Now())
		mu.Unlock()
		io.WriteString(w, `{"error":false}`)
	}, func(c *Config) {
		c.RunLimit = Limit{Rate: 10, Burst: 1}
		c.ReportLimit = Limit{Rate: 1000, Burst: 100}
	})
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < 5; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.DoJSON(t.Context(), Request{Op: "scan", Budget: Run, Method: "POST", Path: []string{"scan"}, Submission: true}, nil)
		}()
		go func() {
			defer wg.Done()
			c.DoJSON(t.Context(), Request{Op: "status", Budget: Report, Method: "GET", Path: []string{"s"}}, nil)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(times["run"]) != 5 || len(times["report"]) != 5 {
		t.Fatalf("run %d report %d", len(times["run"]), len(times["report"]))
	}
	// 5 runs at 10/s with burst 1 span at least 4 intervals of 100ms.
	last := times["run"][4]
	for _, ts := range times["run"] {
		if ts.After(last) {
			last = ts
		}
	}
	if span := last.Sub(start); span < 350*time.Millisecond {
		t.Fatalf("5 runs took %s; the run budget was not enforced", span)
	}
	// Reports were not held back by the run budget.
	for _, ts := range times["report"] {
		if ts.Sub(start) > 300*time.Millisecond {
			t.Fatalf("a report waited %s behind the run budget", ts.Sub(start))
		}
	}
}

func TestDoStreamReturnsBinaryAndDecodesJSONErrors(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/1/") {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Header().Set("Content-Disposition", "attachment; filename=0001.jpg")
			w.Write([]byte{0xff, 0xd8, 0xff, 0xd9})
			return
		}
		io.WriteString(w, `{"error":true,"error_value":"Screenshot does not exist"}`)
	}, nil)
	s, err := c.DoStream(t.Context(), Request{Op: "screenshot", Method: "GET", Path: []string{"shot", "1"}, Accept: []string{"image/jpeg"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(s.Body)
	s.Body.Close()
	if len(b) != 4 || s.Disposition != "0001.jpg" || s.ContentType != "image/jpeg" {
		t.Fatalf("%v %q %q", b, s.Disposition, s.ContentType)
	}
	_, err = c.DoStream(t.Context(), Request{Op: "screenshot", Method: "GET", Path: []string{"shot", "9"}, Accept: []string{"image/jpeg"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Message != "Screenshot does not exist" {
		t.Fatalf("err = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, key, want string }{
		{"ftp://x", "k", "want http(s)"},
		{"https://", "k", "want http(s)"},
		{"https://u:p@x", "k", "credentials"},
		{"https://x", "", "API key is empty"},
		{"https://x", "a/b", "cannot stand in a URL path"},
	} {
		_, err := New(Config{Service: "s", BaseURL: tc.base, APIKey: tc.key, Prefix: "api"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want %q", tc.base, tc.key, err, tc.want)
		}
		if err != nil && tc.key != "" {
			assertNoSecret(t, err.Error())
		}
	}
	if _, err := New(Config{Service: "s", BaseURL: "https://x", APIKey: "k", Prefix: "api", CAFile: "/nonexistent"}); err == nil {
		t.Error("missing CA file accepted")
	}
}

func TestWireTypes(t *testing.T) {
	t.Parallel()
	var v struct {
		ID    ID        `json:"id"`
		Err   Flag      `json:"error"`
		Score Number    `json:"score"`
		T     NaiveTime `json:"t"`
		Msg   Text      `json:"msg"`
	}
	for _, tc := range []struct {
		in   string
		id   ID
		err  Flag
		sc   Number
		ts   NaiveTime
		text Text
	}{
		{`{"id":"42","error":false,"score":0.5,"t":"2024-01-02 03:04:05","msg":"x"}`, "42", false, 0.5, "2024-01-02 03:04:05", "x"},
		{`{"id":42,"error":[],"score":"97","t":null,"msg":["a","b"]}`, "42", false, 97, "", "a; b"},
		{`{"id":42.0,"error":["x"],"score":null}`, "42", true, 0, "", ""},
		{`{"error":"true"}`, "", true, 0, "", ""},
		{`{"error":"false"}`, "", false, 0, "", ""},
		{`{"error":1,"msg":{"k":1}}`, "", true, 0, "", `{"k":1}`},
	} {
		v.ID, v.Err, v.Score, v.T, v.Msg = "", false, 0, "", ""
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if v.ID != tc.id || v.Err != tc.err || v.Score != tc.sc || v.T != tc.ts || v.Msg != tc.text {
			t.Errorf("%s: got %+v", tc.in, v)
		}
	}
	if err := json.Unmarshal([]byte(`{"id":4.5}`), &v); err == nil {
		t.Error("fractional id accepted")
	}
	ts, err := NaiveTime("2024-01-02 03:04:05").Parse(time.FixedZone("ICT", 7*3600))
	if err != nil || ts.UTC().Hour() != 20 {
		t.Fatalf("%v %v", ts, err)
	}
}

func TestPollBackoffAndDeadline(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: time.Second, Factor: 2, Max: 5 * time.Second}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i, w := range want {
		if got := b.Delay(i); got != w*time.Second {
			t.Errorf("Delay(%d) = %s, want %ds", i, got, w)
		}
	}
	var slept []time.Duration
	fakeSleep := func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }
	n := 0
	err := Poll(t.Context(), b, 0, fakeSleep, func(context.Context) (bool, error) { n++; return n == 4, nil })
	if err != nil || n != 4 || len(slept) != 4 || slept[0] != time.Second || slept[3] != 5*time.Second {
		t.Fatalf("err %v n %d slept %v", err, n, slept)
	}
	err = Poll(t.Context(), Backoff{Initial: time.Millisecond, Max: time.Millisecond}, 30*time.Millisecond, nil,
		func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("err = %v, want ErrDeadline", err)
	}
}
