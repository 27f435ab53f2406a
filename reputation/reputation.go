// Package reputation is a client for the URL reputation service
// (docs/specs/url-reputation-api.md): scan a URL, poll its task, read the summary
// verdict and the full detail, find the latest task for a URL, and report a
// false positive / false negative or restore a verdict.
//
// Every request carries the API key in its path (/api/<key>/…); the key
// never appears in an error or a log line. Failures the service reports come
// back as *APIError carrying the service's own text, matched with errors.Is
// against the sentinels below; throttling is a *RateLimitError, an answer
// that is not the service's JSON an *HTTPError and a network failure a
// *TransportError (errors.go). ReasonOf classifies all of them.
package reputation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Sentinels for every error text of the spec (§7), matched exactly as the
// spec writes them, trailing dots and capitals included. Keep in sync with
// sentinels below.
var (
	ErrInvalidMethod     = errors.New("invalid method")
	ErrInvalidJSON       = errors.New("invalid json")
	ErrInvalidURL        = errors.New("invalid url")
	ErrTaskNotFound      = errors.New("task not found")
	ErrWrongTaskID       = errors.New("wrong task id")
	ErrTaskNotCompleted  = errors.New("task not completed yet")
	ErrFailedToGetResult = errors.New("failed to get result")
	//lint:ignore ST1005 the service's exact text (docs/specs/url-reputation-api.md)
	ErrVerdictType = errors.New("verdict_type error.")
	//lint:ignore ST1005 the service's exact text (docs/specs/url-reputation-api.md)
	ErrOption = errors.New("Option error.")
	// ErrInvalidKey is the simulator's text for an unknown key; the spec does
	// not say what the real service answers.
	ErrInvalidKey = errors.New("invalid api key")
)

var sentinels = map[string]error{
	"invalid method":         ErrInvalidMethod,
	"invalid json":           ErrInvalidJSON,
	"invalid url":            ErrInvalidURL,
	"task not found":         ErrTaskNotFound,
	"wrong task id":          ErrWrongTaskID,
	"task not completed yet": ErrTaskNotCompleted,
	"failed to get result":   ErrFailedToGetResult,
	"verdict_type error.":    ErrVerdictType,
	"Option error.":          ErrOption,
	"invalid api key":        ErrInvalidKey,
}

// Client talks to one URL reputation service with one key. It is safe for
// concurrent use.
type Client struct {
	api *apiclient.Client
}

// New returns a client for the service at baseURL (http or https, optionally
// with a path prefix) using apiKey.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	s := settings{cfg: apiclient.Config{
		Service:        ServiceName,
		BaseURL:        baseURL,
		Prefix:         "api",
		APIKey:         apiKey,
		RunLimit:       DefaultRunLimit.core(),
		ReportLimit:    DefaultReportLimit.core(),
		Sentinels:      sentinels,
		RateLimitTexts: []string{"rate limit exceeded"},
		QuotaTexts:     []string{"quota exceeded"},
	}}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	api, err := apiclient.New(s.cfg)
	if err != nil {
		return nil, err
	}
	return &Client{api: api}, nil
}

// ShareBudgets divides the run and report budgets among n replicas that use
// the same key (n < 1 counts as 1), so that together they stay within the
// configured budgets: each gets Rate/n and a burst of ceil(Burst/n), at least
// 1. An unlimited budget stays unlimited; ShareBudgets(1) restores the
// configured budgets. Call it again whenever n changes. It is safe for
// concurrent use with requests, and does nothing on a nil Client.
func (c *Client) ShareBudgets(n int) {
	if c == nil {
		return
	}
	c.api.Share(n)
}

// Budgets returns the run and report budgets in force now (see
// ShareBudgets). A zero Rate means unlimited.
func (c *Client) Budgets() (run, report Limit) {
	r, q := c.api.CurrentLimit(apiclient.Run), c.api.CurrentLimit(apiclient.Report)
	return Limit{Rate: r.Rate, Burst: r.Burst}, Limit{Rate: q.Rate, Burst: q.Burst}
}

// Submission is the answer to a scan (spec §4.1).
type Submission struct {
	TaskID string
	// StatusPath and ResultPath are the relative paths the service returned
	// in query_url, with the key replaced by "<key>".
	StatusPath, ResultPath string
}

