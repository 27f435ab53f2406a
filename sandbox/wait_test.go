package sandbox

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

// newFakeClock is the client's clock; its Sleep advances it and records the
// delays asked for.
func newFakeClock() *testutil.Clock {
	return testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// statusScript serves the given answers to successive status polls (the
// last one repeats). An answer is a status, or "!<code>" for an HTML page
// with that code, or "{…}" for a raw JSON body.
func statusScript(t testing.TB, answers ...string) (*fake, *atomic.Int32) {
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		if p != "tasks/status/1042/" {
			t.Errorf("path %q", p)
		}
		i := int(n.Add(1)) - 1
		a := answers[min(i, len(answers)-1)]
		switch {
		case strings.HasPrefix(a, "!429"):
			writeJSON(w, 429, `{"error": true, "error_value": "Rate limit exceeded for this API"}`)
		case strings.HasPrefix(a, "!"):
			code, _ := strconv.Atoi(a[1:])
			writeHTML(w, code)
		case strings.HasPrefix(a, "{"):
			writeJSON(w, 200, a)
		default:
			writeJSON(w, 200, `{"error": false, "data": "`+a+`"}`)
		}
	})
	return f, &n
}

type statusCall struct {
	s       Status
	changed bool
}

func TestWaitFollowsStatusesToReported(t *testing.T) {
	t.Parallel()
	f, n := statusScript(t, "pending", "pending", "running", "pending", "running", "weird_new_state", "completed", "reporting", "reported")
	clock := newFakeClock()
	var calls []statusCall
	st, err := f.client().Wait(t.Context(), "1042", WaitOptions{
		Sleep: clock.Sleep, Now: clock.Now,
		OnStatus: func(s Status, changed bool) { calls = append(calls, statusCall{s, changed}) },
	})
	if err != nil || st != StatusReported {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if n.Load() != 9 {
		t.Errorf("polls = %d, want 9", n.Load())
	}
	want := []statusCall{{"pending", true}, {"pending", false}, {"running", true}, {"pending", true}, {"running", true},
		{"weird_new_state", true}, {"completed", true}, {"reporting", true}, {"reported", true}}
	if len(calls) != len(want) {
		t.Fatalf("OnStatus calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("OnStatus call %d = %v, want %v", i, calls[i], want[i])
		}
	}
	// Default schedule: first check within ~1s, doubling, capped at ~60s.
	slept := clock.Slept()
	if d := slept[0]; d < 900*time.Millisecond || d > 1100*time.Millisecond {
		t.Errorf("first check after %s, want ~1s", d)
	}
	for i := 1; i < len(slept); i++ {
		if slept[i] > 66*time.Second {
			t.Errorf("delay %d = %s, above the cap", i, slept[i])
		}
	}
	if d := slept[len(slept)-1]; d < 54*time.Second {
		t.Errorf("delay after 8 checks = %s, want the ~60s cap", d)
	}
}

func TestWaitTerminalFailures(t *testing.T) {
	t.Parallel()
	for _, final := range []Status{StatusFailedAnalysis, StatusFailedProcessing, StatusFailedReporting, StatusBanned} {
		f, n := statusScript(t, "pending", "running", string(final))
		clock := newFakeClock()
		st, err := f.client().Wait(t.Context(), "1042", WaitOptions{Sleep: clock.Sleep, Now: clock.Now})
		var tf *TaskFailedError
		if st != final || !errors.As(err, &tf) || tf.Status != final || tf.TaskID != "1042" || !errors.Is(err, ErrTaskFailed) {
			t.Errorf("%s: Wait = %q, %v", final, st, err)
		}
		if ReasonOf(err) != ReasonAPI || n.Load() != 3 {
			t.Errorf("%s: reason %s after %d polls", final, ReasonOf(err), n.Load())
		}
	}
}

// TestWaitKeepsPollingThroughTransientErrors: 429, 5xx pages and odd
// bodies (after the core's own retries) do not end the wait.
func TestWaitKeepsPollingThroughTransientErrors(t *testing.T) {
	t.Parallel()
	f, n := statusScript(t, "pending", "!429", "!503", "!500", `{"error": false}`, "running", "reported")
	clock := newFakeClock()
	var calls int
	c := f.client(WithRetries(-1, 0, 0))
	st, err := c.Wait(t.Context(), "1042", WaitOptions{Sleep: clock.Sleep, Now: clock.Now,
		OnStatus: func(Status, bool) { calls++ }})
	if err != nil || st != StatusReported || n.Load() != 7 || calls != 3 {
		t.Fatalf("Wait = %q, %v after %d polls, %d OnStatus calls", st, err, n.Load(), calls)
	}
}

// TestWaitEndsOnDocumentedErrors: "Task does not exist", a refused key and
// an unmatched route end the wait at the first poll.
func TestWaitEndsOnDocumentedErrors(t *testing.T) {
	t.Parallel()
	for answer, check := range map[string]func(error) bool{
		`{"error": true, "error_value": "Task does not exist"}`: func(err error) bool { return errors.Is(err, ErrTaskDoesNotExist) },
		"!404": func(err error) bool { return ReasonOf(err) == ReasonClient },
	} {
		f, n := statusScript(t, answer)
		clock := newFakeClock()
		_, err := f.client().Wait(t.Context(), "1042", WaitOptions{Sleep: clock.Sleep, Now: clock.Now})
		if !check(err) || n.Load() != 1 {
			t.Errorf("%s: %v after %d polls", answer, err, n.Load())
		}
		assertNoSecret(t, err)
	}
}

// TestWaitStuckInPending uses the client's clock only; the server's
// timestamps are never consulted.
func TestWaitStuckInPending(t *testing.T) {
	t.Parallel()
	f, _ := statusScript(t, "pending", "running", "pending")
	clock := newFakeClock()
	start := clock.Now()
	st, err := f.client().Wait(t.Context(), "1042", WaitOptions{Sleep: clock.Sleep, Now: clock.Now, PendingDeadline: 10 * time.Minute})
	var wt *WaitTimeoutError
	if st != StatusPending || !errors.As(err, &wt) || !wt.Stuck || !errors.Is(err, ErrStuckPending) || errors.Is(err, ErrDeadline) {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if ReasonOf(err) != ReasonTimeout {
		t.Errorf("reason = %s", ReasonOf(err))
	}
	// The count restarted when the task went back to pending (third poll,
	// about 3s in), so the wait lasted about 10 minutes after that.
	if waited := clock.Now().Sub(start); waited < 10*time.Minute || waited > 13*time.Minute {
		t.Errorf("gave up after %s on the client clock", waited)
	}
}

func TestWaitDeadline(t *testing.T) {
	t.Parallel()
	fast := Backoff{Initial: time.Millisecond, Factor: 1, Max: time.Millisecond}
	f, _ := statusScript(t, "running")
	// Long enough for the first status check to answer on a loaded
	// machine (50 ms was not, once: the wait ended knowing no status).
	st, err := f.client().Wait(t.Context(), "1042", WaitOptions{Backoff: fast, Deadline: time.Second})
	var wt *WaitTimeoutError
	if st != StatusRunning || !errors.As(err, &wt) || wt.Stuck || !errors.Is(err, ErrDeadline) || wt.Last != StatusRunning {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if ReasonOf(err) != ReasonTimeout {
		t.Errorf("reason = %s", ReasonOf(err))
	}
	// Only transient errors: the last one is kept.
	g, _ := statusScript(t, "!503")
	_, err = g.client(WithRetries(-1, 0, 0)).Wait(t.Context(), "1042", WaitOptions{Backoff: fast, Deadline: 50 * time.Millisecond})
	var he *HTTPError
	if !errors.Is(err, ErrDeadline) || !errors.As(err, &he) || he.StatusCode != 503 {
		t.Fatalf("err = %v, want the deadline with the last 503", err)
	}
	assertNoSecret(t, err)
}

func TestWaitCancelled(t *testing.T) {
	t.Parallel()
	f, _ := statusScript(t, "running")
	ctx, cancel := context.WithCancel(t.Context())
	polls := 0
	_, err := f.client().Wait(ctx, "1042", WaitOptions{
		Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond},
		OnStatus: func(Status, bool) {
			if polls++; polls == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || ReasonOf(err) != ReasonCanceled {
		t.Fatalf("err = %v", err)
	}
}

// With NewLearnedSchedule, once the task says reporting the next checks
// come about LearnedNearGap (1.3 s) apart (the plan alone waits several seconds there),
// and OnEnd reports the checks made.
func TestWaitLearnedScheduleChecksOftenNearTheEnd(t *testing.T) {
	t.Parallel()
	answers := []string{"pending"}
	for range 10 {
		answers = append(answers, "running")
	}
	answers = append(answers, "reporting", "reporting", "reporting", "reported")
	f, n := statusScript(t, answers...)
	clock := newFakeClock()
	var stats PollStats
	st, err := f.client().Wait(t.Context(), "1042", WaitOptions{Schedule: NewLearnedSchedule(),
		Sleep: clock.Sleep, Now: clock.Now, OnEnd: func(s PollStats) { stats = s }})
	if err != nil || st != StatusReported {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	slept := clock.Slept()
	if int(n.Load()) != len(answers) || stats.Polls != len(answers) || len(slept) != len(answers) {
		t.Fatalf("polls %d, OnEnd %+v, sleeps %v", n.Load(), stats, slept)
	}
	t.Logf("sleeps %v", slept)
	if d := slept[11]; d < 2*time.Second {
		t.Errorf("the last wait while running is %s: expected the plan's gaps, several seconds by then", d)
	}
	// At most 1.3 s plus a tenth of the time spent reporting (about
	// 2.6 s by the third wait), ±10 % jitter: under 1.75 s.
	for i, d := range slept[12:] {
		if d > 1750*time.Millisecond {
			t.Errorf("wait %d after reporting was first seen: %s, want about 1.3 s", i+1, d)
		}
	}
	if d := slept[12]; d < 1150*time.Millisecond {
		t.Errorf("first wait after reporting was seen: %s, want LearnedNearGap ±10 %%", d)
	}
}
