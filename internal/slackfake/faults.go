package slackfake

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Pseudo-methods: the names under which the fake records, and injects faults
// into, requests that are not Web API methods.
const (
	MethodFileDownload = "file.download" // GET of url_private / url_private_download
	MethodFileUpload   = "file.upload"   // POST to the upload_url of files.getUploadURLExternal
	MethodResponseURL  = "response_url"  // POST to a response_url
)

// Fault makes the fake misbehave on calls of one method.
//
// For apps.connections.open: Error "invalid_auth" (or account_inactive,
// not_authed, token_revoked) or Status 404 makes slack-go's RunContext
// return that error (fatal, socket_mode_managed_conn.go connect);
// RateLimited makes it wait RetryAfter and retry; any other error makes it
// back off (up to 5 minutes) and retry.
type Fault struct {
	// Method is a Web API method ("chat.postMessage") or a pseudo-method
	// (MethodFileDownload, MethodFileUpload, MethodResponseURL).
	Method string
	// Times is how many calls the fault affects; 0 or less means every
	// call until ClearFaults.
	Times int
	// Delay holds the answer back (a slow Slack). A fault with only a Delay
	// then answers normally.
	Delay time.Duration
	// RateLimited answers HTTP 429 with a Retry-After header of RetryAfter
	// in whole seconds (rounded up) and {"ok":false,"error":"ratelimited"};
	// slack-go returns *slack.RateLimitedError{RetryAfter}.
	RateLimited bool
	RetryAfter  time.Duration
	// Status answers that HTTP status with an HTML body, as Slack's 5xx
	// pages; slack-go returns slack.StatusCodeError.
	Status int
	// Error answers HTTP 200 {"ok":false,"error":Error}.
	Error string
}

type faultRule struct {
	Fault
	left int // remaining calls; <0 unlimited
}

// InjectFault adds a fault. Faults of one method apply in the order added;
// each call consumes one use of the first fault that still has uses.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := f.Times
	if left <= 0 {
		left = -1
	}
	s.faults = append(s.faults, &faultRule{Fault: f, left: left})
}

// RateLimit makes the next times calls of method answer 429 with
// Retry-After (times ≤ 0: until ClearFaults).
func (s *Server) RateLimit(method string, times int, retryAfter time.Duration) {
	s.InjectFault(Fault{Method: method, Times: times, RateLimited: true, RetryAfter: retryAfter})
}

// Fail makes the next times calls of method answer {"ok":false,"error":code}
// (times ≤ 0: until ClearFaults).
func (s *Server) Fail(method string, times int, code string) {
	s.InjectFault(Fault{Method: method, Times: times, Error: code})
}

// SlowDown delays the answers to the next times calls of method
// (times ≤ 0: until ClearFaults).
func (s *Server) SlowDown(method string, times int, delay time.Duration) {
	s.InjectFault(Fault{Method: method, Times: times, Delay: delay})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFaultLocked consumes one use of the first fault for method.
func (s *Server) takeFaultLocked(method string) (Fault, bool) {
	for i, r := range s.faults {
		if r.Method != method || r.left == 0 {
			continue
		}
		if r.left > 0 {
			r.left--
			if r.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return r.Fault, true
	}
	return Fault{}, false
}

// sleep waits d unless the request or the server ends first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// faultAnswer turns a fault into an answer, or returns false when the fault
// only delays.
func faultAnswer(f Fault) (apiResult, bool) {
	switch {
	case f.RateLimited:
		secs := int64((f.RetryAfter + time.Second - 1) / time.Second)
		r := errResult("ratelimited")
		r.status = http.StatusTooManyRequests
		r.header = http.Header{"Retry-After": {fmt.Sprint(secs)}}
		return r, true
	case f.Status != 0:
		return apiResult{status: f.Status, html: fmt.Sprintf("<html><body><h1>%d %s</h1></body></html>", f.Status, http.StatusText(f.Status))}, true
	case f.Error != "":
		return errResult(f.Error), true
	}
	return apiResult{}, false
}
