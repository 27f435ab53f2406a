package reputation_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

const simKey = "sim-key-0042"

var fastWait = reputation.WaitOptions{
	Backoff:  reputation.Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond},
	Deadline: 5 * time.Second,
}

func client(t *testing.T, base string, opts ...reputation.Option) *reputation.Client {
	t.Helper()
	opts = append([]reputation.Option{
		reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(2, time.Millisecond, 5*time.Millisecond),
	}, opts...)
	c, err := reputation.New(base, simKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func completedTask(t *testing.T, c *reputation.Client, url string) string {
	t.Helper()
	sub, err := c.Scan(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(t.Context(), sub.TaskID, fastWait); err != nil || st != reputation.StatusCompleted {
		t.Fatalf("wait: %q %v", st, err)
	}
	return sub.TaskID
}

func TestEveryOperationAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Keys: []string{simKey}})
	c := client(t, base)
	ctx := t.Context()
	const url = "https://secure-login.phish.test/account/verify"

	sub, err := c.Scan(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.TaskID) != 32 || sub.StatusPath != "/api/<redacted>/status/"+sub.TaskID+"/" {
		t.Fatalf("submission %+v", sub)
	}
	// Before completion result and detail are refused with the spec's text.
	if _, err := c.Result(ctx, sub.TaskID); !errors.Is(err, reputation.ErrTaskNotCompleted) {
		t.Fatalf("early result: %v", err)
	}
	if _, err := c.Detail(ctx, sub.TaskID); !errors.Is(err, reputation.ErrTaskNotCompleted) {
		t.Fatalf("early detail: %v", err)
	}
	if err := c.Report(ctx, sub.TaskID, reputation.Phishing, reputation.FalsePositive); !errors.Is(err, reputation.ErrTaskNotCompleted) {
		t.Fatalf("early report: %v", err)
	}
	var statuses []reputation.Status
	st, err := c.Wait(ctx, sub.TaskID, reputation.WaitOptions{Backoff: fastWait.Backoff, OnStatus: func(s reputation.Status, changed bool) {
		if changed {
			statuses = append(statuses, s)
		}
	}})
	if err != nil || st != reputation.StatusCompleted {
		t.Fatalf("wait %q %v", st, err)
	}
	if fmt.Sprint(statuses) != "[pending processing completed]" {
		t.Fatalf("statuses %v", statuses)
	}
	res, err := c.Result(ctx, sub.TaskID)
	if err != nil || res.URL != url || res.Verdict.Phishing != 0.97 {
		t.Fatalf("result %+v %v", res, err)
	}
	d, err := c.Detail(ctx, sub.TaskID)
	if err != nil || !strings.Contains(string(d), `"final_url"`) {
		t.Fatalf("detail %s %v", d, err)
	}
	id, err := c.SearchTaskID(ctx, url)
	if err != nil || id != sub.TaskID {
		t.Fatalf("search %q %v", id, err)
	}
	// fp lowers the score, fn raises it, restore puts it back.
	for _, step := range []struct {
		opt  reputation.ReportOption
		want float64
	}{{reputation.FalsePositive, 0}, {reputation.FalseNegative, 1}, {reputation.Restore, 0.97}} {
		if err := c.Report(ctx, sub.TaskID, reputation.Phishing, step.opt); err != nil {
			t.Fatalf("%s: %v", step.opt, err)
		}
		res, err := c.Result(ctx, sub.TaskID)
		if err != nil || res.Verdict.Phishing != step.want {
			t.Fatalf("after %s: %+v %v", step.opt, res, err)
		}
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("scans = %d", n)
	}
	for _, r := range srv.Requests() {
		if !strings.HasSuffix(r.Path, "/") {
			t.Errorf("request without trailing slash: %s", r.Path)
		}
	}
}

