package reputation

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Reason classifies a failure for logs, metrics labels and retry decisions.
type Reason string

// Failure reasons (the metrics labels docs/operations.md documents).
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

// ErrDeadline matches (errors.Is) a Wait that gave up because its deadline
// passed before the task ended.
var ErrDeadline = apiclient.ErrDeadline

// ReasonOf classifies an error returned by this package: ReasonNone for nil,
// the error's own Reason for this package's error types, ReasonCanceled or
// ReasonTimeout for a context's error, and ReasonTransport for anything
// else.
func ReasonOf(err error) Reason {
	var own interface{ Reason() Reason }
	switch {
	case err == nil:
		return ReasonNone
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.As(err, &own):
		return own.Reason()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, apiclient.ErrDeadline):
		return ReasonTimeout
	}
	return ReasonTransport
}

// The error types below are what the client returns for a failed request.
// Each keeps the HTTP core's error it was made from as an unexported cause
// (Error returns its text, in which the key is already redacted), so its
// text is unchanged and the client's own retry and polling logic still
// classifies it.

// APIError is a failure the service reported itself, in its envelope
// (`error` true with `msg`). Message is the service's own text, unchanged.
// Kind is the sentinel for a documented text (ErrTaskNotFound, …) or nil;
// errors.Is(err, ErrTaskNotFound) works through Unwrap.
type APIError struct {
	Op         string
	StatusCode int
	Message    string
	Kind       error
	cause      *apiclient.APIError
}

func (e *APIError) Error() string { return e.cause.Error() }

// Unwrap returns Kind (when set) and the cause.
func (e *APIError) Unwrap() []error { return causes(e.Kind, e.cause) }

// Reason is ReasonAuth for HTTP 401/403, ReasonAPI otherwise.
func (e *APIError) Reason() Reason { return Reason(apiclient.ReasonOf(e.cause)) }

// RateLimitError reports HTTP 429 (or a quota refusal) after the client's
// retries were used up or the wait would outlast the context.
type RateLimitError struct {
	Op         string
	StatusCode int
	RetryAfter time.Duration // zero when the service gave none
	Message    string
	Quota      bool // the total-request quota, not the rate, is exhausted
	cause      *apiclient.RateLimitError
}

func (e *RateLimitError) Error() string { return e.cause.Error() }

// Unwrap returns the cause.
func (e *RateLimitError) Unwrap() error { return e.cause }

// Reason is ReasonQuota or ReasonRateLimited.
func (e *RateLimitError) Reason() Reason { return Reason(apiclient.ReasonOf(e.cause)) }

// HTTPError is an answer that is not the service's JSON: an HTML error page,
// an empty body, or a body that does not decode. Snippet is a short, redacted
// excerpt to help an operator recognise a proxy or sign-in page.
type HTTPError struct {
	Op          string
	StatusCode  int
	ContentType string
	Snippet     string
	Cause       string
	cause       *apiclient.HTTPError
}

func (e *HTTPError) Error() string { return e.cause.Error() }

// Unwrap returns the cause.
func (e *HTTPError) Unwrap() error { return e.cause }

// Reason is ReasonAuth, ReasonServer, ReasonClient or ReasonBadBody by status.
func (e *HTTPError) Reason() Reason { return Reason(apiclient.ReasonOf(e.cause)) }

// TransportError is a failure to exchange the request at all: DNS, TCP,
// TLS, a refused redirect, a timeout. Its text never contains the request
// URL's path (which carries the API key); errors.Is(err,
// context.DeadlineExceeded) still works.
type TransportError struct {
	Op    string
	cause *apiclient.TransportError
}

func (e *TransportError) Error() string { return e.cause.Error() }

// Unwrap returns the cause (whose own cause is redacted).
func (e *TransportError) Unwrap() error { return e.cause }

// Timeout reports whether the failure was a timeout.
func (e *TransportError) Timeout() bool { return e.cause.Timeout() }

// Reason is ReasonTimeout or ReasonTransport.
func (e *TransportError) Reason() Reason { return Reason(apiclient.ReasonOf(e.cause)) }

// wrapErr turns an error of the HTTP core into this package's type; other
// errors (a context's, a refused argument) pass unchanged.
func wrapErr(err error) error {
	switch e := err.(type) {
	case *apiclient.APIError:
		return &APIError{Op: e.Op, StatusCode: e.StatusCode, Message: e.Message, Kind: e.Kind, cause: e}
	case *apiclient.RateLimitError:
		return &RateLimitError{Op: e.Op, StatusCode: e.StatusCode, RetryAfter: e.RetryAfter, Message: e.Message, Quota: e.Quota, cause: e}
	case *apiclient.HTTPError:
		return &HTTPError{Op: e.Op, StatusCode: e.StatusCode, ContentType: e.ContentType, Snippet: e.Snippet, Cause: e.Cause, cause: e}
	case *apiclient.TransportError:
		return &TransportError{Op: e.Op, cause: e}
	}
	return err
}

// badAnswer is a successful answer whose content is unusable.
func badAnswer(op, cause string) error {
	return wrapErr(&apiclient.HTTPError{Service: ServiceName, Op: op, StatusCode: http.StatusOK, Cause: cause})
}

func causes(errs ...error) []error {
	out := errs[:0:0]
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// do sends req through the HTTP core and returns its failure as this
// package's error type.
func (c *Client) do(ctx context.Context, req apiclient.Request, out any) error {
	return wrapErr(c.api.DoJSON(ctx, req, out))
}
