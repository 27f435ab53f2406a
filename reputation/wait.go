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
var DefaultBackoff = apiclient.Backoff{Initial: time.Second, Factor: 1.4, Max: 4 * time.Second, Jitter: 0.1}

// WaitOptions tunes Wait. The zero value uses the defaults.
type WaitOptions struct {
	// Backoff is the polling schedule (default DefaultBackoff) unless
	// Schedule is set.
	Backoff apiclient.Backoff
	// Schedule, if set, is the polling schedule instead of Backoff: for
	// example the service's *apiclient.LearnedSchedule (NewLearnedSchedule),
	// which the caller feeds with each completed task's
	// PollStats.Completion.
	Schedule apiclient.Schedule
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
	OnEnd func(apiclient.PollStats)
	// Sleep is injectable for tests.
	Sleep func(context.Context, time.Duration) error
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

// NewLearnedSchedule returns a polling schedule for URL tasks that learns
// how long this service's analyses take (apiclient.LearnedSchedule with its
// defaults, falling back on DefaultBackoff until it has seen 8 of them).
// Use one per service, pass it as WaitOptions.Schedule, and Observe each
// completed wait's PollStats.Completion (WaitOptions.OnEnd); scan.URLs does
// this itself.
func NewLearnedSchedule() *apiclient.LearnedSchedule {
	cfg := apiclient.DefaultLearnedConfig()
	cfg.Fallback = DefaultBackoff
	return apiclient.NewLearnedSchedule(cfg)
}

// Wait polls the task until it is completed, fails, or the deadline passes.
// Transient errors (rate limits, 5xx, transport) keep polling; documented
// errors (task not found, wrong task id) end the wait at once.
func (c *Client) Wait(ctx context.Context, taskID string, o WaitOptions) (Status, error) {
	if o.Backoff == (apiclient.Backoff{}) {
		o.Backoff = DefaultBackoff
	}
	if o.Deadline <= 0 {
		o.Deadline = 10 * time.Minute
	}
	if o.Failed == nil {
		o.Failed = []Status{StatusFailed, "error"}
	}
	cfg := apiclient.WaitConfig{Backoff: o.Backoff, Schedule: o.Schedule, Deadline: o.Deadline, Sleep: o.Sleep, OnEnd: o.OnEnd}
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
