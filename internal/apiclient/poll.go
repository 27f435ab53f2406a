package apiclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

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

func (b Backoff) jittered(n int) time.Duration {
	d := b.Delay(n)
	if b.Jitter <= 0 || d <= 0 {
		return d
	}
	spread := float64(d) * b.Jitter
	return time.Duration(float64(d) - spread + rand.Float64()*2*spread)
}

// ErrDeadline is returned (wrapped) by Poll when the overall deadline passed
// before the task ended.
var ErrDeadline = errors.New("gave up waiting: deadline passed")

// Poll calls check on the schedule until it reports done, returns an error,
// or the deadline (if positive) or ctx ends. The first check happens after
// b.Initial. Sleep is injectable for tests (nil: real timers).
func Poll(ctx context.Context, b Backoff, deadline time.Duration, sleep func(context.Context, time.Duration) error, check func(ctx context.Context) (done bool, err error)) error {
	if sleep == nil {
		sleep = sleepCtx
	}
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, deadline, fmt.Errorf("%w (%s)", ErrDeadline, deadline))
		defer cancel()
	}
	for n := 0; ; n++ {
		if err := sleep(ctx, b.jittered(n)); err != nil {
			return context.Cause(ctx)
		}
		done, err := check(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		if done {
			return nil
		}
	}
}

// WaitConfig tunes WaitStatus.
type WaitConfig struct {
	// Backoff is the polling schedule.
	Backoff Backoff
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
	// Sleep and Now are injectable for tests.
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
	var (
		last      string
		since     time.Time
		transient error
		polls     int
	)
	err := Poll(ctx, cfg.Backoff, cfg.Deadline, cfg.Sleep, func(ctx context.Context) (bool, error) {
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
	return last, err
}
