package apiclient

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

const sec = float64(time.Second)

func secs(s float64) time.Duration { return time.Duration(s * sec) }

// run simulates polling one task that ends d after submission on schedule
// s, with fake elapsed times (every wait exactly as asked, checks taking no
// time). It returns the wait's stats and the check times.
func run(s Schedule, d time.Duration) (PollStats, []time.Duration) {
	var (
		st    PollStats
		times []time.Duration
	)
	for {
		g := s.Next(st.Polls, st.Elapsed)
		st.Polls++
		st.LastGap = g
		st.Elapsed += g
		times = append(times, st.Elapsed)
		if st.Elapsed >= d || st.Polls > 10_000 {
			return st, times
		}
	}
}

// seeded returns a schedule without jitter that has observed n durations
// evenly spread over [lo, hi] seconds.
func seeded(t *testing.T, lo, hi float64, n int) *LearnedSchedule {
	t.Helper()
	cfg := DefaultLearnedConfig()
	cfg.Jitter = 0
	s := NewLearnedSchedule(cfg)
	for i := range n {
		s.Observe(secs(lo + (hi-lo)*float64(i)/float64(max(n-1, 1))))
	}
	return s
}

// lagStats runs tasks of every duration in [lo, hi] (step 0.1 s) and returns
// the median and 95th percentile of the delay between the task ending and
// the check that saw it, and the mean number of checks.
func lagStats(s Schedule, lo, hi float64) (p50, p95 time.Duration, calls float64) {
	var lags []time.Duration
	n := 0
	for d := lo; d <= hi+1e-9; d += 0.1 {
		st, _ := run(s, secs(d))
		lags = append(lags, st.Elapsed-secs(d))
		calls += float64(st.Polls)
		n++
	}
	slices.Sort(lags)
	return quantile(lags, 0.5), quantile(lags, 0.95), calls / float64(n)
}

func TestBackoffIsASchedule(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: time.Second, Factor: 2, Max: 5 * time.Second}
	for n := range 6 {
		if got := b.Next(n, time.Hour); got != b.Delay(n) {
			t.Errorf("Next(%d) = %s, want Delay %s", n, got, b.Delay(n))
		}
	}
	b.Jitter = 0.1
	for range 100 {
		if got := b.Next(0, 0); got < 900*time.Millisecond || got > 1100*time.Millisecond {
			t.Fatalf("jittered Next(0) = %s, want 1s ±10%%", got)
		}
	}
}

// scheduleFunc adapts a function to Schedule.
type scheduleFunc func(int, time.Duration) time.Duration

func (f scheduleFunc) Next(n int, e time.Duration) time.Duration { return f(n, e) }

func TestWaitStatusScheduleElapsedAndStats(t *testing.T) {
	t.Parallel()
	// With an injected sleep and no clock, elapsed is the sum of the waits;
	// the schedule sees it, and OnEnd reports it.
	var seen []time.Duration
	sched := scheduleFunc(func(n int, e time.Duration) time.Duration {
		seen = append(seen, e)
		return time.Duration(n+1) * time.Second // 1, 2, 3 s
	})
	sleep := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	var stats PollStats
	statuses := []string{"pending", "processing", "completed"}
	polls := 0
	st, err := WaitStatus(t.Context(), WaitConfig{Schedule: sched, Sleep: sleep, OnEnd: func(s PollStats) { stats = s }},
		func(context.Context) (string, error) { polls++; return statuses[polls-1], nil },
		func(s string) (bool, error) { return s == "completed", nil })
	if err != nil || st != "completed" {
		t.Fatalf("WaitStatus = %q, %v", st, err)
	}
	if want := []time.Duration{0, time.Second, 3 * time.Second}; !slices.Equal(seen, want) {
		t.Errorf("schedule saw elapsed %v, want %v", seen, want)
	}
	if stats != (PollStats{Polls: 3, Elapsed: 6 * time.Second, LastGap: 3 * time.Second}) {
		t.Errorf("stats %+v", stats)
	}
	if got := stats.Completion(); got != 4500*time.Millisecond {
		t.Errorf("Completion = %s, want 4.5s (middle of the last gap)", got)
	}

	// With a clock, elapsed is read from it (here a check takes 10 s).
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	sleepClock := func(ctx context.Context, d time.Duration) error { now = now.Add(d); return ctx.Err() }
	polls = 0
	_, err = WaitStatus(t.Context(), WaitConfig{Backoff: Backoff{Initial: time.Second, Max: time.Second}, Sleep: sleepClock, Now: clock,
		OnEnd: func(s PollStats) { stats = s }},
		func(context.Context) (string, error) {
			now = now.Add(10 * time.Second)
			polls++
			return statuses[polls-1], nil
		},
		func(s string) (bool, error) { return s == "completed", nil })
	if err != nil || stats != (PollStats{Polls: 3, Elapsed: 33 * time.Second, LastGap: 11 * time.Second}) {
		t.Errorf("with a clock: err %v stats %+v", err, stats)
	}

	// OnEnd is called when the wait fails too.
	stats = PollStats{}
	_, err = WaitStatus(t.Context(), WaitConfig{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Deadline: 20 * time.Millisecond,
		OnEnd: func(s PollStats) { stats = s }},
		func(context.Context) (string, error) { return "pending", nil },
		func(string) (bool, error) { return false, nil })
	if err == nil || stats.Polls == 0 || stats.Elapsed <= 0 {
		t.Errorf("deadline: err %v stats %+v", err, stats)
	}
}

