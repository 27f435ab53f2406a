package scan_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// latencyWorkload is one stream of URL analyses against its own simulator.
type latencyWorkload struct {
	name   string
	lo, hi int  // analysis durations, whole seconds, uniform on [lo, hi]
	fixed  bool // DefaultBackoff instead of the learned schedule (before)
	seed   uint64
}

// latencyTask is one measured analysis.
type latencyTask struct {
	seconds int           // how long the service took
	lag     time.Duration // Check returned − service finished
	calls   int           // status requests the simulator saw for the task
}

// latencyRun is the outcome of one workload.
type latencyRun struct {
	w           latencyWorkload
	tasks       []latencyTask
	peakReport  int           // most report-budget requests in one second
	budgetWaits int           // status/result calls that waited for the client's report budget
	budgetWait  time.Duration // their total wait
	learned     reputation.LearnedStats
}

// Settings of BenchmarkPollToVerdictLatency. The pace keeps the default
// "report" budget (5/s) out of the picture: about 13 report calls per
// analysis (≈12 status + the result) every 3 s is ~4.3/s. Faster
// sustained submission saturates that budget with any schedule that makes
// about a dozen calls per task (see docs/PERFORMANCE.md).
const (
	latencyWarm     = 12              // analyses to learn from, not measured
	latencyMeasured = 30              // measured analyses per workload
	latencyPace     = 3 * time.Second // one measured submission every pace
)

