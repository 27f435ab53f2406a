package reputation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// DefaultBackoff is the blind URL polling schedule: first check after 1s,
// then ×1.4 up to 4s, ±10 %. A URL analysis typically takes 5–120 s; this
// notices a finished task within 4 s (2 s on average) for about 18 status
// calls per 60 s analysis. It is Wait's default and what a
// LearnedSchedule (NewLearnedSchedule) falls back on until it knows the
// service; once it does, the learned schedule needs about a dozen calls for
// the same or less delay. See docs/PERFORMANCE.md, "Poll-to-verdict
// latency".
var DefaultBackoff = Backoff{Initial: time.Second, Factor: 1.4, Max: 4 * time.Second, Jitter: 0.1}

// WaitOptions tunes Wait. The zero value uses the defaults.
type WaitOptions struct {
	// Backoff is the polling schedule (default DefaultBackoff) unless
	// Schedule is set.
	Backoff Backoff
	// Schedule, if set, is the polling schedule instead of Backoff: for
	// example the service's *LearnedSchedule (NewLearnedSchedule),
	// which the caller feeds with each completed task's
	// PollStats.Completion.
	Schedule Schedule
	// Deadline bounds the whole wait (default 10 minutes).
	Deadline time.Duration
	// Failed lists the statuses that end the wait as a failure (default
	// "failed", "error"). Only "completed" is success (spec §3); any other
	// status, known or not, keeps polling.
	Failed []Status
	// OnStatus is called after every poll with the status and whether it
	// changed since the previous poll.
	OnStatus func(s Status, changed bool)
	// OnEnd, if set, is called once when the wait ends, however it ends,
	// with the number of status calls made and when the last ones were.
	OnEnd func(PollStats)
	// Sleep and Now are injectable for tests. Now is also the clock of
	// the elapsed time the schedule sees (nil: the real clock, or with
	// only Sleep set, the sum of the waits asked for).
	Sleep func(context.Context, time.Duration) error
	Now   func() time.Time
}

// TaskFailedError reports a task that ended in a failure status.
type TaskFailedError struct {
	TaskID string
	Status Status
}

func (e *TaskFailedError) Error() string {
	return fmt.Sprintf("reputation task %s ended with status %q", e.TaskID, e.Status)
}

// ErrTaskFailed matches any *TaskFailedError with errors.Is.
var ErrTaskFailed = errors.New("reputation task failed")

// Is makes errors.Is(err, ErrTaskFailed) true.
func (e *TaskFailedError) Is(target error) bool { return target == ErrTaskFailed }

// Reason classifies a failed task as a service-reported failure.
func (e *TaskFailedError) Reason() Reason { return ReasonAPI }

// Learned-schedule settings for URL tasks (NewLearnedSchedule).
const (
	// PriorMin and PriorMax bound what a URL analysis is assumed to take
	// before any has been seen: 5–120 s (issues 3 and 14; the simulator
	// assumes 1–5 s queued plus 5–30 s processing, and slow pages take
	// longer).
	PriorMin = 5 * time.Second
	PriorMax = 2 * time.Minute
	// LearnedBudget is the mean number of status calls per minute of
	// mean duration a URL task may spend beyond what the lag targets
	// (LearnedMinGap, LearnedMidGap) need: a steady service's window is
	// then all checked every LearnedMinGap for about a dozen calls (issue
	// 3). Durations spread over 5–120 s need about 19–20 calls for the
	// targets, which the plan spends regardless (issue 14).
	LearnedBudget = 13
	// LearnedFirst is when the first check is made if nothing learned
	// ends sooner: nothing in the prior ends before PriorMin, and a check
	// at 1 s (the core's default) would cost every task a call for the
	// few that end that fast.
	LearnedFirst = 4 * time.Second
	// LearnedMinGap and LearnedMidGap are the plan's two checking levels
	// (apiclient.LearnedConfig.MidGap): issue 14 asks a median lag of
	// 1.5 s and a 95th percentile of 3.5 s; 0.2 s is left for the status
	// and result requests themselves and the wake-up.
	LearnedMinGap = 1300 * time.Millisecond
	LearnedMidGap = 3300 * time.Millisecond
	// LearnedMidShare is the share of tasks the plan may leave waiting
	// more than LearnedMinGap: a half, the median target itself (the
	// requests after the status check add 0.01–0.06 s in the benchmark, so
	// 0.2 s of margin is left in LearnedMinGap, and 0.2 s in LearnedMidGap
	// for the 95th percentile, whose share stays the core's 3 %).
	LearnedMidShare = 0.5
	// LearnedJitter spreads the waits less than the core's default
	// (±10 %): the plan is by elapsed time, so tasks submitted at
	// different times already check at different times, and a longer gap
	// costs lag.
	LearnedJitter = 0.05
	// PromptFrom–PromptTo is checked every PromptGap while nothing is
	// learned: a typical first analysis (notes §4.1: about 20 s, issue 14)
	// is seen within 1.3 s, so its verdict is on the card within 1.5 s
	// (issue 23: BenchmarkFirstVerdictThroughTheBinary), for about 0.8
	// more calls per task than the plain prior plan (16–24 s cost 1.4).
	// With 1.7 s over 18.5–22 s a 20 s analysis waited up to 1.65 s.
	PromptFrom = 19 * time.Second
	PromptTo   = 22 * time.Second
	PromptGap  = 1300 * time.Millisecond
	// LearnedProbe is the first check while nothing is learned: a service
	// that answers within a second (a fast deployment, the simulator) is
	// not made to wait for the prior's first check (LearnedFirst). When
	// the probe finds the task still queued (NotStartedStatuses) that
	// first check is skipped, so a slow service's analysis pays nothing
	// for the probe.
	LearnedProbe = time.Second
)

