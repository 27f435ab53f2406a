package apiclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Schedule decides when a polled task is checked next.
//
// Next returns the wait before the next check, given how many checks were
// made so far (0 before the first) and how long the wait has lasted
// (measured from the start of Poll to the end of the latest check, so it
// includes the checks' own time and any client-side budget wait). It must be
// safe for concurrent use when one Schedule serves many tasks.
//
// Backoff (blind, by count) and *LearnedSchedule (by elapsed time, from the
// durations a service has shown) implement it.
type Schedule interface {
	Next(polls int, elapsed time.Duration) time.Duration
}

// StatusSchedule is a Schedule that also uses what the service says about
// the task. WaitStatus calls NextStatus instead of Next when its schedule
// implements it, with the latest status seen (empty before the first
// successful check) and how long the task has shown it: the elapsed time
// since the end of the check that first saw it.
type StatusSchedule interface {
	Schedule
	NextStatus(status string, inStatus time.Duration, polls int, elapsed time.Duration) time.Duration
}

// statusSchedule adapts a StatusSchedule to one wait: check records the
// statuses, Next passes them on. Poll calls both from one goroutine.
type statusSchedule struct {
	s       StatusSchedule
	status  string
	changed bool          // status changed in the latest check
	since   time.Duration // elapsed at the end of the check that first saw status
}

func (a *statusSchedule) saw(status string) {
	if status != a.status {
		a.status, a.changed = status, true
	}
}

func (a *statusSchedule) Next(polls int, elapsed time.Duration) time.Duration {
	if a.changed {
		a.since, a.changed = elapsed, false
	}
	return a.s.NextStatus(a.status, elapsed-a.since, polls, elapsed)
}

// Backoff is a polling schedule: the first check after Initial, each next
// interval Factor times the previous, never more than Max, each randomised by
// ±Jitter (a fraction) so that many tasks started together spread out.
type Backoff struct {
	Initial time.Duration
	Factor  float64
	Max     time.Duration
	Jitter  float64
}

// Delay returns the wait before check number n (0-based), without jitter.
func (b Backoff) Delay(n int) time.Duration {
	d := float64(b.Initial)
	f := b.Factor
	if f < 1 {
		f = 1
	}
	for i := 0; i < n && d < float64(b.Max); i++ {
		d *= f
	}
	if b.Max > 0 && d > float64(b.Max) {
		d = float64(b.Max)
	}
	return time.Duration(d)
}

// Next implements Schedule: Delay(polls), jittered. Elapsed time is ignored.
func (b Backoff) Next(polls int, _ time.Duration) time.Duration {
	return jitter(b.Delay(polls), b.Jitter)
}

// jitter spreads d uniformly over d·(1 ± frac).
func jitter(d time.Duration, frac float64) time.Duration {
	if frac <= 0 || d <= 0 {
		return d
	}
	spread := float64(d) * frac
	return time.Duration(float64(d) - spread + rand.Float64()*2*spread)
}

// ErrDeadline is returned (wrapped) by Poll when the overall deadline passed
// before the task ended.
var ErrDeadline = errors.New("gave up waiting: deadline passed")

// PollStats describes a finished Poll (or WaitStatus): how many checks it
// made and when the last of them ended, on the wait's clock.
type PollStats struct {
	// Polls is the number of checks made (failed ones included).
	Polls int
	// Elapsed is the time from the start of the wait to the end of the last
	// check.
	Elapsed time.Duration
	// LastGap is the time between the ends of the last two checks (for a
	// single check, between the start of the wait and its end). When the
	// last check saw the task end, the task ended within this gap.
	LastGap time.Duration
}

// Completion estimates, for a wait whose last check saw the task end, how
// long after the start of the wait the task ended: the middle of the last
// gap (it ended after the previous check and before the last one; the
// middle is the unbiased guess when nothing else is known, and is off by at
// most LastGap/2).
func (s PollStats) Completion() time.Duration { return s.Elapsed - s.LastGap/2 }

// Poll calls check on the schedule until it reports done, returns an error,
// or the deadline (if positive) or ctx ends. The first check happens after
// s.Next(0, 0). Sleep is injectable for tests (nil: real timers); with an
// injected sleep, the elapsed time the schedule sees is the sum of the waits
// it asked for (use WaitStatus with WaitConfig.Now for another clock).
func Poll(ctx context.Context, s Schedule, deadline time.Duration, sleep func(context.Context, time.Duration) error, check func(ctx context.Context) (done bool, err error)) error {
	_, err := poll(ctx, s, deadline, sleep, nil, check)
	return err
}

