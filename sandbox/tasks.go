package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Operation names, as they appear in errors and Event.Op. They
// match the simulator's (sim.Op*).
const (
	OpCreateFile        = "create_file"
	OpFileView          = "file_view"
	OpTaskSearch        = "task_search"
	OpTaskView          = "task_view"
	OpStatus            = "status"
	OpSimpleReport      = "simple_report"
	OpScreenshot        = "screenshot"
	OpScreenshotArchive = "screenshot_archive"
	OpWait              = "wait"
)

// CreateFile submits a sample for analysis (spec §4 #1, POST
// tasks/create/file/, multipart field "file") and returns the ids of the
// tasks created. name is sent as the file name (directories and control
// characters removed; "sample" if nothing is left).
//
// The body is streamed from r: the file is never held in memory. When r is
// an io.Seeker (an *os.File, a *bytes.Reader) its size gives the request a
// Content-Length and the upload can be sent again, from r's position at the
// call, when the first attempt never reached the service or was refused with
// 429; otherwise it goes out chunked and is sent at most once (a second
// attempt fails with a "not replayable" error internally and the first
// attempt's error is returned). An upload the service may have received is
// never repeated: each one creates tasks.
//
// CreateFile stops reading r before it returns, unless ctx ends while a Read
// of r is blocked; make such readers honour ctx.
//
// Errors: ErrNoFile, ErrEmptyFile and ErrFileTooLarge (CAPE's texts, notes
// §1.2) as *APIError; a nil r is an *InputError matching ErrNoFile.
func (c *Client) CreateFile(ctx context.Context, name string, r io.Reader) (*Submission, error) {
	if r == nil {
		return nil, &InputError{Op: OpCreateFile, Value: name, Kind: ErrNoFile}
	}
	u, err := newUpload(uploadName(name), r)
	if err != nil {
		return nil, err
	}
	defer u.finish(ctx)
	var raw json.RawMessage
	err = c.do(ctx, apiclient.Request{
		Op: OpCreateFile, Budget: apiclient.Run, Method: http.MethodPost,
		Path: []string{"tasks", "create", "file"},
		Body: u.open, ContentType: u.contentType(), ContentLength: u.length,
		Submission: true, Timeout: c.uploadTimeout,
	}, &raw)
	if err != nil {
		return nil, err
	}
	s, err := decodeSubmission(raw)
	if err != nil {
		return nil, badAnswer(OpCreateFile, err)
	}
	for i, u := range s.URLs {
		s.URLs[i] = c.api.Redact(u)
	}
	return s, nil
}

// FileView returns the sample record for an MD5, SHA1 or SHA256 hash (spec
// §4 #2, GET files/view/{md5|sha1|sha256}/<hash>/), chosen by the hash's
// length. A hash that is not 32, 40 or 64 hex digits is refused without a
// request (*InputError, ErrInvalidHash). Unknown hash: ErrSampleNotFound.
func (c *Client) FileView(ctx context.Context, hash string) (*File, error) {
	alg, h, err := checkHash(OpFileView, hash)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, apiclient.Request{Op: OpFileView, Method: http.MethodGet,
		Path: []string{"files", "view", alg, h}}, &raw); err != nil {
		return nil, err
	}
	f, err := decodeFile(raw)
	if err != nil {
		return nil, badAnswer(OpFileView, err)
	}
	return f, nil
}

// SearchTasks returns the tasks analysed for a sample, by MD5, SHA1 or
// SHA256 (spec §4 #3, GET tasks/search/{md5|sha1|sha256}/<hash>/), newest
// first as CAPE orders them (CAPEv2's tasks/search). An unknown hash gives an empty
// slice and a nil error: CAPE answers `data: []` for it, and a service that
// answers "Sample not found" is read the same way. The hash is validated as
// for FileView.
func (c *Client) SearchTasks(ctx context.Context, hash string) ([]Task, error) {
	alg, h, err := checkHash(OpTaskSearch, hash)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, apiclient.Request{Op: OpTaskSearch, Method: http.MethodGet,
		Path: []string{"tasks", "search", alg, h}}, &raw); err != nil {
		if errors.Is(err, ErrSampleNotFound) {
			return []Task{}, nil
		}
		return nil, err
	}
	tasks, err := decodeTasks(raw)
	if err != nil {
		return nil, badAnswer(OpTaskSearch, err)
	}
	return tasks, nil
}