// NotStartedStatuses are the URL statuses taken to say that a task is
// still queued: a probe that sees one skips the prior's first check (at
// LearnedFirst), which is there for services faster than the prior. The
// service documents only "completed" (docs/specs/url-reputation-api.md
// §3); "pending" and "queued" are the usual words for a task not started
// (notes §4.1 proposes pending → processing → completed). Any other
// status keeps the check; only the first check after the probe changes,
// and only before anything is learned. Without it the probe costs an
// analysis of 5–120 s one call more (issue 14: 20.5 calls cold, over the
// target of 20).
var NotStartedStatuses = []string{"pending", "queued"}

// NewLearnedSchedule returns a polling schedule for URL tasks that learns
// how long this service's analyses take (a LearnedSchedule with the
// defaults of the HTTP core and a budget of LearnedBudget calls per
// minute of mean duration). Until it has seen 8 of them it plans as if
// analyses took between PriorMin and PriorMax. The URL service's statuses
// other than "completed" are not documented (docs/specs/url-reputation-api.md §3), so none of them
// is taken as a sign that the end is near.
// Use one per service, pass it as WaitOptions.Schedule, and Observe each
// completed wait's PollStats.Completion (WaitOptions.OnEnd); scan.URLs does
// this itself.
func NewLearnedSchedule() *LearnedSchedule {
	cfg := apiclient.DefaultLearnedConfig()
	cfg.Fallback = DefaultBackoff.core()
	cfg.PriorMin, cfg.PriorMax = PriorMin, PriorMax
	cfg.Budget = LearnedBudget
	cfg.First = LearnedFirst
	cfg.MinGap, cfg.MidGap, cfg.MidShare = LearnedMinGap, LearnedMidGap, LearnedMidShare
	cfg.PromptFrom, cfg.PromptTo, cfg.PromptGap = PromptFrom, PromptTo, PromptGap
	cfg.Jitter = LearnedJitter
	cfg.Probe = LearnedProbe
	cfg.NotStarted = NotStartedStatuses
	return &LearnedSchedule{s: apiclient.NewLearnedSchedule(cfg)}
}

// Wait polls the task until it is completed, fails, or the deadline passes.
// Transient errors (rate limits, 5xx, transport) keep polling; documented
// errors (task not found, wrong task id) end the wait at once.
func (c *Client) Wait(ctx context.Context, taskID string, o WaitOptions) (Status, error) {
	if o.Backoff == (Backoff{}) {
		o.Backoff = DefaultBackoff
	}
	if o.Deadline <= 0 {
		o.Deadline = 10 * time.Minute
	}
	if o.Failed == nil {
		o.Failed = []Status{StatusFailed, "error"}
	}
	cfg := apiclient.WaitConfig{Backoff: o.Backoff.core(), Deadline: o.Deadline, Sleep: o.Sleep, Now: o.Now}
	if o.Schedule != nil {
		cfg.Schedule = o.Schedule
	}
	if o.OnEnd != nil {
		cfg.OnEnd = func(s apiclient.PollStats) { o.OnEnd(PollStats(s)) }
	}
	if o.OnStatus != nil {
		cfg.OnStatus = func(s string, changed bool) { o.OnStatus(Status(s), changed) }
	}
	st, err := apiclient.WaitStatus(ctx, cfg,
		func(ctx context.Context) (string, error) {
			s, err := c.Status(ctx, taskID)
			return string(s), err
		},
		func(s string) (bool, error) {
			switch {
			case Status(s) == StatusCompleted:
				return true, nil
			case slices.Contains(o.Failed, Status(s)):
				return true, &TaskFailedError{TaskID: taskID, Status: Status(s)}
			}
			return false, nil
		})
	if err != nil {
		return Status(st), fmt.Errorf("wait for reputation task %s: %w", taskID, err)
	}
	return Status(st), nil
}

