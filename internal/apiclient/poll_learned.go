package apiclient

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LearnedSchedule is a polling Schedule that learns how long one service's
// tasks take and spends its status checks where completions are likely. One
// LearnedSchedule serves every task of a service; it is safe for concurrent
// use.
//
// Why: a blind schedule cannot be both cheap and prompt. For completions
// spread over 5–120 s, about a dozen checks per 60 s means a gap of ~5 s,
// so a median of ~2.5 s between the service finishing and us noticing (a
// fixed 15 s poll: 7.5 s). But a given service's analyses take a
// characteristic time, so checks can be sparse while a task is unlikely to
// be done and dense while it probably is (docs/PERFORMANCE.md, "Poll-to-
// verdict latency").
//
// How: Observe records how long each finished task took (the last Memory
// of them). From those it estimates the density f of task durations (a
// Gaussian kernel estimate, bandwidth by Silverman's rule) and builds a
// checking intensity λ(t), in checks per second at elapsed time t:
//
//   - approach: 1/First up to First, then 1/(ln(Approach)·t). Alone, it
//     makes the first check at First and each next one Approach× the
//     elapsed time: 1, 3, 9, 27, 81 s with the defaults, so a task far
//     faster than usual is still seen by 3× its duration (never later
//     than First), for a handful of checks (4 before a 60 s window);
//   - dense: k·√(f(t)/(1−F(t))), capped so that the total stays under one
//     check per MinGap. The square root of the hazard is what minimises
//     the mean delay for a given mean number of checks (with gaps g(t),
//     the mean delay is ∫f·g/2 and the mean number of checks ∫(1−F)/g,
//     since a check at t is made only for the tasks still running:
//     Lagrange gives g ∝ √((1−F)/f)); the survival 1−F is floored at
//     hazardFloor. For a spread-out service this checks more densely late
//     in the window than early. k is the largest value that
//     keeps the mean checks per task (over the learned durations) within
//     Budget, and at most what puts the cap where f ≥ ½ of its peak: for a
//     steady service the window where completions happen is checked every
//     MinGap, and a spread-out one gets as many checks as the budget pays;
//   - tail: F(t)/TailGap, F the learned distribution function: once past
//     the usual durations, a late task is checked every TailGap.
//
// The next check is where ∫λ from the current elapsed time reaches 1, ±
// Jitter. Until MinSamples durations are known, the same plan is built from
// a prior (durations spread evenly over PriorMin–PriorMax), or without one
// Fallback is used instead. As a StatusSchedule it also checks often while
// the task shows a status that says the end is near (LearnedConfig.Near).
type LearnedSchedule struct {
	cfg LearnedConfig

	mu       sync.Mutex      // guards samples, next, observed and running
	samples  []time.Duration // ring of the last cfg.Memory durations
	next     int             // where the next sample goes once full
	observed int             // durations observed so far
	running  map[*Running]struct{}

	plan  atomic.Pointer[learnedPlan] // nil until MinSamples are known
	prior *learnedPlan                // from PriorMin–PriorMax; nil without a prior

	// When Observe rebuilds the plan (rebuildDue); under mu.
	pending int       // durations observed since the plan was built
	built   time.Time // when it was
}