// BenchmarkPollToVerdictLatency measures, over real HTTP and real time, the
// time from the URL service finishing an analysis to scan.URLs.Check
// returning its verdict (the card is updated right after), and the status
// calls per analysis, for the issue 3 target. Each workload runs on its own
// simulator (d<N>s.test hosts take exactly N s, so the service's finishing
// instant is the task's creation + N s) with the production client budgets,
// all workloads at once; one run takes about four minutes.
//
//	go test -run '^$' -bench PollToVerdictLatency -benchtime 1x ./scan/
//
// Skipped with -short; CI's go test (no -bench) never runs it.
func BenchmarkPollToVerdictLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("takes minutes of real time")
	}
	workloads := []latencyWorkload{
		{name: "steady30", lo: 24, hi: 36, seed: 1},                     // 30 s ±20 %
		{name: "steady60", lo: 54, hi: 66, seed: 2},                     // 60 s ±10 %
		{name: "uniform", lo: 5, hi: 120, seed: 3},                      // 5–120 s
		{name: "before-steady60", lo: 54, hi: 66, fixed: true, seed: 2}, // DefaultBackoff
		{name: "before-uniform", lo: 5, hi: 120, fixed: true, seed: 3},
	}
	runs := make([]latencyRun, len(workloads))
	for b.Loop() {
		var wg sync.WaitGroup
		for i, w := range workloads {
			wg.Go(func() {
				r := runLatencyWorkload(b, w)
				runs[i].w, runs[i].learned = w, r.learned
				runs[i].tasks = append(runs[i].tasks, r.tasks...)
				runs[i].peakReport = max(runs[i].peakReport, r.peakReport)
				runs[i].budgetWaits += r.budgetWaits
				runs[i].budgetWait += r.budgetWait
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.Logf("%-16s %5s %8s %8s %8s %11s %13s %9s %9s  %s", "workload", "tasks", "lag p50", "lag p95", "lag max",
		"calls mean", "calls @55-65s", "peak rq/s", "budget w.", "learned p5/median/p95")
	for _, r := range runs {
		p50, p95, top := lagQuantiles(r.tasks)
		mean, near60, n60 := callStats(r.tasks)
		learned := "—"
		if !r.w.fixed {
			learned = fmt.Sprintf("%.1f/%.1f/%.1f s (%d)", r.learned.P5.Seconds(), r.learned.Median.Seconds(), r.learned.P95.Seconds(), r.learned.Samples)
		}
		b.Logf("%-16s %5d %7.2fs %7.2fs %7.2fs %11.1f %8.1f (%2d) %9d %9d  %s", r.w.name, len(r.tasks),
			p50.Seconds(), p95.Seconds(), top.Seconds(), mean, near60, n60, r.peakReport, r.budgetWaits, learned)
		b.ReportMetric(p50.Seconds(), r.w.name+"-lag-p50-s")
		b.ReportMetric(p95.Seconds(), r.w.name+"-lag-p95-s")
		b.ReportMetric(top.Seconds(), r.w.name+"-lag-max-s")
		b.ReportMetric(near60, r.w.name+"-calls-55-65s")
	}
}

func runLatencyWorkload(b *testing.B, w latencyWorkload) latencyRun {
	srv, base := simtest.Start(b, sim.Config{Profile: sim.RealisticProfile(), MaxLog: 1 << 20})
	var waits atomic.Int64
	var waited atomic.Int64
	rep, err := reputation.New(base, "bench-key", reputation.WithObserver(func(ev reputation.Event) {
		if ev.IsWait && ev.Budget == reputation.BudgetReport {
			waits.Add(1)
			waited.Add(int64(ev.Wait))
		}
	}))
	if err != nil {
		b.Fatal(err)
	}
	opt := scan.URLOptions{}
	if w.fixed {
		opt.Wait.Backoff = reputation.DefaultBackoff
	}
	u := scan.NewURLs(rep, opt)
	defer u.Close()
	rng := rand.New(rand.NewPCG(w.seed, 0))
	duration := func() int { return w.lo + rng.IntN(w.hi-w.lo+1) }

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		tasks    []latencyTask
		ids      []string
		warmDone atomic.Int64
	)
	check := func(i, seconds int, measured bool) {
		defer wg.Done()
		url := fmt.Sprintf("https://%s.d%ds.test/%d", w.name, seconds, i)
		v := u.Check(context.Background(), url, scan.CheckOptions{})
		returned := time.Now()
		if v.Err != nil {
			b.Errorf("%s: %s: %v", w.name, url, v.Err)
			return
		}
		if !measured {
			warmDone.Add(1)
			return
		}
		task, ok := srv.URLTask(v.TaskID)
		if !ok {
			b.Errorf("%s: task %s unknown to the simulator", w.name, v.TaskID)
			return
		}
		finished := task.Created.Add(time.Duration(seconds) * time.Second)
		mu.Lock()
		tasks = append(tasks, latencyTask{seconds: seconds, lag: returned.Sub(finished), calls: v.Polls})
		ids = append(ids, v.TaskID)
		mu.Unlock()
	}
	// Warm-up: analyses to learn from, submitted as fast as the client's run
	// budget allows; measuring starts once 8 of them are done (the learned
	// schedule's MinSamples; the same point for DefaultBackoff).
	for i := range latencyWarm {
		wg.Add(1)
		go check(i, duration(), false)
	}
	for warmDone.Load() < 8 {
		time.Sleep(100 * time.Millisecond)
	}
	waits.Store(0)
	waited.Store(0)
	start := time.Now()
	for i := range latencyMeasured {
		wg.Add(1)
		go check(1000+i, duration(), true)
		time.Sleep(latencyPace)
	}
	wg.Wait()

	// Status calls per task as the service saw them (must match
	// URLVerdict.Polls), and the busiest second of report requests while
	// measuring.
	reqs := srv.Requests()
	perSecond := map[int64]int{}
	calls := map[string]int{}
	for _, r := range reqs {
		if r.Bucket == sim.BucketReport && !r.Time.Before(start) {
			perSecond[r.Time.Unix()]++
		}
		if r.Op == sim.OpStatus {
			if _, id, ok := strings.Cut(strings.TrimSuffix(r.Path, "/"), "/status/"); ok {
				calls[id]++
			}
		}
	}
	for i, id := range ids {
		if calls[id] != tasks[i].calls {
			b.Errorf("%s: task %s: URLVerdict.Polls %d, the simulator saw %d status calls", w.name, id, tasks[i].calls, calls[id])
		}
	}
	run := latencyRun{w: w, tasks: tasks, budgetWaits: int(waits.Load()), budgetWait: time.Duration(waited.Load())}
	for _, n := range perSecond {
		run.peakReport = max(run.peakReport, n)
	}
	if l := u.LearnedSchedule(); l != nil {
		run.learned = l.Stats()
	}
	return run
}

func lagQuantiles(tasks []latencyTask) (p50, p95, top time.Duration) {
	if len(tasks) == 0 {
		return 0, 0, 0
	}
	lags := make([]time.Duration, len(tasks))
	for i, t := range tasks {
		lags[i] = t.lag
	}
	slices.Sort(lags)
	q := func(f float64) time.Duration { // nearest rank
		return lags[max(0, int(math.Ceil(f*float64(len(lags))))-1)]
	}
	return q(0.5), q(0.95), lags[len(lags)-1]
}

// callStats returns the mean status calls per task, and the mean and count
// for the tasks of 55–65 s (the "60 s analysis").
func callStats(tasks []latencyTask) (mean, near60 float64, n60 int) {
	for _, t := range tasks {
		mean += float64(t.calls)
		if t.seconds >= 55 && t.seconds <= 65 {
			near60 += float64(t.calls)
			n60++
		}
	}
	if len(tasks) > 0 {
		mean /= float64(len(tasks))
	}
	if n60 > 0 {
		near60 /= float64(n60)
	}
	return mean, near60, n60
}
