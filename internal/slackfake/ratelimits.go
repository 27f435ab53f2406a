package slackfake

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// RateLimits are the Web API limits WithRateLimits enforces, modelled on
// Slack's documented tiers (docs.slack.dev/apis/web-api/rate-limits, and
// Slack's Web API rate tiers). Limits are token buckets: a
// call with no token left is answered HTTP 429, {"ok":false,
// "error":"ratelimited"} and a Retry-After header giving the whole seconds
// (at least 1) until the bucket has a token again, as Slack answers; a
// refused call takes no token. Zero fields take DefaultRateLimits' values;
// a negative rate turns that limit off.
type RateLimits struct {
	// PostInterval and PostBurst limit chat.postMessage per channel:
	// "one message per second per channel", "short bursts >1 allowed".
	// The size of a burst is undocumented; the default, 2, is the least
	// ">1" allows.
	PostInterval time.Duration
	PostBurst    int
	// PostsPerMinute and PostsBurst limit chat.postMessage across the
	// workspace: Slack keeps "a workspace-wide limit" whose figure it does
	// not document. Default off (negative); set it to model one.
	PostsPerMinute float64
	PostsBurst     int
	// UpdatesPerMinute and UpdateBurst limit chat.update across the
	// workspace: Tier 3, "50+ per minute", "sporadic bursts are welcome"
	// (tier from Slack's java-slack-sdk MethodsRateLimits). The burst size
	// is undocumented; the default, 10, is below the bot's own 20 so a
	// bot that bursts meets 429s.
	UpdatesPerMinute float64
	UpdateBurst      int
	// DeletesPerMinute and DeleteBurst limit chat.delete across the
	// workspace: Tier 3, "50+ per minute" (Slack's java-slack-sdk
	// MethodsRateLimits; the bucket is the app's, whichever token calls).
	// The burst size is undocumented; the default is 10, as for updates.
	DeletesPerMinute float64
	DeleteBurst      int
	// HistoryPerMinute and HistoryBurst limit conversations.history,
	// RepliesPerMinute and RepliesBurst conversations.replies, each per
	// workspace (the conversation's, with an Org): Tier 3, "50+ per
	// minute" with bursts, for internal and Marketplace apps
	// (docs.slack.dev/reference/methods/conversations.history and
	// /conversations.replies "Rate Limits"). Default off (negative), so a
	// fake given WithRateLimits(RateLimits{}) limits what it always did;
	// set them, or use WithTierLimits, which sets both to Tier3PerMinute
	// and Tier3Burst.
	HistoryPerMinute float64
	HistoryBurst     int
	RepliesPerMinute float64
	RepliesBurst     int
}

// Tier 3 as the fake models it: 50 calls a minute ("50+ per minute",
// docs.slack.dev/apis/web-api/rate-limits) with bursts of 10 (the size of
// a burst is undocumented; 10, as for chat.update).
const (
	Tier3PerMinute = 50
	Tier3Burst     = 10
)

// DefaultRateLimits are the limits WithRateLimits enforces when given the
// zero RateLimits.
var DefaultRateLimits = RateLimits{
	PostInterval:     time.Second,
	PostBurst:        2,
	PostsPerMinute:   -1,
	PostsBurst:       1,
	UpdatesPerMinute: 50,
	UpdateBurst:      10,
	DeletesPerMinute: 50,
	DeleteBurst:      10,
	HistoryPerMinute: -1,
	HistoryBurst:     Tier3Burst,
	RepliesPerMinute: -1,
	RepliesBurst:     Tier3Burst,
}

