package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// DefaultWaitBackoff is Wait's polling schedule: the first status check
// after 1s (a cached or instant result shows at once), then ×2 per check up
// to 60s (the simulator's sandbox model: about a minute at most between checks of a task that
// takes minutes), ±10% jitter so tasks submitted together spread out.
var DefaultWaitBackoff = Backoff{Initial: time.Second, Factor: 2, Max: time.Minute, Jitter: 0.1}

// DefaultWaitDeadline bounds a Wait: a CAPE run takes its 200s analysis
// timeout plus up to 60s "critical" plus processing and reporting, after
// any time queued (CAPEv2's task statuses); 5 minutes proved too short in a public
// client of the service, so at least 20–30 are needed.
const DefaultWaitDeadline = 45 * time.Minute

// WaitOptions tunes Wait. The zero value uses the defaults.
type WaitOptions struct {
	// Backoff is the polling schedule (zero: DefaultWaitBackoff; a zero
	// Initial takes DefaultWaitBackoff's) unless Schedule is set.
	Backoff Backoff
	// Schedule, if set, is the polling schedule instead of Backoff: for
	// example the service's *LearnedSchedule (NewLearnedSchedule), which
	// also uses the statuses it sees and which the caller feeds with each
	// completed task's PollStats.Completion (OnEnd).
	Schedule Schedule
	// OnEnd, if set, is called once when the wait ends, however it ends,
	// with the number of status calls made and when the last ones were.
	OnEnd func(PollStats)
	// Deadline bounds the whole wait (zero: DefaultWaitDeadline; negative:
	// only ctx).
	Deadline time.Duration
	// PendingDeadline, if positive, ends the wait with ErrStuckPending
	// when the task has shown "pending" for that long, measured on the
	// client's clock from the first poll that saw it pending (server
	// timestamps have no documented zone, spec §2; CAPE writes naive server local time). A task
	// that goes back from running to pending starts a new count.
	PendingDeadline time.Duration
	// OnStatus is called after every successful poll with the status and
	// whether it differs from the previous poll's (true on the first),
	// e.g. to update a "queued / running" card or count polls.
	OnStatus func(s Status, changed bool)
	// Sleep and Now are injectable for tests (nil: real timers and
	// time.Now). Deadline is enforced with a real timer either way.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// Wait polls the task's status (spec §4 #5; the spec has no events, §6)
// until it is reported, fails, or the wait gives up, and returns the last
// status seen.
//
//   - "reported" is success: (StatusReported, nil).
//   - failed_* and banned end it with a *TaskFailedError (errors.Is
//     ErrTaskFailed).
//   - Every other status, unknown ones included, keeps polling; a task may
//     go back from running to pending (CAPEv2's task statuses).
//   - Transient errors (rate limits, 5xx and odd answers after the core's
//     retries, transport failures) keep polling until the deadline; the
//     last of them is wrapped in the timeout error.
//   - Errors the service documents (ErrTaskDoesNotExist, an unknown key,
//     an unmatched route) end the wait at once, wrapped.
//   - The deadline or PendingDeadline give a *WaitTimeoutError
//     (errors.Is ErrDeadline or ErrStuckPending); a cancelled
//     ctx gives its error.
func (c *Client) Wait(ctx context.Context, taskID string, o WaitOptions) (Status, error) {
	if err := checkTaskID(OpWait, taskID); err != nil {
		return "", err
	}
	if o.Backoff == (Backoff{}) {
		o.Backoff = DefaultWaitBackoff
	}
	if o.Backoff.Initial <= 0 { // a zero first delay would never grow
		o.Backoff.Initial = DefaultWaitBackoff.Initial
	}
	switch {
	case o.Deadline == 0:
		o.Deadline = DefaultWaitDeadline
	case o.Deadline < 0:
		o.Deadline = 0
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	cfg := apiclient.WaitConfig{Backoff: o.Backoff.core(), Deadline: o.Deadline, Sleep: o.Sleep, Now: now}
	if o.Schedule != nil {
		cfg.Schedule = o.Schedule
	}
	if o.OnEnd != nil {
		cfg.OnEnd = func(s apiclient.PollStats) { o.OnEnd(PollStats(s)) }
	}
	if o.PendingDeadline > 0 {
		cfg.Stuck, cfg.StuckIn = o.PendingDeadline, []string{string(StatusPending)}
	}
	if o.OnStatus != nil {
		cfg.OnStatus = func(s string, changed bool) { o.OnStatus(Status(s), changed) }
	}
	var (
		lastLogged string
		lastErr    error // the last poll's transient error
	)
	fetch := func(ctx context.Context) (string, error) {
		st, err := c.Status(ctx, taskID)
		lastErr = nil
		if err != nil && ctx.Err() == nil && apiclient.Transient(err) {
			lastErr = err
			if text := err.Error(); text != lastLogged {
				lastLogged = text
				c.log.LogAttrs(ctx, slog.LevelWarn, "status poll failed, will poll again",
					slog.String("service", ServiceName), slog.String("task", taskID), slog.String("error", text))
			}
		}
		return string(st), err
	}
	terminal := func(s string) (bool, error) {
		st := Status(s)
		switch {
		case st.IsSuccess():
			return true, nil
		case st.IsFailure():
			return true, &TaskFailedError{TaskID: taskID, Status: st}
		}
		return false, nil
	}
	s, err := apiclient.WaitStatus(ctx, cfg, fetch, terminal)
	last := Status(s)
	var failed *TaskFailedError
	switch {
	case err == nil:
		return last, nil
	case errors.As(err, &failed):
		return last, err
	case errors.Is(err, apiclient.ErrStuck):
		return last, &WaitTimeoutError{TaskID: taskID, Last: last, Waited: now().Sub(start), Stuck: true, err: err}
	case errors.Is(err, apiclient.ErrDeadline):
		return last, &WaitTimeoutError{TaskID: taskID, Last: last, Waited: now().Sub(start), LastErr: lastErr, err: err}
	}
	return last, fmt.Errorf("%s wait for task %s: %w", ServiceName, taskID, err)
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

// Learned-schedule settings for sandbox tasks (NewLearnedSchedule).
const (
	// PriorMin and PriorMax bound what an analysis is assumed to take
	// before any has been seen: from a few seconds (a sample the sandbox
	// dismisses at once) to a full CAPE run, whose default analysis
	// timeout is 200 s plus reporting (the simulator's sandbox model).
	PriorMin = 5 * time.Second
	PriorMax = 5 * time.Minute
)

// LearnedApproach and LearnedBudget shape a sandbox LearnedSchedule: the
// checks before the learned durations are LearnedApproach× the elapsed
// time apart (instead of the core's 3×), so that a task seldom jumps from
// running to reported between two checks and the near-the-end statuses
// (which last about a fifth of an analysis, the simulator's sandbox model) are seen; that
// leaves a budget of LearnedBudget calls per minute of mean duration for
// the learned part. With them, analyses spread over 5–120 s take 15–20
// status calls and are seen about 1 s after they end, learned or not
// (BenchmarkFirstVerdictLatency in scan).
const (
	LearnedApproach = 1.5
	LearnedBudget   = 6
)

// LearnedNearGap is the wait between checks once a task shows one of
// NearStatuses, plus a tenth of the time it has shown it (the core's
// NearGap). 1.3 s rather than the core's 1 s: the report-writing phase
// took 7 of the 20 status calls of an analysis spread over 5–120 s, with
// a median lag of 0.8 s where issue 14 asks 1.5 s; 1.3 s saves about one
// call per analysis and still sees a 20 s analysis's report (about 4 s of
// writing) within 1.6 s.
const LearnedNearGap = 1300 * time.Millisecond

// PromptFrom–PromptTo is checked at least every PromptGap while nothing is
// learned: the report-writing phase of a 20 s analysis (issue 14: a first
// analysis of that length seen within 2 s) lasts about 4.4 s from 15.6 s,
// and the prior's checks there, LearnedApproach× the elapsed time apart
// (7 s by 15 s), often jumped from running to reported (seen up to 3 s
// late, about 3 % of such analyses in the model); a check every 3 s sees
// it, and NearStatuses' checks then see the end within LearnedNearGap and
// a bit. About 1.5 more calls for a first analysis longer than 22 s.
const (
	PromptFrom = 12 * time.Second
	PromptTo   = 22 * time.Second
	PromptGap  = 3 * time.Second
)

// NearStatuses are the statuses after which only the report is left to
// write: CAPE's "completed" (analysis over) and the spec's "reporting"
// (the simulator's sandbox model: completed ~1 s, then reporting), plus CAPE's
// "distributed_completed". A LearnedSchedule from NewLearnedSchedule
// checks often while a task shows one of them.
var NearStatuses = []string{string(StatusCompleted), string(StatusReporting), string(StatusDistributedCompleted)}

// NewLearnedSchedule returns a polling schedule for sandbox tasks that
// learns how long this service's analyses take (the HTTP core's
// LearnedSchedule with its defaults), plans as if they took between
// PriorMin and PriorMax until it has seen 8 of them, checks at least every
// LearnedApproach× the elapsed time, and checks every LearnedNearGap or so
// (growing with the phase's age) once a task shows one of NearStatuses. Use one per service, pass it as WaitOptions.Schedule, and
// Observe each completed wait's PollStats.Completion (WaitOptions.OnEnd)
// when the wait started at submission.
func NewLearnedSchedule() *LearnedSchedule {
	cfg := apiclient.DefaultLearnedConfig()
	cfg.Fallback = DefaultWaitBackoff.core()
	cfg.PriorMin, cfg.PriorMax = PriorMin, PriorMax
	cfg.Near = NearStatuses
	cfg.Approach, cfg.Budget = LearnedApproach, LearnedBudget
	cfg.NearGap = LearnedNearGap
	cfg.PromptFrom, cfg.PromptTo, cfg.PromptGap = PromptFrom, PromptTo, PromptGap
	return &LearnedSchedule{s: apiclient.NewLearnedSchedule(cfg)}
}

// LearnedSchedule is a polling Schedule that learns how long the service's
// tasks take and spends its status checks where completions are likely,
// and where the task's status says the end is near (NewLearnedSchedule).
// One serves every task of a service; it is safe for concurrent use.
type LearnedSchedule struct{ s *apiclient.LearnedSchedule }

// Next implements Schedule (without a status: Wait uses NextStatus).
func (l *LearnedSchedule) Next(polls int, elapsed time.Duration) time.Duration {
	return l.s.Next(polls, elapsed)
}

// NextStatus implements the HTTP core's status-aware schedule (Wait passes
// it the latest status and how long the task has shown it).
func (l *LearnedSchedule) NextStatus(status string, inStatus time.Duration, polls int, elapsed time.Duration) time.Duration {
	return l.s.NextStatus(status, inStatus, polls, elapsed)
}

// Observe records that a task took d from submission to reported (a
// completed wait's PollStats.Completion, for waits that started at
// submission). Failed and resumed waits must not be observed.
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
	// Learning is true once enough durations are known (the prior is no
	// longer used).
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
