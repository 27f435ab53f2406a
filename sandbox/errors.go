package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Sentinels for the service's error texts. The spec has no catalogue (§7:
// "not shown"); these are CAPE's texts for the same endpoints
// (CAPEv2's apiv2 views, CAPE 2021 and HEAD), which the
// simulator sends too. A failure the service reports is an *APIError whose
// Message is the text as sent; errors.Is(err, ErrX) matches it. Keep in sync with sentinels and prefixes below.
var (
	// ErrNoFile: CreateFile sent no `file` part (CAPEv2's tasks/create/file).
	//lint:ignore ST1005 the service's exact text (docs/specs/sandbox-api.md)
	ErrNoFile = errors.New("No file was submitted")
	// ErrEmptyFile: CreateFile sent zero bytes (CAPEv2's tasks/create/file).
	//lint:ignore ST1005 the service's exact text (docs/specs/sandbox-api.md)
	ErrEmptyFile = errors.New("You submitted an empty file")
	// ErrFileTooLarge: the sample exceeds the service's upload limit (CAPEv2's tasks/create/file).
	ErrFileTooLarge = errors.New("File size exceeds API limit") // the service's exact text
	// ErrSampleNotFound: FileView of an unknown hash (CAPEv2's files/view); also
	// matches CAPE's multitenancy text "Sample not found".
	//lint:ignore ST1005 the service's exact text (docs/specs/sandbox-api.md)
	ErrSampleNotFound = errors.New("Sample not found in database")
	// ErrTaskNotFound: TaskInfo of an unknown id (CAPEv2's tasks/view); also matches
	// CAPE's multitenancy text "Task not found".
	ErrTaskNotFound = errors.New("Task not found in database") // the service's exact text
	// ErrTaskDoesNotExist: Status, SimpleReport or a screenshot operation
	// on an unknown id (CAPEv2's task status and screenshot views).
	ErrTaskDoesNotExist = errors.New("Task does not exist") // the service's exact text
	// ErrStillAnalyzing: SimpleReport or a screenshot operation before the
	// task is reported (CAPEv2's screenshot views). CAPE 2021 also answers this for
	// failed tasks.
	ErrStillAnalyzing = errors.New("Task is still being analyzed") // the service's exact text
	// ErrTaskFailed: SimpleReport or a screenshot operation on a failed
	// task (CAPE HEAD, CAPEv2's screenshot views); Wait's *TaskFailedError matches it too.
	ErrTaskFailed = errors.New("Task failed") // the service's exact text
	// ErrNoScreenshots: the task has no screenshots; the service's text is
	// "No screenshots created for task <id>" (CAPEv2's screenshot views). Screenshots
	// turns it into an empty result.
	//lint:ignore ST1005 the service's exact text (docs/specs/sandbox-api.md)
	ErrNoScreenshots = errors.New("No screenshots created for task")
	// ErrScreenshotNotFound: Screenshot of a number the task does not have
	// (CAPEv2's screenshot views).
	ErrScreenshotNotFound = errors.New("Screenshot does not exist") // the service's exact text
	// ErrInvalidKey is the simulator's text for an unknown key (HTTP 403,
	// an invented text: what the real service answers is not
	// documented).
	ErrInvalidKey = errors.New("invalid api key")
)

// sentinels maps exact texts to their sentinel.
var sentinels = map[string]error{
	"No file was submitted":        ErrNoFile,
	"You submitted an empty file":  ErrEmptyFile,
	"File size exceeds API limit":  ErrFileTooLarge,
	"Sample not found in database": ErrSampleNotFound,
	"Task not found in database":   ErrTaskNotFound,
	"Task does not exist":          ErrTaskDoesNotExist,
	"Task is still being analyzed": ErrStillAnalyzing,
	"Task failed":                  ErrTaskFailed,
	"Screenshot does not exist":    ErrScreenshotNotFound,
	"invalid api key":              ErrInvalidKey,
}

// prefixes maps text prefixes to their sentinel, for texts that end in an id
// or come in variants. No prefix may be a prefix of another.
var prefixes = map[string]error{
	"No screenshots created for task": ErrNoScreenshots,
	"Task not found":                  ErrTaskNotFound,   // HEAD multitenancy, HTTP 404
	"Sample not found":                ErrSampleNotFound, // HEAD multitenancy, HTTP 404
}

// rateLimitTexts mean "slow down" whatever the HTTP status: CAPE 2020's
// limit_exceeded view (CAPEv2's rate limits), which the simulator sends with 429.
var rateLimitTexts = []string{"Rate limit exceeded for this API"}

// quotaTexts mean the total-request quota is spent (the simulator's text;
// the vendor's is not documented, spec §8).
var quotaTexts = []string{"quota exceeded"}

