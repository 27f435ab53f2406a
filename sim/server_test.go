package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
)

func TestRateLimitReputation(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{ReputationLimits: sim.Limits{RunRate: 2, ReportRate: 10}})
	limited := `{"error":true,"msg":"rate limit exceeded"}`
	scan := func(key string) reply {
		return h.postJSON("/api/"+key+"/scan/", `{"url":"https://example.com/"}`)
	}
	id := h.scan("https://example.com/")
	h.scan("https://example.com/")
	r := scan(testKey)
	wantBody(t, "third scan", r, 429, limited)
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1", ra)
	}
	// The report bucket is separate, and so is every key.
	if st := h.urlStatus(id); st != "pending" {
		t.Errorf("status while run-limited: %q", st)
	}
	if r := scan("other"); r.code != 200 {
		t.Errorf("other key: %d %s", r.code, r)
	}
	h.clock.Advance(500 * time.Millisecond) // one token back at 2/s
	if r := scan(testKey); r.code != 200 {
		t.Errorf("after 500ms: %d %s", r.code, r)
	}
	wantBody(t, "again", scan(testKey), 429, limited)

	for i := range 10 { // the 500ms above refilled the bucket of 10
		if r := h.get(api("status/" + id + "/")); r.code != 200 {
			t.Fatalf("poll %d: %d", i, r.code)
		}
	}
	wantBody(t, "11th poll", h.get(api("status/"+id+"/")), 429, limited)

	reqs := h.srv.Requests()
	if last := reqs[len(reqs)-1]; last.Status != 429 || last.Bucket != "report" || last.Op != "status" {
		t.Errorf("last logged request %+v", last)
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{SandboxLimits: sim.Limits{RunRate: 0.1}})
	h.submit("x")
	r := h.upload(file{"file", "a", []byte("x")})
	wantBody(t, "second upload", r, 429, `{"error":true,"error_value":"Rate limit exceeded for this API"}`)
	if ra := r.header.Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After = %q, want 10", ra)
	}
	h.clock.Advance(7500 * time.Millisecond)
	if ra := h.upload(file{"file", "a", []byte("x")}).header.Get("Retry-After"); ra != "3" {
		t.Errorf("Retry-After after 7.5s = %q, want 3 (rounded up)", ra)
	}
	h.clock.Advance(2500 * time.Millisecond)
	h.submit("x")
}

func TestRateLimitSandboxStyles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		style      sim.ThrottleStyle
		retryAfter time.Duration
		want       string
	}{
		{sim.ThrottleDRF, 0, `{"detail":"Request was throttled. Expected available in 1 second."}`},
		{sim.ThrottleDRF, 30 * time.Second, `{"detail":"Request was throttled. Expected available in 30 seconds."}`},
		{sim.ThrottleHTML, 0, "Too many request without apikey!"},
	} {
		h := setup(t, sim.Config{ThrottleStyle: tc.style, SandboxLimits: sim.Limits{ReportRate: 1}})
		h.get(neo("tasks/status/1/"))
		if tc.retryAfter > 0 {
			h.srv.SetFaults(sim.Faults{Throttle: []sim.Throttle{{Count: 1, RetryAfter: tc.retryAfter}}})
		}
		r := h.get(neo("tasks/status/1/"))
		if r.code != 429 || !strings.Contains(r.String(), tc.want) || r.header.Get("Retry-After") == "" {
			t.Errorf("style %d: %d %v %s", tc.style, r.code, r.header, r)
		}
	}
}

