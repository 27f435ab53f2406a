package apiclient

import (
	"slices"
	"sort"
)

// flowKey is where a waiter queues in its lane: a user's queue, and in it
// a channel's.
type flowKey struct{ user, channel string }

// keyOf is a Flow's place in a lane. A flow without a user is its
// channel's (a message nobody signed: all such messages of a channel take
// one turn); without either it is the anonymous flow.
func keyOf(f Flow) flowKey {
	if f.User == "" && f.Channel != "" {
		return flowKey{user: "#" + f.Channel, channel: f.Channel}
	}
	return flowKey{user: f.User, channel: f.Channel}
}

// fairQueue is the queue of one lane: start-time fair queueing (Goyal et
// al., "Start-time Fair Queuing", SIGCOMM 1996) over users, and the same
// within each user over its channels, every request costing one turn.
//
// Each user has a finish tag: the virtual time after its last turn. The
// next turn goes to the waiting user whose start tag, max(V, finish), is
// the smallest (ties: whoever waits longest), and V becomes that tag. So a
// user with a backlog takes one turn per round, and a user who was not
// waiting starts at V: its next request goes before the backlog's next one,
// however long that backlog is. Within the user, its channels take turns
// the same way, so that one of its channels does not hold up another.
//
// Why users first and channels within them: the person is who can flood.
// Channels first would give one user as many turns per round as channels
// they post in (anyone can open a channel and invite the bot), and would
// not protect a user from a flood in their own channel.
type fairQueue struct {
	n      int // waiters queued
	vtime  uint64
	users  map[string]*fairUser
	active int // users with waiters
}

type fairUser struct {
	n        int // waiters queued
	finish   uint64
	vtime    uint64 // virtual time of the user's channels
	channels map[string]*fairChannel
}

type fairChannel struct {
	finish  uint64
	waiters []*laneWaiter // by seq (arrival)
}

func (q *fairQueue) user(k string) *fairUser {
	if q.users == nil {
		q.users = map[string]*fairUser{}
	}
	u := q.users[k]
	if u == nil {
		u = &fairUser{channels: map[string]*fairChannel{}}
		q.users[k] = u
	}
	return u
}

func (u *fairUser) channel(k string) *fairChannel {
	c := u.channels[k]
	if c == nil {
		c = &fairChannel{}
		u.channels[k] = c
	}
	return c
}

// push queues w under w.key, in arrival order.
func (q *fairQueue) push(w *laneWaiter) {
	u := q.user(w.key.user)
	c := u.channel(w.key.channel)
	i := sort.Search(len(c.waiters), func(i int) bool { return c.waiters[i].seq > w.seq })
	c.waiters = slices.Insert(c.waiters, i, w)
	if u.n == 0 {
		q.active++
	}
	u.n++
	q.n++
	w.queued = true
}

// remove takes w out of the queue; false if it was not in it.
func (q *fairQueue) remove(w *laneWaiter) bool {
	if !w.queued {
		return false
	}
	u := q.users[w.key.user]
	if u == nil {
		return false
	}
	c := u.channels[w.key.channel]
	if c == nil {
		return false
	}
	i := slices.Index(c.waiters, w)
	if i < 0 {
		return false
	}
	c.waiters = slices.Delete(c.waiters, i, i+1)
	u.n--
	if u.n == 0 {
		q.active--
	}
	q.n--
	w.queued = false
	return true
}

// startTag is the virtual time u's next turn starts at; nil u has had none.
func (q *fairQueue) startTag(u *fairUser) uint64 {
	if u == nil {
		return q.vtime
	}
	return max(q.vtime, u.finish)
}

// pick returns the waiter whose turn is next among the queued ones and
// extra (if not nil: the waiter holding the turn, as if it were queued),
// without taking it out; nil when there is none.
func (q *fairQueue) pick(extra *laneWaiter) *laneWaiter {
	if q.n == 0 {
		return extra
	}
	// The user: smallest start tag, then the longest waiting.
	var (
		best     string
		bestTag  uint64
		bestHead uint64
		found    bool
	)
	consider := func(k string, tag, head uint64) {
		if !found || tag < bestTag || tag == bestTag && head < bestHead {
			best, bestTag, bestHead, found = k, tag, head, true
		}
	}
	for k, u := range q.users {
		if u.n == 0 {
			continue
		}
		head := uint64(0)
		first := true
		for _, c := range u.channels {
			if len(c.waiters) > 0 && (first || c.waiters[0].seq < head) {
				head, first = c.waiters[0].seq, false
			}
		}
		if extra != nil && extra.key.user == k && extra.seq < head {
			head = extra.seq
		}
		consider(k, q.startTag(u), head)
	}
	if extra != nil {
		if u := q.users[extra.key.user]; u == nil || u.n == 0 {
			consider(extra.key.user, q.startTag(u), extra.seq)
		}
	}
	u := q.users[best]
	if u == nil || u.n == 0 {
		return extra // the extra's user, with nobody else queued
	}
	// The channel, the same way within the user.
	var (
		pick     *laneWaiter
		pickTag  uint64
		extraTag uint64
	)
	for _, c := range u.channels {
		if len(c.waiters) == 0 {
			continue
		}
		tag := max(u.vtime, c.finish)
		w := c.waiters[0]
		if pick == nil || tag < pickTag || tag == pickTag && w.seq < pick.seq {
			pick, pickTag = w, tag
		}
	}
	if extra != nil && extra.key.user == best {
		extraTag = u.vtime
		if c := u.channels[extra.key.channel]; c != nil {
			extraTag = max(u.vtime, c.finish)
		}
		if extraTag < pickTag || extraTag == pickTag && extra.seq < pick.seq {
			return extra
		}
	}
	return pick
}

// charge accounts a turn taken by a request of key: the user's and the
// channel's finish tags move on, and so does the virtual time.
func (q *fairQueue) charge(key flowKey) {
	u := q.user(key.user)
	start := q.startTag(u)
	q.vtime, u.finish = start, start+1
	c := u.channel(key.channel)
	cstart := max(u.vtime, c.finish)
	u.vtime, c.finish = cstart, cstart+1
	q.prune()
}

// prune forgets users (and channels) with nobody waiting whose finish tag
// is at most one turn past the virtual time: one coming back starts at the
// virtual time, like a newcomer, instead of one turn later (a user with a
// backlog is never idle, so this forgets no backlog). It runs when the idle
// ones outnumber the active ones, so that it costs a constant per turn on
// average.
func (q *fairQueue) prune() {
	if len(q.users) <= 2*q.active+16 {
		return
	}
	for k, u := range q.users {
		if u.n > 0 {
			for ck, c := range u.channels {
				if len(c.waiters) == 0 && c.finish <= u.vtime+1 {
					delete(u.channels, ck)
				}
			}
			continue
		}
		if u.finish <= q.vtime+1 {
			delete(q.users, k)
		}
	}
}

// estimate is how many turns w would wait under key: the user's start tag
// plus the user's queued waiters (a rough place in line, to choose between
// a shared request's flows).
func (q *fairQueue) estimate(key flowKey) uint64 {
	u := q.users[key.user]
	if u == nil {
		return q.vtime
	}
	return q.startTag(u) + uint64(u.n)
}
