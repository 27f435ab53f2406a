package apiclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRequestContentLengthIsSentForStreamedBodies(t *testing.T) {
	t.Parallel()
	type seen struct {
		length  int64
		chunked bool
		n       int64
	}
	got := make(chan seen, 2)
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got <- seen{r.ContentLength, len(r.TransferEncoding) > 0, n}
		io.WriteString(w, `{"error":false}`)
	}, nil)
	body := func() (io.Reader, error) {
		pr, pw := io.Pipe()
		go func() { io.WriteString(pw, "hello"); pw.Close() }()
		return pr, nil
	}
	for _, length := range []int64{5, 0} {
		err := c.DoJSON(t.Context(), Request{Op: "up", Budget: Run, Method: "POST", Path: []string{"up"}, Body: body, ContentLength: length}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.n != 5 || (length > 0 && (s.length != 5 || s.chunked)) || (length == 0 && !s.chunked) {
			t.Errorf("ContentLength %d: server saw %+v", length, s)
		}
	}
}

func TestRequestTimeoutOverridesConfig(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(150 * time.Millisecond):
		}
		io.WriteString(w, `{"error":false}`)
	}, func(c *Config) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = -1 })
	if err := c.DoJSON(t.Context(), Request{Op: "s", Method: "GET", Path: []string{"s"}}, nil); ReasonOf(err) != ReasonTimeout {
		t.Fatalf("config timeout: %v", err)
	}
	if err := c.DoJSON(t.Context(), Request{Op: "s", Method: "GET", Path: []string{"s"}, Timeout: 2 * time.Second}, nil); err != nil {
		t.Fatalf("request timeout: %v", err)
	}
}

type ownReasonError struct{ inner error }

func (e *ownReasonError) Error() string  { return "own: " + e.inner.Error() }
func (e *ownReasonError) Unwrap() error  { return e.inner }
func (e *ownReasonError) Reason() Reason { return ReasonTimeout }

func TestReasonOfHonoursOwnReason(t *testing.T) {
	t.Parallel()
	inner := &RateLimitError{Service: "s", Op: "o", StatusCode: 429}
	err := fmt.Errorf("wrapped: %w", &ownReasonError{inner: inner})
	if got := ReasonOf(err); got != ReasonTimeout {
		t.Fatalf("ReasonOf = %s, want the error's own reason", got)
	}
	var rl *RateLimitError
	if !errors.As(err, &rl) || !strings.Contains(err.Error(), "own:") {
		t.Fatal("chain broken")
	}
	if got := ReasonOf(fmt.Errorf("x: %w", inner)); got != ReasonRateLimited {
		t.Fatalf("ReasonOf = %s", got)
	}
}
