package reputation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// statusCalls counts the status requests the simulator received for task id.
func statusCalls(srv *sim.Server, id string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Op == sim.OpStatus && strings.Contains(r.Path, "/"+id+"/") {
			n++
		}
	}
	return n
}

// Against the simulator on a manual clock (d<N>s.test takes exactly N s):
// Wait follows WaitOptions.Schedule, OnEnd reports the status calls the
// simulator saw, and a learned schedule fed with each completion needs
// fewer calls than DefaultBackoff and sees the end sooner.
func TestWaitLearnedScheduleAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, base := simtest.Start(t, sim.Config{Now: clock.Now, Profile: sim.RealisticProfile()})
	c := client(t, base)
	sleep := func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }
	learned := reputation.NewLearnedSchedule()

	type outcome struct {
		calls int
		lag   time.Duration
	}
	check := func(i int, seconds int) outcome {
		t.Helper()
		sub, err := c.Scan(t.Context(), fmt.Sprintf("https://d%ds.test/%d", seconds, i))
		if err != nil {
			t.Fatal(err)
		}
		var stats reputation.PollStats
		st, err := c.Wait(t.Context(), sub.TaskID, reputation.WaitOptions{Schedule: learned, Sleep: sleep,
			OnEnd: func(s reputation.PollStats) { stats = s }})
		if err != nil || st != reputation.StatusCompleted {
			t.Fatalf("task %d: %q %v", i, st, err)
		}
		if got := statusCalls(srv, sub.TaskID); got != stats.Polls {
			t.Fatalf("task %d: OnEnd says %d polls, the simulator saw %d", i, stats.Polls, got)
		}
		learned.Observe(stats.Completion())
		return outcome{stats.Polls, stats.Elapsed - time.Duration(seconds)*time.Second}
	}
	// 60 s ±10 %: the first 8 use the prior (5–120 s), which spends more
	// calls on a 60 s task than the learned schedule's 12 (14 or 15 with
	// the ±10 % jitter, measured).
	durations := []int{54, 57, 60, 63, 66, 58, 62, 60}
	var warm []outcome
	for i, d := range durations {
		warm = append(warm, check(i, d))
	}
	if warm[2].calls < 13 {
		t.Errorf("60 s task on the prior: %d calls, expected 13 or more", warm[2].calls)
	}
	if !learned.Stats().Learning {
		t.Fatalf("not learning after %d tasks: %+v", len(durations), learned.Stats())
	}
	for i := range 24 {
		d := durations[i%len(durations)]
		o := check(100+i, d)
		t.Logf("%d s: %d calls, lag %s", d, o.calls, o.lag)
		// 12–14 (the URL plan's budget of 13 per minute of mean duration,
		// measured): the window is checked every 1.3 s.
		if o.lag > 2500*time.Millisecond || (d == 60 && o.calls > 14) {
			t.Errorf("learned, %d s task: %d calls, seen %s late", d, o.calls, o.lag)
		}
	}
}

// Before anything is learned the first check is LearnedProbe (a service
// that answers within a second is seen at once); once a slow service is
// learned, the plan alone decides and does not probe that early.
func TestLearnedScheduleProbesOnlyBeforeLearning(t *testing.T) {
	s := reputation.NewLearnedSchedule()
	if d := s.Next(0, 0); d != reputation.LearnedProbe {
		t.Fatalf("first check before learning after %v, want %v", d, reputation.LearnedProbe)
	}
	if d := s.Next(1, reputation.LearnedProbe); reputation.LearnedProbe+d < reputation.LearnedFirst-reputation.LearnedFirst/10 {
		t.Errorf("second check at %v: the probe is followed by the prior's plan, not by more early checks", reputation.LearnedProbe+d)
	}
	for range 64 {
		s.Observe(60 * time.Second)
	}
	if d := s.Next(0, 0); d <= 2*reputation.LearnedProbe {
		t.Errorf("a service learned to take 60 s is still probed after %v", d)
	}
}