// TaskInfo returns a task's record (spec §4 #4, GET tasks/view/<task_id>/).
// Unknown id: ErrTaskNotFound.
func (c *Client) TaskInfo(ctx context.Context, taskID string) (*Task, error) {
	if err := checkTaskID(OpTaskView, taskID); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, apiclient.Request{Op: OpTaskView, Method: http.MethodGet,
		Path: []string{"tasks", "view", taskID}}, &raw); err != nil {
		return nil, err
	}
	t, err := decodeTask(raw, taskID)
	if err != nil {
		return nil, badAnswer(OpTaskView, err)
	}
	return t, nil
}

// Status returns a task's status (spec §4 #5, GET tasks/status/<task_id>/).
// Unknown id: ErrTaskDoesNotExist. Use Wait to poll until the task ends.
func (c *Client) Status(ctx context.Context, taskID string) (Status, error) {
	if err := checkTaskID(OpStatus, taskID); err != nil {
		return "", err
	}
	var raw json.RawMessage
	if err := c.do(ctx, apiclient.Request{Op: OpStatus, Method: http.MethodGet,
		Path: []string{"tasks", "status", taskID}}, &raw); err != nil {
		return "", err
	}
	st, err := decodeStatus(raw)
	if err != nil {
		return "", badAnswer(OpStatus, err)
	}
	return st, nil
}

// SimpleReport returns a reported task's malware family and score (spec §4
// #6, GET tasks/get/simple_report/<task_id>/); band the score with Level.
// Errors (CAPE validate_task texts, the simulator's sandbox model): ErrTaskDoesNotExist,
// ErrStillAnalyzing before the task is reported, ErrTaskFailed for a failed
// task (older services answer ErrStillAnalyzing for those too).
func (c *Client) SimpleReport(ctx context.Context, taskID string) (*Report, error) {
	if err := checkTaskID(OpSimpleReport, taskID); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, apiclient.Request{Op: OpSimpleReport, Method: http.MethodGet,
		Path: []string{"tasks", "get", "simple_report", taskID}}, &raw); err != nil {
		return nil, err
	}
	r, err := decodeReport(raw, taskID)
	if err != nil {
		return nil, badAnswer(OpSimpleReport, err)
	}
	return r, nil
}

// checkTaskID refuses ids that cannot name a task in a URL path. Ids are
// otherwise opaque (the simulator and CAPE use decimal ids; the spec says
// "string"), and the core escapes them.
func checkTaskID(op, id string) error {
	if id == "" || id == "." || id == ".." || strings.Contains(id, "/") {
		return &InputError{Op: op, Value: id, Kind: ErrInvalidTaskID}
	}
	return nil
}

// checkHash returns the route segment for hash (md5, sha1 or sha256, by
// length) and the hash in lower case, or an *InputError: CAPE's routes
// accept exactly 32, 40 or 64 hex digits (CAPEv2's URL routes) and answer anything
// else with an HTML 404.
func checkHash(op, hash string) (alg, norm string, err error) {
	h := strings.TrimSpace(hash)
	switch len(h) {
	case 32:
		alg = "md5"
	case 40:
		alg = "sha1"
	case 64:
		alg = "sha256"
	default:
		return "", "", &InputError{Op: op, Value: hash, Kind: ErrInvalidHash}
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", "", &InputError{Op: op, Value: hash, Kind: ErrInvalidHash}
		}
	}
	return alg, strings.ToLower(h), nil
}
