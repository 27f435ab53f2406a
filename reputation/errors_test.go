package reputation_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/sim/simtest"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
)

// Every failure comes back as one of this package's error types, with its
// reason, its sentinel and no key in its text.
func TestFailuresAreThePackagesOwnTypes(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{ReputationLimits: sim.Limits{Quota: 3}})
	c := client(t, base, reputation.WithRetries(-1, 0, 0))
	unknown := strings.Repeat("ab", 16)
	check := func(what string, err error, want reputation.Reason) {
		t.Helper()
		if got := reputation.ReasonOf(err); got != want {
			t.Errorf("%s: reason %q, want %q (%v)", what, got, want, err)
		}
		if err != nil && strings.Contains(err.Error(), simKey) {
			t.Errorf("%s: the key is in %q", what, err)
		}
	}

	_, err := c.Status(t.Context(), unknown)
	var ae *reputation.APIError
	if !errors.As(err, &ae) || ae.Kind != reputation.ErrTaskNotFound || ae.Op != "status" || ae.Message != "task not found" || !errors.Is(err, reputation.ErrTaskNotFound) {
		t.Errorf("unknown task: %T %v", err, err)
	}
	check("unknown task", err, reputation.ReasonAPI)

	srv.SetFaults(sim.Faults{ErrorEvery: 1, ErrorStatus: 502})
	_, err = c.Status(t.Context(), unknown)
	var he *reputation.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 502 || he.Op != "status" {
		t.Errorf("gateway page: %T %v", err, err)
	}
	check("gateway page", err, reputation.ReasonServer)
	srv.SetFaults(sim.Faults{})

	for range 3 { // until the quota of 3 is spent
		if _, err = c.Status(t.Context(), unknown); reputation.ReasonOf(err) != reputation.ReasonAPI {
			break
		}
	}
	var rl *reputation.RateLimitError
	if !errors.As(err, &rl) || !rl.Quota || rl.Op != "status" {
		t.Errorf("quota: %T %v", err, err)
	}
	check("quota", err, reputation.ReasonQuota)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	_, err = client(t, closed, reputation.WithRetries(-1, 0, 0)).Status(t.Context(), unknown)
	var te *reputation.TransportError
	if !errors.As(err, &te) || te.Op != "status" || te.Timeout() {
		t.Errorf("closed port: %T %v", err, err)
	}
	check("closed port", err, reputation.ReasonTransport)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Status(ctx, unknown)
	check("cancelled", err, reputation.ReasonCanceled)
	check("nil", nil, reputation.ReasonNone)
}

// The observer receives the package's Event with the request's reason.
func TestObserverGetsThePackagesEvent(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{})
	var events []reputation.Event
	c := client(t, base, reputation.WithObserver(func(e reputation.Event) { events = append(events, e) }))
	_, _ = c.Status(t.Context(), strings.Repeat("ab", 16))
	if len(events) != 1 || events[0].Service != reputation.ServiceName || events[0].Op != "status" ||
		events[0].Budget != reputation.BudgetReport || events[0].Reason != reputation.ReasonAPI || events[0].Attempt != 1 {
		t.Errorf("events = %+v", events)
	}
}

// A request waits in the lane its context names (WithPriority): High
// unless it says Low, and the observer is told which.
func TestRequestsWaitInTheirContextsLane(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{})
	var events []reputation.Event
	c := client(t, base, reputation.WithObserver(func(e reputation.Event) { events = append(events, e) }))
	task := strings.Repeat("ab", 16)
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{t.Context(), "high"},
		{reputation.WithPriority(t.Context(), reputation.Low), "low"},
		{reputation.WithPriority(t.Context(), reputation.High), "high"},
		{reputation.WithPriority(t.Context(), reputation.Priority(7)), "high"},
	} {
		events = nil
		_, _ = c.Status(tc.ctx, task)
		if len(events) != 1 || events[0].Priority != tc.want {
			t.Errorf("events %+v, want one in lane %q", events, tc.want)
		}
	}
}