// LearnedConfig tunes a LearnedSchedule. Zero fields take the values of
// DefaultLearnedConfig, except Jitter (zero: none, as for Backoff).
type LearnedConfig struct {
	// Fallback is the schedule until MinSamples durations are known.
	// Default: 1 s, ×1.4, at most 4 s, ±10 % (the URL client's schedule
	// before learning existed: ~18 checks for 60 s, delay ≤ 4 s).
	Fallback Backoff
	// MinSamples is how many durations are needed before learning is used
	// (default 8: fewer say little about the spread; the kernel smoothing
	// covers the rest of the uncertainty).
	MinSamples int
	// Memory is how many recent durations are kept (default 64: enough for
	// the bulk of the distribution, few enough to follow a service that
	// slows down within a busy hour).
	Memory int
	// MinGap bounds the densest checking (default 1.5 s). Inside the
	// learned window the delay is then uniform on [0, 1.5 s]: median
	// 0.75 s, p95 1.4 s (issue 3 asks < 1 s and < 2.5 s), and one task
	// uses at most 0.67 status calls/s of the shared "report" budget
	// (5/s by default).
	MinGap time.Duration
	// TailGap is the spacing once past the learned durations (default 5 s:
	// a late task is seen at most 5 s late, 12 checks a minute).
	TailGap time.Duration
	// Approach is the growth ratio of the checks made before the learned
	// durations (default 3; see LearnedSchedule).
	Approach float64
	// First is where the approach starts: the first check is about First
	// after submission when no learned duration is that short (default 1 s).
	First time.Duration
	// Budget is the mean number of status checks a task may use, for
	// services whose tasks last up to BudgetSpan; slower ones get Budget
	// per BudgetSpan of mean duration (defaults 12 and 60 s: issue 3's
	// "no more than about a dozen status calls for a 60 s analysis").
	Budget     float64
	BudgetSpan time.Duration
	// Jitter spreads each wait by ±Jitter (a fraction) so that tasks started
	// together do not check together (default config: 0.1; zero: none).
	Jitter float64
	// PriorMin and PriorMax, if PriorMax is positive, are what the service
	// is believed to take before anything is learned: until MinSamples
	// durations are known the schedule plans as if it had seen durations
	// spread evenly over [PriorMin, PriorMax], instead of using Fallback.
	PriorMin, PriorMax time.Duration
	// Near lists statuses that say the task is about to end (the
	// sandbox's "completed" and "reporting": the analysis is over, only
	// the report is being written). While the task shows one of them the
	// wait before the next check is at most NearGap (default 1 s) plus a
	// tenth of the time it has shown it (a phase that lasts longer than
	// expected is checked less often), never more than TailGap.
	Near    []string
	NearGap time.Duration
	// MidGap, if positive, makes the plan aim at lag quantiles instead of
	// spending Budget along √hazard: every point of the plan is checked
	// every MinGap, every MidGap, or only by the approach and tail, chosen
	// by the hazard f/(1−F) there (highest first), with the fewest checks
	// per task that leave at most MidShare of the tasks (by the planned
	// distribution) in gaps longer than MinGap and at most SparseShare in
	// gaps longer than MidGap; leftover Budget then turns more of the
	// highest-hazard points to MinGap (a steady service's whole window).
	// Why three levels: a task ending in a gap g waits uniformly on
	// [0, g], so the share of tasks waiting over L is ∫f·(1−L/g)⁺, while a
	// check at t costs only the tasks still running, 1−F(t): per unit of
	// time the cost S/g plus the Lagrange-weighted shares is piecewise
	// linear in 1/g with kinks at 1/MinGap and 1/MidGap, so the optimum
	// sits at those kinks (or at none), switching where the hazard crosses
	// two thresholds (see docs/PERFORMANCE.md, issue 14 item 2).
	MidGap                time.Duration
	MidShare, SparseShare float64
	// PromptFrom–PromptTo, when planning from the prior (nothing learned
	// yet), is checked at least every PromptGap: where the service's
	// typical analysis ends, so that a first analysis of that length is
	// seen promptly even though the prior spreads its mass wide (with
	// Near statuses, a PromptGap shorter than the near-the-end phase of
	// such an analysis makes sure a check sees that phase).
	PromptFrom, PromptTo, PromptGap time.Duration
	// Probe, if set, is when the first check is made while nothing is
	// learned, when that is sooner than the prior's first check: a service
	// that answers within Probe is seen then instead of after First. It
	// costs an analysis of a slow service one more call, unless its status
	// at the probe is one of NotStarted. Once durations are learned the
	// plan alone decides (a service that never ends that soon is not
	// probed).
	Probe time.Duration
	// NotStarted lists statuses that say the task has not started yet
	// (queued). A probe that sees one skips the prior's first check (at
	// about First), which is there for services faster than the prior: a
	// task still queued at the probe is not one of those, and the check
	// would cost it a call for nothing. Any other status keeps it.
	NotStarted []string
}

// DefaultLearnedConfig returns the defaults documented on LearnedConfig.
func DefaultLearnedConfig() LearnedConfig {
	return LearnedConfig{
		Fallback:   Backoff{Initial: time.Second, Factor: 1.4, Max: 4 * time.Second, Jitter: 0.1},
		MinSamples: 8,
		Memory:     64,
		MinGap:     1500 * time.Millisecond,
		TailGap:    5 * time.Second,
		Approach:   3,
		First:      time.Second,
		Budget:     12,
		BudgetSpan: time.Minute,
		Jitter:     0.1,
	}
}