func TestLearnedScheduleFallsBackUntilItKnowsEnough(t *testing.T) {
	t.Parallel()
	cfg := DefaultLearnedConfig()
	cfg.Fallback = Backoff{Initial: time.Second, Factor: 2, Max: 8 * time.Second}
	s := NewLearnedSchedule(cfg)
	for i := range cfg.MinSamples - 1 {
		s.Observe(time.Minute)
		s.Observe(0) // ignored
		if st := s.Stats(); st.Learning || st.Samples != i+1 {
			t.Fatalf("after %d samples: %+v", i+1, st)
		}
		for n := range 5 {
			if got := s.Next(n, time.Hour); got != cfg.Fallback.Delay(n) {
				t.Fatalf("Next(%d) = %s, want the fallback's %s", n, got, cfg.Fallback.Delay(n))
			}
		}
	}
	s.Observe(time.Minute)
	if st := s.Stats(); !st.Learning || st.Median != time.Minute {
		t.Fatalf("after MinSamples: %+v", st)
	}
}

// The numbers: with a learned 60 s ±10 % history, a 60 s analysis
// takes at most ~12 status calls, and the learned window is checked at
// least every 2 s, so the delay there is under 1 s at the median and 2.5 s
// at the 95th percentile.
func TestLearnedScheduleSteadyService(t *testing.T) {
	t.Parallel()
	s := seeded(t, 54, 66, 64)
	st60, times := run(s, time.Minute)
	t.Logf("60 s task: %d checks at %v", st60.Polls, times)
	if st60.Polls > 12 {
		t.Errorf("60 s analysis: %d status calls, want ≤ 12", st60.Polls)
	}
	if times[0] > 1100*time.Millisecond {
		t.Errorf("first check at %s, want about 1 s", times[0])
	}
	// Gaps: at most MinGap (1.5 s) around the learned window, growing
	// sparse before it, at most TailGap after.
	_, long := run(s, 2*time.Minute)
	prev := time.Duration(0)
	for _, tm := range long {
		gap := tm - prev
		switch {
		case tm >= secs(53) && tm <= secs(67.5) && gap > 2*time.Second:
			t.Errorf("gap %s ending at %s inside the learned window", gap, tm)
		case tm < secs(40) && prev > 0 && gap < prev:
			t.Errorf("approach gap %s ending at %s shorter than the elapsed %s", gap, tm, prev)
		case gap > 5*time.Second+time.Millisecond && tm > secs(67.5):
			t.Errorf("gap %s ending at %s longer than TailGap", gap, tm)
		}
		prev = tm
	}
	p50, p95, calls := lagStats(s, 54, 66)
	t.Logf("window 54–66 s: delay p50 %s p95 %s, %.1f checks on average", p50, p95, calls)
	if p50 >= time.Second || p95 >= 2500*time.Millisecond || calls > 13 {
		t.Errorf("window 54–66 s: delay p50 %s p95 %s, %.1f checks; want < 1 s, < 2.5 s, ≤ 13", p50, p95, calls)
	}
	if st := s.Stats(); st.ChecksPerTask > 13 || st.P5 < secs(54) || st.P95 > secs(66) {
		t.Errorf("stats %+v", st)
	}
}

func TestLearnedScheduleOtherSteadyServices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi   float64
		maxCalls float64 // mean over the window
	}{
		{4, 6, 6},       // 5 s ±20 %
		{24, 36, 13},    // 30 s ±20 %
		{108, 132, 24},  // 120 s ±10 %: Budget per BudgetSpan
		{270, 330, 60},  // 5 min ±10 %
		{59.5, 60.5, 9}, // a service that always takes 60 s
	} {
		s := seeded(t, tc.lo, tc.hi, 64)
		p50, p95, calls := lagStats(s, tc.lo, tc.hi)
		if p50 >= time.Second || p95 >= 2500*time.Millisecond || calls > tc.maxCalls {
			t.Errorf("%g–%g s: delay p50 %s p95 %s, %.1f checks; want < 1 s, < 2.5 s, ≤ %g", tc.lo, tc.hi, p50, p95, calls, tc.maxCalls)
		}
	}
}