// Client-side refusals, matched with errors.Is through *InputError.
var (
	// ErrInvalidHash: FileView or SearchTasks got something that is not 32,
	// 40 or 64 hex digits (CAPEv2's URL routes accept nothing else).
	ErrInvalidHash = errors.New("invalid hash")
	// ErrInvalidTaskID: an empty task id, ".", "..", or one containing '/'.
	ErrInvalidTaskID = errors.New("invalid task id")
	// ErrInvalidScreenshotNumber: a screenshot number outside 0–9999 (CAPE
	// route \d{1,4}, CAPEv2's URL routes).
	ErrInvalidScreenshotNumber = errors.New("invalid screenshot number")
)

// InputError is an argument refused before any request was sent. Kind is
// ErrInvalidHash, ErrInvalidTaskID or ErrInvalidScreenshotNumber.
type InputError struct {
	Op    string
	Value string
	Kind  error
}

// Error names the operation, the kind of refusal and the value (cut at 80
// bytes).
func (e *InputError) Error() string {
	v := e.Value
	if len(v) > 80 {
		v = v[:80] + "…"
	}
	return fmt.Sprintf("%s %s: %v %q", ServiceName, e.Op, e.Kind, v)
}

// Unwrap returns Kind.
func (e *InputError) Unwrap() error { return e.Kind }

// Reason classifies the refusal as a client error (ReasonOf).
func (e *InputError) Reason() Reason { return ReasonClient }

// TaskFailedError reports a task that reached a terminal failure status
// (failed_analysis, failed_processing, failed_reporting, banned; notes
// §1.6). errors.Is(err, ErrTaskFailed) is true for it.
type TaskFailedError struct {
	TaskID string
	Status Status
}

// Error names the task and its final status.
func (e *TaskFailedError) Error() string {
	return fmt.Sprintf("%s task %s ended with status %q", ServiceName, e.TaskID, e.Status)
}

// Is makes errors.Is(err, ErrTaskFailed) true.
func (e *TaskFailedError) Is(target error) bool { return target == ErrTaskFailed }

// Reason classifies a failed task as a service-reported failure.
func (e *TaskFailedError) Reason() Reason { return ReasonAPI }

// WaitTimeoutError reports a Wait that gave up: the overall deadline passed
// (errors.Is(err, ErrDeadline)) or the task stayed pending longer
// than WaitOptions.PendingDeadline (errors.Is(err, ErrStuckPending)).
type WaitTimeoutError struct {
	TaskID string
	// Last is the last status seen ("" if no poll succeeded).
	Last Status
	// Waited is the time waited, on the client's clock.
	Waited time.Duration
	// Stuck is true for the pending deadline, false for the overall one.
	Stuck bool
	// LastErr is the error of the last poll if it failed (a transient
	// error: rate limit, 5xx, transport), else nil.
	LastErr error
	err     error
}

// ErrStuckPending matches a WaitTimeoutError for a task that did not leave
// "pending" within WaitOptions.PendingDeadline.
var ErrStuckPending = errors.New("task stuck in pending")

// Error says which deadline passed, after how long, the last status and the
// last polling error.
func (e *WaitTimeoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s wait for task %s: ", ServiceName, e.TaskID)
	if e.Stuck {
		b.WriteString(ErrStuckPending.Error())
	} else {
		b.WriteString("deadline passed")
	}
	fmt.Fprintf(&b, " after %s", e.Waited.Round(time.Millisecond))
	if e.Last != "" {
		fmt.Fprintf(&b, "; last status %q", e.Last)
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, "; last error: %v", e.LastErr)
	}
	return b.String()
}

// Unwrap returns the underlying deadline or stuck error and LastErr.
func (e *WaitTimeoutError) Unwrap() []error { return []error{e.err, e.LastErr} }

// Is matches ErrStuckPending for a stuck task and ErrDeadline for an
// overall timeout.
func (e *WaitTimeoutError) Is(target error) bool {
	if e.Stuck {
		return target == ErrStuckPending
	}
	return target == ErrDeadline
}

// Reason classifies a wait that gave up as a timeout.
func (e *WaitTimeoutError) Reason() Reason { return ReasonTimeout }

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

// ErrDeadline matches (errors.Is) a Wait that gave up because its overall
// deadline passed before the task ended (a *WaitTimeoutError).
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
// (`error` true with `error_value`, or a framework `detail`). Message is the service's own text, unchanged.
// Kind is the sentinel for a documented text (ErrTaskDoesNotExist, …) or nil;
// errors.Is(err, ErrTaskDoesNotExist) works through Unwrap.
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

func causes(errs ...error) []error {
	out := errs[:0:0]
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}
