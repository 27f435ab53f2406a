package metrics

import "github.com/prometheus/client_golang/prometheus"

// EventHooks feed the events metrics (package events: Emitter, Sender).
type EventHooks struct {
	Sent    func()
	Failed  func(reason string)
	Dropped func(reason string, n int)
}

// WatchEvents registers the metrics of the events sent to
// VERDICTBOT_EVENTS_URL: verdictbot_events_sent_total,
// verdictbot_events_failed_total{reason} (failed attempts, retried),
// verdictbot_events_dropped_total{reason} (queue_full: beyond
// VERDICTBOT_EVENTS_MAX_QUEUED; refused: the receiver answered 400, 413 or
// 422) and verdictbot_events_queued (read at scrape time).
func (m *Metrics) WatchEvents(queued func() int) EventHooks {
	sent := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "events_sent_total",
		Help: "Events delivered to VERDICTBOT_EVENTS_URL (2xx)."})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_failed_total",
		Help: "Failed attempts to deliver an event, retried, by reason (network, server, rate_limited, auth, client)."}, []string{"reason"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_dropped_total",
		Help: "Events dropped unsent, by reason (queue_full: VERDICTBOT_EVENTS_MAX_QUEUED; refused: the receiver refused it)."}, []string{"reason"})
	m.Registry.MustRegister(sent, failed, dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "events_queued",
		Help: "Events queued for VERDICTBOT_EVENTS_URL, not delivered yet."}, func() float64 { return float64(queued()) }))
	for _, r := range []string{"queue_full", "refused"} {
		dropped.WithLabelValues(r)
	}
	return EventHooks{
		Sent:    sent.Inc,
		Failed:  func(reason string) { failed.WithLabelValues(reason).Inc() },
		Dropped: func(reason string, n int) { dropped.WithLabelValues(reason).Add(float64(n)) },
	}
}