// NewLearnedSchedule returns a schedule that knows no durations yet.
func NewLearnedSchedule(cfg LearnedConfig) *LearnedSchedule {
	d := DefaultLearnedConfig()
	if cfg.Fallback == (Backoff{}) {
		cfg.Fallback = d.Fallback
	}
	if cfg.MinSamples <= 0 {
		cfg.MinSamples = d.MinSamples
	}
	if cfg.Memory <= 0 {
		cfg.Memory = d.Memory
	}
	cfg.MinSamples = min(cfg.MinSamples, cfg.Memory)
	if cfg.MinGap <= 0 {
		cfg.MinGap = d.MinGap
	}
	if cfg.TailGap <= 0 {
		cfg.TailGap = d.TailGap
	}
	if cfg.Approach <= 1 {
		cfg.Approach = d.Approach
	}
	if cfg.First <= 0 {
		cfg.First = d.First
	}
	if cfg.Budget <= 0 {
		cfg.Budget = d.Budget
	}
	if cfg.BudgetSpan <= 0 {
		cfg.BudgetSpan = d.BudgetSpan
	}
	if cfg.NearGap <= 0 {
		cfg.NearGap = time.Second
	}
	if cfg.MidGap > 0 {
		cfg.MidGap = max(cfg.MidGap, cfg.MinGap)
		if cfg.MidShare <= 0 {
			cfg.MidShare = 0.45
		}
		if cfg.SparseShare <= 0 {
			cfg.SparseShare = 0.03
		}
	}
	s := &LearnedSchedule{cfg: cfg}
	if cfg.PriorMax > 0 {
		lo, hi := max(cfg.PriorMin, 0), max(cfg.PriorMax, cfg.PriorMin)
		prior := make([]time.Duration, cfg.Memory)
		for i := range prior {
			prior[i] = lo + time.Duration(float64(hi-lo)*float64(i)/float64(max(len(prior)-1, 1)))
		}
		s.prior = buildPlan(cfg, prior, nil, true)
	}
	return s
}

// Next implements Schedule. Before MinSamples durations are known it plans
// from the prior (PriorMin–PriorMax), or without one is Fallback.Next;
// afterwards it plans from the learned durations. Either plan depends only
// on elapsed.
func (s *LearnedSchedule) Next(polls int, elapsed time.Duration) time.Duration {
	p := s.plan.Load()
	if p == nil {
		p = s.prior
	}
	if p == nil {
		return s.cfg.Fallback.Next(polls, elapsed)
	}
	d := p.gap(elapsed.Seconds())
	if polls == 0 && s.cfg.Probe > 0 && p == s.prior && elapsed+d > s.cfg.Probe {
		return max(s.cfg.Probe-elapsed, 0)
	}
	return jitter(d, s.cfg.Jitter)
}

// afterProbe returns the wait after a probe (the first check, while the
// plan is the prior's) that found the task not started (NotStarted): to
// the prior's second check, skipping its first.
func (s *LearnedSchedule) afterProbe(status string, polls int, elapsed time.Duration) (time.Duration, bool) {
	if polls != 1 || s.cfg.Probe <= 0 || !slices.Contains(s.cfg.NotStarted, status) {
		return 0, false
	}
	p := s.plan.Load()
	if p != nil || s.prior == nil {
		return 0, false // learned plans are not probed
	}
	first := elapsed + s.prior.gap(elapsed.Seconds()) // the prior's first check
	if first <= elapsed || elapsed > s.cfg.Probe+s.cfg.Probe/2 {
		return 0, false
	}
	return first - elapsed + jitter(s.prior.gap(first.Seconds()), s.cfg.Jitter), true
}

// NextStatus implements StatusSchedule: Next, except that while the task
// shows one of the Near statuses (for inStatus so far) the wait is at most
// NearGap + inStatus/10, and at most TailGap.
func (s *LearnedSchedule) NextStatus(status string, inStatus time.Duration, polls int, elapsed time.Duration) time.Duration {
	if d, ok := s.afterProbe(status, polls, elapsed); ok {
		return d
	}
	d := s.Next(polls, elapsed)
	if slices.Contains(s.cfg.Near, status) {
		near := min(s.cfg.NearGap+time.Duration(float64(max(inStatus, 0))*nearGrowth), s.cfg.TailGap)
		d = min(d, jitter(near, s.cfg.Jitter))
	}
	return d
}

