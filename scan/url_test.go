package scan

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/verdict"
)

const simKey = "test-key-123"

var fastWait = reputation.WaitOptions{
	Backoff:  reputation.Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond},
	Deadline: 5 * time.Second,
}

func newURLs(t *testing.T, cfg sim.Config, mod func(*URLOptions)) (*URLs, *sim.Server) {
	t.Helper()
	srv, base := simtest.Start(t, cfg)
	rep, err := reputation.New(base, simKey,
		reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(2, time.Millisecond, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	opt := URLOptions{Wait: fastWait}
	if mod != nil {
		mod(&opt)
	}
	u := NewURLs(rep, opt)
	t.Cleanup(u.Close)
	return u, srv
}

func TestCheckLevelsFromTheSimulator(t *testing.T) {
	t.Parallel()
	u, _ := newURLs(t, sim.Config{}, nil)
	for _, tc := range []struct {
		url   string
		level verdict.Level
		cat   verdict.Category
	}{
		{"https://login.phish.test/verify", verdict.Malicious, verdict.CatPhishing},
		{"https://example.com/", verdict.Clean, verdict.CatPhishing},
		{"https://casino-royal.test/", verdict.Malicious, verdict.CatIllegal},
		{"https://ads.tracker.test/x", verdict.Suspicious, verdict.CatAdvertising},
		{"https://download.test/setup.exe", verdict.Malicious, verdict.CatMalicious},
	} {
		v := u.Check(t.Context(), tc.url, CheckOptions{})
		if v.Level != tc.level || v.Category != tc.cat || v.TaskID == "" || v.Err != nil {
			t.Errorf("%s: level %s cat %s task %q err %v", tc.url, v.Level, v.Category, v.TaskID, v.Err)
		}
		if tc.level.NeedsAttention() && v.Title == "" && v.FinalURL == "" {
			t.Errorf("%s: detail not read for a %s URL", tc.url, v.Level)
		}
	}
}

func TestCacheAndOneSubmissionPerURL(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, nil)
	const url = "https://shared.phish.test/login"
	var wg sync.WaitGroup
	results := make([]URLVerdict, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = u.Check(t.Context(), url, CheckOptions{})
		}()
	}
	wg.Wait()
	for i, v := range results {
		if v.Level != verdict.Malicious || v.TaskID != results[0].TaskID {
			t.Fatalf("result %d: %+v", i, v)
		}
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Fatalf("%d submissions for one URL, want 1", n)
	}
	again := u.Check(t.Context(), url, CheckOptions{})
	if !again.Cached || srv.Count(sim.ServiceReputation, sim.OpScan) != 1 {
		t.Fatalf("second check not served from cache: %+v", again)
	}
	fresh := u.Check(t.Context(), url, CheckOptions{Fresh: true})
	if fresh.Cached || srv.Count(sim.ServiceReputation, sim.OpScan) != 2 {
		t.Fatalf("fresh check used the cache")
	}
}

func TestCacheExpires(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) { o.TTL = 50 * time.Millisecond })
	u.Check(t.Context(), "https://example.org/", CheckOptions{})
	time.Sleep(80 * time.Millisecond)
	if v := u.Check(t.Context(), "https://example.org/", CheckOptions{}); v.Cached {
		t.Fatal("expired verdict reused")
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("scans = %d", n)
	}
}

func TestFailuresBecomeCouldNotCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url string
		faults    sim.Faults
		want      string
	}{
		{"failed task", "https://fail.test/", sim.Faults{}, `could not analyse it (status "failed")`},
		{"never completes", "https://pending.test/", sim.Faults{}, "did not finish in time"},
		{"no result", "https://noresult.test/", sim.Faults{}, "said: failed to get result"},
		{"outage", "https://x.test/", sim.Faults{ErrorEvery: 1, ErrorStatus: 503}, "answered with an error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, _ := newURLs(t, sim.Config{Faults: tc.faults}, func(o *URLOptions) {
				o.Wait.Deadline = 300 * time.Millisecond
			})
			v := u.Check(t.Context(), tc.url, CheckOptions{})
			if v.Level != verdict.Unknown || !strings.Contains(v.Problem, tc.want) {
				t.Fatalf("level %s problem %q, want %q", v.Level, v.Problem, tc.want)
			}
			if strings.Contains(v.Problem, simKey) || strings.Contains(v.Problem, "http") {
				t.Fatalf("problem text leaks: %q", v.Problem)
			}
			// Failures are not cached: the next check tries again.
			if v2 := u.Check(t.Context(), tc.url, CheckOptions{}); v2.Cached {
				t.Fatal("failure was cached")
			}
		})
	}
}

func TestProgressAndSubmittedHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var submitted []string
	u, _ := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.OnSubmitted = func(url, task string) { mu.Lock(); submitted = append(submitted, url+" "+task); mu.Unlock() }
	})
	var seen []string
	v := u.Check(t.Context(), "https://example.com/a", CheckOptions{OnStatus: func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}})
	mu.Lock()
	defer mu.Unlock()
	if len(submitted) != 1 || submitted[0] != "https://example.com/a "+v.TaskID {
		t.Fatalf("submitted %v", submitted)
	}
	joined := strings.Join(seen, ",")
	// "completed" is not progress: the verdict follows it at once.
	if !strings.Contains(joined, "submitted") || !strings.Contains(joined, "processing") || strings.Contains(joined, "completed") {
		t.Fatalf("progress %v", seen)
	}
}

func TestResumeUsesTheTaskWithoutResubmitting(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, nil)
	first := u.Check(t.Context(), "https://resume.phish.test/", CheckOptions{Fresh: true})
	v := u.Check(t.Context(), "https://resume.phish.test/", CheckOptions{TaskID: first.TaskID})
	if v.TaskID != first.TaskID || v.Level != verdict.Malicious || srv.Count(sim.ServiceReputation, sim.OpScan) != 1 {
		t.Fatalf("resume: %+v, scans %d", v, srv.Count(sim.ServiceReputation, sim.OpScan))
	}
}

func TestCallerCancellationDoesNotStopTheSharedAnalysis(t *testing.T) {
	t.Parallel()
	u, _ := newURLs(t, sim.Config{Faults: sim.Faults{Delay: 30 * time.Millisecond}}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	v := u.Check(ctx, "https://example.net/", CheckOptions{})
	if v.Level != verdict.Unknown {
		t.Fatalf("cancelled caller got %s", v.Level)
	}
	w := u.Check(t.Context(), "https://example.net/", CheckOptions{})
	if w.Level != verdict.Clean {
		t.Fatalf("shared analysis: %+v", w)
	}
}

// TestStatusWordsArriveInOrder: a subscriber gets the analysis's status
// when it subscribes, then every change, in order, even when taking the
// first word takes it a while (a card being saved): a later word never
// overtakes an earlier one (the card would end on "queued").
func TestStatusWordsArriveInOrder(t *testing.T) {
	t.Parallel()
	u, _ := newURLs(t, sim.Config{}, nil)
	var mu sync.Mutex
	var seen []string
	first := true
	u.Check(t.Context(), "https://example.com/in-order", CheckOptions{OnStatus: func(s string) {
		mu.Lock()
		slow := first
		first = false
		mu.Unlock()
		if slow {
			time.Sleep(150 * time.Millisecond) // the analysis goes on meanwhile
		}
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] != "queued" {
		t.Fatalf("status words %v, want queued first", seen)
	}
	for i, s := range seen[1:] {
		if s == "queued" {
			t.Fatalf("status words %v: queued again at %d, after the analysis moved on", seen, i+1)
		}
	}
}
