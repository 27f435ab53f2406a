package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

const (
	md5Hex    = "d41d8cd98f00b204e9800998ecf8427e"
	sha1Hex   = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
	sha256Hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

func TestNewValidatesWithoutLeakingKey(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"ftp://x", "https://", "https://u:p@host", "::"} {
		_, err := New(base, testKey)
		if err == nil {
			t.Errorf("New(%q) accepted", base)
		}
		assertNoSecret(t, err)
	}
	if _, err := New("https://sandbox.example", ""); err == nil {
		t.Error("empty key accepted")
	}
	if _, err := New("https://sandbox.example", "k", WithCAFile("/nonexistent/ca.pem")); err == nil {
		t.Error("missing CA file accepted")
	}
	c, err := New("https://sandbox.example/prefix/", testKey, WithInsecureTLS(), WithTimeout(time.Second),
		WithUploadTimeout(time.Minute), WithLogger(nil), WithObserver(func(Event) {}), nil)
	if err != nil || c.uploadTimeout != time.Minute {
		t.Fatalf("New with options: %v", err)
	}
}

// TestOperationsSpecShape runs every JSON operation against the spec's
// shapes (string ids, error false) and checks method and path.
func TestOperationsSpecShape(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		switch p {
		case "files/view/sha256/" + sha256Hex + "/":
			writeJSON(w, 200, `{"error": false, "data": {"id": "1042", "md5": "`+md5Hex+`", "sha1": "`+sha1Hex+`",
				"sha256": "`+sha256Hex+`", "sha512": "cf83", "crc32": "00000000", "ssdeep": null,
				"file_type": "PE32 executable (GUI) Intel 80386, for MS Windows", "file_size": 1234, "parent": null}}`)
		case "tasks/search/md5/" + md5Hex + "/":
			writeJSON(w, 200, `{"error": false, "data": [
				{"id": "1043", "target": "invoice.exe", "added_on": "2024-05-01 10:00:00", "started_on": "2024-05-01 10:00:05", "completed_on": "2024-05-01 10:04:00", "status": "reported", "category": "file"},
				{"id": "1042", "target": "invoice.exe", "added_on": "2024-04-30 09:00:00", "started_on": null, "completed_on": null}]}`)
		case "tasks/view/1042/":
			writeJSON(w, 200, `{"error": false, "data": {"id": "1042", "added_on": "2024-04-30 09:00:00", "started_on": null, "completed_on": null, "errors": [], "guest": {}}}`)
		case "tasks/status/1042/":
			writeJSON(w, 200, `{"error": false, "data": "reporting"}`)
		case "tasks/get/simple_report/1042/":
			writeJSON(w, 200, `{"task_id": "1042", "malfamily": "", "malscore": 1.3}`)
		default:
			t.Errorf("unexpected %s %s", r.Method, p)
			writeHTML(w, 404)
		}
		if r.Method != http.MethodGet {
			t.Errorf("%s %s, want GET", r.Method, p)
		}
	})
	c := f.client()
	ctx := t.Context()

	file, err := c.FileView(ctx, strings.ToUpper(sha256Hex))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{ID: "1042", MD5: md5Hex, SHA1: sha1Hex, SHA256: sha256Hex, SHA512: "cf83", CRC32: "00000000",
		FileType: "PE32 executable (GUI) Intel 80386, for MS Windows", FileSize: 1234}
	if !reflect.DeepEqual(file, want) {
		t.Errorf("FileView = %+v\nwant %+v", file, want)
	}

	tasks, err := c.SearchTasks(ctx, md5Hex)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].ID != "1043" || tasks[0].Target != "invoice.exe" || tasks[0].Status != StatusReported ||
		tasks[0].CompletedOn != "2024-05-01 10:04:00" || tasks[1].StartedOn.Set() || tasks[1].AddedOn != "2024-04-30 09:00:00" {
		t.Errorf("SearchTasks = %+v", tasks)
	}

	task, err := c.TaskInfo(ctx, "1042")
	if err != nil {
		t.Fatal(err)
	}
	if task.ID != "1042" || task.AddedOn != "2024-04-30 09:00:00" || task.StartedOn != "" || task.CompletedOn.Set() {
		t.Errorf("TaskInfo = %+v", task)
	}

	st, err := c.Status(ctx, "1042")
	if err != nil || st != StatusReporting || !st.InProgress() {
		t.Errorf("Status = %q, %v", st, err)
	}

	rep, err := c.SimpleReport(ctx, "1042")
	if err != nil {
		t.Fatal(err)
	}
	if rep.TaskID != "1042" || rep.MalFamily != "" || rep.MalScore != 1.3 || rep.URLs != nil || rep.Level() != BandClean {
		t.Errorf("SimpleReport = %+v", rep)
	}
}