// Running is a wait in progress on a LearnedSchedule (Begin): a task
// still running after t says its duration is more than t, which the
// schedule uses when it learns (see Begin).
type Running struct {
	s   *LearnedSchedule
	seq int          // s.observed at Begin
	age atomic.Int64 // the latest elapsed time (ns) a check saw it running
}

// Begin records that a wait on the schedule has started; WaitStatus calls
// it for a schedule that has it, Seen after every check that found the task
// running, and End when the wait ends, however it ends.
//
// Why: completions arrive shortest first. Learned only from the tasks that
// have ended, a schedule that has just started learning (or a burst of
// submissions) believes durations shorter than they are, checks densely
// where most tasks are still far from done, and pays for it in calls (the
// benchmark's learned 5–120 s row: two calls per task more than its final
// plan). So the durations are estimated as survival data: the tasks still
// running count as durations longer than their current age (Kaplan–Meier
// weights; see weighted). Only waits begun since the oldest remembered
// duration was observed count, so that a busy service's many running tasks
// do not outweigh a memory that spans a shorter time than its analyses. A
// resumed wait's age understates the task's, which only makes it count as
// a shorter lower bound.
func (s *LearnedSchedule) Begin() *Running {
	r := &Running{s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[*Running]struct{}{}
	}
	r.seq = s.observed
	s.running[r] = struct{}{}
	return r
}

// Seen records that a check at elapsed found the task still running.
func (r *Running) Seen(elapsed time.Duration) {
	if elapsed > time.Duration(r.age.Load()) {
		r.age.Store(int64(elapsed))
	}
}

// End records that the wait is over (its duration, if it completed, is
// for the caller to Observe).
func (r *Running) End() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	delete(r.s.running, r)
}

// Observe records that a task took d from submission to completion (for a
// polled task, PollStats.Completion of its wait). Only tasks that completed
// normally should be recorded, and only when the wait started at
// submission: failures and resumed waits say nothing reliable about
// durations. Non-positive durations are ignored.
func (s *LearnedSchedule) Observe(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observed++
	if len(s.samples) < s.cfg.Memory {
		s.samples = append(s.samples, d)
	} else {
		s.samples[s.next] = d
		s.next = (s.next + 1) % s.cfg.Memory
	}
	if !s.rebuildDue(len(s.samples) == s.cfg.MinSamples) {
		return
	}
	s.rebuild()
}

// rebuild builds the plan from the remembered durations and the waits
// running, once there are MinSamples (the prior or Fallback until then).
// s.mu is held.
func (s *LearnedSchedule) rebuild() {
	if len(s.samples) < s.cfg.MinSamples {
		s.plan.Store(nil)
		return
	}
	oldest := s.observed - len(s.samples) // seq of a wait begun before the oldest sample
	var censored []time.Duration
	for r := range s.running {
		if a := time.Duration(r.age.Load()); r.seq >= oldest && a > 0 {
			censored = append(censored, a)
		}
	}
	s.plan.Store(buildPlan(s.cfg, s.samples, censored, false))
}

// Seed replaces the remembered durations with ds (oldest first; the
// latest Memory of them are kept, non-positive ones skipped) and plans
// from them at once: a schedule that starts with durations kept from
// before a restart, or learned by other replicas, does not go back to its
// prior. It reports whether they differ from those remembered (nothing
// was rebuilt when they do not).
func (s *LearnedSchedule) Seed(ds []time.Duration) bool {
	keep := make([]time.Duration, 0, min(len(ds), s.cfg.Memory))
	for _, d := range ds {
		if d > 0 {
			keep = append(keep, d)
		}
	}
	if len(keep) > s.cfg.Memory {
		keep = keep[len(keep)-s.cfg.Memory:]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(keep, s.ordered()) {
		return false
	}
	s.samples, s.next = keep, 0
	s.observed = max(s.observed, len(keep))
	s.pending, s.built = 0, time.Now()
	s.rebuild()
	return true
}

// Samples returns the remembered durations, oldest first.
func (s *LearnedSchedule) Samples() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ordered()
}

// ordered returns the ring of samples oldest first. s.mu is held.
func (s *LearnedSchedule) ordered() []time.Duration {
	if len(s.samples) < s.cfg.Memory {
		return slices.Clone(s.samples)
	}
	return append(slices.Clone(s.samples[s.next:]), s.samples[:s.next]...)
}

