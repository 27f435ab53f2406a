package reputation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const key = "k3y%odd chars+x"

// setup serves handler and returns a client whose requests it sees with the
// key already checked and stripped: handler gets the path after /api/<key>.
func setup(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, rest string)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := "/base/api/k3y%25odd%20chars+x/"
		p := r.URL.EscapedPath()
		if !strings.HasPrefix(p, prefix) {
			t.Errorf("path %q lacks prefix %q", p, prefix)
			w.WriteHeader(404)
			return
		}
		if !strings.HasSuffix(p, "/") {
			t.Errorf("path %q has no trailing slash", p)
		}
		handler(w, r, strings.TrimPrefix(p, prefix))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL+"/base", key, WithRetries(1, time.Millisecond, time.Millisecond), WithRateLimits(Limit{}, Limit{}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func noSecret(t *testing.T, err error) {
	t.Helper()
	text := fmt.Sprintf("%v %+v", err, err)
	for e := err; e != nil; e = errors.Unwrap(e) {
		text += e.Error()
	}
	for _, f := range []string{key, "k3y%25odd", "k3y%odd"} {
		if strings.Contains(text, f) {
			t.Fatalf("key leaked: %s", text)
		}
	}
}

func TestScanSendsJSONAndReadsTask(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
		if r.Method != "POST" || rest != "scan/" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s %s", r.Method, rest, r.Header.Get("Content-Type"))
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if len(body) != 1 || body["url"] != "https://evil.example/login?a=1&b=2" {
			t.Errorf("body = %v", body)
		}
		fmt.Fprintf(w, `{"error":false,"task_id":"0123abcd","query_url":{"status":"/api/%s/status/0123abcd/","result":"/api/%s/result/0123abcd/"}}`, key, key)
	})
	sub, err := c.Scan(t.Context(), "https://evil.example/login?a=1&b=2")
	if err != nil {
		t.Fatal(err)
	}
	if sub.TaskID != "0123abcd" || sub.StatusPath != "/api/<redacted>/status/0123abcd/" || sub.ResultPath != "/api/<redacted>/result/0123abcd/" {
		t.Fatalf("%+v", sub)
	}
}

func TestNumericTaskIDAccepted(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
		io.WriteString(w, `{"error":false,"task_id":1042}`)
	})
	sub, err := c.Scan(t.Context(), "https://x.test/")
	if err != nil || sub.TaskID != "1042" {
		t.Fatalf("%v %+v", err, sub)
	}
}

func TestOperationsPathsAndDecoding(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
		mu.Lock()
		seen = append(seen, r.Method+" "+rest)
		mu.Unlock()
		switch {
		case rest == "status/t1/":
			io.WriteString(w, `{"status":"processing","error":false}`)
		case rest == "result/t1/":
			io.WriteString(w, `{"url":"https://a.test/","verdict":{"phishing":97,"advertising":"3","malicious":0,"illegal":null},"error":false,"extra":1}`)
		case rest == "result/detail/t1/":
			io.WriteString(w, `{"error":false,"detail":{"page_title":"Sign in","redirect_chain":["https://a.test/"]}}`)
		case rest == "search/task_id/":
			io.WriteString(w, `{"error":false,"task_id":"t1"}`)
		case rest == "verdict/report/t1/phishing/fp/":
			io.WriteString(w, `{"error":false}`)
		default:
			t.Errorf("unexpected %s", rest)
		}
	})
	ctx := t.Context()
	st, err := c.Status(ctx, "t1")
	if err != nil || st != StatusProcessing {
		t.Fatalf("status %q %v", st, err)
	}
	res, err := c.Result(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if res.URL != "https://a.test/" || res.Verdict != (Verdict{97, 3, 0, 0}) {
		t.Fatalf("%+v", res)
	}
	if n := res.Verdict.Normalized(); n != (Verdict{0.97, 0.03, 0, 0}) {
		t.Fatalf("normalized %+v", n)
	}
	if cat, s := res.Verdict.Top(); cat != Phishing || s != 97 {
		t.Fatalf("top %s %v", cat, s)
	}
	d, err := c.Detail(ctx, "t1")
	if err != nil || !strings.Contains(string(d), `"page_title":"Sign in"`) {
		t.Fatalf("detail %s %v", d, err)
	}
	id, err := c.SearchTaskID(ctx, "https://a.test/")
	if err != nil || id != "t1" {
		t.Fatalf("search %q %v", id, err)
	}
	if err := c.Report(ctx, "t1", Phishing, FalsePositive); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET status/t1/", "GET result/t1/", "GET result/detail/t1/", "POST search/task_id/", "GET verdict/report/t1/phishing/fp/"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("calls %v, want %v", seen, want)
	}
}