func TestEveryErrorTextFromTheSimulator(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strictHTTP=%v", strict), func(t *testing.T) {
			t.Parallel()
			_, base := simtest.Start(t, sim.Config{Keys: []string{simKey}, StrictHTTP: strict})
			c := client(t, base)
			ctx := t.Context()
			task := completedTask(t, c, "https://example.com/")
			noresult := completedTask(t, c, "https://noresult.test/")
			cases := []struct {
				name string
				call func() error
				want error
			}{
				{"status unknown", func() error { _, e := c.Status(ctx, strings.Repeat("ab", 16)); return e }, reputation.ErrTaskNotFound},
				{"status malformed", func() error { _, e := c.Status(ctx, "not-hex"); return e }, reputation.ErrWrongTaskID},
				{"result unknown", func() error { _, e := c.Result(ctx, strings.Repeat("cd", 16)); return e }, reputation.ErrTaskNotFound},
				{"result malformed", func() error { _, e := c.Result(ctx, "xyz"); return e }, reputation.ErrWrongTaskID},
				{"result missing", func() error { _, e := c.Result(ctx, noresult); return e }, reputation.ErrFailedToGetResult},
				{"detail malformed", func() error { _, e := c.Detail(ctx, "xyz"); return e }, reputation.ErrWrongTaskID},
				{"detail unknown", func() error { _, e := c.Detail(ctx, strings.Repeat("ef", 16)); return e }, reputation.ErrTaskNotFound},
				{"detail missing", func() error { _, e := c.Detail(ctx, noresult); return e }, reputation.ErrFailedToGetResult},
				{"search never scanned", func() error { _, e := c.SearchTaskID(ctx, "https://never.test/"); return e }, reputation.ErrTaskNotFound},
				{"search bad url", func() error { _, e := c.SearchTaskID(ctx, "not a url"); return e }, reputation.ErrInvalidURL},
				{"report unknown task", func() error {
					return c.Report(ctx, strings.Repeat("01", 16), reputation.Phishing, reputation.FalsePositive)
				}, reputation.ErrTaskNotFound},
				{"report bad type", func() error { return c.Report(ctx, task, "spam", reputation.FalsePositive) }, reputation.ErrVerdictType},
				{"report bad option", func() error { return c.Report(ctx, task, reputation.Phishing, "maybe") }, reputation.ErrOption},
			}
			for _, tc := range cases {
				err := tc.call()
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
				var ae *reputation.APIError
				if !errors.As(err, &ae) || ae.Message != tc.want.Error() {
					t.Errorf("%s: service text not kept: %v", tc.name, err)
				}
			}
		})
	}
}

func TestScanErrorTextsOverRawHTTP(t *testing.T) {
	t.Parallel()
	// The client always sends valid JSON with POST, so the scan and search
	// error texts are checked with raw requests, decoded by the client's
	// own envelope type.
	_, base := simtest.Start(t, sim.Config{})
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/k/scan/", "", "invalid method"},
		{"POST", "/api/k/scan/", "{", "invalid json"},
		{"POST", "/api/k/scan/", `{"url": 5}`, "invalid json"},
		{"GET", "/api/k/search/task_id/", "", "invalid method"},
		{"POST", "/api/k/search/task_id/", "[]", "invalid json"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env apiclient.Envelope
		decodeJSON(t, resp, &env)
		if !env.Error || env.Message() != tc.want {
			t.Errorf("%s %s %q: %+v, want %q", tc.method, tc.path, tc.body, env, tc.want)
		}
	}
}

func TestUnknownKeyIsAClearErrorWithoutTheKey(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Keys: []string{"the-right-key"}})
	c := client(t, base)
	_, err := c.Scan(t.Context(), "https://example.com/")
	if !errors.Is(err, reputation.ErrInvalidKey) || reputation.ReasonOf(err) != reputation.ReasonAuth {
		t.Fatalf("err = %v (%s)", err, reputation.ReasonOf(err))
	}
	if strings.Contains(fmt.Sprintf("%v %+v", err, err), simKey) {
		t.Fatal("key in error")
	}
}

