// Package metrics defines verdictbot's Prometheus metrics and the hooks that
// feed them. docs/operations.md lists every metric ("Metrics"); a test in
// package deploy fails when one is missing there.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/verdict"
)

// Metrics holds the collectors. Create it with New.
type Metrics struct {
	Registry *prometheus.Registry

	envelopes    *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	ackLatency   prometheus.Histogram
	scans        *prometheus.CounterVec
	statusPolls  *prometheus.HistogramVec
	levels       *prometheus.CounterVec
	serviceErrs  *prometheus.CounterVec
	requests     *prometheus.CounterVec
	budgetWaits  *prometheus.CounterVec
	budgetWaited *prometheus.CounterVec
	slackCalls   *prometheus.CounterVec
	slackErrors  *prometheus.CounterVec
	rechecks     *prometheus.CounterVec
	quarantined  *prometheus.CounterVec
	quarFailures *prometheus.CounterVec
	unchecked    *prometheus.CounterVec
	signals      *prometheus.CounterVec
	capRefused   *prometheus.CounterVec
	quarFlips    *prometheus.CounterVec
	quarQueue    *prometheus.GaugeVec
	flips        prometheus.Counter
	deferred     *prometheus.CounterVec
	recheckTime  prometheus.Histogram
	recheckLag   prometheus.Gauge
	recheckLast  prometheus.Gauge
}

const ns = "verdictbot"

