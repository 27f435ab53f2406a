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
