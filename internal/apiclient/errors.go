package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Reason classifies a failure for logs, metrics and retry decisions. Keep in
// sync with ReasonOf and with the metrics labels docs/operations.md documents.
type Reason string

// Failure reasons.
const (
	ReasonNone        Reason = ""
	ReasonAPI         Reason = "api"          // the service answered with a documented error
	ReasonAuth        Reason = "auth"         // key refused (HTTP 401/403)
	ReasonRateLimited Reason = "rate_limited" // HTTP 429 or the service's rate-limit text
	ReasonQuota       Reason = "quota"        // total request quota exhausted
	ReasonClient      Reason = "client"       // other 4xx, unmatched route
	ReasonServer      Reason = "server"       // 5xx
	ReasonBadBody     Reason = "bad_body"     // HTML, empty or undecodable body
	ReasonTransport   Reason = "transport"    // connection, TLS, DNS
	ReasonTimeout     Reason = "timeout"      // per-attempt or overall deadline
	ReasonCanceled    Reason = "canceled"     // caller cancelled
)

// APIError is a failure the service reported itself, in its envelope
// (`error` true with `msg` or `error_value`, or a framework `detail`).
// Message is the service's own text, unchanged. Kind is the package's
// sentinel for a documented text, or nil; errors.Is(err, sentinel) works
// through Unwrap.
type APIError struct {
	Service    string
	Op         string
	StatusCode int
	Message    string
	Kind       error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %s (HTTP %d)", e.Service, e.Op, e.Message, e.StatusCode)
}

// Unwrap returns the sentinel for the message, if it is a documented one.
func (e *APIError) Unwrap() error { return e.Kind }

// RateLimitError reports HTTP 429 (or a quota refusal) after the client's
// retries were used up or the wait would outlast the context.
type RateLimitError struct {
	Service    string
	Op         string
	StatusCode int
	RetryAfter time.Duration // zero when the service gave none
	Message    string
	Quota      bool // the total-request quota, not the rate, is exhausted
}

func (e *RateLimitError) Error() string {
	what := "rate limited"
	if e.Quota {
		what = "request quota exhausted"
	}
	s := fmt.Sprintf("%s %s: %s (HTTP %d", e.Service, e.Op, what, e.StatusCode)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	s += ")"
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// HTTPError is an answer that is not the service's JSON: an HTML error page,
// an empty body, or a body that does not decode. Snippet is a short, redacted
// excerpt to help an operator recognise a proxy or sign-in page.
type HTTPError struct {
	Service     string
	Op          string
	StatusCode  int
	ContentType string
	Snippet     string
	Cause       string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("%s %s: HTTP %d: %s", e.Service, e.Op, e.StatusCode, e.Cause)
	if e.ContentType != "" {
		s += " (" + e.ContentType + ")"
	}
	if e.Snippet != "" {
		s += ": " + e.Snippet
	}
	return s
}

// TransportError is a failure to exchange the request at all: DNS, TCP, TLS,
// a refused redirect, a timeout. Its text never contains the request URL's
// path (which carries the API key); Unwrap gives a copy of the cause with the
// URL redacted, so errors.Is(err, context.DeadlineExceeded) still works.
type TransportError struct {
	Service string
	Op      string
	msg     string
	cause   error
}

func (e *TransportError) Error() string { return fmt.Sprintf("%s %s: %s", e.Service, e.Op, e.msg) }

// Unwrap returns the redacted cause.
func (e *TransportError) Unwrap() error { return e.cause }

// Timeout reports whether the cause was a timeout.
func (e *TransportError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.cause, &t) && t.Timeout() || errors.Is(e.cause, context.DeadlineExceeded)
}

// ReasonOf classifies err. It returns ReasonNone for nil. An error in the
// chain with a method Reason() Reason (outermost first) gives its own reason.
func ReasonOf(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	var (
		apiErr  *APIError
		rlErr   *RateLimitError
		httpErr *HTTPError
		trErr   *TransportError
	)
	var own interface{ Reason() Reason }
	switch {
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.As(err, &own):
		// A service package's own error (a refused argument, a failed
		// task, a wait that timed out) knows its reason.
		return own.Reason()
	case errors.As(err, &rlErr):
		if rlErr.Quota {
			return ReasonQuota
		}
		return ReasonRateLimited
	case errors.As(err, &apiErr):
		if apiErr.StatusCode == 401 || apiErr.StatusCode == 403 {
			return ReasonAuth
		}
		return ReasonAPI
	case errors.As(err, &httpErr):
		switch {
		case httpErr.StatusCode == 401 || httpErr.StatusCode == 403:
			return ReasonAuth
		case httpErr.StatusCode >= 500:
			return ReasonServer
		case httpErr.StatusCode >= 400:
			return ReasonClient
		}
		return ReasonBadBody
	case errors.As(err, &trErr):
		if trErr.Timeout() {
			return ReasonTimeout
		}
		return ReasonTransport
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	}
	return ReasonTransport
}

// redactor removes one secret, in every form it can take in a URL, from text.
type redactor struct{ forms []string }

const redacted = "<redacted>"

func newRedactor(secret string) redactor {
	if secret == "" {
		return redactor{}
	}
	seen := map[string]bool{}
	var forms []string
	for _, f := range []string{secret, url.PathEscape(secret), url.QueryEscape(secret), strings.ReplaceAll(url.PathEscape(secret), "%", "%25")} {
		if f != "" && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	return redactor{forms: forms}
}

func (r redactor) String(s string) string {
	for _, f := range r.forms {
		s = strings.ReplaceAll(s, f, redacted)
	}
	return s
}

// transportError turns an error from http.Client.Do into a TransportError
// whose text and unwrapped cause are free of the secret.
func (r redactor) transportError(service, op string, err error) *TransportError {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner := ue.Err
		if inner != nil && strings.Contains(inner.Error(), "://") {
			// e.g. redirect refusals name the target URL.
			inner = &redactedError{msg: r.String(inner.Error()), cause: unwrapSafe(inner)}
		}
		cause = &url.Error{Op: ue.Op, URL: r.String(ue.URL), Err: inner}
	}
	msg := r.String(cause.Error())
	return &TransportError{Service: service, Op: op, msg: msg, cause: cause}
}

// unwrapSafe keeps the error kinds callers test for (timeouts, net errors)
// without keeping any text that could carry a URL.
func unwrapSafe(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return context.DeadlineExceeded
	}
	return nil
}

type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }
