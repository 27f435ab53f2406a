package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// The decoders below turn a successful answer (the core has already ruled
// out `error` true) into the package's types. They are pure and tolerant of
// both the spec's and CAPE's shapes (the spec writes ids as strings, CAPE as integers): ids as
// strings or numbers, nullable timestamps, unknown members ignored. Each is a
// fuzz target.

// errShape is the cause of every decode failure; wrapped in an *HTTPError
// by badAnswer.
var errShape = errors.New("unexpected answer shape")

func badAnswer(op string, err error) error {
	return wrapErr(&apiclient.HTTPError{Service: ServiceName, Op: op, StatusCode: http.StatusOK, Cause: err.Error()})
}

func shapeErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errShape, fmt.Sprintf(format, args...))
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// Submission is the answer to CreateFile (spec §4 #1).
type Submission struct {
	// TaskIDs holds one id per task created; CAPE creates several for an
	// archive it unpacks or for machine=all (CAPEv2's tasks/create/file). Never empty.
	TaskIDs []string
	// URLs are the tracking URLs the service returned (may be empty), with
	// the API key, should one carry it, replaced.
	URLs []string
	// Message is the confirmation text ("Task ID 1042 has been submitted").
	Message string
}

// decodeSubmission reads the spec shape {"task_ids":["1042"],"url":[…],
// "data":"Task ID …"} and CAPE's {"data":{"task_ids":[1042],"message":…},
// "url":[…]}; the top-level task_ids wins when both are present.
func decodeSubmission(raw []byte) (*Submission, error) {
	var w struct {
		TaskIDs json.RawMessage `json:"task_ids"`
		TaskID  apiclient.ID    `json:"task_id"` // Cuckoo-style single id
		URL     json.RawMessage `json:"url"`
		Data    json.RawMessage `json:"data"`
		Message apiclient.Text  `json:"message"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, shapeErr("%v", err)
	}
	s := &Submission{Message: string(w.Message)}
	ids, err := decodeIDList(w.TaskIDs)
	if err != nil {
		return nil, err
	}
	if d := bytes.TrimSpace(w.Data); len(d) > 0 {
		switch d[0] {
		case '"':
			var t apiclient.Text
			if err := json.Unmarshal(d, &t); err != nil {
				return nil, shapeErr("data: %v", err)
			}
			s.Message = string(t)
		case '{':
			var inner struct {
				TaskIDs json.RawMessage `json:"task_ids"`
				Message apiclient.Text  `json:"message"`
				URL     json.RawMessage `json:"url"`
			}
			if err := json.Unmarshal(d, &inner); err != nil {
				return nil, shapeErr("data: %v", err)
			}
			if len(ids) == 0 {
				if ids, err = decodeIDList(inner.TaskIDs); err != nil {
					return nil, err
				}
			}
			if inner.Message != "" {
				s.Message = string(inner.Message)
			}
			if isNull(w.URL) {
				w.URL = inner.URL
			}
		}
	}
	if len(ids) == 0 && w.TaskID != "" {
		ids = []string{string(w.TaskID)}
	}
	if len(ids) == 0 {
		return nil, shapeErr("no task id in the answer")
	}
	s.TaskIDs = ids
	if s.URLs, err = decodeStringList(w.URL); err != nil {
		return nil, shapeErr("url: %v", err)
	}
	return s, nil
}

// decodeIDList reads an array of ids (strings or numbers) or a single id.
func decodeIDList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil
	}
	var list []apiclient.ID
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, shapeErr("task_ids: %v", err)
		}
	} else {
		var one apiclient.ID
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, shapeErr("task_ids: %v", err)
		}
		list = []apiclient.ID{one}
	}
	ids := make([]string, 0, len(list))
	for _, id := range list {
		if id == "" {
			return nil, shapeErr("task_ids holds an empty id")
		}
		ids = append(ids, string(id))
	}
	return ids, nil
}

// decodeStringList reads an array of strings or a single string.
func decodeStringList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] == '[' {
		var list []apiclient.Text
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(list))
		for _, t := range list {
			if t != "" {
				out = append(out, string(t))
			}
		}
		return out, nil
	}
	var t apiclient.Text
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	if t == "" {
		return nil, nil
	}
	return []string{string(t)}, nil
}

// File is a sample record (spec §2 "Sample file record"; data of File view).
type File struct {
	// ID is what the service calls "analysis task id of the sample"; CAPE
	// sends its sample row id there (CAPEv2's files/view). Do not rely on it.
	ID     string
	MD5    string
	SHA1   string
	SHA256 string
	SHA512 string
	CRC32  string
	// SSDeep is empty when the service sends null.
	SSDeep   string
	FileType string
	FileSize int64
}

type wireFile struct {
	ID       apiclient.ID     `json:"id"`
	MD5      apiclient.Text   `json:"md5"`
	SHA1     apiclient.Text   `json:"sha1"`
	SHA256   apiclient.Text   `json:"sha256"`
	SHA512   apiclient.Text   `json:"sha512"`
	CRC32    apiclient.Text   `json:"crc32"`
	SSDeep   apiclient.Text   `json:"ssdeep"`
	FileType apiclient.Text   `json:"file_type"`
	FileSize apiclient.Number `json:"file_size"`
}

// decodeFile reads {"data": {sample record}}.
func decodeFile(raw []byte) (*File, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, shapeErr("%v", err)
	}
	if d := bytes.TrimSpace(env.Data); len(d) == 0 || d[0] != '{' {
		return nil, shapeErr("data is not a sample record")
	}
	var w wireFile
	if err := json.Unmarshal(env.Data, &w); err != nil {
		return nil, shapeErr("data: %v", err)
	}
	size := float64(w.FileSize)
	if size < 0 || size > math.MaxInt64/2 || math.IsNaN(size) {
		return nil, shapeErr("file_size %v", size)
	}
	return &File{
		ID: string(w.ID), MD5: string(w.MD5), SHA1: string(w.SHA1), SHA256: string(w.SHA256),
		SHA512: string(w.SHA512), CRC32: string(w.CRC32), SSDeep: string(w.SSDeep),
		FileType: string(w.FileType), FileSize: int64(size),
	}, nil
}

// Task is a task record (spec §2 "Task record"; task search results and
// task info). Timestamps are the server's naive "YYYY-MM-DD HH:MM:SS" text,
// empty until reached (CAPE sends null, CAPEv2's tasks/view).
type Task struct {
	ID string
	// Target is the analysed file name (task search; CAPE also sends it in
	// task info).
	Target string
	// Status and Category are CAPE extras (CAPEv2's tasks/search); empty when absent.
	Status   Status
	Category string

	AddedOn     NaiveTime
	StartedOn   NaiveTime
	CompletedOn NaiveTime
}

// NaiveTime is a server timestamp of the form "YYYY-MM-DD HH:MM:SS" with
// no zone (added_on, started_on, completed_on). It is kept as the server
// wrote it: the zone is not documented (CAPE 2021 used server local time),
// so callers must show it, never compute ages from it. Empty means null /
// not reached yet.
type NaiveTime string

// Set reports whether the timestamp is present.
func (t NaiveTime) Set() bool { return t != "" }

// Parse reads the timestamp in loc (the zone the operator says the server
// uses). It is for display only.
func (t NaiveTime) Parse(loc *time.Location) (time.Time, error) {
	return apiclient.NaiveTime(t).Parse(loc)
}

type wireTask struct {
	ID          apiclient.ID        `json:"id"`
	Target      apiclient.Text      `json:"target"`
	Status      apiclient.Text      `json:"status"`
	Category    apiclient.Text      `json:"category"`
	AddedOn     apiclient.NaiveTime `json:"added_on"`
	StartedOn   apiclient.NaiveTime `json:"started_on"`
	CompletedOn apiclient.NaiveTime `json:"completed_on"`
}

func (w wireTask) task() Task {
	return Task{
		ID: string(w.ID), Target: string(w.Target), Status: Status(strings.TrimSpace(string(w.Status))),
		Category: string(w.Category), AddedOn: NaiveTime(w.AddedOn), StartedOn: NaiveTime(w.StartedOn), CompletedOn: NaiveTime(w.CompletedOn),
	}
}

// decodeTasks reads {"data": [task, …]}; null or absent data is no tasks.
// The result is never nil.
func decodeTasks(raw []byte) ([]Task, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, shapeErr("%v", err)
	}
	tasks := []Task{}
	if isNull(env.Data) {
		return tasks, nil
	}
	var list []wireTask
	if err := json.Unmarshal(env.Data, &list); err != nil {
		return nil, shapeErr("data: %v", err)
	}
	for _, w := range list {
		tasks = append(tasks, w.task())
	}
	return tasks, nil
}

// decodeTask reads {"data": {task}}. An answer without an id gets fallbackID.
func decodeTask(raw []byte, fallbackID string) (*Task, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, shapeErr("%v", err)
	}
	if d := bytes.TrimSpace(env.Data); len(d) == 0 || d[0] != '{' {
		return nil, shapeErr("data is not a task record")
	}
	var w wireTask
	if err := json.Unmarshal(env.Data, &w); err != nil {
		return nil, shapeErr("data: %v", err)
	}
	t := w.task()
	if t.ID == "" {
		t.ID = fallbackID
	}
	return &t, nil
}

// decodeStatus reads {"data": "<status>"}; an object with a status member
// (Cuckoo-style) is accepted too.
func decodeStatus(raw []byte) (Status, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", shapeErr("%v", err)
	}
	d := bytes.TrimSpace(env.Data)
	var s apiclient.Text
	switch {
	case len(d) > 0 && d[0] == '"':
		if err := json.Unmarshal(d, &s); err != nil {
			return "", shapeErr("data: %v", err)
		}
	case len(d) > 0 && d[0] == '{':
		var obj struct {
			Status apiclient.Text `json:"status"`
		}
		if err := json.Unmarshal(d, &obj); err != nil {
			return "", shapeErr("data: %v", err)
		}
		s = obj.Status
	}
	st := Status(strings.TrimSpace(string(s)))
	if st == "" {
		return "", shapeErr("no status in the answer")
	}
	return st, nil
}

// Report is the summary report (spec §2 "Summary report", §4 #6).
type Report struct {
	TaskID string
	// MalFamily is the malware family; empty means no detection.
	MalFamily string
	// MalScore is the threat score, 0–10 (a float, e.g. 3.6: CAPEv2's malscore bands).
	MalScore float64
	// URLs is a member the spec does not list but a public client reads
	// (a public client of the service); kept when it is a list of strings, else empty.
	URLs []string
}

// Level bands the report's score (see the function Level).
func (r *Report) Level() Band { return Level(r.MalScore) }

type wireReport struct {
	TaskID    apiclient.ID      `json:"task_id"`
	MalFamily apiclient.Text    `json:"malfamily"`
	MalScore  *apiclient.Number `json:"malscore"`
	URLs      json.RawMessage   `json:"urls"`
}

// decodeReport reads {"task_id":…,"malfamily":…,"malscore":…}; the same
// members inside a "data" object are accepted when the top level has no
// malscore. A report without malscore is refused: a missing score must not
// read as 0 (clean). An answer without task_id gets fallbackID.
func decodeReport(raw []byte, fallbackID string) (*Report, error) {
	var top struct {
		wireReport
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, shapeErr("%v", err)
	}
	w := top.wireReport
	if w.MalScore == nil {
		if d := bytes.TrimSpace(top.Data); len(d) > 0 && d[0] == '{' {
			var inner wireReport
			if err := json.Unmarshal(d, &inner); err != nil {
				return nil, shapeErr("data: %v", err)
			}
			if inner.TaskID == "" {
				inner.TaskID = w.TaskID
			}
			w = inner
		}
	}
	if w.MalScore == nil {
		return nil, shapeErr("no malscore in the answer")
	}
	score := float64(*w.MalScore)
	if math.IsNaN(score) || math.IsInf(score, 0) {
		return nil, shapeErr("malscore %v", score)
	}
	r := &Report{TaskID: string(w.TaskID), MalFamily: strings.TrimSpace(string(w.MalFamily)), MalScore: score}
	if r.TaskID == "" {
		r.TaskID = fallbackID
	}
	if urls, err := decodeStringList(w.URLs); err == nil {
		r.URLs = urls
	}
	return r, nil
}
