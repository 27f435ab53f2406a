package reputation

import (
	"context"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Flow names whom a request is made for: a user and the channel they asked
// in, as opaque keys. When the client's budgets are short, waiting
// requests (URL submissions, status checks and results) take turns between users, and between
// a user's channels, within each priority: one user's burst delays
// another user's request by at most the token being waited for. A Flow
// with neither key is the anonymous flow.
type Flow = apiclient.Flow

// Flows is the set of Flows one analysis is made for (it can be shared by
// several requests of different people): each of its requests waits in the
// turn of the flow that comes first, and moves when an added flow's turn
// comes sooner. Safe for concurrent use.
type Flows = apiclient.Flows

// NewFlows returns a set of flows.
func NewFlows(flows ...Flow) *Flows { return apiclient.NewFlows(flows...) }

// WithFlows returns a context whose requests are made for flows (nil: the
// anonymous flow). The sandbox and reputation clients read the same
// context value.
func WithFlows(ctx context.Context, flows *Flows) context.Context {
	return apiclient.WithFlows(ctx, flows)
}