// Backoff is a polling schedule: the first check after Initial, each next
// interval Factor times the previous, never more than Max, each randomised
// by ±Jitter (a fraction) so that many tasks started together spread out.
type Backoff struct {
	Initial time.Duration
	Factor  float64
	Max     time.Duration
	Jitter  float64
}

func (b Backoff) core() apiclient.Backoff { return apiclient.Backoff(b) }

// Delay returns the wait before check number n (0-based), without jitter.
func (b Backoff) Delay(n int) time.Duration { return b.core().Delay(n) }

// Next implements Schedule: Delay(polls), jittered.
func (b Backoff) Next(polls int, elapsed time.Duration) time.Duration {
	return b.core().Next(polls, elapsed)
}

// Schedule decides when a polled task is checked next: Next returns the
// wait before the next check, given how many checks were made so far and
// how long the wait has lasted. It must be safe for concurrent use when one
// Schedule serves many tasks. Backoff and *LearnedSchedule implement it.
type Schedule interface {
	Next(polls int, elapsed time.Duration) time.Duration
}

// PollStats describes a finished wait: how many status checks it made and
// when the last of them ended, on the wait's clock.
type PollStats struct {
	// Polls is the number of checks made (failed ones included).
	Polls int
	// Elapsed is the time from the start of the wait to the end of the
	// last check.
	Elapsed time.Duration
	// LastGap is the time between the ends of the last two checks; when
	// the last check saw the task end, the task ended within this gap.
	LastGap time.Duration
}

// Completion estimates, for a wait whose last check saw the task end, how
// long after the start of the wait the task ended (the middle of the last
// gap).
func (s PollStats) Completion() time.Duration { return apiclient.PollStats(s).Completion() }

// LearnedSchedule is a polling Schedule that learns how long the service's
// tasks take and spends its status checks where completions are likely
// (docs/PERFORMANCE.md, "Poll-to-verdict latency"). One serves every task
// of a service; it is safe for concurrent use. Make one with
// NewLearnedSchedule.
type LearnedSchedule struct{ s *apiclient.LearnedSchedule }

// Next implements Schedule.
func (l *LearnedSchedule) Next(polls int, elapsed time.Duration) time.Duration {
	return l.s.Next(polls, elapsed)
}

// NextStatus implements the HTTP core's status-aware schedule (Wait passes
// it the latest status and how long the task has shown it).
func (l *LearnedSchedule) NextStatus(status string, inStatus time.Duration, polls int, elapsed time.Duration) time.Duration {
	return l.s.NextStatus(status, inStatus, polls, elapsed)
}

// Observe records that a task took d from submission to completion (a
// completed wait's PollStats.Completion, for waits that started at
// submission).
func (l *LearnedSchedule) Observe(d time.Duration) { l.s.Observe(d) }

// Seed replaces the remembered durations with ds, oldest first, and plans
// from them at once (kept from before a restart, or shared by replicas);
// it reports whether they changed. See apiclient.LearnedSchedule.Seed.
func (l *LearnedSchedule) Seed(ds []time.Duration) bool { return l.s.Seed(ds) }

// Samples returns the remembered durations, oldest first.
func (l *LearnedSchedule) Samples() []time.Duration { return l.s.Samples() }

// Stats returns what the schedule currently believes.
func (l *LearnedSchedule) Stats() LearnedStats { return LearnedStats(l.s.Stats()) }

// LearnedStats is what a LearnedSchedule currently believes, for metrics
// and logs.
type LearnedStats struct {
	// Samples is how many durations are remembered.
	Samples int
	// Learning is true once enough durations are known (the fallback
	// schedule is no longer used).
	Learning bool
	// P5, Median and P95 are quantiles of the remembered durations (zero
	// without samples).
	P5, Median, P95 time.Duration
	// ChecksPerTask is the mean number of status checks the schedule
	// expects to make per task (zero until Learning).
	ChecksPerTask float64
}

// Begin implements the HTTP core's learning from running tasks (Wait calls
// it; see apiclient.LearnedSchedule.Begin).
func (l *LearnedSchedule) Begin() *apiclient.Running { return l.s.Begin() }