// Completions spread over 5–120 s leave nothing to concentrate on: the
// budget holds and the delay is what a dozen checks per minute allows.
func TestLearnedScheduleSpreadService(t *testing.T) {
	t.Parallel()
	s := seeded(t, 5, 120, 64)
	st, times := run(s, time.Minute)
	t.Logf("60 s task: %d checks at %v", st.Polls, times)
	if st.Polls > 13 {
		t.Errorf("60 s analysis: %d status calls, want about a dozen", st.Polls)
	}
	p50, p95, calls := lagStats(s, 5, 120)
	t.Logf("5–120 s: delay p50 %s p95 %s, %.1f checks on average", p50, p95, calls)
	if calls > 13 || p95 > 7*time.Second {
		t.Errorf("5–120 s: %.1f checks, p95 %s; want ≤ 13 and ≤ 7 s", calls, p95)
	}
	if st := s.Stats(); st.ChecksPerTask > 12.5 {
		t.Errorf("expected checks per task %.2f over the budget", st.ChecksPerTask)
	}
}

// Learning from its own polls (the midpoint of each last gap), the schedule
// finds a service's typical time from nothing, and follows it when it
// changes.
func TestLearnedScheduleLearnsAndFollows(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewLearnedSchedule(DefaultLearnedConfig()) // with jitter
	feed := func(mean float64, n int) {
		for range n {
			d := secs(mean * (0.8 + 0.4*rng.Float64()))
			st, _ := run(s, d)
			if err := st.Completion() - d; err.Abs() > st.LastGap/2+time.Millisecond {
				t.Fatalf("completion estimate off by %s for a gap of %s", err, st.LastGap)
			}
			s.Observe(st.Completion())
		}
	}
	feed(30, 64)
	if st := s.Stats(); math.Abs(st.Median.Seconds()-30) > 2 {
		t.Fatalf("learned median %s, want about 30 s", st.Median)
	}
	if p50, p95, calls := lagStats(s, 24, 36); p50 >= time.Second || p95 >= 2500*time.Millisecond || calls > 13 {
		t.Errorf("30 s ±20 %%: delay p50 %s p95 %s, %.1f checks", p50, p95, calls)
	}
	// The service slows down to 90 s: within its memory the schedule moves.
	feed(90, 64)
	if st := s.Stats(); math.Abs(st.Median.Seconds()-90) > 5 {
		t.Fatalf("learned median %s after the change, want about 90 s", st.Median)
	}
	if p50, p95, calls := lagStats(s, 72, 108); p50 >= time.Second || p95 >= 2500*time.Millisecond || calls > 20 {
		t.Errorf("90 s ±20 %%: delay p50 %s p95 %s, %.1f checks", p50, p95, calls)
	}
}

func TestLearnedScheduleConcurrentUse(t *testing.T) {
	t.Parallel()
	s := NewLearnedSchedule(DefaultLearnedConfig())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if g%2 == 0 {
					s.Observe(secs(20 + float64(i%20)))
				}
				if d := s.Next(i%10, secs(float64(i%60))); d <= 0 || d > time.Minute {
					t.Errorf("Next = %s", d)
					return
				}
				_ = s.Stats()
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Samples != 64 || !st.Learning {
		t.Fatalf("stats %+v", st)
	}
}

