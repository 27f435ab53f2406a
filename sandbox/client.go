package sandbox

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// ServiceName is the name of this service in errors, logs and
// Event.Service.
const ServiceName = "sandbox"

// Default budgets. The spec gives no numbers (§8: "report requests and run
// requests have separate limits"; "numeric rate limits and totals: not
// shown"); these are conservative and configurable with WithRateLimits.
var (
	// DefaultRunLimit covers CreateFile: 1 upload/s, burst 2.
	DefaultRunLimit = Limit{Rate: 1, Burst: 2}
	// DefaultReportLimit covers every other operation: 5 requests/s, burst 10.
	DefaultReportLimit = Limit{Rate: 5, Burst: 10}
)

// Limit is a client-side token bucket: Rate requests per second on average,
// Burst at once. A zero Rate means unlimited.
type Limit struct {
	Rate  float64
	Burst int
}

func (l Limit) core() apiclient.Limit { return apiclient.Limit{Rate: l.Rate, Burst: l.Burst} }

// Budgets an operation draws on (spec §8): run covers CreateFile, report
// every other operation.
const (
	BudgetRun    = "run"
	BudgetReport = "report"
)

// Event is what an observer (WithObserver) receives after every request
// attempt and every wait for a budget, for metrics.
type Event struct {
	Service  string // ServiceName
	Op       string // one of the Op constants
	Budget   string // BudgetRun or BudgetReport
	Status   int    // HTTP status, 0 when none
	Reason   Reason // ReasonNone on success
	Duration time.Duration
	Wait     time.Duration // time spent waiting for the budget (IsWait)
	IsWait   bool          // a budget wait rather than an attempt
	Attempt  int           // 1 for the first attempt
	// Priority is the lane the request waited in for its budget: "high"
	// (new files) or "low" (resumed analyses); see WithPriority.
	Priority string
}

func eventOf(e apiclient.Event) Event {
	return Event{Service: e.Service, Op: e.Op, Budget: string(e.Budget), Status: e.Status, Reason: Reason(e.Reason),
		Duration: e.Duration, Wait: e.Wait, IsWait: e.IsWait, Attempt: e.Attempt, Priority: e.Priority.String()}
}

// DefaultUploadTimeout bounds one CreateFile attempt: about 28.6 MiB (CAPE's
// 30,000,000-byte max_sample_size, CAPEv2's tasks/create/file) at 1 Mbit/s takes 4 min.
const DefaultUploadTimeout = 5 * time.Minute

// Client talks to one sandbox service with one key. It is safe for
// concurrent use.
type Client struct {
	api           *apiclient.Client
	log           *slog.Logger
	uploadTimeout time.Duration
}

// settings is what the options change.
type settings struct {
	cfg           apiclient.Config
	uploadTimeout time.Duration
}

// Option configures a Client.
type Option func(*settings)

// WithHTTPClient uses hc for every request, its transport, TLS settings and
// redirect policy included (WithCAFile and WithInsecureTLS are then
// ignored). Keep redirects limited to the same host: the key is in the path.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.cfg.HTTPClient = hc } }

// WithTimeout bounds one attempt of a read operation, from connecting to the
// end of the body (default 30s).
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.cfg.Timeout = d } }

// WithUploadTimeout bounds one CreateFile attempt (default
// DefaultUploadTimeout).
func WithUploadTimeout(d time.Duration) Option { return func(s *settings) { s.uploadTimeout = d } }

// WithCAFile trusts the PEM certificates in path in addition to the system
// roots, for on-premises appliances with their own CA (one public client
// of the service reaches it on a private address without TLS checks).
func WithCAFile(path string) Option { return func(s *settings) { s.cfg.CAFile = path } }

// WithInsecureTLS skips certificate verification. For lab appliances only.
func WithInsecureTLS() Option { return func(s *settings) { s.cfg.Insecure = true } }

// WithRateLimits sets the client-side budgets: run covers CreateFile, report
// every other operation (spec §8). A zero Limit is unlimited.
func WithRateLimits(run, report Limit) Option {
	return func(s *settings) { s.cfg.RunLimit, s.cfg.ReportLimit = run.core(), report.core() }
}

// WithRetries sets how many times a retryable failure is retried (-1: never;
// 0 keeps the default of 3) and the bounds of the backoff between retries
// (zero keeps the defaults, 500ms and 30s).
func WithRetries(n int, minBackoff, maxBackoff time.Duration) Option {
	return func(s *settings) { s.cfg.MaxRetries, s.cfg.MinBackoff, s.cfg.MaxBackoff = n, minBackoff, maxBackoff }
}

// WithLogger receives one line per retry and per transient polling error,
// key redacted. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.cfg.Logger = l } }

// WithObserver is called after every attempt and every budget wait, for
// metrics.
func WithObserver(f func(Event)) Option {
	return func(s *settings) {
		if f == nil {
			s.cfg.Observe = nil
			return
		}
		s.cfg.Observe = func(e apiclient.Event) { f(eventOf(e)) }
	}
}

// New returns a client for the sandbox at baseURL (http or https, optionally
// with a path prefix; requests go to <baseURL>/apineo/<apiKey>/…, spec §5).
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	s := settings{
		cfg: apiclient.Config{
			Service:        ServiceName,
			BaseURL:        baseURL,
			Prefix:         "apineo",
			APIKey:         apiKey,
			RunLimit:       DefaultRunLimit.core(),
			ReportLimit:    DefaultReportLimit.core(),
			Sentinels:      sentinels,
			Prefixes:       prefixes,
			RateLimitTexts: rateLimitTexts,
			QuotaTexts:     quotaTexts,
		},
		uploadTimeout: DefaultUploadTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	api, err := apiclient.New(s.cfg)
	if err != nil {
		return nil, err
	}
	log := s.cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.uploadTimeout <= 0 {
		s.uploadTimeout = DefaultUploadTimeout
	}
	return &Client{api: api, log: log, uploadTimeout: s.uploadTimeout}, nil
}

// ShareBudgets divides the run and report budgets among n replicas that use
// the same key (n < 1 counts as 1), so that together they stay within the
// configured budgets: each gets Rate/n and a burst of ceil(Burst/n), at least
// 1. An unlimited budget stays unlimited; ShareBudgets(1) restores the
// configured budgets. Call it again whenever n changes. It is safe for
// concurrent use with requests, and does nothing on a nil Client.
func (c *Client) ShareBudgets(n int) {
	if c == nil {
		return
	}
	c.api.Share(n)
}

// Budgets returns the run and report budgets in force now (see
// ShareBudgets). A zero Rate means unlimited.
func (c *Client) Budgets() (run, report Limit) {
	r, q := c.api.CurrentLimit(apiclient.Run), c.api.CurrentLimit(apiclient.Report)
	return Limit{Rate: r.Rate, Burst: r.Burst}, Limit{Rate: q.Rate, Burst: q.Burst}
}

// do sends req through the HTTP core and returns its failure as this
// package's error type.
func (c *Client) do(ctx context.Context, req apiclient.Request, out any) error {
	return wrapErr(c.api.DoJSON(ctx, req, out))
}

// stream is do for a binary answer.
func (c *Client) stream(ctx context.Context, req apiclient.Request) (*apiclient.Stream, error) {
	st, err := c.api.DoStream(ctx, req)
	return st, wrapErr(err)
}
