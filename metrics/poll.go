package metrics

import "github.com/prometheus/client_golang/prometheus"

// WatchLearned exports what a service's learned polling schedule
// currently plans from (service "reputation" or "sandbox"): the durations
// it remembers (kept across restarts and, on PostgreSQL, shared by the
// replicas) and whether it plans from them rather than from its prior.
func (m *Metrics) WatchLearned(service string, stats func() (durations int, learning bool)) {
	labels := prometheus.Labels{"service": service}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "poll_learned_durations", ConstLabels: labels,
			Help: "Analysis durations the service's polling plan learns from (kept across restarts, shared by replicas)."},
			func() float64 { n, _ := stats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "poll_plan_learned", ConstLabels: labels,
			Help: "1 when the service's polling plan is built from learned durations, 0 while it follows its prior."},
			func() float64 {
				if _, ok := stats(); ok {
					return 1
				}
				return 0
			}),
	)
}
