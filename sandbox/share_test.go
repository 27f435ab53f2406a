package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

// TestShareBudgetsAgainstTheSimulator: n replicas sharing a run budget of
// one upload an hour with a burst of 4 may each upload only their share of
// the burst; the next upload waits longer than the context allows, so the
// budget refuses it at once (no timing involved).
func TestShareBudgetsAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, want int }{{1, 4}, {2, 2}, {4, 1}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			t.Parallel()
			srv, c := startSim(t, sim.Config{}, WithRateLimits(Limit{Rate: 1.0 / 3600, Burst: 4}, Limit{}))
			c.ShareBudgets(tc.n)
			run, report := c.Budgets()
			if want := (Limit{Rate: 1.0 / 3600 / float64(tc.n), Burst: (4 + tc.n - 1) / tc.n}); run != want {
				t.Errorf("run budget %+v, want %+v", run, want)
			}
			if report != (Limit{}) {
				t.Errorf("the unlimited report budget became %+v", report)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			sent := 0
			for i := range 10 {
				if _, err := c.CreateFile(ctx, "s.bin", strings.NewReader(fmt.Sprint("sample ", i))); err != nil {
					break
				}
				sent++
			}
			if got := srv.Count(sim.ServiceSandbox, sim.OpCreateFile); sent != tc.want || got != tc.want {
				t.Fatalf("%d uploads accepted, %d reached the service; want %d", sent, got, tc.want)
			}
			c.ShareBudgets(1)
			if run, _ := c.Budgets(); run != (Limit{Rate: 1.0 / 3600, Burst: 4}) {
				t.Fatalf("after ShareBudgets(1): run budget %+v, want the configured one", run)
			}
		})
	}
	var none *Client
	none.ShareBudgets(2) // a service that is not configured: no-op
}