func (l RateLimits) withDefaults() RateLimits {
	d := DefaultRateLimits
	if l.PostInterval == 0 {
		l.PostInterval = d.PostInterval
	}
	if l.PostBurst <= 0 {
		l.PostBurst = d.PostBurst
	}
	if l.PostsPerMinute == 0 {
		l.PostsPerMinute = d.PostsPerMinute
	}
	if l.PostsBurst <= 0 {
		l.PostsBurst = d.PostsBurst
	}
	if l.UpdatesPerMinute == 0 {
		l.UpdatesPerMinute = d.UpdatesPerMinute
	}
	if l.UpdateBurst <= 0 {
		l.UpdateBurst = d.UpdateBurst
	}
	if l.DeletesPerMinute == 0 {
		l.DeletesPerMinute = d.DeletesPerMinute
	}
	if l.DeleteBurst <= 0 {
		l.DeleteBurst = d.DeleteBurst
	}
	if l.HistoryPerMinute == 0 {
		l.HistoryPerMinute = d.HistoryPerMinute
	}
	if l.HistoryBurst <= 0 {
		l.HistoryBurst = d.HistoryBurst
	}
	if l.RepliesPerMinute == 0 {
		l.RepliesPerMinute = d.RepliesPerMinute
	}
	if l.RepliesBurst <= 0 {
		l.RepliesBurst = d.RepliesBurst
	}
	return l
}

// WithTierLimits(true) makes the fake enforce Tier 3 on
// conversations.history and conversations.replies: per method and per
// workspace, Tier3PerMinute calls a minute with bursts of Tier3Burst; a
// call over it is answered HTTP 429 with Retry-After, recorded and
// counted by RateLimited, as WithRateLimits' limits are. Alone it limits
// nothing else; with WithRateLimits (in either order) it adds these two
// limits to those, unless RateLimits sets them itself.
// WithTierLimits(false), the default, leaves them as WithRateLimits says
// (off unless set).
func WithTierLimits(on bool) Option { return func(c *config) { c.tierLimits = on } }

// WithRateLimitClock gives the rate limits (WithRateLimits,
// WithTierLimits) a clock of the test's instead of time.Now, so a test
// can exhaust a burst and then move time on by a Retry-After without
// waiting for it. The clock must not go backwards.
func WithRateLimitClock(now func() time.Time) Option { return func(c *config) { c.limitClock = now } }

// effectiveLimits is what WithRateLimits and WithTierLimits ask for
// together, or nil for no limits.
func (c *config) effectiveLimits() *RateLimits {
	if !c.tierLimits {
		return c.limits
	}
	var l RateLimits
	if c.limits != nil {
		l = *c.limits
	} else {
		l = RateLimits{PostInterval: -1, PostsPerMinute: -1, UpdatesPerMinute: -1, DeletesPerMinute: -1}.withDefaults()
	}
	if l.HistoryPerMinute <= 0 {
		l.HistoryPerMinute, l.HistoryBurst = Tier3PerMinute, Tier3Burst
	}
	if l.RepliesPerMinute <= 0 {
		l.RepliesPerMinute, l.RepliesBurst = Tier3PerMinute, Tier3Burst
	}
	return &l
}

// WithRateLimits makes the fake enforce Slack's rate limits on
// chat.postMessage, chat.update and chat.delete (see RateLimits; pass RateLimits{} for
// the defaults). Refused calls are recorded like any other (Status 429,
// Error "ratelimited") and counted by RateLimited. Without this option
// only WithPostPacing's strict one-post-per-second check applies, if set;
// WithTierLimits adds conversations.history's and conversations.replies'
// Tier 3.
func WithRateLimits(l RateLimits) Option {
	return func(c *config) {
		l = l.withDefaults()
		c.limits = &l
	}
}

// limiters holds the token buckets of WithRateLimits. Guarded by Server.mu.
type limiters struct {
	cfg     RateLimits
	channel map[string]*rate.Limiter
	posts   *rate.Limiter
	updates *rate.Limiter
	deletes *rate.Limiter
	// perTeam are the per-workspace buckets of conversations.history and
	// conversations.replies, by method and workspace.
	perTeam map[[2]string]*rate.Limiter
}

