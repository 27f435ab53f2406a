package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// t0 is the start of every manual clock in these tests.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// testKey is the key every test client sends.
const testKey = "k3y"

// harness is a running simulator and a client for it.
type harness struct {
	t     *testing.T
	srv   *sim.Server
	base  string
	clock *testutil.Clock
	hc    *http.Client
}

// setup starts a simulator for cfg with a manual clock at t0 unless cfg
// brings its own clock.
func setup(t *testing.T, cfg sim.Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: testutil.NewClock(t0)}
	if cfg.Now == nil {
		cfg.Now = h.clock.Now
	}
	h.srv, h.base = simtest.Start(t, cfg)
	h.hc = &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return h
}

// reply is one answer, body read.
type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) String() string { return strings.TrimSuffix(string(r.body), "\n") }

// json decodes the body into a generic value.
func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func (h *harness) do(method, path, contentType string, body io.Reader) reply {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.base+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

func (h *harness) get(path string) reply {
	h.t.Helper()
	return h.do(http.MethodGet, path, "", nil)
}

func (h *harness) postJSON(path, body string) reply {
	h.t.Helper()
	return h.do(http.MethodPost, path, "application/json", strings.NewReader(body))
}

// api and neo build service paths for testKey.
func api(p string) string { return "/api/" + testKey + "/" + p }
func neo(p string) string { return "/apineo/" + testKey + "/" + p }

// scan submits u and returns the task id.
func (h *harness) scan(u string) string {
	h.t.Helper()
	b, _ := json.Marshal(map[string]string{"url": u})
	r := h.postJSON(api("scan/"), string(b))
	m := r.json(h.t)
	id, _ := m["task_id"].(string)
	if r.code != 200 || id == "" {
		h.t.Fatalf("scan %q: %d %s", u, r.code, r)
	}
	return id
}

// urlStatus polls a URL task once.
func (h *harness) urlStatus(id string) string {
	h.t.Helper()
	r := h.get(api("status/" + id + "/"))
	s, _ := r.json(h.t)["status"].(string)
	return s
}

// completeURL polls until completed (fast profile) and fails after 50 polls.
func (h *harness) completeURL(id string) {
	h.t.Helper()
	for range 50 {
		if h.urlStatus(id) == "completed" {
			return
		}
	}
	h.t.Fatalf("task %s did not complete", id)
}

// file is one multipart file part.
type file struct {
	field, name string
	content     []byte
}

func multipartBody(t *testing.T, files ...file) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range files {
		var w io.Writer
		var err error
		if f.name == "" {
			w, err = mw.CreateFormField(f.field)
		} else {
			w, err = mw.CreateFormFile(f.field, f.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

func (h *harness) upload(files ...file) reply {
	h.t.Helper()
	ct, body := multipartBody(h.t, files...)
	return h.do(http.MethodPost, neo("tasks/create/file/"), ct, body)
}

// submit uploads content as sample.exe and returns the single task id.
func (h *harness) submit(content string) string {
	h.t.Helper()
	r := h.upload(file{"file", "sample.exe", []byte(content)})
	var out struct {
		TaskIDs []any `json:"task_ids"`
		Data    struct {
			TaskIDs []any `json:"task_ids"` // CAPECompat
		} `json:"data"`
	}
	json.Unmarshal(r.body, &out)
	ids := append(out.TaskIDs, out.Data.TaskIDs...)
	if len(ids) != 1 {
		h.t.Fatalf("submit: %d %s", r.code, r)
	}
	return fmt.Sprint(ids[0])
}

// sbStatus polls a sandbox task once.
func (h *harness) sbStatus(id string) string {
	h.t.Helper()
	r := h.get(neo("tasks/status/" + id + "/"))
	s, _ := r.json(h.t)["data"].(string)
	return s
}

// report polls until the sandbox task leaves the in-progress statuses and
// returns the final status.
func (h *harness) finishSandbox(id string) string {
	h.t.Helper()
	for range 50 {
		switch st := h.sbStatus(id); st {
		case "reported", "failed_analysis", "failed_processing", "failed_reporting":
			return st
		}
	}
	h.t.Fatalf("task %s did not finish", id)
	return ""
}

// wantBody fails unless r has the status and exact body (without the
// trailing newline).
func wantBody(t *testing.T, what string, r reply, code int, body string) {
	t.Helper()
	if r.code != code || r.String() != body {
		t.Errorf("%s:\n got %d %s\nwant %d %s", what, r.code, r, code, body)
	}
}