func BenchmarkLearnedScheduleNext(b *testing.B) {
	s := NewLearnedSchedule(DefaultLearnedConfig())
	for i := range 64 {
		s.Observe(secs(54 + float64(i%13)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Next(i, secs(float64(i%90)))
		i++
	}
}

// BenchmarkLearnedScheduleObserve is the cost of learning one duration
// (rebuilding the plan), paid once per completed analysis.
func BenchmarkLearnedScheduleObserve(b *testing.B) {
	s := NewLearnedSchedule(DefaultLearnedConfig())
	i := 0
	for b.Loop() {
		s.Observe(secs(5 + float64(i%116)))
		i++
	}
}

// priorConfig is the default config without jitter, with a 5–120 s prior
// and the URL client's budget (16 calls per minute of mean duration).
func priorConfig() LearnedConfig {
	cfg := DefaultLearnedConfig()
	cfg.Jitter = 0
	cfg.Budget = 16
	cfg.PriorMin, cfg.PriorMax = secs(5), secs(120)
	return cfg
}

// With a prior, the schedule plans from it before learning anything (not
// the Fallback), and switches to what it learned once it knows enough.
func TestLearnedSchedulePlansFromThePriorUntilItKnowsEnough(t *testing.T) {
	t.Parallel()
	cfg := priorConfig()
	cfg.Fallback = Backoff{Initial: time.Hour, Factor: 1, Max: time.Hour}
	s := NewLearnedSchedule(cfg)
	// The prior is the plan of a uniform distribution over 5–120 s.
	var even []time.Duration
	for i := range 64 {
		even = append(even, secs(5+115*float64(i)/63))
	}
	want := buildPlan(s.cfg, even, nil, true)
	for _, e := range []float64{0, 3, 10, 20, 60, 110, 200} {
		if got, w := s.Next(3, secs(e)), want.gap(e); got != w {
			t.Errorf("no history, Next at %g s = %s, want the prior's %s", e, got, w)
		}
	}
	// A 20 s analysis with no history: seen within 4 s, in a few checks.
	st, times := run(s, secs(20))
	if st.Polls > 8 || st.Elapsed > secs(24) {
		t.Errorf("20 s, no history: %d checks at %v", st.Polls, times)
	}
	p50, p95, calls := lagStats(s, 5, 120)
	t.Logf("5–120 s on the prior: delay p50 %s p95 %s, %.1f checks", p50, p95, calls)
	if calls > 20 || p50 > 2*time.Second || p95 > 5*time.Second {
		t.Errorf("5–120 s on the prior: delay p50 %s p95 %s, %.1f checks", p50, p95, calls)
	}
	// Learning still takes over: a steady 60 s service after MinSamples.
	for range cfg.MinSamples {
		s.Observe(time.Minute)
	}
	if st := s.Stats(); !st.Learning || st.Median != time.Minute {
		t.Fatalf("after MinSamples: %+v", st)
	}
	if st, _ := run(s, time.Minute); st.Polls > 12 || st.Elapsed > secs(61.5) {
		t.Errorf("learned 60 s: %d checks, seen at %s", st.Polls, st.Elapsed)
	}
}

// The √hazard shape checks a spread-out service more densely late in its
// window than early, where few tasks have ended yet.
func TestLearnedScheduleDenserLateInASpreadWindow(t *testing.T) {
	t.Parallel()
	s := seeded(t, 5, 120, 64)
	early, late := s.Next(0, secs(20)), s.Next(0, secs(100))
	if late*5 > early*4 {
		t.Errorf("gap at 20 s %s, at 100 s %s: want denser late", early, late)
	}
}

// Near statuses: the wait is at most NearGap plus a tenth of the time in
// the status, never more than TailGap and never more than the plan's;
// other statuses follow the plan.
func TestLearnedScheduleNearStatuses(t *testing.T) {
	t.Parallel()
	cfg := priorConfig()
	cfg.Near = []string{"completed", "reporting"}
	s := NewLearnedSchedule(cfg)
	plan := func(e float64) time.Duration { return s.Next(0, secs(e)) }
	for _, tc := range []struct {
		status   string
		inStatus float64
		elapsed  float64
		want     time.Duration
	}{
		{"running", 0, 30, plan(30)},
		{"pending", 10, 30, plan(30)},
		{"reporting", 0, 30, time.Second},
		{"reporting", 10, 30, 2 * time.Second},
		{"completed", 5, 30, 1500 * time.Millisecond},
		{"reporting", 1000, 1030, cfg.TailGap},
		{"reporting", 0, 200, time.Second},
	} {
		want := min(tc.want, plan(tc.elapsed))
		if got := s.NextStatus(tc.status, secs(tc.inStatus), 4, secs(tc.elapsed)); got != want {
			t.Errorf("NextStatus(%q, in %g s, at %g s) = %s, want %s", tc.status, tc.inStatus, tc.elapsed, got, want)
		}
	}
}

// statusRecorder is a StatusSchedule that records what WaitStatus tells it.
type statusRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *statusRecorder) Next(int, time.Duration) time.Duration {
	panic("Next called on a StatusSchedule")
}

func (r *statusRecorder) NextStatus(status string, inStatus time.Duration, polls int, elapsed time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%d %s %s/%s", polls, status, inStatus, elapsed))
	return time.Second
}

// WaitStatus gives a StatusSchedule the latest status and how long the
// task has shown it, on the wait's clock.
func TestWaitStatusPassesStatusesToAStatusSchedule(t *testing.T) {
	t.Parallel()
	var clock time.Duration
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{"pending", "running", "running", "reporting", "reporting", "reported"}
	i := 0
	r := &statusRecorder{}
	_, err := WaitStatus(t.Context(), WaitConfig{Schedule: r,
		Sleep: func(_ context.Context, d time.Duration) error { clock += d; return nil },
		Now:   func() time.Time { return base.Add(clock) }},
		func(context.Context) (string, error) { i++; return statuses[i-1], nil },
		func(s string) (bool, error) { return s == "reported", nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0  0s/0s", "1 pending 0s/1s", "2 running 0s/2s", "3 running 1s/3s", "4 reporting 0s/4s", "5 reporting 1s/5s"}
	if !slices.Equal(r.seen, want) {
		t.Errorf("NextStatus saw %q, want %q", r.seen, want)
	}
}
