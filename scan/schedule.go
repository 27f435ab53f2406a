package scan

import (
	"context"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

// learnedSchedule settles the URL polling schedule of NewURLs and returns
// the LearnedSchedule the pipeline must feed, if any: the one passed in
// w.Schedule, or a new one (reputation.NewLearnedSchedule) when w names no
// schedule at all. A fixed Backoff or another Schedule is used as given and
// nothing is learned.
func learnedSchedule(w *reputation.WaitOptions) *reputation.LearnedSchedule {
	switch s := w.Schedule.(type) {
	case *reputation.LearnedSchedule:
		return s
	case nil:
		if w.Backoff == (reputation.Backoff{}) {
			l := reputation.NewLearnedSchedule()
			w.Schedule = l
			return l
		}
	}
	return nil
}

// LearnedSchedule returns the schedule that learns how long this pipeline's
// URL analyses take (nil when URLOptions.Wait set a fixed one). Its Stats
// say what it currently believes, for metrics.
func (u *URLs) LearnedSchedule() *reputation.LearnedSchedule { return u.learned }

// LearnedSchedule returns the schedule that learns how long this
// pipeline's sandbox analyses take (nil when FileOptions.Wait set a fixed
// one).
func (f *Files) LearnedSchedule() *sandbox.LearnedSchedule { return f.learned }

// wait polls taskID to its end, reporting status changes to call, and
// returns how many status calls it made. A task submitted by this wait's
// analysis (fresh) that completed teaches the learned schedule how long it
// took, when the caller calls learn: after the result is fetched, since
// rebuilding the plan takes milliseconds that the verdict need not wait
// for. A resumed one does not, since its wait did not start at submission.
func (u *URLs) wait(ctx context.Context, taskID string, fresh bool, call *urlCall) (polls int, learn func(), err error) {
	var stats reputation.PollStats
	wo := u.opt.Wait
	wo.OnStatus = func(s reputation.Status, changed bool) {
		// "completed" ends the wait and the result is fetched at once: the
		// verdict follows, and a card edit saying "completed" would only
		// spend the card's next edit before it.
		if changed && s != reputation.StatusCompleted {
			call.setStatus(string(s))
		}
	}
	wo.OnEnd = func(s reputation.PollStats) {
		stats = s
		if u.opt.Wait.OnEnd != nil {
			u.opt.Wait.OnEnd(s)
		}
	}
	if !fresh && u.learned != nil && wo.Schedule == reputation.Schedule(u.learned) {
		// A resumed task has run for an unknown while (since before a
		// restart, or on a replica that stopped): the learned schedule
		// would plan it as if just submitted, waiting for its prior. It is
		// polled on the blind backoff instead, first after 1 s.
		wo.Schedule, wo.Backoff = nil, reputation.DefaultBackoff
	}
	_, err = u.rep.Wait(ctx, taskID, wo)
	learn = func() {}
	if err == nil && fresh && u.learned != nil {
		learn = func() {
			d := stats.Completion()
			u.learned.Observe(d)
			if u.opt.OnLearned != nil && d > 0 {
				u.opt.OnLearned(d)
			}
		}
	}
	return stats.Polls, learn, err
}