// TestOperationsCAPEShape: numeric ids, `error` as an empty list, the CAPE
// create shape, timestamps null.
func TestOperationsCAPEShape(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		switch p {
		case "files/view/md5/" + md5Hex + "/":
			writeJSON(w, 200, `{"error": [], "data": {"id": 7, "md5": "`+md5Hex+`", "file_size": "99", "crc32": "ABCDEF01", "ssdeep": "3:abc:def"}}`)
		case "tasks/search/sha1/" + sha1Hex + "/":
			writeJSON(w, 200, `{"error": [], "data": [{"id": 12, "target": "a.pdf", "added_on": "2024-01-01 00:00:00", "started_on": null, "completed_on": null, "sample": {}}]}`)
		case "tasks/view/12/":
			writeJSON(w, 200, `{"error": false, "data": {"id": 12, "target": "a.pdf", "status": "running", "added_on": "2024-01-01 00:00:00", "started_on": "2024-01-01 00:00:09", "completed_on": null}}`)
		case "tasks/status/12/":
			writeJSON(w, 200, `{"error": false, "data": "failed_processing"}`)
		case "tasks/get/simple_report/12/":
			writeJSON(w, 200, `{"error": false, "task_id": 12, "malfamily": "Emotet", "malscore": "6.1", "urls": ["http://c2.test/"]}`)
		default:
			t.Errorf("unexpected %s %s", r.Method, p)
		}
	})
	c := f.client()
	ctx := t.Context()
	file, err := c.FileView(ctx, md5Hex)
	if err != nil || file.ID != "7" || file.FileSize != 99 || file.CRC32 != "ABCDEF01" || file.SSDeep != "3:abc:def" {
		t.Errorf("FileView = %+v, %v", file, err)
	}
	tasks, err := c.SearchTasks(ctx, sha1Hex)
	if err != nil || len(tasks) != 1 || tasks[0].ID != "12" || tasks[0].StartedOn.Set() {
		t.Errorf("SearchTasks = %+v, %v", tasks, err)
	}
	task, err := c.TaskInfo(ctx, "12")
	if err != nil || task.ID != "12" || task.Status != StatusRunning || task.StartedOn != "2024-01-01 00:00:09" || task.Target != "a.pdf" {
		t.Errorf("TaskInfo = %+v, %v", task, err)
	}
	st, err := c.Status(ctx, "12")
	if err != nil || !st.IsFailure() {
		t.Errorf("Status = %q, %v", st, err)
	}
	rep, err := c.SimpleReport(ctx, "12")
	if err != nil || rep.TaskID != "12" || rep.MalFamily != "Emotet" || rep.MalScore != 6.1 || rep.Level() != BandMalicious ||
		!reflect.DeepEqual(rep.URLs, []string{"http://c2.test/"}) {
		t.Errorf("SimpleReport = %+v, %v", rep, err)
	}
}