// TestProbeThatFindsTheTaskQueuedSkipsThePriorsFirstCheck: after the
// probe, a task still "pending" goes straight to the prior's second check
// (the first, at about LearnedFirst, is for services faster than the
// prior, and would cost it a call for nothing); a task the service
// already processes keeps the first check. For the prior's own 5–120 s
// analyses the probe then costs no call at all.
func TestProbeThatFindsTheTaskQueuedSkipsThePriorsFirstCheck(t *testing.T) {
	s := reputation.NewLearnedSchedule()
	probe := reputation.LearnedProbe
	first := probe + s.Next(1, probe) // the prior's first check after the probe
	if got := probe + s.NextStatus("processing", 0, 1, probe); got < first*9/10 || got > first*11/10 {
		t.Fatalf("a task processing at the probe is checked next at %v, want the prior's first check (about %v)", got, first)
	}
	second := first + s.Next(2, first)
	skipped := probe + s.NextStatus("pending", 0, 1, probe)
	if skipped < second*9/10 || skipped > second*11/10 {
		t.Fatalf("a task queued at the probe is checked next at %v, want the prior's second check (about %v)", skipped, second)
	}
	if d := s.NextStatus("some-undocumented-status", 0, 1, probe); probe+d > first*11/10 {
		t.Errorf("an unknown status skipped the first check (next at %v)", probe+d)
	}

	// Calls for analyses spread over 5–120 s (queued for their first
	// sixth, as the simulator's), with and without the probe: the probe
	// with the skip costs none.
	calls := func(sched interface {
		NextStatus(string, time.Duration, int, time.Duration) time.Duration
	}, probed bool) float64 {
		total := 0
		const n = 1000
		for i := range n {
			dur := 5*time.Second + time.Duration(float64(115*time.Second)*(float64(i)+0.5)/n)
			var e time.Duration
			for k := 0; e < dur; k++ {
				st := "processing"
				if e < dur/6 {
					st = "pending"
				}
				d := sched.NextStatus(st, 0, k, e)
				if k == 0 && !probed {
					d = max(d, reputation.LearnedFirst) // as if there were no probe
				}
				e += d
				total++
			}
		}
		return float64(total) / n
	}
	with, without := calls(reputation.NewLearnedSchedule(), true), calls(reputation.NewLearnedSchedule(), false)
	t.Logf("status calls for 5–120 s analyses before anything is learned: %.2f with the probe, %.2f without", with, without)
	if with > without+0.05 {
		t.Errorf("the probe costs %.2f calls per analysis (%.2f against %.2f)", with-without, with, without)
	}
}

// TestSeededScheduleKeepsItsPlan: a schedule seeded with the durations
// another one learned (kept across a restart) plans as that one does at
// once, without going back to the prior; Samples gives them back oldest
// first, bounded by the schedule's memory; seeding the same durations
// again changes nothing.
func TestSeededScheduleKeepsItsPlan(t *testing.T) {
	learned := reputation.NewLearnedSchedule()
	for i := range 70 {
		learned.Observe(time.Duration(60+i) * time.Second)
	}
	kept := learned.Samples()
	if len(kept) != 64 || kept[0] != 66*time.Second || kept[63] != 129*time.Second {
		t.Fatalf("samples: %d, %v … %v; want the latest 64, oldest first", len(kept), kept[0], kept[len(kept)-1])
	}
	restarted := reputation.NewLearnedSchedule()
	if d := restarted.Next(0, 0); d != reputation.LearnedProbe {
		t.Fatalf("a fresh schedule's first check after %v, want the prior's probe", d)
	}
	if !restarted.Seed(kept) {
		t.Fatal("seeding a fresh schedule changed nothing")
	}
	st, want := restarted.Stats(), learned.Stats()
	if !st.Learning || st.Samples != 64 || st.Median != want.Median || st.P95 != want.P95 {
		t.Fatalf("seeded: %+v; learned: %+v", st, want)
	}
	if d := restarted.Next(0, 0); d <= 2*reputation.LearnedProbe {
		t.Errorf("a schedule seeded with 66-129 s analyses is probed after %v, as if it knew nothing", d)
	}
	if restarted.Seed(kept) {
		t.Error("seeding the same durations again reported a change")
	}
}