// New registers every metric (and the Go and process collectors) in a new
// registry. queueDepth, inFlight and ready are read at scrape time.
func New(queueDepth func() int, inFlight func() int, ready func() bool) *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{Registry: r}
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	m.envelopes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "envelopes_total",
		Help: "Socket Mode envelopes acked, by type (events_api, slash_commands, interactive, bad_message) and result."}, []string{"type", "result"})
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "envelopes_dropped_total",
		Help: "Envelopes not handled, by kind and reason (acked: duplicate, undecodable, queue_full; not acked, left to Slack's redelivery: spool_full)."}, []string{"kind", "reason"})
	m.ackLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "ack_latency_seconds",
		Help:    "Time from receiving an envelope to acking it (journal write included).",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 3}})
	m.scans = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "scans_total",
		Help: "Finished analyses, by service (reputation, sandbox) and outcome (ok, cached, reused, failed)."}, []string{"service", "outcome"})
	m.statusPolls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "status_polls_per_task",
		Help: "Status calls made for one analysis.", Buckets: []float64{1, 2, 3, 5, 8, 12, 16, 24, 32, 64}}, []string{"service"})
	m.levels = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "verdicts_total",
		Help: "Verdicts, by kind (url, file) and level."}, []string{"kind", "level"})
	m.serviceErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "service_errors_total",
		Help: "Failed requests to the analysis services, by service, operation and reason (api, auth, rate_limited, quota, client, server, bad_body, transport, timeout)."}, []string{"service", "op", "reason"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "service_requests_total",
		Help: "Requests to the analysis services, by service, operation and budget."}, []string{"service", "op", "budget"})
	m.budgetWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rate_limit_waits_total",
		Help: "Requests that waited for the client-side budget, by service and budget (run, report)."}, []string{"service", "budget"})
	m.budgetWaited = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rate_limit_wait_seconds_total",
		Help: "Time spent waiting for the client-side budget."}, []string{"service", "budget"})
	m.slackCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slack_api_calls_total",
		Help: "Slack Web API calls made to post and update cards, by method."}, []string{"method"})
	m.slackErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slack_api_errors_total",
		Help: "Slack Web API errors, by method and Slack error code (ratelimited for 429)."}, []string{"method", "error"})
	m.quarantined = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "quarantine_actions_total",
		Help: "Quarantine actions done, by action (removed, released)."}, []string{"action"})
	m.quarFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "quarantine_failures_total",
		Help: "Messages that reached their channel's quarantine level but could not be removed, by reason (no_token, not_allowed, other_org, already_deleted, error)."}, []string{"reason"})
	m.signals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "local_signals_total",
		Help: "Links flagged by the bot's own signals, read from the message before any service is asked, by kind (deceptive_label, lookalike, qr_code: a link read from a QR code in a shared image; qr_skipped: a message whose images were not read, too many waiting)."},
		[]string{"kind"})
	for _, k := range []string{"deceptive_label", "lookalike", "qr_code", "qr_skipped"} {
		m.signals.WithLabelValues(k)
	}
	m.unchecked = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "unchecked_targets_total",
		Help: "Targets a message's card shows as not checked although they were not judged safe, each making the message \"could not check\": links past VERDICTBOT_MAX_LINKS (kind url), files a channel with quarantine on could not check (kind file: too large, a skipped type)."}, []string{"kind"})
	m.capRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "user_cap_refused_total",
		Help: "Links and files not sent to a service because everyone who asked for them had sent VERDICTBOT_USER_LINKS_PER_HOUR within the hour, by service (reputation, sandbox)."}, []string{"service"})
	m.quarFlips = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "quarantine_flip_removals_total",
		Help: "Removals of messages a recheck flipped to their channel's quarantine level, by event (queued; held: waiting for an admin's Remove all; approved; refused: a Remove all pressed by a non-admin; retried: a passing failure, tried again; dropped: no longer at the level)."}, []string{"event"})
	m.quarQueue = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "quarantine_queue",
		Help: "Recheck removals waiting, by state (queued: for their paced turn; held: for an admin's Remove all in VERDICTBOT_ALERT_CHANNEL)."}, []string{"state"})
	m.quarQueue.WithLabelValues("queued").Set(0)
	m.quarQueue.WithLabelValues("held").Set(0)
	m.rechecks = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "recheck_runs_total",
		Help: "Recheck ticks, by result (ran; skipped: the previous run was still going; follower: another replica leads the recheck)."}, []string{"result"})
	m.flips = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "recheck_flips_total",
		Help: "Verdicts a recheck changed."})
	m.deferred = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "recheck_deferred_checks_total",
		Help: "Links not sent at first because their poster had sent VERDICTBOT_USER_LINKS_PER_HOUR within the hour, checked later by the recheck, by result (checked; failed: no verdict, the card says why)."}, []string{"result"})
	m.deferred.WithLabelValues("checked").Add(0)
	m.deferred.WithLabelValues("failed").Add(0)
	m.recheckTime = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "recheck_run_seconds",
		Help: "Duration of recheck runs.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)})
	m.recheckLag = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "recheck_lag_seconds",
		Help: "How late the oldest due recheck was when the last run on this replica began (0: nothing was overdue)."})
	m.recheckLast = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "recheck_last_run_timestamp_seconds",
		Help: "Unix time of the last recheck run on this replica (its start time until the first run)."})
	m.recheckLast.SetToCurrentTime()
	for _, c := range []prometheus.Collector{m.envelopes, m.dropped, m.ackLatency, m.scans, m.statusPolls, m.levels,
		m.serviceErrs, m.requests, m.budgetWaits, m.budgetWaited, m.slackCalls, m.slackErrors, m.rechecks, m.flips, m.deferred, m.recheckTime,
		m.recheckLag, m.recheckLast, m.quarantined, m.quarFailures, m.unchecked, m.signals, m.capRefused, m.quarFlips, m.quarQueue} {
		f(c)
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth",
		Help: "Slack payloads waiting for a worker."}, func() float64 { return float64(queueDepth()) }))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "analyses_in_flight",
		Help: "URL and file analyses running or queued."}, func() float64 { return float64(inFlight()) }))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "ready",
		Help: "1 when Socket Mode is connected and the store is open."}, func() float64 {
		if ready() {
			return 1
		}
		return 0
	}))
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchJournal exports spooled (bot.Bot.Spooled): envelopes acked while
// the journal could not be written, held in memory until it can.
func (m *Metrics) WatchJournal(spooled func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "journal_spooled",
		Help: "Envelopes acked while the journal could not be written, held in memory until it can (0 when the disk is fine)."},
		func() float64 { return float64(spooled()) }))
}

// Envelope implements bot.Observer.
func (m *Metrics) Envelope(kind string, ack time.Duration, err error) {
	result := "acked"
	if err != nil {
		result = "ack_failed"
	}
	m.envelopes.WithLabelValues(kind, result).Inc()
	m.ackLatency.Observe(ack.Seconds())
}

// Dropped implements bot.Observer.
func (m *Metrics) Dropped(kind, reason string) { m.dropped.WithLabelValues(kind, reason).Inc() }

// ServiceCall is one request attempt or budget wait of an analysis client,
// as the clients' observers report it (reputation.Event, sandbox.Event).
type ServiceCall struct {
	Service, Op, Budget string
	// Reason is the failure's reason label, "" on success.
	Reason string
	// IsWait marks a wait for the client-side budget, which lasted Wait.
	IsWait bool
	Wait   time.Duration
}

// ServiceEvent counts one request attempt or budget wait.
func (m *Metrics) ServiceEvent(e ServiceCall) {
	if e.IsWait {
		m.budgetWaits.WithLabelValues(e.Service, e.Budget).Inc()
		m.budgetWaited.WithLabelValues(e.Service, e.Budget).Add(e.Wait.Seconds())
		return
	}
	m.requests.WithLabelValues(e.Service, e.Op, e.Budget).Inc()
	if e.Reason != "" {
		m.serviceErrs.WithLabelValues(e.Service, e.Op, e.Reason).Inc()
	}
}