// TestErrorTexts: every known text, with HTTP 200 and `error` as bool, list
// or string, maps to its sentinel and keeps the service's message.
func TestErrorTexts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text   string
		status int
		flag   string
		call   func(context.Context, *Client) error
		want   error
	}{
		{"Sample not found in database", 200, "true", fileView, ErrSampleNotFound},
		{"Sample not found", 404, "true", fileView, ErrSampleNotFound},
		{"Task not found in database", 200, "true", taskInfo, ErrTaskNotFound},
		{"Task not found", 404, "true", taskInfo, ErrTaskNotFound},
		{"Task does not exist", 200, `["Task does not exist"]`, status, ErrTaskDoesNotExist},
		{"Task is still being analyzed", 200, `"true"`, report, ErrStillAnalyzing},
		{"Task failed", 200, "1", report, ErrTaskFailed},
		{"Screenshot does not exist", 200, "true", shotOne, ErrScreenshotNotFound},
		{"No screenshots created for task 12", 200, "true", shotOne, ErrNoScreenshots},
		{"No file was submitted", 200, "true", create, ErrNoFile},
		{"You submitted an empty file", 200, "true", create, ErrEmptyFile},
		{"File size exceeds API limit", 200, "true", create, ErrFileTooLarge},
		{"invalid api key", 403, "true", status, ErrInvalidKey},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
				n.Add(1)
				writeJSON(w, tc.status, `{"error": `+tc.flag+`, "error_value": "`+tc.text+`"}`)
			})
			err := tc.call(t.Context(), f.client())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.want)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Message != tc.text || ae.StatusCode != tc.status {
				t.Fatalf("err = %#v, want *APIError with the service's text", err)
			}
			if n.Load() != 1 {
				t.Errorf("documented error was retried: %d requests", n.Load())
			}
			wantReason := ReasonAPI
			if tc.status == 403 {
				wantReason = ReasonAuth
			}
			if got := ReasonOf(err); got != wantReason {
				t.Errorf("ReasonOf = %s, want %s", got, wantReason)
			}
			assertNoSecret(t, err)
		})
	}
}

func fileView(ctx context.Context, c *Client) error { _, err := c.FileView(ctx, md5Hex); return err }
func taskInfo(ctx context.Context, c *Client) error { _, err := c.TaskInfo(ctx, "12"); return err }
func status(ctx context.Context, c *Client) error   { _, err := c.Status(ctx, "12"); return err }
func report(ctx context.Context, c *Client) error   { _, err := c.SimpleReport(ctx, "12"); return err }
func shotOne(ctx context.Context, c *Client) error  { _, err := c.Screenshot(ctx, "12", 1); return err }
func create(ctx context.Context, c *Client) error {
	_, err := c.CreateFile(ctx, "a.exe", strings.NewReader("MZ"))
	return err
}

func TestRateLimitAndThrottleAnswers(t *testing.T) {
	t.Parallel()
	cases := map[string]func(w http.ResponseWriter){
		"json 429": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0.01")
			writeJSON(w, 429, `{"error": true, "error_value": "Rate limit exceeded for this API"}`)
		},
		"text with 200": func(w http.ResponseWriter) {
			writeJSON(w, 200, `{"error": true, "error_value": "Rate limit exceeded for this API"}`)
		},
		"drf 429": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0.01")
			writeJSON(w, 429, `{"detail": "Request was throttled. Expected available in 1 second."}`)
		},
		"html 429": func(w http.ResponseWriter) { writeHTML(w, 429) },
	}
	for name, throttle := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
				if n.Add(1) == 1 {
					throttle(w)
					return
				}
				writeJSON(w, 200, `{"error": false, "data": "running"}`)
			})
			st, err := f.client().Status(t.Context(), "12")
			if err != nil || st != StatusRunning || n.Load() != 2 {
				t.Fatalf("Status = %q, %v after %d requests; want a retry after the throttle", st, err, n.Load())
			}
			// Always throttled: a RateLimitError after the retries.
			g := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) { throttle(w) })
			_, err = g.client().Status(t.Context(), "12")
			var rl *RateLimitError
			if !errors.As(err, &rl) || ReasonOf(err) != ReasonRateLimited {
				t.Fatalf("err = %v, want *RateLimitError", err)
			}
			assertNoSecret(t, err)
		})
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 429, `{"error": true, "error_value": "quota exceeded"}`)
	})
	_, err := f.client().Status(t.Context(), "12")
	if ReasonOf(err) != ReasonQuota || len(f.Hits()) != 1 {
		t.Fatalf("quota: %v after %d requests", err, len(f.Hits()))
	}
}

