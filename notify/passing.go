package notify

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/slack-go/slack"
)

// Passing reports whether err from a Slack call is worth another try:
// Slack's 429 (with the wait it asked for), a 5xx page, Slack's own
// internal errors, or no answer at all (the network); not an answer such
// as a refusal or a missing message, nor a context that ended or a
// Poster closed (shutting down).
func Passing(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &rl):
		return rl.RetryAfter, true
	case errors.As(err, &sc):
		return 0, sc.Code >= 500 || sc.Code == http.StatusTooManyRequests
	case errors.As(err, &se):
		return 0, slices.Contains([]string{"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}, se.Err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed):
		return 0, false
	}
	return 0, true // the request did not get an answer
}
