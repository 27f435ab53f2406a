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

// WatchReplicas registers verdictbot_replicas (the live replicas this one
// sees, itself included; read at scrape time) and
// verdictbot_jobs_taken_over_total, and returns the hook that feeds the
// latter: the bot calls it with the jobs it took over from replicas that
// stopped.
func (m *Metrics) WatchReplicas(live func() int) func(jobs int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "replicas",
		Help: "Replicas sharing the database that this one sees alive, itself included (1 on the embedded file)."},
		func() float64 { return float64(live()) }))
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "jobs_taken_over_total",
		Help: "Unfinished jobs taken over from replicas that stopped (VERDICTBOT_LEASE)."})
	m.Registry.MustRegister(c)
	return func(jobs int) { c.Add(float64(jobs)) }
}
