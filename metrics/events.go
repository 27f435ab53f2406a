package metrics

import "github.com/prometheus/client_golang/prometheus"

// EventHooks feed the events metrics (package events: Emitter, Sender).
type EventHooks struct {
	Sent         func()
	Failed       func(reason string)
	Dropped      func(reason string, n int)
	DeadLettered func()
	Redirect     func(to string)
}

// WatchEvents registers the metrics of the events sent to
// VERDICTBOT_EVENTS_URL: verdictbot_events_sent_total,
// verdictbot_events_failed_total{reason} (failed attempts, retried),
// verdictbot_events_dropped_total{reason} (queue_full: beyond
// VERDICTBOT_EVENTS_MAX_QUEUED), verdictbot_events_redirects_total{to}
// (answers that redirected, never followed),
// verdictbot_events_dead_lettered_total (events the receiver refused 20
// times in a row, set aside) and, read at scrape time,
// verdictbot_events_queued and verdictbot_events_dead_letters (the
// dead-letter list's length, until `verdictbot events retry`).
func (m *Metrics) WatchEvents(queued, dead func() int) EventHooks {
	sent := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "events_sent_total",
		Help: "Events delivered to VERDICTBOT_EVENTS_URL (2xx)."})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_failed_total",
		Help: "Failed attempts to deliver an event, retried, by reason (network, server, rate_limited, auth, client, redirect, refused)."}, []string{"reason"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_dropped_total",
		Help: "Events dropped unsent, by reason (queue_full: VERDICTBOT_EVENTS_MAX_QUEUED)."}, []string{"reason"})
	redirects := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_redirects_total",
		Help: "Answers of the events receiver that redirected (never followed), by where they pointed (same_host, other_host, plain_http, none)."}, []string{"to"})
	deadLettered := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "events_dead_lettered_total",
		Help: "Events the receiver refused 20 times in a row, set aside on the dead-letter list (verdictbot events retry)."})
	m.Registry.MustRegister(sent, failed, dropped, redirects, deadLettered,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "events_queued",
			Help: "Events queued for VERDICTBOT_EVENTS_URL, not delivered yet."}, func() float64 { return float64(queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "events_dead_letters",
			Help: "Events on the dead-letter list, waiting for verdictbot events retry."}, func() float64 { return float64(dead()) }))
	dropped.WithLabelValues("queue_full")
	return EventHooks{
		Sent:         sent.Inc,
		Failed:       func(reason string) { failed.WithLabelValues(reason).Inc() },
		Dropped:      func(reason string, n int) { dropped.WithLabelValues(reason).Add(float64(n)) },
		DeadLettered: deadLettered.Inc,
		Redirect:     func(to string) { redirects.WithLabelValues(to).Inc() },
	}
}