func TestQuota(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{ReputationLimits: sim.Limits{Quota: 3}, SandboxLimits: sim.Limits{Quota: 1}})
	id := h.scan("https://example.com/")
	h.urlStatus(id)
	h.urlStatus(id)
	wantBody(t, "4th request", h.get(api("status/"+id+"/")), 429, `{"error":true,"msg":"quota exceeded"}`)
	h.clock.Advance(time.Hour)
	wantBody(t, "still", h.postJSON(api("scan/"), `{"url":"https://example.com/"}`), 429, `{"error":true,"msg":"quota exceeded"}`)
	h.get(neo("tasks/status/1/"))
	wantBody(t, "sandbox", h.get(neo("tasks/status/1/")), 429, `{"error":true,"error_value":"quota exceeded"}`)

	h2 := setup(t, sim.Config{ReputationLimits: sim.Limits{Quota: 1}, QuotaForbidden: true})
	h2.scan("https://example.com/")
	wantBody(t, "403", h2.postJSON(api("scan/"), `{"url":"https://example.com/"}`), 403, `{"error":true,"msg":"quota exceeded"}`)
}

func TestFaultsErrorEvery(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Faults: sim.Faults{ErrorEvery: 3}})
	var codes []int
	for range 7 {
		codes = append(codes, h.get(neo("tasks/status/1/")).code)
	}
	if want := []int{200, 200, 502, 200, 200, 502, 200}; !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	r := h.get(api("status/" + unknownID + "/")) // 8th
	r = h.get(api("status/" + unknownID + "/"))  // 9th
	if r.code != 502 || !strings.Contains(r.String(), "<title>502 Bad Gateway</title>") ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("9th: %d %v %s", r.code, r.header, r)
	}

	// Scoped to the sandbox, with an HTML page under status 200.
	h.srv.SetFaults(sim.Faults{Service: sim.ServiceSandbox, ErrorEvery: 1, ErrorStatus: 200})
	if r := h.get(api("status/" + unknownID + "/")); r.code != 200 || !strings.Contains(r.String(), "task not found") {
		t.Errorf("reputation under sandbox-scoped faults: %d %s", r.code, r)
	}
	if r := h.get(neo("tasks/status/1/")); r.code != 200 || !strings.HasPrefix(r.String(), "<html>") {
		t.Errorf("sandbox HTML 200: %d %s", r.code, r)
	}
	h.srv.SetFaults(sim.Faults{})
	if r := h.get(neo("tasks/status/1/")); r.code != 200 || r.String() != sbErr("Task does not exist") {
		t.Errorf("after clearing: %d %s", r.code, r)
	}
}

func TestFaultsErrorRateDeterministic(t *testing.T) {
	t.Parallel()
	pattern := func() []int {
		h := setup(t, sim.Config{Faults: sim.Faults{ErrorRate: 0.3, Seed: 42, ErrorStatus: 503}})
		var codes []int
		for range 40 {
			codes = append(codes, h.get(api("status/"+unknownID+"/")).code)
		}
		return codes
	}
	a, b := pattern(), pattern()
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different patterns:\n%v\n%v", a, b)
	}
	n := 0
	for _, c := range a {
		if c == 503 {
			n++
		}
	}
	if n < 4 || n > 20 {
		t.Errorf("%d of 40 failed at rate 0.3", n)
	}
}

func TestFaultsThrottle(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	h.srv.SetFaults(sim.Faults{Throttle: []sim.Throttle{
		{Service: sim.ServiceSandbox, Bucket: sim.BucketRun, Count: 2, RetryAfter: 7 * time.Second},
		{Service: sim.ServiceReputation, Count: 1, RetryAfter: 1500 * time.Millisecond},
	}})
	for i := range 2 {
		r := h.upload(file{"file", "a", []byte("x")})
		if r.code != 429 || r.header.Get("Retry-After") != "7" {
			t.Errorf("upload %d: %d %v", i, r.code, r.header)
		}
	}
	if st := h.get(neo("tasks/status/1000/")); st.code != 200 {
		t.Errorf("report bucket throttled: %d", st.code)
	}
	h.submit("x")
	r := h.get(api("status/" + unknownID + "/"))
	wantBody(t, "reputation", r, 429, `{"error":true,"msg":"rate limit exceeded"}`)
	if r.header.Get("Retry-After") != "2" {
		t.Errorf("Retry-After %q, want 2 (1.5s rounded up)", r.header.Get("Retry-After"))
	}
	if f := h.srv.Faults(); f.Throttle[0].Count != 0 || f.Throttle[1].Count != 0 {
		t.Errorf("Faults() does not show the used-up counts: %+v", f)
	}
}