func TestEveryDocumentedErrorHasASentinel(t *testing.T) {
	t.Parallel()
	for text, sentinel := range sentinels {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
				fmt.Fprintf(w, `{"msg":%q,"error":true}`, text)
			})
			_, err := c.Result(t.Context(), "t1")
			if !errors.Is(err, sentinel) {
				t.Fatalf("errors.Is(%v, %v) = false", err, sentinel)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Message != text {
				t.Fatalf("service text lost: %v", err)
			}
		})
	}
}

func TestBadTaskIDsMakeNoCall(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
		t.Errorf("unexpected call %s", rest)
	})
	for _, id := range []string{"", " ", "..", "a/b"} {
		if _, err := c.Status(t.Context(), id); !errors.Is(err, ErrWrongTaskID) {
			t.Errorf("%q: %v", id, err)
		}
	}
}

func TestHTMLAndEmptyAnswersAreClearErrors(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]func(w http.ResponseWriter){
		"html 404": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(404)
			io.WriteString(w, "<!DOCTYPE html><html><title>Not Found</title></html>")
		},
		"empty 200":      func(w http.ResponseWriter) {},
		"html 200":       func(w http.ResponseWriter) { io.WriteString(w, "<html><body>Sign in</body></html>") },
		"truncated json": func(w http.ResponseWriter) { io.WriteString(w, `{"status":`) },
		"verdict absent": func(w http.ResponseWriter) { io.WriteString(w, `{"error":false}`) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) { h(w) })
			_, err := c.Result(t.Context(), "t1")
			var he *HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("err = %T %v", err, err)
			}
			noSecret(t, err)
		})
	}
}

func TestWaitStates(t *testing.T) {
	t.Parallel()
	sleep := func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	cases := []struct {
		name    string
		answers []string
		want    Status
		wantErr error
		polls   int
	}{
		{"completes", []string{"pending", "processing", "pending", "weird-new-state", "completed"}, StatusCompleted, nil, 5},
		{"fails", []string{"pending", "failed"}, StatusFailed, ErrTaskFailed, 2},
		{"transient errors keep polling", []string{"pending", "HTTP500", "RATE", "completed"}, StatusCompleted, nil, 4},
		{"documented error ends", []string{"pending", "task not found"}, StatusPending, ErrTaskNotFound, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			i := 0
			c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
				mu.Lock()
				a := tc.answers[min(i, len(tc.answers)-1)]
				i++
				mu.Unlock()
				switch a {
				case "HTTP500":
					w.WriteHeader(500)
				case "RATE":
					w.WriteHeader(429)
					io.WriteString(w, `{"error":true,"msg":"rate limit exceeded"}`)
				case "task not found":
					io.WriteString(w, `{"error":true,"msg":"task not found"}`)
				default:
					fmt.Fprintf(w, `{"status":%q,"error":false}`, a)
				}
			})
			var changes []Status
			st, err := c.Wait(t.Context(), "t1", WaitOptions{Sleep: sleep, OnStatus: func(s Status, changed bool) {
				if changed {
					changes = append(changes, s)
				}
			}})
			if st != tc.want || (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("Wait = %q, %v; want %q, %v", st, err, tc.want, tc.wantErr)
			}
			if len(changes) == 0 || changes[len(changes)-1] != tc.want {
				t.Fatalf("OnStatus saw %v", changes)
			}
		})
	}
}

func TestWaitDeadline(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request, rest string) {
		io.WriteString(w, `{"status":"pending","error":false}`)
	})
	_, err := c.Wait(t.Context(), "t1", WaitOptions{Deadline: 50 * time.Millisecond,
		Backoff: Backoff{Initial: 5 * time.Millisecond, Max: 5 * time.Millisecond}})
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("err = %v", err)
	}
}

func TestNormalizedScales(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want Verdict }{
		{Verdict{0.97, 0.01, 0, 0}, Verdict{0.97, 0.01, 0, 0}},
		{Verdict{97, 1, 0, 0}, Verdict{0.97, 0.01, 0, 0}},
		{Verdict{1, 1, 1, 1}, Verdict{1, 1, 1, 1}},
		{Verdict{-1, 150, 0, 0}, Verdict{0, 1, 0, 0}},
	} {
		if got := tc.in.Normalized(); got != tc.want {
			t.Errorf("%+v → %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
