package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Sentinels for the service's error texts. The spec has no catalogue (§7:
// "not shown"); these are CAPE's texts for the same endpoints
// (notes/analysis-services.md §1.2–§1.7, CAPE 2021 and HEAD), which the
// simulator sends too. A failure the service reports is an
// *apiclient.APIError whose Message is the text as sent; errors.Is(err,
// ErrX) matches it. Keep in sync with sentinels and prefixes below.
var (
	// ErrNoFile: CreateFile sent no `file` part (notes §1.2).
	ErrNoFile = errors.New("No file was submitted") //nolint:staticcheck // the service's exact text
	// ErrEmptyFile: CreateFile sent zero bytes (notes §1.2).
	ErrEmptyFile = errors.New("You submitted an empty file") //nolint:staticcheck // the service's exact text
	// ErrFileTooLarge: the sample exceeds the service's upload limit (notes §1.2).
	ErrFileTooLarge = errors.New("File size exceeds API limit") //nolint:staticcheck // the service's exact text
	// ErrSampleNotFound: FileView of an unknown hash (notes §1.3); also
	// matches CAPE's multitenancy text "Sample not found".
	ErrSampleNotFound = errors.New("Sample not found in database") //nolint:staticcheck // the service's exact text
	// ErrTaskNotFound: TaskInfo of an unknown id (notes §1.5); also matches
	// CAPE's multitenancy text "Task not found".
	ErrTaskNotFound = errors.New("Task not found in database") //nolint:staticcheck // the service's exact text
	// ErrTaskDoesNotExist: Status, SimpleReport or a screenshot operation
	// on an unknown id (notes §1.6, §1.7).
	ErrTaskDoesNotExist = errors.New("Task does not exist") //nolint:staticcheck // the service's exact text
	// ErrStillAnalyzing: SimpleReport or a screenshot operation before the
	// task is reported (notes §1.7, §4.2). CAPE 2021 also answers this for
	// failed tasks.
	ErrStillAnalyzing = errors.New("Task is still being analyzed") //nolint:staticcheck // the service's exact text
	// ErrTaskFailed: SimpleReport or a screenshot operation on a failed
	// task (CAPE HEAD, notes §1.7); Wait's *TaskFailedError matches it too.
	ErrTaskFailed = errors.New("Task failed") //nolint:staticcheck // the service's exact text
	// ErrNoScreenshots: the task has no screenshots; the service's text is
	// "No screenshots created for task <id>" (notes §1.7). Screenshots
	// turns it into an empty result.
	ErrNoScreenshots = errors.New("No screenshots created for task") //nolint:staticcheck // the service's exact text
	// ErrScreenshotNotFound: Screenshot of a number the task does not have
	// (notes §1.7).
	ErrScreenshotNotFound = errors.New("Screenshot does not exist") //nolint:staticcheck // the service's exact text
	// ErrInvalidKey is the simulator's text for an unknown key (HTTP 403,
	// notes §4, an invented text: what the real service answers is not
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
// limit_exceeded view (notes §1.9), which the simulator sends with 429.
var rateLimitTexts = []string{"Rate limit exceeded for this API"}

// quotaTexts mean the total-request quota is spent (the simulator's text;
// the vendor's is not documented, spec §8).
var quotaTexts = []string{"quota exceeded"}

// Client-side refusals, matched with errors.Is through *InputError.
var (
	// ErrInvalidHash: FileView or SearchTasks got something that is not 32,
	// 40 or 64 hex digits (CAPE's routes accept nothing else, notes §1.1).
	ErrInvalidHash = errors.New("invalid hash")
	// ErrInvalidTaskID: an empty task id, ".", "..", or one containing '/'.
	ErrInvalidTaskID = errors.New("invalid task id")
	// ErrInvalidScreenshotNumber: a screenshot number outside 0–9999 (CAPE
	// route \d{1,4}, notes §1.1).
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

// Reason classifies the refusal as a client error for apiclient.ReasonOf.
func (e *InputError) Reason() apiclient.Reason { return apiclient.ReasonClient }

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
func (e *TaskFailedError) Reason() apiclient.Reason { return apiclient.ReasonAPI }

// WaitTimeoutError reports a Wait that gave up: the overall deadline passed
// (errors.Is(err, apiclient.ErrDeadline)) or the task stayed pending longer
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

// Is matches ErrStuckPending for a stuck task and apiclient.ErrDeadline
// for an overall timeout.
func (e *WaitTimeoutError) Is(target error) bool {
	if e.Stuck {
		return target == ErrStuckPending
	}
	return target == apiclient.ErrDeadline
}

// Reason classifies a wait that gave up as a timeout.
func (e *WaitTimeoutError) Reason() apiclient.Reason { return apiclient.ReasonTimeout }