// ReputationEvent is the URL service client's observer
// (reputation.WithObserver).
func (m *Metrics) ReputationEvent(e reputation.Event) {
	m.ServiceEvent(ServiceCall{Service: e.Service, Op: e.Op, Budget: e.Budget, Reason: string(e.Reason), IsWait: e.IsWait, Wait: e.Wait})
}

// SandboxEvent is the sandbox client's observer (sandbox.WithObserver).
func (m *Metrics) SandboxEvent(e sandbox.Event) {
	m.ServiceEvent(ServiceCall{Service: e.Service, Op: e.Op, Budget: e.Budget, Reason: string(e.Reason), IsWait: e.IsWait, Wait: e.Wait})
}

// URLDone records a finished URL analysis (scan.URLOptions.OnDone).
func (m *Metrics) URLDone(v scan.URLVerdict) {
	outcome := "ok"
	if v.Err != nil {
		outcome = "failed"
	}
	m.scans.WithLabelValues("reputation", outcome).Inc()
	if v.Polls > 0 {
		m.statusPolls.WithLabelValues("reputation").Observe(float64(v.Polls))
	}
	m.levels.WithLabelValues("url", v.Level.Key()).Inc()
}

// FileDone records a finished file analysis (scan.FileOptions.OnDone).
func (m *Metrics) FileDone(v scan.FileVerdict) {
	outcome := "ok"
	switch {
	case v.Err != nil:
		outcome = "failed"
	case v.Level == verdict.Skipped:
		outcome = "skipped"
	case v.Reused:
		outcome = "reused"
	}
	m.scans.WithLabelValues("sandbox", outcome).Inc()
	if v.Polls > 0 {
		m.statusPolls.WithLabelValues("sandbox").Observe(float64(v.Polls))
	}
	m.levels.WithLabelValues("file", v.Level.Key()).Inc()
}

// SlackCall is notify.PosterOptions.OnCall. code is the Slack error code
// ("" on success).
func (m *Metrics) SlackCall(method, code string) {
	m.slackCalls.WithLabelValues(method).Inc()
	if code != "" {
		m.slackErrors.WithLabelValues(method, code).Inc()
	}
}

// Quarantine counts a quarantine action ("removed", "released").
func (m *Metrics) Quarantine(action string) { m.quarantined.WithLabelValues(action).Inc() }

// QuarantineFailure counts a message that could not be removed, by reason.
func (m *Metrics) QuarantineFailure(reason string) { m.quarFailures.WithLabelValues(reason).Inc() }

// Unchecked counts n targets of kind ("url", "file") a card shows as not
// checked (cards.Messages.OnUnchecked).
func (m *Metrics) Unchecked(kind string, n int) { m.unchecked.WithLabelValues(kind).Add(float64(n)) }

// Signal counts one link flagged by a local signal of kind, or (qr_code) read
// from a QR code, or (qr_skipped) a message whose images were not read.
func (m *Metrics) Signal(kind string) { m.signals.WithLabelValues(kind).Inc() }

// UserCapRefused counts a link or file not sent because its requesters
// were over VERDICTBOT_USER_LINKS_PER_HOUR (cards.UserCap.OnRefused).
func (m *Metrics) UserCapRefused(service string) { m.capRefused.WithLabelValues(service).Inc() }

// QuarantineFlip counts n events of the recheck removals' queue
// (quarantine.Quarantine.OnFlip).
func (m *Metrics) QuarantineFlip(event string, n int) {
	m.quarFlips.WithLabelValues(event).Add(float64(n))
}

// QuarantineQueue sets the recheck removals waiting (quarantine.Quarantine.OnCounts).
func (m *Metrics) QuarantineQueue(queued, held int) {
	m.quarQueue.WithLabelValues("queued").Set(float64(queued))
	m.quarQueue.WithLabelValues("held").Set(float64(held))
}

// RecheckRun is scan.Recheck.OnRun.
func (m *Metrics) RecheckRun(st scan.RunStats) {
	if st.Skipped {
		m.rechecks.WithLabelValues("skipped").Inc()
		return
	}
	if st.Follower {
		m.rechecks.WithLabelValues("follower").Inc()
		return
	}
	m.rechecks.WithLabelValues("ran").Inc()
	m.flips.Add(float64(st.Changed))
	m.deferred.WithLabelValues("checked").Add(float64(st.Deferred - st.DeferredFailed))
	m.deferred.WithLabelValues("failed").Add(float64(st.DeferredFailed))
	m.recheckTime.Observe(st.Took.Seconds())
	m.recheckLag.Set(st.Lag.Seconds())
	m.recheckLast.SetToCurrentTime()
}
