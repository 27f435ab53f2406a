package slackfake

import (
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
}

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
	return l
}

// WithRateLimits makes the fake enforce Slack's rate limits on
// chat.postMessage, chat.update and chat.delete (see RateLimits; pass RateLimits{} for
// the defaults). Refused calls are recorded like any other (Status 429,
// Error "ratelimited") and counted by RateLimited. Without this option
// only WithPostPacing's strict one-post-per-second check applies, if set.
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
}

func newLimiters(l RateLimits) *limiters {
	lim := &limiters{cfg: l, channel: map[string]*rate.Limiter{}}
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
	}
	now := c.at
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