// Scan submits rawURL for analysis (spec §4.1, POST scan/). Each call creates
// a new task at the service; it is never sent twice for one call.
func (c *Client) Scan(ctx context.Context, rawURL string) (*Submission, error) {
	body, err := apiclient.JSONBody(map[string]string{"url": rawURL})
	if err != nil {
		return nil, err
	}
	var out struct {
		TaskID   apiclient.ID `json:"task_id"`
		QueryURL struct {
			Status apiclient.Text `json:"status"`
			Result apiclient.Text `json:"result"`
		} `json:"query_url"`
	}
	err = c.do(ctx, apiclient.Request{Op: "scan", Budget: apiclient.Run, Method: http.MethodPost,
		Path: []string{"scan"}, Body: body, ContentType: "application/json", Submission: true}, &out)
	if err != nil {
		return nil, err
	}
	if out.TaskID == "" {
		return nil, badAnswer("scan", "answer has no task_id")
	}
	return &Submission{
		TaskID:     string(out.TaskID),
		StatusPath: c.api.Redact(string(out.QueryURL.Status)),
		ResultPath: c.api.Redact(string(out.QueryURL.Result)),
	}, nil
}

// Status is a task status. Only "completed" is documented (spec §3); other
// values are open-ended.
type Status string

// Known statuses. StatusCompleted is the spec's; the others are what the
// simulator uses and what similar services send.
const (
	StatusCompleted  Status = "completed"
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusFailed     Status = "failed"
)

// Status reads a task's status (spec §4.2, GET status/<task_id>/).
func (c *Client) Status(ctx context.Context, taskID string) (Status, error) {
	if err := checkID(taskID); err != nil {
		return "", err
	}
	var out struct {
		Status apiclient.Text `json:"status"`
	}
	if err := c.do(ctx, apiclient.Request{Op: "status", Method: http.MethodGet, Path: []string{"status", taskID}}, &out); err != nil {
		return "", err
	}
	return Status(strings.TrimSpace(string(out.Status))), nil
}

// Category is one of the four verdict scores (spec §2).
type Category string

// The four categories, in the order the spec lists them.
const (
	Phishing    Category = "phishing"
	Advertising Category = "advertising"
	Malicious   Category = "malicious"
	Illegal     Category = "illegal"
)

// Categories lists the four categories in the spec's order.
var Categories = []Category{Phishing, Advertising, Malicious, Illegal}

// Verdict holds the four scores. Their range is not documented (spec §2:
// "Range of verdict scores: not shown"): they may be 0–1 or 0–100; use
// Normalized before comparing with thresholds.
type Verdict struct {
	Phishing    float64 `json:"phishing"`
	Advertising float64 `json:"advertising"`
	Malicious   float64 `json:"malicious"`
	Illegal     float64 `json:"illegal"`
}

