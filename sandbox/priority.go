package sandbox

import (
	"context"
	"net/http"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Priority is the lane a request waits in for the client's budgets
// (uploads, status checks and reports): when tokens are short, every High waiter is served before any
// Low one. A request that says nothing waits in High.
type Priority = apiclient.Priority

// Priorities.
const (
	// High is new work someone is waiting for: a new message's analysis,
	// a report from a button click.
	High = apiclient.High
	// Low is work nobody is watching right now: analyses resumed after a
	// restart, scheduled rechecks, checks deferred for a requester's
	// allowance.
	Low = apiclient.Low
)

// WithPriority returns a context whose requests wait for the budgets in
// lane p (an unknown p is High). The sandbox and reputation clients read
// the same context value.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return apiclient.WithPriority(ctx, p)
}

// WithPriorityFunc returns a context whose requests wait in the lane f
// names when each is made (see apiclient.WithPriorityFunc).
func WithPriorityFunc(ctx context.Context, f func() Priority) context.Context {
	return apiclient.WithPriorityFunc(ctx, f)
}

// WithResponseHeaders returns a context whose requests hand every answer
// they receive (each attempt's) to f: its HTTP status and a copy of its
// headers, e.g. the service's rate-limit headers. The sandbox and
// reputation clients read the same context value.
func WithResponseHeaders(ctx context.Context, f func(status int, h http.Header)) context.Context {
	return apiclient.WithResponseHeaders(ctx, f)
}