func TestFaultsDelay(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Faults: sim.Faults{Delay: 150 * time.Millisecond, Service: sim.ServiceReputation}})
	start := time.Now()
	h.get(api("status/" + unknownID + "/"))
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("answer after %v, want at least 150ms", d)
	}
	start = time.Now()
	h.get(neo("tasks/status/1/"))
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("sandbox delayed %v by a reputation-scoped fault", d)
	}

	// A client that gives up ends the wait; the request is logged as 499.
	h.srv.SetFaults(sim.Faults{Delay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.base+api("status/"+unknownID+"/"), nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		reqs := h.srv.Requests()
		if reqs[len(reqs)-1].Status == 499 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("abandoned request not logged as 499: %+v", reqs[len(reqs)-1])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{MaxLog: 3})
	id := h.scan("https://example.com/")
	h.clock.Advance(time.Second)
	h.urlStatus(id)
	h.submit("x")
	h.get(neo("tasks/get/screenshot/1000/"))
	h.get(neo("tasks/get/screenshot/1000/1/"))
	h.get(neo("nope/"))
	h.get("/elsewhere") // outside both services: not logged
	reqs := h.srv.Requests()
	want := []sim.Request{
		{Time: t0.Add(time.Second), Service: "sandbox", Op: "screenshot_archive", Bucket: "report", Method: "GET", Path: "/apineo/<key>/tasks/get/screenshot/1000/", Status: 200},
		{Time: t0.Add(time.Second), Service: "sandbox", Op: "screenshot", Bucket: "report", Method: "GET", Path: "/apineo/<key>/tasks/get/screenshot/1000/1/", Status: 200},
		{Time: t0.Add(time.Second), Service: "sandbox", Op: "not_found", Bucket: "report", Method: "GET", Path: "/apineo/<key>/nope/", Status: 404},
	}
	if !slices.Equal(reqs, want) {
		t.Errorf("Requests() =\n%+v\nwant\n%+v", reqs, want)
	}
	for _, c := range []struct {
		service, op string
		want        int
	}{{"reputation", "scan", 1}, {"reputation", "status", 1}, {"sandbox", "create_file", 1}, {"sandbox", "status", 0}, {"sandbox", "", 4}} {
		if got := h.srv.Count(c.service, c.op); got != c.want {
			t.Errorf("Count(%q, %q) = %d, want %d", c.service, c.op, got, c.want)
		}
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(r.Path, testKey) {
			t.Errorf("key leaked into the log: %s", r.Path)
		}
	}
	h.srv.ResetRequests()
	if len(h.srv.Requests()) != 0 || h.srv.Count("reputation", "") != 0 {
		t.Error("ResetRequests left entries")
	}
}

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	if r := h.get("/_sim/"); r.code != 200 || !strings.Contains(r.String(), "/_sim/faults") {
		t.Errorf("index: %d %s", r.code, r)
	}
	put := func(body string) reply {
		return h.do("PUT", "/_sim/faults", "application/json", strings.NewReader(body))
	}
	if r := put(`{"service":"sandbox","error_every":1,"error_status":503,"throttle":[{"bucket":"run","count":1,"retry_after":"3s"}]}`); r.code != 200 {
		t.Fatalf("put faults: %d %s", r.code, r)
	}
	if r := h.get(neo("tasks/status/1/")); r.code != 503 {
		t.Errorf("sandbox after PUT: %d", r.code)
	}
	if r := h.postJSON(api("scan/"), `{"url":"https://example.com/"}`); r.code != 429 || r.header.Get("Retry-After") != "3" {
		t.Errorf("run throttle: %d %v", r.code, r.header)
	}
	r := h.get("/_sim/faults")
	var fw map[string]any
	json.Unmarshal(r.body, &fw)
	if fw["service"] != "sandbox" || fw["error_status"] != float64(503) || fw["delay"] != "0s" {
		t.Errorf("GET faults: %s", r)
	}
	for _, bad := range []string{`{"delay":"soon"}`, `{"service":"both"}`, `{"nope":1}`, `{`} {
		if r := put(bad); r.code != 400 {
			t.Errorf("PUT %s: %d %s", bad, r.code, r)
		}
	}
	if r := h.do("DELETE", "/_sim/faults", "", nil); r.code != 200 {
		t.Errorf("delete: %d", r.code)
	}
	if r := h.get(neo("tasks/status/1/")); r.code != 200 {
		t.Errorf("after DELETE: %d", r.code)
	}

	if r := h.postJSON("/_sim/flip", `{"url":"https://example.com/x","scores":{"malicious":0.9}}`); r.code != 200 {
		t.Fatalf("flip: %d %s", r.code, r)
	}
	id := h.scan("https://example.com/x")
	h.completeURL(id)
	if task, _ := h.srv.URLTask(id); task.Scores.Malicious != 0.9 {
		t.Errorf("flip via admin: %+v", task)
	}
	var counts map[string]map[string]int
	json.Unmarshal(h.get("/_sim/counts").body, &counts)
	if counts["reputation"]["scan"] != 2 || counts["sandbox"]["status"] != 2 {
		t.Errorf("counts: %v", counts)
	}
	var reqs []sim.Request
	json.Unmarshal(h.get("/_sim/requests").body, &reqs)
	if len(reqs) != h.srv.Count("reputation", "")+h.srv.Count("sandbox", "") {
		t.Errorf("requests: %d entries", len(reqs))
	}
	h.postJSON("/_sim/reset", "")
	if r := h.get("/_sim/requests"); r.String() != "[]" {
		t.Errorf("after reset: %s", r)
	}
	if r := h.get("/_sim/nope"); r.code != 404 {
		t.Errorf("unknown admin path: %d", r.code)
	}
}