// UnmarshalJSON accepts numbers or numeric strings for each score.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	var raw struct {
		Phishing    apiclient.Number `json:"phishing"`
		Advertising apiclient.Number `json:"advertising"`
		Malicious   apiclient.Number `json:"malicious"`
		Illegal     apiclient.Number `json:"illegal"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*v = Verdict{float64(raw.Phishing), float64(raw.Advertising), float64(raw.Malicious), float64(raw.Illegal)}
	return nil
}

// Score returns the score of one category.
func (v Verdict) Score(c Category) float64 {
	switch c {
	case Phishing:
		return v.Phishing
	case Advertising:
		return v.Advertising
	case Malicious:
		return v.Malicious
	case Illegal:
		return v.Illegal
	}
	return 0
}

// Normalized returns the scores on a 0–1 scale: when any score exceeds 1 the
// service is taken to use 0–100 and every score is divided by 100. Results
// are clamped to [0, 1].
func (v Verdict) Normalized() Verdict {
	scale := 1.0
	for _, c := range Categories {
		if v.Score(c) > 1 {
			scale = 100
		}
	}
	n := func(f float64) float64 { return min(max(f/scale, 0), 1) }
	return Verdict{n(v.Phishing), n(v.Advertising), n(v.Malicious), n(v.Illegal)}
}

// Top returns the category with the highest score (the first in spec order
// on ties).
func (v Verdict) Top() (Category, float64) {
	best, score := Phishing, v.Phishing
	for _, c := range Categories[1:] {
		if s := v.Score(c); s > score {
			best, score = c, s
		}
	}
	return best, score
}

// Result is the summary verdict (spec §4.3).
type Result struct {
	URL     string
	Verdict Verdict
}

// Result reads a completed task's summary (spec §4.3, GET result/<task_id>/).
// Before completion it returns an error matching ErrTaskNotCompleted.
func (c *Client) Result(ctx context.Context, taskID string) (*Result, error) {
	if err := checkID(taskID); err != nil {
		return nil, err
	}
	var out struct {
		URL     apiclient.Text   `json:"url"`
		Verdict *json.RawMessage `json:"verdict"`
	}
	if err := c.do(ctx, apiclient.Request{Op: "result", Method: http.MethodGet, Path: []string{"result", taskID}}, &out); err != nil {
		return nil, err
	}
	if out.Verdict == nil {
		return nil, badAnswer("result", "answer has no verdict")
	}
	var v Verdict
	if err := json.Unmarshal(*out.Verdict, &v); err != nil {
		return nil, badAnswer("result", "verdict does not decode: "+err.Error())
	}
	return &Result{URL: string(out.URL), Verdict: v}, nil
}

// Detail reads a completed task's full result (spec §4.4, GET
// result/detail/<task_id>/). Its content is not documented, so it is
// returned as raw JSON.
func (c *Client) Detail(ctx context.Context, taskID string) (json.RawMessage, error) {
	if err := checkID(taskID); err != nil {
		return nil, err
	}
	var out struct {
		Detail json.RawMessage `json:"detail"`
	}
	if err := c.do(ctx, apiclient.Request{Op: "detail", Method: http.MethodGet, Path: []string{"result", "detail", taskID}}, &out); err != nil {
		return nil, err
	}
	if len(out.Detail) == 0 || string(out.Detail) == "null" {
		return json.RawMessage("{}"), nil
	}
	return out.Detail, nil
}

// SearchTaskID returns the latest task analysed for rawURL (spec §4.5, POST
// search/task_id/), or an error matching ErrTaskNotFound.
func (c *Client) SearchTaskID(ctx context.Context, rawURL string) (string, error) {
	body, err := apiclient.JSONBody(map[string]string{"url": rawURL})
	if err != nil {
		return "", err
	}
	var out struct {
		TaskID apiclient.ID `json:"task_id"`
	}
	if err := c.do(ctx, apiclient.Request{Op: "search", Method: http.MethodPost, Path: []string{"search", "task_id"},
		Body: body, ContentType: "application/json"}, &out); err != nil {
		return "", err
	}
	if out.TaskID == "" {
		return "", badAnswer("search", "answer has no task_id")
	}
	return string(out.TaskID), nil
}

// ReportOption is a verdict disposition (spec §4.6).
type ReportOption string

// Dispositions.
const (
	FalsePositive ReportOption = "fp"
	FalseNegative ReportOption = "fn"
	Restore       ReportOption = "restore"
)

// Report sends a verdict disposition for one category of a completed task
// (spec §4.6, GET verdict/report/<task_id>/<verdict_type>/<option>/). The
// service decides which types and options it accepts and answers
// ErrVerdictType or ErrOption otherwise.
func (c *Client) Report(ctx context.Context, taskID string, verdictType Category, option ReportOption) error {
	if err := checkID(taskID); err != nil {
		return err
	}
	if verdictType == "" || option == "" {
		return fmt.Errorf("reputation report: empty verdict type or option")
	}
	return c.do(ctx, apiclient.Request{Op: "verdict_report", Method: http.MethodGet,
		Path: []string{"verdict", "report", taskID, string(verdictType), string(option)}}, nil)
}

func checkID(id string) error {
	if strings.TrimSpace(id) == "" || id == "." || id == ".." || strings.Contains(id, "/") {
		return fmt.Errorf("reputation: %w: %q", ErrWrongTaskID, id)
	}
	return nil
}