func TestKeyNeverLeaksUnderFaults(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Keys: []string{simKey}})
	c := client(t, base, reputation.WithTimeout(50*time.Millisecond))
	for _, f := range []sim.Faults{
		{ErrorEvery: 1, ErrorStatus: 502},
		{ErrorEvery: 1, ErrorStatus: 200},
		{Delay: 200 * time.Millisecond},
		{Throttle: []sim.Throttle{{Count: 100, RetryAfter: time.Hour}}},
	} {
		srv.SetFaults(f)
		var errs []error
		_, e := c.Scan(t.Context(), "https://example.com/")
		errs = append(errs, e)
		_, e = c.Status(t.Context(), strings.Repeat("ab", 16))
		errs = append(errs, e)
		_, e = c.Result(t.Context(), strings.Repeat("ab", 16))
		errs = append(errs, e)
		for _, e := range errs {
			if e == nil {
				t.Fatalf("faults %+v: no error", f)
			}
			text := fmt.Sprintf("%v|%+v", e, e)
			for u := errors.Unwrap(e); u != nil; u = errors.Unwrap(u) {
				text += "|" + u.Error()
			}
			if strings.Contains(text, simKey) {
				t.Fatalf("key leaked: %s", text)
			}
		}
	}
}

func TestSubmissionNotRepeatedAfterA5xx(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Faults: sim.Faults{ErrorEvery: 1, ErrorStatus: 503}})
	c := client(t, base)
	if _, err := c.Scan(t.Context(), "https://example.com/"); err == nil {
		t.Fatal("want an error")
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("the scan reached the service %d times, want 1", n)
	}
	// A read is retried (1 + 2 retries).
	c.Status(t.Context(), strings.Repeat("ab", 16))
	if n := srv.Count(sim.ServiceReputation, sim.OpStatus); n != 3 {
		t.Fatalf("status attempts = %d, want 3", n)
	}
}

func TestSubmissionRetriedAfter429(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Faults: sim.Faults{Throttle: []sim.Throttle{{Bucket: sim.BucketRun, Count: 1, RetryAfter: time.Second}}}})
	c := client(t, base)
	start := time.Now()
	sub, err := c.Scan(t.Context(), "https://example.com/")
	if err != nil || sub.TaskID == "" {
		t.Fatalf("%v %+v", err, sub)
	}
	if time.Since(start) < 900*time.Millisecond {
		t.Fatal("Retry-After not honoured")
	}
	if n := len(srv.URLTasks("https://example.com/")); n != 1 {
		t.Fatalf("%d tasks created, want 1", n)
	}
}

func TestBudgetsKeepUnderTheServiceLimits(t *testing.T) {
	t.Parallel()
	// The simulator allows 2 runs/s and 10 reports/s (burst 2 and 10).
	// The client's budgets (1.5/s and 8/s) must mean no request is ever
	// refused with 429, however hard the callers push.
	srv, base := simtest.Start(t, sim.Config{ReputationLimits: sim.Limits{RunRate: 2, RunBurst: 2, ReportRate: 10, ReportBurst: 10}})
	c := client(t, base, reputation.WithRateLimits(reputation.Limit{Rate: 1.5, Burst: 2}, reputation.Limit{Rate: 8, Burst: 8}),
		reputation.WithRetries(-1, time.Millisecond, time.Millisecond))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Scan(t.Context(), fmt.Sprintf("https://example.com/%d", i)); err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		}()
	}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Status(t.Context(), strings.Repeat("ab", 16))
			if err != nil && !errors.Is(err, reputation.ErrTaskNotFound) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests refused: %v", len(failures), failures[0])
	}
	for _, r := range srv.Requests() {
		if r.Status == http.StatusTooManyRequests {
			t.Fatalf("the service saw a 429: %+v", r)
		}
	}
}

func TestCancellationStopsAWait(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{})
	c := client(t, base)
	sub, err := c.Scan(t.Context(), "https://pending.test/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(ctx, sub.TaskID, reputation.WaitOptions{Backoff: reputation.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestScoreScale100(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{ScoreScale: 100})
	c := client(t, base)
	task := completedTask(t, c, "https://casino.test/")
	res, err := c.Result(t.Context(), task)
	if err != nil || res.Verdict.Illegal != 90 || res.Verdict.Normalized().Illegal != 0.9 {
		t.Fatalf("%+v %v", res, err)
	}
}