// TestConcurrentUse drives both services, faults and introspection at once;
// run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Now: time.Now, ReputationLimits: sim.Limits{ReportRate: 1e6}})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 10 {
				id := h.scan(fmt.Sprintf("https://site%d.test/%d", g, i))
				h.urlStatus(id)
				sb := h.submit(fmt.Sprintf("sample %d %d", g, i))
				h.sbStatus(sb)
				h.srv.Requests()
				h.srv.SetFaults(sim.Faults{Throttle: []sim.Throttle{{Service: "nobody", Count: 1}}})
			}
		})
	}
	wg.Wait()
	if n := h.srv.Count("reputation", "scan"); n != 60 {
		t.Errorf("scans = %d", n)
	}
}

func TestStartAndClock(t *testing.T) {
	t.Parallel()
	c := testutil.NewClock(t0)
	c.Advance(time.Minute)
	if !c.Now().Equal(t0.Add(time.Minute)) {
		t.Errorf("clock %v", c.Now())
	}
	srv := sim.New(sim.Config{})
	if p := srv.Config().Profile; p.Name != "fast" || !p.PerPoll {
		t.Errorf("default profile %+v", p)
	}
	if cfg := srv.Config(); cfg.MaxFileSize != 30_000_000 || cfg.FirstTaskID != 1000 || cfg.Shots != 3 || cfg.Location != time.UTC {
		t.Errorf("defaults %+v", cfg)
	}
}

// BenchmarkStatusPoll measures the URL and sandbox status polls through
// the handler, without the network.
func BenchmarkStatusPoll(b *testing.B) {
	srv := sim.New(sim.Config{})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("POST", "/api/k/scan/", strings.NewReader(`{"url":"https://example.com/"}`)))
	var out struct {
		TaskID string `json:"task_id"`
	}
	json.Unmarshal(rec.Body.Bytes(), &out)
	paths := []string{"/api/k/status/" + out.TaskID + "/", "/apineo/k/tasks/status/1000/"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", paths[i%2], nil))
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
		i++
	}
}