func TestHTMLAnswers(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		if strings.HasPrefix(p, "tasks/status/404") {
			writeHTML(w, 404)
			return
		}
		writeHTML(w, 500)
	})
	c := f.client()
	_, err := c.Status(t.Context(), "404")
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || ReasonOf(err) != ReasonClient {
		t.Fatalf("404: %v", err)
	}
	_, err = c.TaskInfo(t.Context(), "500")
	if !errors.As(err, &he) || he.StatusCode != 500 || ReasonOf(err) != ReasonServer {
		t.Fatalf("500: %v", err)
	}
	if got := len(f.Hits()); got != 1+3 {
		t.Errorf("requests = %d, want 1 for the 404 and 3 for the retried 500", got)
	}
	assertNoSecret(t, err)
}

// TestInputsRefusedWithoutRequest: impossible hashes, ids and numbers never
// reach the service.
func TestInputsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		t.Errorf("request sent: %s", p)
	})
	c := f.client()
	ctx := t.Context()
	for _, h := range []string{"", "abc", md5Hex[:31], md5Hex + "0", strings.Repeat("g", 32), strings.Repeat("z", 64), sha1Hex[:39] + "-", "../" + md5Hex[3:]} {
		_, err := c.FileView(ctx, h)
		var ie *InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidHash) || ReasonOf(err) != ReasonClient {
			t.Errorf("FileView(%q) = %v", h, err)
		}
		if _, err := c.SearchTasks(ctx, h); !errors.Is(err, ErrInvalidHash) {
			t.Errorf("SearchTasks(%q) = %v", h, err)
		}
	}
	for _, id := range []string{"", ".", "..", "12/34", "/", "../12"} {
		checks := map[string]error{}
		_, checks["TaskInfo"] = c.TaskInfo(ctx, id)
		_, checks["Status"] = c.Status(ctx, id)
		_, checks["SimpleReport"] = c.SimpleReport(ctx, id)
		_, checks["Screenshot"] = c.Screenshot(ctx, id, 1)
		_, checks["Screenshots"] = c.Screenshots(ctx, id, 1)
		_, checks["ScreenshotsByNumber"] = c.ScreenshotsByNumber(ctx, id, 1)
		_, checks["Wait"] = c.Wait(ctx, id, WaitOptions{})
		for op, err := range checks {
			if !errors.Is(err, ErrInvalidTaskID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidTaskID", op, id, err)
			}
		}
	}
	for _, n := range []int{-1, 10000} {
		if _, err := c.Screenshot(ctx, "12", n); !errors.Is(err, ErrInvalidScreenshotNumber) {
			t.Errorf("Screenshot(%d) = %v", n, err)
		}
	}
	if _, err := c.CreateFile(ctx, "x", nil); !errors.Is(err, ErrNoFile) {
		t.Errorf("CreateFile(nil) = %v", err)
	}
}

// TestIDsAreEscapedNotRestricted: ids are opaque beyond the few refused.
func TestIDsAreEscapedNotRestricted(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": false, "data": "pending"}`)
	})
	c := f.client()
	for _, id := range []string{"1042", "abc-DEF_1", "a b?c#d", "...", "%2F"} {
		if _, err := c.Status(t.Context(), id); err != nil {
			t.Fatalf("Status(%q): %v", id, err)
		}
	}
	hits := f.Hits()
	want := []string{"tasks/status/1042/", "tasks/status/abc-DEF_1/", "tasks/status/a%20b%3Fc%23d/", "tasks/status/.../", "tasks/status/%252F/"}
	for i, h := range hits {
		if h.Path != want[i] {
			t.Errorf("path %d = %q, want %q", i, h.Path, want[i])
		}
	}
}