// LearnedStats is what a LearnedSchedule currently believes, for metrics
// and logs.
type LearnedStats struct {
	// Samples is how many durations are remembered.
	Samples int
	// Learning is true once Samples ≥ MinSamples (the fallback is no
	// longer used).
	Learning bool
	// P5, Median and P95 are quantiles of the remembered durations (zero
	// without samples).
	P5, Median, P95 time.Duration
	// ChecksPerTask is the mean number of status checks the schedule
	// expects to make per task for the remembered durations (zero until
	// Learning).
	ChecksPerTask float64
}

// Stats returns what the schedule currently believes.
func (s *LearnedSchedule) Stats() LearnedStats {
	s.mu.Lock()
	sorted := slices.Clone(s.samples)
	s.mu.Unlock()
	slices.Sort(sorted)
	st := LearnedStats{Samples: len(sorted)}
	if len(sorted) > 0 {
		st.P5, st.Median, st.P95 = quantile(sorted, 0.05), quantile(sorted, 0.5), quantile(sorted, 0.95)
	}
	if p := s.plan.Load(); p != nil {
		st.Learning, st.ChecksPerTask = true, p.checks
	}
	return st
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// learnedPlan is the cumulative checking intensity Λ(t) = ∫₀ᵗ λ on a grid,
// built once per observed duration and read by every Next. Times are in
// seconds.
type learnedPlan struct {
	step   float64   // grid spacing
	cum    []float64 // cum[i] = Λ(i·step)
	lnR    float64   // ln(Approach)
	first  float64   // First
	tail   float64   // 1/TailGap
	checks float64   // expected checks per task over the samples
}

// Grid resolution: 100 ms is well below MinGap (the checks it places are
// off by at most a few ms), and at most 4096 points keeps building a plan
// (kernel sums over ≤ 64 samples) to a few milliseconds per observed task.
const (
	planStep   = 0.1
	planPoints = 4096
)

// hazardFloor bounds the survival 1−F in the hazard f/(1−F) from below:
// past the last 10 % of the learned durations, the dense checking follows f
// alone (×√10) instead of growing without bound, which also limits what a
// task longer than the learned ones pays when the samples understate the
// tail (durations learned during a burst come from its shortest tasks).
const hazardFloor = 0.1

// buildPlan builds the plan for samples. For the prior (evenly spread
// samples standing for a uniform distribution) the density is the exact
// uniform one instead of a kernel estimate, whose bandwidth (Silverman's,
// made for bell shapes) would smear the prior's ends by tens of seconds,
// and the prompt window applies.
func buildPlan(cfg LearnedConfig, samples, censored []time.Duration, prior bool) *learnedPlan {
	n := len(samples)
	xs, ws := weighted(samples, censored)
	var mean, sd float64
	for i, x := range xs {
		mean += ws[i] * x
	}
	for i, x := range xs {
		sd += ws[i] * (x - mean) * (x - mean)
	}
	sd = math.Sqrt(sd * float64(n) / float64(max(n-1, 1)))

	// Bandwidth: Silverman's rule of thumb, 0.9·min(σ, IQR/1.34)·n^-⅕. Its
	// floor is MinGap/2, the uncertainty of each sample itself (a task
	// seen done by a check MinGap after the previous one ended somewhere
	// in that gap).
	spread := sd
	if iqr := (weightedQuantile(xs, ws, 0.75) - weightedQuantile(xs, ws, 0.25)) / 1.34; iqr > 0 && iqr < spread {
		spread = iqr
	}
	minGap := cfg.MinGap.Seconds()
	h := max(0.9*spread*math.Pow(float64(n), -0.2), minGap/2)
	lo, hi := xs[0], xs[len(xs)-1]
	uniform := prior && hi-lo > minGap

	p := &learnedPlan{
		lnR:   math.Log(cfg.Approach),
		first: cfg.First.Seconds(),
		tail:  1 / cfg.TailGap.Seconds(),
	}
	end := hi + 4*h + cfg.TailGap.Seconds() // f ≈ 0 and F ≈ 1 beyond
	p.step = max(planStep, end/(planPoints-1))
	points := int(math.Ceil(end/p.step)) + 1

	// base = approach + tail; f and 1−F of the planned durations.
	base := make([]float64, points)
	fs := make([]float64, points)
	surv := make([]float64, points)
	peak := 0.0
	norm := 1 / (h * math.Sqrt(2*math.Pi))
	for i := range points {
		t := float64(i) * p.step
		var f, cdf float64
		if uniform {
			if t >= lo && t <= hi {
				f = 1 / (hi - lo)
			}
			cdf = min(max((t-lo)/(hi-lo), 0), 1)
		} else {
			for k, x := range xs {
				switch z := (t - x) / h; {
				case z > 8: // beyond 8 bandwidths the kernel is 0 and its CDF 1
					cdf += ws[k]
				case z >= -8:
					f += ws[k] * math.Exp(-z*z/2)
					cdf += ws[k] * 0.5 * math.Erfc(-z/math.Sqrt2)
				}
			}
			f *= norm
		}
		base[i] = p.approach(t) + cdf*p.tail
		fs[i], surv[i] = f, 1-cdf
		peak = max(peak, f)
	}
	// Expected checks for a task of duration x: the checks before x, plus
	// the one that sees it done, on average Λ(x) + ½.
	checks := func(cum []float64) float64 {
		sum := 0.0
		for k, x := range xs {
			sum += ws[k] * (interp(cum, x/p.step) + 0.5)
		}
		return sum
	}
	budget := cfg.Budget * max(1, mean/cfg.BudgetSpan.Seconds())
	cum := make([]float64, points)
	integrate := func(rate []float64) {
		for i := range points {
			if i == 0 {
				cum[0] = 0
			} else {
				cum[i] = cum[i-1] + (rate[i-1]+rate[i])/2*p.step
			}
		}
	}
	if cfg.MidGap > 0 {
		integrate(quantilePlan(cfg, p.step, base, fs, surv, prior, budget, func(rate []float64) float64 {
			integrate(rate)
			return checks(cum)
		}))
	} else {
		sqrtHazardPlan(cfg, p.step, base, fs, surv, peak, budget, prior, cum, checks)
	}
	p.cum = cum
	p.checks = checks(cum)
	return p
}

// weighted returns the durations (seconds, sorted) the plan is built from
// and their weights (summing to 1): the samples, weighted by the
// Kaplan–Meier estimate that also counts the censored ages (tasks still
// running, whose durations are longer): each sample takes the drop of the
// survival at it, 1/(number of samples and censored ages at least as long)
// of what survives. What survives the longest sample (tasks running longer
// than any remembered one) is shared by the censored ages beyond it, placed
// at those ages. Without censored ages every sample weighs 1/n.
func weighted(samples, censored []time.Duration) (xs, ws []float64) {
	for _, d := range samples {
		xs = append(xs, d.Seconds())
	}
	slices.Sort(xs)
	n := len(xs)
	ws = make([]float64, n)
	cs := make([]float64, 0, len(censored))
	for _, d := range censored {
		cs = append(cs, d.Seconds())
	}
	slices.Sort(cs)
	surv, c := 1.0, 0 // cs[c:] are the censored ages ≥ the current sample
	for i, x := range xs {
		for c < len(cs) && cs[c] < x {
			c++
		}
		next := surv * (1 - 1/float64(n-i+len(cs)-c))
		ws[i], surv = surv-next, next
	}
	if surv > 1e-12 {
		rest := cs[c:]
		for _, a := range rest {
			xs = append(xs, a)
			ws = append(ws, surv/float64(len(rest)))
		}
	}
	return xs, ws
}

// weightedQuantile returns the q-quantile of the sorted xs weighted by ws.
func weightedQuantile(xs, ws []float64, q float64) float64 {
	acc := 0.0
	for i, w := range ws {
		if acc += w; acc >= q {
			return xs[i]
		}
	}
	return xs[len(xs)-1]
}

// sqrtHazardPlan fills cum for λ = base + min(k·√hazard, room under the
// MinGap cap), k the largest within budget (see LearnedSchedule).
func sqrtHazardPlan(cfg LearnedConfig, step float64, base, fs, surv []float64, peak, budget float64, prior bool, cum []float64, checks func([]float64) float64) {
	points := len(base)
	if pg := cfg.PromptGap.Seconds(); prior && pg > 0 {
		// The prompt window is checked at least every PromptGap.
		base = slices.Clone(base)
		for i := range base {
			if t := float64(i) * step; t >= cfg.PromptFrom.Seconds() && t <= cfg.PromptTo.Seconds() {
				base[i] = max(base[i], 1/pg)
			}
		}
	}
	dense := make([]float64, points)
	for i := range points {
		// √ of the hazard f/(1−F): a check at t costs only the tasks
		// still running, so late checks are cheaper (see LearnedSchedule).
		// The floor keeps the kernel's far tail (f ≈ 0, 1−F ≈ 0) sparse.
		dense[i] = math.Sqrt(fs[i] / max(surv[i], hazardFloor))
	}
	maxRate := 1 / cfg.MinGap.Seconds()
	build := func(k float64, cum []float64) {
		prev := 0.0
		for i := range points {
			l := base[i] + min(k*dense[i], max(0, maxRate-base[i]))
			if i == 0 {
				cum[0] = 0
			} else {
				cum[i] = cum[i-1] + (prev+l)/2*step
			}
			prev = l
		}
	}
	// k at most puts the cap where f ≥ peak/2 (and, the hazard being at
	// least f, wherever the hazard is that high); more would only spread the
	// MinGap checking over the kernel's tails (which the √f ramp around
	// the window covers at a lower rate).
	kMax := math.Sqrt2 * maxRate / math.Sqrt(peak)
	k := kMax
	if build(k, cum); checks(cum) > budget {
		lo, hi := 0.0, kMax
		for range 40 {
			k = (lo + hi) / 2
			if build(k, cum); checks(cum) > budget {
				hi = k
			} else {
				lo = k
			}
		}
		build(lo, cum)
	}
}

// quantilePlan returns the checking rate at each grid point for the
// three-level plan of LearnedConfig.MidGap: each point is checked every
// MinGap (x), every MidGap (y) or at the base rate, by hazard rank, the
// cheapest split that keeps the shares of tasks in gaps over x and over y
// within MidShare and SparseShare; then, while checks (the expected checks
// per task of a rate) stay within budget, more points go to x. Costs and
// shares per point: a check there costs the tasks still running, 1−F
// (floored at hazardFloor, so that the far tail stays sparse and a task
// longer than the learned ones does not pay for it), and a task ending in a
// gap g waits more than L with probability (1−L/g)⁺.
func quantilePlan(cfg LearnedConfig, step float64, base, fs, surv []float64, prior bool, budget float64, checks func([]float64) float64) []float64 {
	points := len(base)
	x, y := cfg.MinGap.Seconds(), cfg.MidGap.Seconds()
	rate := make([]float64, points)
	var (
		order               []int // points planned by rank
		fixCost, fix1, fix2 float64
	)
	pf, pt, pg := cfg.PromptFrom.Seconds(), cfg.PromptTo.Seconds(), cfg.PromptGap.Seconds()
	over := func(l, r float64) float64 { return max(0, 1-l*r) }
	for i := range points {
		t := float64(i) * step
		if prior && pg > 0 && t >= pf && t <= pt {
			r := max(base[i], 1/pg)
			rate[i] = r
			fixCost += max(surv[i], hazardFloor) * r * step
			fix1 += fs[i] * step * over(x, r)
			fix2 += fs[i] * step * over(y, r)
			continue
		}
		order = append(order, i)
	}
	hazard := func(i int) float64 { return fs[i] / max(surv[i], hazardFloor) }
	sort.SliceStable(order, func(a, b int) bool { return hazard(order[a]) > hazard(order[b]) })
	m := len(order)
	// Prefix sums over the ranked points of each level's cost and shares.
	cx, cy, cs := make([]float64, m+1), make([]float64, m+1), make([]float64, m+1)
	y1, s1, s2 := make([]float64, m+1), make([]float64, m+1), make([]float64, m+1)
	for k, i := range order {
		w, c := fs[i]*step, max(surv[i], hazardFloor)*step
		rx, ry, rs := max(base[i], 1/x), max(base[i], 1/y), base[i]
		cx[k+1], cy[k+1], cs[k+1] = cx[k]+c*rx, cy[k]+c*ry, cs[k]+c*rs
		y1[k+1], s1[k+1], s2[k+1] = y1[k]+w*over(x, ry), s1[k]+w*over(x, rs), s2[k]+w*over(y, rs)
	}
	// The first i ranked points at x, the next up to j at y, the rest at
	// the base rate.
	cost := func(i, j int) float64 { return cx[i] + cy[j] - cy[i] + cs[m] - cs[j] }
	share1 := func(i, j int) float64 { return fix1 + y1[j] - y1[i] + s1[m] - s1[j] }
	bi, bj, best := m, m, math.Inf(1)
	for j := 0; j <= m; j++ {
		if fix2+s2[m]-s2[j] > cfg.SparseShare {
			continue
		}
		// share1 falls as i grows (y → x); find the least i that fits.
		i := sort.Search(j+1, func(i int) bool { return share1(i, j) <= cfg.MidShare })
		if i > j {
			continue
		}
		if c := cost(i, j); c < best {
			bi, bj, best = i, j, c
		}
	}
	// Leftover budget turns to x, highest hazard first, the points at y,
	// then those at the base rate where f is at least half its peak (as
	// for sqrtHazardPlan's kMax: beyond, it would only spread MinGap
	// checking over the kernel's tails). A steady service's window is then
	// all checked every MinGap.
	peak := 0.0
	for _, f := range fs {
		peak = max(peak, f)
	}
	extra := slices.Clone(order[bi:bj])
	for _, p := range order[bj:] {
		if fs[p] >= peak/2 {
			extra = append(extra, p)
		}
	}
	fill := func(e int) []float64 {
		for k, p := range order {
			switch {
			case k < bi:
				rate[p] = max(base[p], 1/x)
			case k < bj:
				rate[p] = max(base[p], 1/y)
			default:
				rate[p] = base[p]
			}
		}
		for _, p := range extra[:e] {
			rate[p] = max(base[p], 1/x)
		}
		return rate
	}
	e := 0
	if checks(fill(0)) < budget {
		e = sort.Search(len(extra)+1, func(k int) bool { return checks(fill(k)) > budget }) - 1
	}
	return fill(max(e, 0))
}

// approach is the approach intensity at t (seconds): one check in the
// first First, then 1/(lnR·t), which makes each check Approach× the
// elapsed time of the previous one.
func (p *learnedPlan) approach(t float64) float64 {
	if t < p.first {
		return 1 / p.first
	}
	return 1 / (p.lnR * t)
}

// approachInt is the integral of approach from a to b (a ≤ b, seconds).
func (p *learnedPlan) approachInt(a, b float64) float64 {
	var sum float64
	if a < p.first {
		sum += (min(b, p.first) - a) / p.first
		a = p.first
	}
	if b > a {
		sum += math.Log(b/a) / p.lnR
	}
	return sum
}

// interp returns cum at the fractional grid index x (clamped to the grid).
func interp(cum []float64, x float64) float64 {
	if x <= 0 {
		return cum[0]
	}
	i := int(x)
	if i >= len(cum)-1 {
		return cum[len(cum)-1]
	}
	return cum[i] + (cum[i+1]-cum[i])*(x-float64(i))
}

// gap returns the wait (not jittered) from elapsed e (seconds) to the
// point where Λ has grown by 1.
func (p *learnedPlan) gap(e float64) time.Duration {
	e = max(e, 0)
	last := len(p.cum) - 1
	end := float64(last) * p.step
	var t float64
	if e < end && interp(p.cum, e/p.step)+1 <= p.cum[last] {
		target := interp(p.cum, e/p.step) + 1
		i := sort.SearchFloat64s(p.cum, target) // cum[i-1] < target ≤ cum[i]
		lo, hi := p.cum[i-1], p.cum[i]
		t = (float64(i-1) + (target-lo)/(hi-lo)) * p.step
	} else {
		// Past the grid λ = approach + tail exactly (f = 0, F = 1): solve
		// ∫ λ from t0 to t = rem by bisection.
		t0, rem := e, 1.0
		if e < end {
			t0, rem = end, 1-(p.cum[last]-interp(p.cum, e/p.step))
		}
		lo, hi := t0, t0+rem/p.tail
		for range 50 {
			mid := (lo + hi) / 2
			if p.approachInt(t0, mid)+p.tail*(mid-t0) < rem {
				lo = mid
			} else {
				hi = mid
			}
		}
		t = hi
	}
	return time.Duration((t - e) * float64(time.Second))
}

// nearGrowth is the part of the time spent in a Near status added to
// NearGap. 0.1 keeps the wait about a tenth of the phase's age: for the
// sandbox, whose report-writing phase is a fifth to a quarter of the whole
// analysis (the simulator's sandbox model: completed 1 s + reporting 30–120 s after ~200 s
// running), the report is seen within about 10 % of that phase, for about
// ln(1+0.1·T)/ln(1.1)+1 checks in a phase of T seconds (a 60 s phase:
// about 20 checks at most, fewer when the plan is already dense there).
const nearGrowth = 0.1
