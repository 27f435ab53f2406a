package reputation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestShareBudgetsAgainstTheSimulator: n replicas sharing a run budget of
// one scan an hour with a burst of 4 may each submit only their share of
// the burst; the next scan waits longer than the context allows, so the
// budget refuses it at once (no timing involved).
func TestShareBudgetsAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, want int }{{1, 4}, {2, 2}, {4, 1}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			t.Parallel()
			srv, base := simtest.Start(t, sim.Config{Keys: []string{simKey}})
			c := client(t, base, reputation.WithRateLimits(
				reputation.Limit{Rate: 1.0 / 3600, Burst: 4}, reputation.Limit{Rate: 10, Burst: 20}))
			c.ShareBudgets(tc.n)
			run, report := c.Budgets()
			if want := (reputation.Limit{Rate: 1.0 / 3600 / float64(tc.n), Burst: (4 + tc.n - 1) / tc.n}); run != want {
				t.Errorf("run budget %+v, want %+v", run, want)
			}
			if want := (reputation.Limit{Rate: 10 / float64(tc.n), Burst: 20 / tc.n}); report != want {
				t.Errorf("report budget %+v, want %+v", report, want)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			sent := 0
			for i := range 10 {
				if _, err := c.Scan(ctx, fmt.Sprintf("https://share-%d.example/", i)); err != nil {
					break
				}
				sent++
			}
			if got := srv.Count(sim.ServiceReputation, sim.OpScan); sent != tc.want || got != tc.want {
				t.Fatalf("%d scans accepted, %d reached the service; want %d", sent, got, tc.want)
			}
		})
	}
}

func TestShareBudgetsRestoresAndKeepsUnlimited(t *testing.T) {
	t.Parallel()
	c, err := reputation.New("http://127.0.0.1:1", simKey, reputation.WithRateLimits(
		reputation.Limit{Rate: 3, Burst: 5}, reputation.Limit{}))
	if err != nil {
		t.Fatal(err)
	}
	c.ShareBudgets(3)
	if run, report := c.Budgets(); run != (reputation.Limit{Rate: 1, Burst: 2}) || report != (reputation.Limit{}) {
		t.Fatalf("shared by 3: run %+v report %+v", run, report)
	}
	c.ShareBudgets(1)
	if run, report := c.Budgets(); run != (reputation.Limit{Rate: 3, Burst: 5}) || report != (reputation.Limit{}) {
		t.Fatalf("shared by 1: run %+v report %+v, want the configured budgets", run, report)
	}
	var none *reputation.Client
	none.ShareBudgets(2) // a service that is not configured: no-op
}