func TestHashRouteByLength(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": false, "data": []}`)
	})
	c := f.client()
	for _, h := range []string{md5Hex, strings.ToUpper(sha1Hex), " " + sha256Hex + "\n"} {
		tasks, err := c.SearchTasks(t.Context(), h)
		if err != nil || tasks == nil || len(tasks) != 0 {
			t.Fatalf("SearchTasks(%q) = %#v, %v; want an empty, non-nil slice", h, tasks, err)
		}
	}
	want := []string{"tasks/search/md5/" + md5Hex + "/", "tasks/search/sha1/" + sha1Hex + "/", "tasks/search/sha256/" + sha256Hex + "/"}
	for i, h := range f.Hits() {
		if h.Path != want[i] {
			t.Errorf("path = %q, want %q", h.Path, want[i])
		}
	}
}

func TestSearchUnknownHashIsEmpty(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"data": [], "error": false}`,
		`{"data": null, "error": false}`,
		`{"error": []}`,
		`{"error": true, "error_value": "Sample not found in database"}`,
	} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) { writeJSON(w, 200, body) })
		tasks, err := f.client().SearchTasks(t.Context(), sha256Hex)
		if err != nil || tasks == nil || len(tasks) != 0 {
			t.Errorf("%s: %#v, %v", body, tasks, err)
		}
	}
}

func TestUndecodableAnswers(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		switch {
		case strings.HasPrefix(p, "tasks/status/"):
			writeJSON(w, 200, `{"error": false, "data": ""}`)
		case strings.HasPrefix(p, "tasks/get/simple_report/"):
			writeJSON(w, 200, `{"error": false, "task_id": "12", "malfamily": ""}`)
		case strings.HasPrefix(p, "tasks/view/"):
			writeJSON(w, 200, `{"error": false, "data": "12"}`)
		case strings.HasPrefix(p, "tasks/create/"):
			writeJSON(w, 200, `{"error": false, "data": "ok"}`)
		default:
			writeJSON(w, 200, `{"error": false, "data": [1]}`)
		}
	})
	c := f.client()
	ctx := t.Context()
	errs := map[string]error{}
	_, errs["status"] = c.Status(ctx, "12")
	_, errs["report without malscore"] = c.SimpleReport(ctx, "12")
	_, errs["view"] = c.TaskInfo(ctx, "12")
	_, errs["create without ids"] = c.CreateFile(ctx, "a", strings.NewReader("x"))
	_, errs["file view"] = c.FileView(ctx, md5Hex)
	_, errs["search"] = c.SearchTasks(ctx, md5Hex)
	for name, err := range errs {
		var he *HTTPError
		if !errors.As(err, &he) || ReasonOf(err) != ReasonBadBody {
			t.Errorf("%s: err = %v, want a bad-body *HTTPError", name, err)
		}
	}
}

func TestStatusHelpers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s                          Status
		success, failure, progress bool
	}{
		{StatusReported, true, false, false},
		{"Reported ", true, false, false},
		{StatusFailedAnalysis, false, true, false},
		{StatusFailedProcessing, false, true, false},
		{StatusFailedReporting, false, true, false},
		{"failed_something_new", false, true, false},
		{StatusBanned, false, true, false},
		{StatusPending, false, false, true},
		{StatusRunning, false, false, true},
		{StatusCompleted, false, false, true},
		{StatusReporting, false, false, true},
		{StatusRecovered, false, false, true},
		{StatusDistributed, false, false, true},
		{StatusDistributedCompleted, false, false, true},
		{"queued-somewhere", false, false, true},
		{"", false, false, true},
	} {
		if tc.s.IsSuccess() != tc.success || tc.s.IsFailure() != tc.failure || tc.s.InProgress() != tc.progress ||
			tc.s.IsTerminal() == tc.progress {
			t.Errorf("%q: success %v failure %v progress %v", tc.s, tc.s.IsSuccess(), tc.s.IsFailure(), tc.s.InProgress())
		}
	}
}

func TestLevelBands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		score float64
		want  Band
	}{
		{-1, BandClean}, {0, BandClean}, {1.9, BandClean}, {2.0, BandClean},
		{2.1, BandSuspicious}, {2.0000001, BandSuspicious}, {6.0, BandSuspicious},
		{6.1, BandMalicious}, {10, BandMalicious}, {11, BandMalicious},
		{math.NaN(), BandUnknown}, {math.Inf(1), BandMalicious},
	} {
		if got := Level(tc.score); got != tc.want {
			t.Errorf("Level(%v) = %q, want %q", tc.score, got, tc.want)
		}
	}
}

// TestTimestampsKeptNaive: a server on +07:00 local time gives the same
// text back; nothing is converted or compared.
func TestTimestampsKeptNaive(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": false, "data": {"id": 1, "added_on": "2099-12-31 23:59:59", "started_on": "2099-12-31 23:59:59"}}`)
	})
	task, err := f.client().TaskInfo(t.Context(), "1")
	if err != nil || task.AddedOn != "2099-12-31 23:59:59" || !task.StartedOn.Set() || task.CompletedOn.Set() {
		t.Fatalf("%+v %v", task, err)
	}
}

