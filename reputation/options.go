package reputation

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// ServiceName is the name of this service in errors, logs and Event.Service.
const ServiceName = "reputation"

// Limit is a client-side token bucket: Rate requests per second on average,
// Burst at once. A zero Rate means unlimited.
type Limit struct {
	Rate  float64
	Burst int
}

func (l Limit) core() apiclient.Limit { return apiclient.Limit{Rate: l.Rate, Burst: l.Burst} }

// Default budgets. The contract's numbers are "not shown" (spec §8); these
// stay below the simulator's defaults (run 2/s, report 10/s) and are
// configurable (VERDICTBOT_REPUTATION_RUN_RATE / _REPORT_RATE).
var (
	DefaultRunLimit    = Limit{Rate: 1, Burst: 2}
	DefaultReportLimit = Limit{Rate: 5, Burst: 10}
)

// Budgets an operation draws on (spec §8: "report requests and run requests
// have separate limits"): run covers Scan, report everything else.
const (
	BudgetRun    = "run"
	BudgetReport = "report"
)

// Event is what an observer (WithObserver) receives after every request
// attempt and every wait for a budget, for metrics.
type Event struct {
	Service  string // ServiceName
	Op       string // "scan", "status", "result", "detail", "search", "verdict_report"
	Budget   string // BudgetRun or BudgetReport
	Status   int    // HTTP status, 0 when none
	Reason   Reason // ReasonNone on success
	Duration time.Duration
	Wait     time.Duration // time spent waiting for the budget (IsWait)
	IsWait   bool          // a budget wait rather than an attempt
	Attempt  int           // 1 for the first attempt
	// Priority is the lane the request waited in for its budget: "high"
	// (new links, clicks) or "low" (resumed analyses, rechecks); see
	// WithPriority.
	Priority string
}

func eventOf(e apiclient.Event) Event {
	return Event{Service: e.Service, Op: e.Op, Budget: string(e.Budget), Status: e.Status, Reason: Reason(e.Reason),
		Duration: e.Duration, Wait: e.Wait, IsWait: e.IsWait, Attempt: e.Attempt,
		Priority: e.Priority.String()}
}

// Option configures a Client.
type Option func(*settings)

// settings is what the options change: the shared HTTP core's configuration.
type settings struct{ cfg apiclient.Config }

// WithHTTPClient uses hc for every request (its TLS and redirect policy too;
// WithCAFile and WithInsecureTLS are then ignored). Keep redirects limited
// to the same host: the key is in the path.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.cfg.HTTPClient = hc } }

// WithTimeout bounds one attempt (default 30s).
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.cfg.Timeout = d } }

// WithCAFile trusts the PEM certificates in path in addition to the system roots.
func WithCAFile(path string) Option { return func(s *settings) { s.cfg.CAFile = path } }

// WithInsecureTLS skips certificate verification (lab appliances only).
func WithInsecureTLS() Option { return func(s *settings) { s.cfg.Insecure = true } }

// WithRateLimits sets the client-side run (scan) and report (everything
// else) budgets (default DefaultRunLimit, DefaultReportLimit). A zero Limit
// is unlimited.
func WithRateLimits(run, report Limit) Option {
	return func(s *settings) { s.cfg.RunLimit, s.cfg.ReportLimit = run.core(), report.core() }
}

// WithRetries sets how many times a retryable failure is retried (-1: never)
// and the backoff bounds.
func WithRetries(n int, minBackoff, maxBackoff time.Duration) Option {
	return func(s *settings) { s.cfg.MaxRetries, s.cfg.MinBackoff, s.cfg.MaxBackoff = n, minBackoff, maxBackoff }
}

// WithLogger logs retries (key redacted).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.cfg.Logger = l } }

// WithObserver receives every attempt and budget wait, for metrics.
func WithObserver(f func(Event)) Option {
	return func(s *settings) {
		if f == nil {
			s.cfg.Observe = nil
			return
		}
		s.cfg.Observe = func(e apiclient.Event) { f(eventOf(e)) }
	}
}
