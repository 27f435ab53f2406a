package sim

import "time"

// step is one status of a task's planned life. The last step of a plan is
// terminal; its duration is ignored.
type step struct {
	status string
	d      time.Duration
}

// progress is where a task stands in its plan. It moves only forward, is
// driven either by status polls (perPoll) or by the clock, and remembers
// when each step was entered, so the sandbox's started_on / completed_on
// and the detail's analyzed_at are stable once reached.
type progress struct {
	steps   []step
	perPoll bool
	polls   int // status polls per step when perPoll

	i       int         // current step
	seen    int         // status polls that showed step i (perPoll)
	entered []time.Time // entered[k] is when step k began, for k <= i
}

func newProgress(steps []step, perPoll bool, polls int, created time.Time) *progress {
	if polls <= 0 {
		polls = 1
	}
	p := &progress{steps: steps, perPoll: perPoll, polls: polls, entered: []time.Time{created}}
	p.catchUp(created) // skip zero-length leading steps of a timed plan
	return p
}

// catchUp moves a timed plan to the step that now falls into.
func (p *progress) catchUp(now time.Time) {
	if p.perPoll {
		return
	}
	for p.i < len(p.steps)-1 {
		end := p.entered[p.i].Add(p.steps[p.i].d)
		if now.Before(end) {
			return
		}
		p.i++
		p.entered = append(p.entered, end)
	}
}

// peek returns the current status without counting a poll.
func (p *progress) peek(now time.Time) string {
	p.catchUp(now)
	return p.steps[p.i].status
}

// poll returns the status a status poll shows. In a per-poll plan the poll
// after the one that showed a step polls times moves the task on first, so
// the status a client last saw is the one result endpoints act on.
func (p *progress) poll(now time.Time) string {
	if p.perPoll {
		if p.seen >= p.polls && p.i < len(p.steps)-1 {
			p.i++
			p.seen = 0
			p.entered = append(p.entered, now)
		}
		p.seen++
		return p.steps[p.i].status
	}
	return p.peek(now)
}

// enteredAt returns when status was first entered, if it has been.
func (p *progress) enteredAt(now time.Time, status string) (time.Time, bool) {
	p.catchUp(now)
	for k := 0; k <= p.i; k++ {
		if p.steps[k].status == status {
			return p.entered[k], true
		}
	}
	return time.Time{}, false
}

// scaleSteps returns steps with every duration multiplied by f.
func scaleSteps(steps []step, f int) []step {
	out := make([]step, len(steps))
	for k, s := range steps {
		out[k] = step{s.status, s.d * time.Duration(f)}
	}
	return out
}

// spreadSteps returns steps with durations rescaled so that the non-terminal
// steps last exactly total, in the proportions of the template's durations.
// Used by the per-task duration hooks (d<N>s.test, SIM:DURATION=).
func spreadSteps(steps []step, total time.Duration) []step {
	out := make([]step, len(steps))
	copy(out, steps)
	var sum time.Duration
	for _, s := range steps[:len(steps)-1] {
		sum += s.d
	}
	left := total
	for k := range out[:len(out)-1] {
		var d time.Duration
		switch {
		case k == len(out)-2:
			d = left // the last timed step takes the rounding remainder
		case sum > 0:
			d = time.Duration(float64(total) * float64(steps[k].d) / float64(sum))
		}
		if d > left {
			d = left
		}
		out[k].d = d
		left -= d
	}
	return out
}