// TestDefaultBudgets: without WithRateLimits the report budget (5/s, burst
// 10) holds back the 11th call, and the wait is reported to the observer.
func TestDefaultBudgets(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": false, "data": "running"}`)
	})
	var waits atomic.Int32
	c, err := New(f.srv.URL+"/base", testKey, WithObserver(func(e Event) {
		if e.IsWait && e.Budget == BudgetReport {
			waits.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 11; i++ {
		if _, err := c.Status(t.Context(), "1"); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond || waits.Load() == 0 {
		t.Fatalf("11 calls took %s with %d budget waits; want the 11th held ~200ms", d, waits.Load())
	}
}

// TestLogsNeverShowKey: retries, transient polling errors and the
// screenshot fallback are logged without the key.
func TestLogsNeverShowKey(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		switch {
		case strings.HasPrefix(p, "tasks/status/") && n.Add(1) < 4:
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway for "+r.URL.Path+"</html>")
		case strings.HasPrefix(p, "tasks/status/"):
			writeJSON(w, 200, `{"error": false, "data": "reported"}`)
		case p == "tasks/get/screenshot/1/":
			w.Header().Set("Content-Type", "application/octet-stream")
			io.WriteString(w, "garbage "+r.URL.Path)
		default:
			writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
		}
	})
	logger, buf := testutil.Logger(slog.LevelDebug)
	c := f.client(WithLogger(logger), WithRetries(1, time.Millisecond, time.Millisecond))
	clock := newFakeClock()
	if _, err := c.Wait(t.Context(), "1", WaitOptions{Sleep: clock.Sleep, Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	if images, err := c.Screenshots(t.Context(), "1", 0); err != nil || len(images) != 0 {
		t.Fatalf("%v %v", images, err)
	}
	logs := buf.String()
	if !strings.Contains(logs, "retrying") || !strings.Contains(logs, "will poll again") || !strings.Contains(logs, "one by one") {
		t.Fatalf("expected retry, polling and fallback lines:\n%s", logs)
	}
	for _, f := range keyForms {
		if strings.Contains(logs, f) {
			t.Fatalf("key form %q in logs:\n%s", f, logs)
		}
	}
}

// A request waits in the lane its context names (WithPriority): High
// unless it says Low, and the observer is told which.
func TestRequestsWaitInTheirContextsLane(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": false, "data": "running"}`)
	})
	var events []Event
	c := f.client(WithObserver(func(e Event) { events = append(events, e) }))
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{t.Context(), "high"},
		{WithPriority(t.Context(), Low), "low"},
		{WithPriority(t.Context(), High), "high"},
		{WithPriority(t.Context(), Priority(7)), "high"},
	} {
		events = nil
		if _, err := c.Status(tc.ctx, "1"); err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0].Priority != tc.want {
			t.Errorf("events %+v, want one in lane %q", events, tc.want)
		}
	}
}
