package scan

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/verdictbot/verdictbot/reputation"
)

// Requester is who a check is made for, as the pipeline's caller names
// them (scan knows no chat): User is the person (or integration) whose
// message or request it is, Channel where it was made. The pipeline queues
// its submissions and polls fairly between users, and between a user's
// channels (see reputation.Flow), and an Allowance counts submissions per
// requester. The zero Requester is nobody in particular (a scheduled
// recheck, a resumed analysis).
type Requester struct {
	User    string
	Channel string
}

// IsZero reports whether r is nobody in particular.
func (r Requester) IsZero() bool { return r == Requester{} }

// key is r's key for the per-requester bounds: the user, else the channel
// (a message nobody signed), else "" (nobody in particular).
func (r Requester) key() string {
	if r.User != "" {
		return r.User
	}
	if r.Channel != "" {
		return "#" + r.Channel
	}
	return ""
}

// Allowance caps what one requester may have sent to the services
// (VERDICTBOT_USER_LINKS_PER_HOUR). The pipelines ask it only for what they
// are about to send: a cached verdict, a join of an analysis in flight, a
// file the sandbox already knows and a resumed analysis cost the services
// nothing and are not counted. It must be safe for concurrent use.
type Allowance interface {
	// Take counts one submission for r and reports whether r had one
	// left; false means nothing is sent for r.
	Take(r Requester) bool
	// Refused is told of each target not sent because none of its
	// requesters (who, in the order they came) had one left; service is
	// "reputation" or "sandbox". ctx ends when the pipeline closes.
	Refused(ctx context.Context, service string, who []Requester)
}

// ErrOverAllowance is the error of a verdict not checked because every
// requester of the analysis had used their Allowance.
var ErrOverAllowance = errors.New("not submitted: the requester's allowance for the hour is used up")

// Problems of a target not checked because of the Allowance, shown on the
// requester's card. A URL's check is deferred to the recheck (Recheck,
// CheckOptions.Deferred) once the card's layer has recorded the deferral:
// its line then says DeferredProblem instead, until the deferred check's
// verdict replaces it. Files are not deferred.
const (
	OverAllowanceProblem     = "not checked: too many links from you this hour"
	OverAllowanceFileProblem = "not checked: too many links and files from you this hour"
	DeferredProblem          = "not checked yet: too many links from you this hour; it will be checked at low priority"
)

// requesters is the set of requesters one analysis is made for (the one
// that started it first, then those that joined it), with the same set as
// the flows its service requests wait in.
type requesters struct {
	mu   sync.Mutex
	list []Requester
	// sealed: the analysis was refused for every requester in list (see
	// allowed); nobody joins it any more, a newcomer starts another.
	sealed bool
	flows  *reputation.Flows // reputation.Flows and sandbox.Flows are one type
	// background: the analysis was started for a channel's history
	// (CheckOptions.Background) and nobody waiting for it has joined: its
	// requests wait in the Low lane (priority).
	background atomic.Bool
}

// priority is the lane the analysis's next request waits in: Low while it
// is only a channel history's, High once someone waiting for it joined.
func (rs *requesters) priority() reputation.Priority {
	if rs.background.Load() {
		return reputation.Low
	}
	return reputation.High
}

// join adds r to the set (see add); a check that is not a background one
// (background false) brings the analysis out of the Low lane.
func (rs *requesters) join(r Requester, background bool) (added, ok bool) {
	added, ok = rs.add(r)
	if ok && !background {
		rs.background.Store(false)
	}
	return added, ok
}

func newRequesters(r Requester) *requesters {
	rs := &requesters{flows: reputation.NewFlows()}
	rs.add(r)
	return rs
}

// add puts r in the set (the zero Requester is nobody: not added). added
// reports whether r was new; ok is false when the set is sealed (the
// analysis was refused): r must not join it.
func (rs *requesters) add(r Requester) (added, ok bool) {
	rs.mu.Lock()
	if rs.sealed {
		rs.mu.Unlock()
		return false, false
	}
	if r.IsZero() || slices.Contains(rs.list, r) {
		rs.mu.Unlock()
		return false, true
	}
	rs.list = append(rs.list, r)
	rs.mu.Unlock()
	rs.flows.Add(reputation.Flow{User: r.User, Channel: r.Channel})
	return true, true
}

// isSealed reports whether the analysis was refused (see allowed).
func (rs *requesters) isSealed() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.sealed
}

// all returns the requesters in the order they came.
func (rs *requesters) all() []Requester {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.list)
}

// keys returns the requesters' keys (the "" of nobody when there is none).
func (rs *requesters) keys() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.list) == 0 {
		return []string{""}
	}
	out := make([]string, 0, len(rs.list))
	for _, r := range rs.list {
		if k := r.key(); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// allowed asks a for one submission to service for the analysis: charged
// to the first requester, in the order they came, who has one left (a
// refusal is told to a). An analysis made for nobody in particular (a
// recheck) is not counted. A refusal seals the set, in the same step as
// the last look at it: whoever joined while the others were asked is asked
// too, and nobody joins a refused analysis (its verdict says "too many
// links from you", true of each of its requesters only).
func (rs *requesters) allowed(ctx context.Context, a Allowance, service string) bool {
	if a == nil {
		return true
	}
	asked := 0
	for {
		rs.mu.Lock()
		list := slices.Clone(rs.list)
		if len(list) == asked {
			if asked > 0 {
				rs.sealed = true
			}
			rs.mu.Unlock()
			break
		}
		rs.mu.Unlock()
		for _, r := range list[asked:] {
			if a.Take(r) {
				return true
			}
		}
		asked = len(list)
	}
	if asked == 0 {
		return true
	}
	a.Refused(ctx, service, rs.all())
	return false
}