// poll is Poll, also returning its PollStats. The clock is now if set, the
// real clock if sleep is nil, and otherwise the sum of the waits asked for.
func poll(ctx context.Context, s Schedule, deadline time.Duration, sleep func(context.Context, time.Duration) error, now func() time.Time, check func(ctx context.Context) (done bool, err error)) (PollStats, error) {
	var virtual time.Duration // elapsed time when the sleeps are the clock
	if sleep == nil {
		sleep = sleepCtx
		if now == nil {
			now = time.Now
		}
	}
	start := time.Time{}
	if now != nil {
		start = now()
	}
	elapsed := func() time.Duration {
		if now == nil {
			return virtual
		}
		return now().Sub(start)
	}
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, deadline, fmt.Errorf("%w (%s)", ErrDeadline, deadline))
		defer cancel()
	}
	var st PollStats
	for {
		d := s.Next(st.Polls, st.Elapsed)
		if err := sleep(ctx, d); err != nil {
			return st, context.Cause(ctx)
		}
		virtual += d
		done, err := check(ctx)
		st.Polls++
		e := elapsed()
		st.LastGap, st.Elapsed = e-st.Elapsed, e
		if err != nil {
			if ctx.Err() != nil {
				return st, context.Cause(ctx)
			}
			return st, err
		}
		if done {
			return st, nil
		}
	}
}

// WaitConfig tunes WaitStatus.
type WaitConfig struct {
	// Backoff is the polling schedule unless Schedule is set.
	Backoff Backoff
	// Schedule, if set, is the polling schedule instead of Backoff.
	Schedule Schedule
	// Deadline bounds the whole wait (zero: only ctx).
	Deadline time.Duration
	// Stuck, if positive, ends the wait when the task has shown one of
	// StuckIn for that long, measured on the client's clock (server
	// timestamps have no documented zone and must not be used for ages).
	Stuck   time.Duration
	StuckIn []string
	// OnStatus is called after every successful poll with the status and
	// whether it differs from the previous one.
	OnStatus func(status string, changed bool)
	// OnEnd, if set, is called once when the wait ends, however it ends,
	// with how many status checks it made and when (for metrics, and for
	// a LearnedSchedule to learn from with PollStats.Completion).
	OnEnd func(PollStats)
	// Sleep and Now are injectable for tests. Now is also the clock of the
	// elapsed time the schedule sees (see Poll when only Sleep is set).
	Sleep func(context.Context, time.Duration) error
	Now   func() time.Time
}

// ErrStuck is returned (wrapped) when a task stayed in a StuckIn status for
// longer than WaitConfig.Stuck.
var ErrStuck = errors.New("task did not progress")

// Transient reports whether a polling error is worth another poll: rate
// limits, server errors, odd bodies and transport failures (the client has
// already retried them). Documented service errors are not transient.
func Transient(err error) bool {
	switch ReasonOf(err) {
	case ReasonRateLimited, ReasonServer, ReasonBadBody, ReasonTransport, ReasonTimeout:
		return true
	}
	return false
}

// WaitStatus polls fetch on cfg's schedule until terminal reports the task
// done (nil error) or failed (its error), a non-transient error occurs, or
// the deadline passes. It returns the last status seen. Transient errors keep
// polling; the last of them is returned if the deadline passes.
func WaitStatus(ctx context.Context, cfg WaitConfig, fetch func(context.Context) (string, error), terminal func(status string) (done bool, err error)) (string, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	var sched Schedule = cfg.Backoff
	if cfg.Schedule != nil {
		sched = cfg.Schedule
	}
	var running *Running
	b, learns := sched.(interface{ Begin() *Running })
	var aware *statusSchedule
	if s, ok := sched.(StatusSchedule); ok {
		aware = &statusSchedule{s: s}
		sched = aware
	}
	if learns {
		// A learning schedule also learns from the tasks still running
		// (LearnedSchedule.Begin); the wait ends before OnEnd, where its
		// duration may be observed.
		running = b.Begin()
		defer running.End()
		sched = &runningSchedule{Schedule: sched, r: running}
	}
	var (
		last      string
		since     time.Time
		transient error
		polls     int
	)
	stats, err := poll(ctx, sched, cfg.Deadline, cfg.Sleep, cfg.Now, func(ctx context.Context) (bool, error) {
		polls++
		st, err := fetch(ctx)
		if err != nil {
			if Transient(err) && ctx.Err() == nil {
				transient = err
				return false, nil
			}
			return false, err
		}
		transient = nil
		changed := polls == 1 || st != last
		if changed {
			since = now()
		}
		last = st
		if aware != nil {
			aware.saw(st)
		}
		if cfg.OnStatus != nil {
			cfg.OnStatus(st, changed)
		}
		done, terr := terminal(st)
		if terr != nil || done {
			return true, terr
		}
		if cfg.Stuck > 0 && now().Sub(since) >= cfg.Stuck {
			for _, s := range cfg.StuckIn {
				if s == st {
					return true, fmt.Errorf("%w: still %q after %s", ErrStuck, st, cfg.Stuck)
				}
			}
		}
		return false, nil
	})
	if err != nil && errors.Is(err, ErrDeadline) && transient != nil {
		err = fmt.Errorf("%w; last error: %w", err, transient)
	}
	if running != nil {
		running.End()
	}
	if cfg.OnEnd != nil {
		cfg.OnEnd(stats)
	}
	return last, err
}

// runningSchedule tells a learning schedule's Running, before each next
// check is planned, that the previous check found the task still running.
type runningSchedule struct {
	Schedule
	r *Running
}

func (s *runningSchedule) Next(polls int, elapsed time.Duration) time.Duration {
	if polls > 0 {
		s.r.Seen(elapsed)
	}
	return s.Schedule.Next(polls, elapsed)
}
