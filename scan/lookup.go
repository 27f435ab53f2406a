package scan

import (
	"context"
	"errors"
	"strings"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/verdict"
)

// This file holds the lookups /scan makes outside the pipeline (a task's
// status, a file by hash, a verdict report), so that callers reach the
// services through scan, with scan's types, and never the clients' wire
// types or error types.

// ErrNotFound matches (errors.Is) a lookup of a task or a file the service
// does not know.
var ErrNotFound = errors.New("not known to the service")

// LookupError is a failed lookup or report at an analysis service
// (URLs.Status, URLs.Report, Files.Task, Files.Sample), classified so the
// caller can answer the user without knowing the clients.
type LookupError struct {
	// NotFound: the service does not know the task or the file; errors.Is
	// (err, ErrNotFound) is true.
	NotFound bool
	// Message is the service's own failure text when it answered with one
	// (its envelope), else empty.
	Message string
	// Reason is the failure's reason label, the clients' vocabulary:
	// "api", "auth", "rate_limited", "quota", "client", "server",
	// "bad_body", "transport", "timeout", "canceled".
	Reason string
	// Err is the client's error; its text never holds the API key.
	Err error
}

func (e *LookupError) Error() string { return e.Err.Error() }

// Unwrap returns the client's error.
func (e *LookupError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) true for NotFound.
func (e *LookupError) Is(target error) bool { return target == ErrNotFound && e.NotFound }

// Throttled reports whether the service refused for its rate limit or
// request quota.
func (e *LookupError) Throttled() bool {
	return e.Reason == string(reputation.ReasonRateLimited) || e.Reason == string(reputation.ReasonQuota)
}

// KeyRefused reports whether the service refused our API key.
func (e *LookupError) KeyRefused() bool { return e.Reason == string(reputation.ReasonAuth) }

// lookupErr classifies a client's error; notFound are the client's
// sentinels meaning the task or file is unknown. A nil err stays nil.
func lookupErr(err error, notFound ...error) error {
	if err == nil {
		return nil
	}
	le := &LookupError{Reason: reasonOf(err), Err: err}
	for _, s := range notFound {
		if errors.Is(err, s) {
			le.NotFound = true
		}
	}
	le.Message, _ = serviceMessage(err)
	return le
}

// serviceMessage returns the service's own failure text when err is a
// failure either service reported in its envelope.
func serviceMessage(err error) (string, bool) {
	var (
		re *reputation.APIError
		se *sandbox.APIError
	)
	switch {
	case errors.As(err, &re):
		return re.Message, true
	case errors.As(err, &se):
		return se.Message, true
	}
	return "", false
}

// reasonOf classifies a failure of either client, or of any error that
// knows its reason label (a download's), with the clients' labels.
func reasonOf(err error) string {
	var own interface{ Reason() string }
	if errors.As(err, &own) && !errors.Is(err, context.Canceled) {
		return own.Reason()
	}
	if r := sandbox.ReasonOf(err); r != sandbox.ReasonTransport {
		return string(r)
	}
	return string(reputation.ReasonOf(err))
}

// Status returns the URL service's status of a task ("completed",
// "pending", …; open-ended), for /scan status. A failure is a
// *LookupError.
func (u *URLs) Status(ctx context.Context, taskID string) (string, error) {
	st, err := u.rep.Status(ctx, taskID)
	if err != nil {
		return "", lookupErr(err, reputation.ErrTaskNotFound)
	}
	return string(st), nil
}

// Report sends a verdict disposition for one category of a completed URL
// task: option "fp" (false positive), "fn" (false negative) or "restore".
// A refusal is a *LookupError (its Message is the service's text).
func (u *URLs) Report(ctx context.Context, taskID string, category verdict.Category, option string) error {
	err := u.rep.Report(ctx, taskID, reputation.Category(category), reputation.ReportOption(option))
	return lookupErr(err, reputation.ErrTaskNotFound)
}

