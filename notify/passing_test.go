package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// TestPassingTellsATryAgainFromAnAnswer: what is worth another call
// (429 with its wait, 5xx, Slack's internal errors, no answer) and what is
// an answer or the end of the work (a refusal, a missing message, a
// context that ended, a closed Poster).
func TestPassingTellsATryAgainFromAnAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		ok   bool
		wait time.Duration
	}{
		{"429", fmt.Errorf("chat.update: %w", &slack.RateLimitedError{RetryAfter: 3 * time.Second}), true, 3 * time.Second},
		{"503 page", fmt.Errorf("chat.update: %w", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}), true, 0},
		{"400 page", slack.StatusCodeError{Code: 400, Status: "400 Bad Request"}, false, 0},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, true, 0},
		{"message_not_found", slack.SlackErrorResponse{Err: "message_not_found"}, false, 0},
		{"connection refused", fmt.Errorf("chat.update: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), true, 0},
		{"context ended", fmt.Errorf("chat.update: %w", context.Canceled), false, 0},
		{"poster closed", fmt.Errorf("show: %w", ErrClosed), false, 0},
		{"nil", nil, false, 0},
	} {
		wait, ok := Passing(c.err)
		if ok != c.ok || wait != c.wait {
			t.Errorf("%s: Passing = %v, %v; want %v, %v", c.name, wait, ok, c.wait, c.ok)
		}
	}
}
