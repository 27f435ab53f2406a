package apiclient

import (
	"slices"
	"testing"
	"time"
)

// runOver simulates polling one task that ends d after submission on
// schedule s when each status check takes o (the schedule sees it in the
// elapsed time) and reading the result after the last takes o again. It
// returns the lag (task end → result in hand) and the checks made.
func runOver(s Schedule, d, o time.Duration) (lag time.Duration, polls int) {
	var st PollStats
	for {
		g := s.Next(st.Polls, st.Elapsed)
		st.Polls++
		end := st.Elapsed + g + o
		st.LastGap, st.Elapsed = end-st.Elapsed, end
		if st.Elapsed-o >= d || st.Polls > 10_000 { // the check saw it at its start
			return st.Elapsed + o - d, st.Polls
		}
	}
}

// lagsOver runs tasks ending at every 10 ms of [lo, hi] seconds (a uniform
// distribution) and returns the lag quantiles and mean checks.
func lagsOver(s Schedule, lo, hi float64, o time.Duration) (p50, p95 time.Duration, calls float64) {
	var lags []time.Duration
	for d := lo; d <= hi+1e-9; d += 0.01 {
		l, n := runOver(s, secs(d), o)
		lags = append(lags, l)
		calls += float64(n)
	}
	slices.Sort(lags)
	return quantile(lags, 0.5), quantile(lags, 0.95), calls / float64(len(lags))
}

type gapFunc func(e float64) float64

func (g gapFunc) Next(_ int, e time.Duration) time.Duration { return secs(g(e.Seconds())) }

// urlLikeConfig is the URL client's plan (reputation.NewLearnedSchedule)
// without jitter.
func urlLikeConfig() LearnedConfig {
	cfg := DefaultLearnedConfig()
	cfg.Jitter = 0
	cfg.Budget = 13
	cfg.First = 4 * time.Second
	cfg.MinGap, cfg.MidGap = 1300*time.Millisecond, 3300*time.Millisecond
	cfg.PriorMin, cfg.PriorMax = secs(5), secs(120)
	cfg.PromptFrom, cfg.PromptTo, cfg.PromptGap = secs(16), secs(24), secs(1.7)
	return cfg
}

// The bound (issue 14 item 2): for completions uniform over 5–120 s, a
// constant gap δ gives p50 = δ/2 + overhead and about 1 + 57.5/δ calls, so
// p50 ≤ 1.5 s needs δ ≤ 3 s and ≥ 20.2 calls even with no overhead. A
// check at t costs only the tasks still running (1−F(t)), so the
// three-level plan (sparse early, MidGap in the middle, MinGap late where
// checks are cheap) meets p50 ≤ 1.5 s, p95 ≤ 3.5 s and ≤ 20 calls with
// 0.1 s per request (0.2 s of lag), learned or from the prior.
func TestThreeLevelPlanBeatsAConstantGap(t *testing.T) {
	t.Parallel()
	o := 100 * time.Millisecond
	for _, gap := range []float64{2.6, 2.8, 3.0} {
		g := gapFunc(func(float64) float64 { return gap })
		p50, p95, calls := lagsOver(g, 5, 120, 0)
		t.Logf("constant %.1f s, no overhead: p50 %s p95 %s, %.2f calls", gap, fmtS(p50), fmtS(p95), calls)
		if p50 <= 1500*time.Millisecond && calls <= 20 {
			t.Errorf("constant %.1f s meets both p50 ≤ 1.5 s and ≤ 20 calls: the bound is wrong", gap)
		}
	}
	cold := NewLearnedSchedule(urlLikeConfig())
	learned := seededCfg(urlLikeConfig(), 5, 120, 64)
	for name, s := range map[string]*LearnedSchedule{"prior": cold, "learned": learned} {
		p50, p95, calls := lagsOver(s, 5, 120, o)
		t.Logf("%s, %s a request: p50 %s p95 %s, %.2f calls", name, o, fmtS(p50), fmtS(p95), calls)
		if p50 > 1500*time.Millisecond || p95 > 3550*time.Millisecond || calls > 21 {
			t.Errorf("%s: p50 %s p95 %s, %.2f calls; want ≤ 1.5 s, ≤ 3.55 s, ≤ 21", name, p50, p95, calls)
		}
	}
	// Gap bounds: within the planned range every gap is MinGap or MidGap
	// (or the approach's, before the prior's first durations); beyond it
	// they grow to TailGap.
	for name, s := range map[string]*LearnedSchedule{"prior": cold, "learned": learned} {
		for e := 14.0; e < 118; e += 0.5 {
			if g := s.Next(0, secs(e)); g < 1299*time.Millisecond || g > 3301*time.Millisecond {
				t.Errorf("%s: gap at %.1f s is %s, want within [1.3 s, 3.3 s]", name, e, g)
			}
		}
		if g := s.Next(0, secs(200)); g < 4*time.Second || g > 5*time.Second {
			t.Errorf("%s: gap at 200 s is %s, want about TailGap", name, g)
		}
	}
	// The prior checks the prompt window every 1.7 s: a first 20 s
	// analysis is seen within 2 s, in at most 15 calls, however its
	// requests shift the checks.
	for _, o := range []float64{0, 0.05, 0.1} {
		for d := 19.0; d <= 21; d += 0.1 {
			if lag, n := runOver(cold, secs(d), secs(o)); lag > 2*time.Second || n > 15 {
				t.Errorf("%.1f s analysis, %.2f s a request, no history: lag %s, %d calls", d, o, lag, n)
			}
		}
	}
	// Learned, the plan is where the durations are: a steady 60 s service
	// is checked every MinGap around 60 s, for about a dozen calls.
	steady := seededCfg(urlLikeConfig(), 54, 66, 64)
	if g := steady.Next(0, secs(60)); g != 1300*time.Millisecond {
		t.Errorf("steady 54–66 s: gap at 60 s %s, want MinGap", g)
	}
	if _, _, calls := lagsOver(steady, 54, 66, 0); calls > 14 {
		t.Errorf("steady 54–66 s: %.1f calls", calls)
	}
}

func fmtS(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

func seededCfg(cfg LearnedConfig, lo, hi float64, n int) *LearnedSchedule {
	s := NewLearnedSchedule(cfg)
	for i := range n {
		s.Observe(secs(lo + (hi-lo)*float64(i)/float64(max(n-1, 1))))
	}
	return s
}
