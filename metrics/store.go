package metrics

import "github.com/prometheus/client_golang/prometheus"

// WatchPrune registers verdictbot_store_pruned_total{kind} and returns the
// hook that feeds it: the bot calls it after each retention prune with the
// records removed per kind (cards, verdicts, reports, targets, events, jobs).
func (m *Metrics) WatchPrune() func(kind string, n int) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "store_pruned_total",
		Help: "Records removed from the store by retention (VERDICTBOT_RETENTION), by kind."}, []string{"kind"})
	m.Registry.MustRegister(c)
	for _, k := range []string{"cards", "verdicts", "reports", "targets", "events", "jobs"} {
		c.WithLabelValues(k) // every kind shows, at 0 until something is pruned
	}
	return func(kind string, n int) {
		if n > 0 {
			c.WithLabelValues(kind).Add(float64(n))
		}
	}
}