// SandboxTask is a sandbox task as /scan shows it.
type SandboxTask struct {
	ID     string
	Status string // the sandbox's status ("pending", "reported", …); may be empty in a list
	// HaveTimes is true when the sandbox gave the task's timestamps.
	HaveTimes bool
	// AddedOn, StartedOn and CompletedOn are the sandbox's own timestamps
	// ("YYYY-MM-DD HH:MM:SS", zone undocumented: show them, never compute
	// ages), empty when not reached.
	AddedOn, StartedOn, CompletedOn string
}

func sandboxTask(t sandbox.Task) SandboxTask {
	return SandboxTask{ID: t.ID, Status: string(t.Status), HaveTimes: true,
		AddedOn: string(t.AddedOn), StartedOn: string(t.StartedOn), CompletedOn: string(t.CompletedOn)}
}

// Task returns a sandbox task's status and, when the sandbox gives them
// (task info), its timestamps, for /scan status. A failure of the status
// call is a *LookupError; a failed task info only leaves HaveTimes false.
func (f *Files) Task(ctx context.Context, id string) (*SandboxTask, error) {
	st, err := f.sb.Status(ctx, id)
	if err != nil {
		return nil, lookupErr(err, sandbox.ErrTaskDoesNotExist, sandbox.ErrTaskNotFound)
	}
	t := &SandboxTask{ID: id, Status: string(st)}
	if info, err := f.sb.TaskInfo(ctx, id); err == nil {
		status := t.Status
		*t = sandboxTask(*info)
		t.ID, t.Status = id, status
	}
	return t, nil
}

// Sample is what the sandbox knows of a file, for /scan hash.
type Sample struct {
	MD5, SHA1, SHA256 string
	Type              string // the sandbox's file type, may be empty
	Size              int64
	// Tasks are the file's tasks in the sandbox's order (newest first).
	Tasks []SandboxTask
	// Report is the newest of those tasks' reports that the sandbox has;
	// nil when none has one.
	Report *SandboxReport
}

// SandboxReport is a task's simple report.
type SandboxReport struct {
	TaskID    string
	MalScore  float64 // 0–10
	MalFamily string  // empty when the sandbox named none
}

// Sample looks a file up in the sandbox by its MD5, SHA-1 or SHA-256: the
// sample record, its tasks and the newest report among them. A file the
// sandbox never saw is a *LookupError matching ErrNotFound.
func (f *Files) Sample(ctx context.Context, hash string) (*Sample, error) {
	file, err := f.sb.FileView(ctx, hash)
	if err != nil {
		return nil, lookupErr(err, sandbox.ErrSampleNotFound)
	}
	s := &Sample{MD5: file.MD5, SHA1: file.SHA1, SHA256: file.SHA256, Type: file.FileType, Size: file.FileSize}
	tasks, err := f.sb.SearchTasks(ctx, hash)
	if err != nil {
		return nil, lookupErr(err)
	}
	s.Tasks = make([]SandboxTask, len(tasks))
	for i, t := range tasks {
		s.Tasks[i] = sandboxTask(t)
	}
	for _, t := range tasks { // newest first: the newest with a report
		r, err := f.sb.SimpleReport(ctx, t.ID)
		if err != nil {
			continue
		}
		s.Report = &SandboxReport{TaskID: t.ID, MalScore: r.MalScore, MalFamily: r.MalFamily}
		break
	}
	return s, nil
}

// FileSHA256 returns the SHA-256 of the file the sandbox knows by hash (an
// MD5, SHA-1 or SHA-256), in lower case: one call (the sample record),
// whether or not the sandbox knows the file. A file the sandbox never saw
// is a *LookupError matching ErrNotFound.
func (f *Files) FileSHA256(ctx context.Context, hash string) (string, error) {
	file, err := f.sb.FileView(ctx, hash)
	if err != nil {
		return "", lookupErr(err, sandbox.ErrSampleNotFound)
	}
	return strings.ToLower(file.SHA256), nil
}