func newLimiters(l RateLimits) *limiters {
	lim := &limiters{cfg: l, channel: map[string]*rate.Limiter{}, perTeam: map[[2]string]*rate.Limiter{}}
	if l.PostsPerMinute > 0 {
		lim.posts = rate.NewLimiter(rate.Limit(l.PostsPerMinute/60), l.PostsBurst)
	}
	if l.UpdatesPerMinute > 0 {
		lim.updates = rate.NewLimiter(rate.Limit(l.UpdatesPerMinute/60), l.UpdateBurst)
	}
	if l.DeletesPerMinute > 0 {
		lim.deletes = rate.NewLimiter(rate.Limit(l.DeletesPerMinute/60), l.DeleteBurst)
	}
	return lim
}

// admitLocked takes the tokens a call needs, or returns the 429 to answer
// (ok false) without taking any. s.mu must be held.
func (s *Server) admitLocked(c *apiCall) (apiResult, bool) {
	l := s.limits
	if l == nil {
		return apiResult{}, true
	}
	var need []*rate.Limiter
	switch c.method {
	case "chat.postMessage":
		if l.cfg.PostInterval > 0 {
			ch := c.params.Get("channel")
			lim := l.channel[ch]
			if lim == nil {
				lim = rate.NewLimiter(rate.Every(l.cfg.PostInterval), l.cfg.PostBurst)
				l.channel[ch] = lim
			}
			need = append(need, lim)
		}
		if l.posts != nil {
			need = append(need, l.posts)
		}
	case "chat.update":
		if l.updates != nil {
			need = append(need, l.updates)
		}
	case "chat.delete":
		if l.deletes != nil {
			need = append(need, l.deletes)
		}
	case "conversations.history":
		if l.cfg.HistoryPerMinute > 0 {
			need = append(need, l.teamLimiter(c.method, s.limitTeamLocked(c), l.cfg.HistoryPerMinute, l.cfg.HistoryBurst))
		}
	case "conversations.replies":
		if l.cfg.RepliesPerMinute > 0 {
			need = append(need, l.teamLimiter(c.method, s.limitTeamLocked(c), l.cfg.RepliesPerMinute, l.cfg.RepliesBurst))
		}
	}
	now := c.at
	if s.cfg.limitClock != nil {
		now = s.cfg.limitClock()
	}
	var wait time.Duration
	taken := make([]*rate.Reservation, 0, len(need))
	for _, lim := range need {
		r := lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			wait = max(wait, d)
			r.CancelAt(now)
			continue
		}
		taken = append(taken, r)
	}
	if wait == 0 {
		return apiResult{}, true
	}
	for _, r := range taken {
		r.CancelAt(now) // refused by another bucket: the token goes back
	}
	s.st.limited[c.method]++
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	r := errResult("ratelimited")
	r.status = http.StatusTooManyRequests
	r.header = http.Header{"Retry-After": {fmt.Sprint(secs)}}
	return r, false
}

// teamLimiter is the bucket of method in workspace team.
func (l *limiters) teamLimiter(method, team string, perMinute float64, burst int) *rate.Limiter {
	k := [2]string{method, team}
	lim := l.perTeam[k]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(perMinute/60), burst)
		l.perTeam[k] = lim
	}
	return lim
}

// limitTeamLocked is the workspace whose bucket a call takes from: with
// an Org the conversation's (its first granted workspace, as its events
// name it) or the team_id given, else the workspace.
func (s *Server) limitTeamLocked(c *apiCall) string {
	if !s.grid() {
		return s.cfg.teamID
	}
	if ch := s.st.channels[c.params.Get("channel")]; ch != nil {
		if team := s.channelAccessLocked(ch); team != "" {
			return team
		}
	}
	return cmp.Or(c.params.Get("team_id"), s.cfg.teamID)
}

// RateLimited returns how many calls of each method WithRateLimits refused
// with a 429.
func (st *State) RateLimited() map[string]int {
	out := make(map[string]int, len(st.limited))
	for k, v := range st.limited {
		out[k] = v
	}
	return out
}

// RateLimited returns how many calls of each method WithRateLimits refused
// with a 429.
func (s *Server) RateLimited() (out map[string]int) {
	s.Inspect(func(st *State) { out = st.RateLimited() })
	return out
}
