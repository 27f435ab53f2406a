package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWatchBudgetsFollowsTheShare(t *testing.T) {
	m := New(func() int { return 0 }, func() int { return 0 }, func() bool { return true })
	n := 1.0
	m.WatchBudgets(func() []Budget {
		return []Budget{
			{Service: "reputation", Budget: "run", Rate: 2 / n},
			{Service: "sandbox", Budget: "report"}, // unlimited: not exported
			{Service: "slack", Budget: "chat.update", Rate: 50.0 / 60 / n},
		}
	})
	const head = `# HELP verdictbot_rate_limit_budget_per_second Client-side rate limit in force on this replica, by service and budget: the configured one divided by the live replicas (chat.postMessage is per channel).
# TYPE verdictbot_rate_limit_budget_per_second gauge
`
	for _, tc := range []struct {
		n    float64
		want string
	}{
		{1, `verdictbot_rate_limit_budget_per_second{budget="chat.update",service="slack"} 0.8333333333333334
verdictbot_rate_limit_budget_per_second{budget="run",service="reputation"} 2
`},
		{2, `verdictbot_rate_limit_budget_per_second{budget="chat.update",service="slack"} 0.4166666666666667
verdictbot_rate_limit_budget_per_second{budget="run",service="reputation"} 1
`},
	} {
		n = tc.n
		if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(head+tc.want), "verdictbot_rate_limit_budget_per_second"); err != nil {
			t.Errorf("n=%v: %v", tc.n, err)
		}
	}
}
