package metrics

import "github.com/prometheus/client_golang/prometheus"

// Budget is one client-side rate limit in force on this replica, for
// WatchBudgets.
type Budget struct {
	// Service is reputation, sandbox or slack.
	Service string
	// Budget is run or report for the analysis services; chat.update
	// (workspace-wide) or chat.postMessage (per channel) for Slack.
	Budget string
	// Rate is in requests per second; 0 means unlimited (not exported).
	Rate float64
}

var budgetDesc = prometheus.NewDesc(ns+"_rate_limit_budget_per_second",
	"Client-side rate limit in force on this replica, by service and budget: the configured one divided by the live replicas (chat.postMessage is per channel).",
	[]string{"service", "budget"}, nil)

// WatchBudgets registers verdictbot_rate_limit_budget_per_second{service,budget},
// read from budgets at scrape time (reputation and sandbox Client.Budgets,
// notify.Poster.Pacing), so that the share each replica takes shows as
// replicas come and go.
func (m *Metrics) WatchBudgets(budgets func() []Budget) {
	m.Registry.MustRegister(budgetCollector(budgets))
}

type budgetCollector func() []Budget

func (budgetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- budgetDesc }

func (f budgetCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range f() {
		if b.Rate > 0 {
			ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, b.Rate, b.Service, b.Budget)
		}
	}
}
