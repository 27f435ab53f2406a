// Package apiclient is the HTTP machinery the two analysis-service clients
// (reputation and sandbox) share: request building with escaped path
// segments and a trailing slash, per-budget client-side rate limiting,
// classified and bounded retries, tolerant envelope decoding, and redaction of
// the API key, which both services carry in the URL path.
//
// It knows nothing of either service's operations; those live in the
// reputation and sandbox packages, the only ones that import it.
package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Budget names the service's request-rate budget an operation draws on. The
// specs say "report requests and run requests have separate limits" (§8 of
// both): run covers submissions, report everything else.
type Budget string

// Budgets.
const (
	Run    Budget = "run"
	Report Budget = "report"
)

// Limit is a client-side token bucket: Rate requests per second on average,
// Burst at once. A zero Rate means unlimited.
type Limit struct {
	Rate  float64
	Burst int
}

// Config describes one service endpoint.
type Config struct {
	// Service names the service in errors and metrics ("reputation", "sandbox").
	Service string
	// BaseURL is the service root, http or https, optionally with a path
	// prefix (https://host/prefix).
	BaseURL string
	// Prefix is the first path segment before the key: "api" or "apineo".
	Prefix string
	// APIKey is the caller's key; it goes in the path right after Prefix and
	// never appears in errors or logs.
	APIKey string

	// HTTPClient, if set, is used as is (its Transport and CheckRedirect
	// included); CAFile and Insecure are then ignored.
	HTTPClient *http.Client
	// Timeout bounds one attempt (connect to end of body). Default 30s.
	Timeout time.Duration
	// CAFile is a PEM bundle trusted in addition to the system roots, for
	// on-premises appliances with their own CA.
	CAFile string
	// Insecure skips TLS verification. For lab appliances only.
	Insecure bool

	// RunLimit and ReportLimit are the client-side budgets.
	RunLimit, ReportLimit Limit

	// MaxRetries bounds retries after the first attempt (default 3; -1 for none).
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// retries (defaults 500ms and 30s); full jitter is applied.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps how long a Retry-After is honoured within one call
	// (default 2m); a longer one is returned as a RateLimitError.
	MaxRetryAfter time.Duration

	// Sentinels maps a documented service text to the error that
	// errors.Is matches. Prefixes maps a text prefix (for texts that end in
	// an id, e.g. "No screenshots created for task 12") to its error.
	Sentinels map[string]error
	Prefixes  map[string]error
	// RateLimitTexts are the service texts that mean "slow down" even when
	// the status is not 429; QuotaTexts mean the total quota is exhausted.
	RateLimitTexts, QuotaTexts []string

	// Logger receives one line per retry (only when the error changes) with
	// the key redacted. Default: discard.
	Logger *slog.Logger
	// Observe, if set, is called after every attempt and every rate-limit
	// wait, for metrics.
	Observe func(Event)
}

// Event is what Config.Observe receives.
type Event struct {
	Service  string
	Op       string
	Budget   Budget
	Status   int           // HTTP status, 0 when none
	Reason   Reason        // ReasonNone on success
	Duration time.Duration // the attempt
	Wait     time.Duration // time spent waiting for the budget (wait events)
	IsWait   bool          // a budget wait rather than an attempt
	Attempt  int           // 1 for the first attempt
	Priority Priority      // the lane the request waited in for its budget
}

// Client sends requests to one service.
type Client struct {
	cfg      Config
	base     *url.URL
	http     *http.Client
	red      redactor
	limiters map[Budget]*rate.Limiter
	// lanes queues the waiters of each limiter by priority (WithPriority).
	lanes map[Budget]*lanes
	// shareMu serialises Share, so that a limiter's rate and burst always
	// come from the same n.
	shareMu sync.Mutex
	log     *slog.Logger
	sleep   func(ctx context.Context, d time.Duration) error
}

// New validates cfg and builds a client.
func New(cfg Config) (*Client, error) {
	if cfg.Service == "" {
		cfg.Service = "service"
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("%s: API key is empty", cfg.Service)
	}
	if strings.ContainsAny(cfg.APIKey, "/?#") || cfg.APIKey == "." || cfg.APIKey == ".." {
		return nil, fmt.Errorf("%s: API key contains a character that cannot stand in a URL path segment", cfg.Service)
	}
	base, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want http(s)://host[:port][/prefix]", cfg.Service, cfg.BaseURL)
	}
	if base.User != nil || base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("%s: base URL must not carry credentials, a query or a fragment", cfg.Service)
	}
	base.Path = strings.TrimRight(base.Path, "/")
	base.RawPath = ""
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = 2 * time.Minute
	}
	c := &Client{
		cfg:   cfg,
		base:  base,
		red:   newRedactor(cfg.APIKey),
		log:   cfg.Logger,
		sleep: sleepCtx,
		limiters: map[Budget]*rate.Limiter{
			Run:    newLimiter(cfg.RunLimit),
			Report: newLimiter(cfg.ReportLimit),
		},
	}
	c.lanes = map[Budget]*lanes{}
	for b, lim := range c.limiters {
		c.lanes[b] = newLanes(lim)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient != nil {
		c.http = cfg.HTTPClient
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the default transport
		// (stated so that a change of transport cannot drop it; tested
		// end to end through a CONNECT proxy in cmd/verdictbot).
		tr.Proxy = http.ProxyFromEnvironment
		if cfg.CAFile != "" || cfg.Insecure {
			tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // operator's explicit choice for lab appliances
			if cfg.CAFile != "" {
				pem, err := os.ReadFile(cfg.CAFile)
				if err != nil {
					return nil, fmt.Errorf("%s: CA file: %w", cfg.Service, err)
				}
				pool, err := x509.SystemCertPool()
				if err != nil || pool == nil {
					pool = x509.NewCertPool()
				}
				if !pool.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("%s: CA file %s holds no PEM certificate", cfg.Service, cfg.CAFile)
				}
				tlsCfg.RootCAs = pool
			}
			tr.TLSClientConfig = tlsCfg
		}
		// Keep the connections that concurrent calls opened: with the
		// default 2 idle per host, hundreds of waits polling one service
		// closed nearly every connection after its call and dialled a new
		// one for the next (a handshake, two goroutines and a close per
		// status check: 6 % of the bot's CPU in the throughput benchmark).
		// Idle ones still close after IdleConnTimeout (90 s).
		tr.MaxIdleConnsPerHost = maxIdlePerHost
		tr.MaxIdleConns = max(tr.MaxIdleConns, maxIdlePerHost)
		c.http = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	}
	return c, nil
}

// maxIdlePerHost is how many idle connections to its service a Client
// keeps (one service, one host).
const maxIdlePerHost = 128

func newLimiter(l Limit) *rate.Limiter {
	if l.Rate <= 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	return rate.NewLimiter(rate.Limit(l.Rate), max(l.Burst, 1))
}

// configured returns the Limit a budget was configured with.
func (c *Client) configured(b Budget) Limit {
	if b == Run {
		return c.cfg.RunLimit
	}
	return c.cfg.ReportLimit
}

// Share divides every budget among n replicas that call the service with
// the same key (n < 1 counts as 1): each limiter gets the configured Rate/n
// and a burst of ceil(Burst/n), at least 1, so that the replicas together
// stay within the configured budget (up to that rounding of the burst).
// Tokens above the new burst are dropped. An unlimited budget stays
// unlimited, and Share(1) restores the configured budgets exactly. It is
// safe for concurrent use with requests; a request already waiting for a
// token keeps the delay it was given.
func (c *Client) Share(n int) {
	n = max(n, 1)
	c.shareMu.Lock()
	defer c.shareMu.Unlock()
	for b, lim := range c.limiters {
		l := c.configured(b)
		if l.Rate <= 0 {
			continue
		}
		r, burst := shareLimit(rate.Limit(l.Rate), max(l.Burst, 1), n)
		lim.SetLimit(r)
		lim.SetBurst(burst)
	}
}

// shareLimit returns one of n replicas' share of a finite token bucket:
// rate r/n and burst ceil(burst/n), at least 1 (n ≥ 1).
func shareLimit(r rate.Limit, burst, n int) (rate.Limit, int) {
	return r / rate.Limit(n), max((burst+n-1)/n, 1)
}

// CurrentLimit returns the budget b in force now: the configured one,
// divided by the last Share. A zero Rate means unlimited.
func (c *Client) CurrentLimit(b Budget) Limit {
	lim := c.limiters[b]
	if lim == nil || lim.Limit() == rate.Inf {
		return Limit{}
	}
	return Limit{Rate: float64(lim.Limit()), Burst: lim.Burst()}
}

// checkRedirect follows redirects for GET only (Django answers a GET without
// the trailing slash with 301), and only to the same scheme and host: the
// key is in the path and must never be sent elsewhere.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	first := via[0]
	if first.Method != http.MethodGet {
		return http.ErrUseLastResponse
	}
	if req.URL.Host != first.URL.Host || req.URL.Scheme != first.URL.Scheme {
		return fmt.Errorf("refused redirect to another host or scheme (%s://%s)", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// Redact removes the API key from s. Use it on anything derived from a
// request URL before it is logged or shown.
func (c *Client) Redact(s string) string { return c.red.String(s) }

// Service returns the configured service name.
func (c *Client) Service() string { return c.cfg.Service }

// Request is one operation.
type Request struct {
	// Op names the operation in errors and metrics ("scan", "status", …).
	Op     string
	Budget Budget
	Method string
	// Path holds the segments after the key; each is escaped. Segments "",
	// "." and ".." are refused.
	Path []string
	// Body opens the request body; it is called once per attempt and may
	// return ErrNotReplayable on a second call.
	Body        func() (io.Reader, error)
	ContentType string
	// Submission marks an operation that creates something at the service
	// (scan, create file). It is retried only when the request was never
	// written, or on 429; never after the server may have received it.
	Submission bool
	// Accept lists the media types a successful binary answer may have
	// (Do with Stream); JSON operations leave it empty.
	Accept []string
	// ContentLength, if positive, is sent as the Content-Length of a
	// streamed Body (which must then be exactly that long); otherwise a body
	// that is not a bytes or strings reader goes out chunked, which some
	// WSGI servers in front of Django read as empty.
	ContentLength int64
	// Timeout, if positive, replaces Config.Timeout for each attempt of this
	// request (a large upload needs longer than a status call).
	Timeout time.Duration
}

// ErrNotReplayable is returned by a Request.Body that cannot be opened twice.
var ErrNotReplayable = errors.New("request body cannot be sent again")

// URL builds the request URL: base, prefix, key, escaped segments, trailing
// slash. It is unexported in spirit: the result holds the key.
func (c *Client) url(segments []string) (string, error) {
	var b strings.Builder
	b.WriteString(c.base.Scheme)
	b.WriteString("://")
	b.WriteString(c.base.Host)
	b.WriteString(c.base.EscapedPath())
	b.WriteByte('/')
	b.WriteString(c.cfg.Prefix)
	b.WriteByte('/')
	b.WriteString(url.PathEscape(c.cfg.APIKey))
	b.WriteByte('/')
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("invalid path segment %q", s)
		}
		b.WriteString(url.PathEscape(s))
		b.WriteByte('/')
	}
	return b.String(), nil
}

// PathForLog returns the request path with the key replaced, for logs.
func (c *Client) PathForLog(segments []string) string {
	return "/" + c.cfg.Prefix + "/<key>/" + strings.Join(segments, "/") + "/"
}

// maxJSONBody bounds a JSON answer (a full CAPE report can be large; the
// documented answers are small).
const maxJSONBody = 16 << 20

// DoJSON sends req and decodes a successful JSON answer into out (which may be
// nil, or *json.RawMessage to keep it raw). A body whose `error` member is
// true is an *APIError whatever the HTTP status: the specs put failures in
// the body, and CAPE answers them with HTTP 200.
func (c *Client) DoJSON(ctx context.Context, req Request, out any) error {
	resp, err := c.do(ctx, req, false)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return &HTTPError{Service: c.cfg.Service, Op: req.Op, StatusCode: resp.status, ContentType: resp.contentType,
			Cause: "answer does not decode: " + c.red.String(err.Error())}
	}
	return nil
}

// Stream is a successful binary answer. The caller must Close it.
type Stream struct {
	Body          io.ReadCloser
	ContentType   string
	Disposition   string // Content-Disposition file name, if any
	ContentLength int64
}

// DoStream sends req and returns the body of a successful binary answer
// (one whose media type is in req.Accept) unread. A JSON answer is decoded
// as an envelope and returned as an error.
func (c *Client) DoStream(ctx context.Context, req Request) (*Stream, error) {
	resp, err := c.do(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return resp.stream, nil
}

type response struct {
	status      int
	contentType string
	body        []byte
	stream      *Stream
}

// attemptError carries the retry decision for one failed attempt.
type attemptError struct {
	err        error
	retry      bool
	retryAfter time.Duration
}

func (c *Client) do(ctx context.Context, req Request, stream bool) (*response, error) {
	u, err := c.url(req.Path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.cfg.Service, req.Op, err)
	}
	if req.Budget == "" {
		req.Budget = Report
	}
	var (
		last      error
		lastText  string
		bodyCalls int
	)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return nil, last
			}
			return nil, fmt.Errorf("%s %s: %w", c.cfg.Service, req.Op, err)
		}
		if err := c.wait(ctx, req); err != nil {
			if last != nil {
				return nil, last
			}
			return nil, fmt.Errorf("%s %s: waiting for the %s budget: %w", c.cfg.Service, req.Op, req.Budget, err)
		}
		var body io.Reader
		if req.Body != nil {
			bodyCalls++
			body, err = req.Body()
			if err != nil {
				if last != nil && errors.Is(err, ErrNotReplayable) {
					return nil, last
				}
				return nil, fmt.Errorf("%s %s: request body: %w", c.cfg.Service, req.Op, err)
			}
		}
		start := time.Now()
		resp, aerr := c.attempt(ctx, req, u, body, stream)
		ev := Event{Service: c.cfg.Service, Op: req.Op, Budget: req.Budget, Duration: time.Since(start), Attempt: attempt,
			Priority: PriorityOf(ctx)}
		if aerr == nil {
			ev.Status = resp.status
			c.observe(ev)
			return resp, nil
		}
		ev.Reason = ReasonOf(aerr.err)
		var he *HTTPError
		var ae *APIError
		var re *RateLimitError
		switch {
		case errors.As(aerr.err, &he):
			ev.Status = he.StatusCode
		case errors.As(aerr.err, &ae):
			ev.Status = ae.StatusCode
		case errors.As(aerr.err, &re):
			ev.Status = re.StatusCode
		}
		c.observe(ev)
		last = aerr.err
		if !aerr.retry || attempt > c.cfg.MaxRetries {
			return nil, last
		}
		delay := c.backoff(attempt)
		if aerr.retryAfter > 0 {
			if aerr.retryAfter > c.cfg.MaxRetryAfter {
				return nil, last
			}
			delay = aerr.retryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return nil, last
		}
		if text := last.Error(); text != lastText {
			lastText = text
			c.log.LogAttrs(ctx, slog.LevelWarn, "service request failed, retrying",
				slog.String("service", c.cfg.Service), slog.String("op", req.Op),
				slog.Int("attempt", attempt), slog.Duration("backoff", delay), slog.String("error", text))
		}
		if err := c.sleep(ctx, delay); err != nil {
			return nil, last
		}
	}
}

// wait takes a token from req's budget, in the lane of ctx's priority.
func (c *Client) wait(ctx context.Context, req Request) error {
	ln := c.lanes[req.Budget]
	if ln == nil || ln.lim.Limit() == rate.Inf {
		return nil
	}
	start := time.Now()
	if err := ln.Wait(ctx, PriorityOf(ctx)); err != nil {
		return err
	}
	if d := time.Since(start); d > time.Millisecond {
		c.observe(Event{Service: c.cfg.Service, Op: req.Op, Budget: req.Budget, Wait: d, IsWait: true, Priority: PriorityOf(ctx)})
	}
	return nil
}

func (c *Client) observe(ev Event) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(ev)
	}
}

// backoff returns the delay before retry number n (1-based): full jitter over
// an exponential ceiling.
func (c *Client) backoff(n int) time.Duration {
	ceil := c.cfg.MinBackoff << min(n-1, 20)
	if ceil > c.cfg.MaxBackoff || ceil <= 0 {
		ceil = c.cfg.MaxBackoff
	}
	half := ceil / 2
	return half + rand.N(half+1)
}

func (c *Client) attempt(ctx context.Context, req Request, u string, body io.Reader, stream bool) (*response, *attemptError) {
	timeout := c.cfg.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, trace), req.Method, u, body)
	if err != nil {
		cancel()
		return nil, &attemptError{err: &TransportError{Service: c.cfg.Service, Op: req.Op, msg: c.red.String(err.Error())}}
	}
	if body != nil {
		hreq.GetBody = nil // never let the transport replay a body on its own
		if req.ContentLength > 0 {
			hreq.ContentLength = req.ContentLength
		}
	}
	if req.ContentType != "" {
		hreq.Header.Set("Content-Type", req.ContentType)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "verdictbot")
	resp, err := c.http.Do(hreq)
	if err != nil {
		cancel()
		terr := c.red.transportError(c.cfg.Service, req.Op, err)
		if ctx.Err() != nil { // the caller gave up: no retry
			return nil, &attemptError{err: terr}
		}
		// A submission may be retried only if the server cannot have seen it.
		retry := !req.Submission || !wrote.Load()
		return nil, &attemptError{err: terr, retry: retry}
	}
	responseHeaders(ctx, resp)
	ctype := resp.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ctype)
	if media == "" {
		media = strings.TrimSuffix(strings.TrimSpace(strings.SplitN(ctype, ";", 2)[0]), ";")
	}
	isJSON := media == "application/json" || strings.HasSuffix(media, "+json")

	if stream && resp.StatusCode/100 == 2 && !isJSON && acceptable(media, req.Accept) {
		return &response{status: resp.StatusCode, contentType: ctype, stream: &Stream{
			Body:          &cancelOnClose{ReadCloser: resp.Body, cancel: cancel},
			ContentType:   media,
			Disposition:   dispositionName(resp.Header.Get("Content-Disposition")),
			ContentLength: resp.ContentLength,
		}}, nil
	}
	defer cancel()
	defer resp.Body.Close()
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody+1))
	if rerr != nil {
		terr := c.red.transportError(c.cfg.Service, req.Op, rerr)
		retry := !req.Submission && ctx.Err() == nil
		return nil, &attemptError{err: terr, retry: retry}
	}
	if len(raw) > maxJSONBody {
		return nil, &attemptError{err: &HTTPError{Service: c.cfg.Service, Op: req.Op, StatusCode: resp.StatusCode, ContentType: ctype, Cause: "answer larger than 16 MiB"}}
	}
	return c.classify(req, resp, ctype, raw)
}

func acceptable(media string, accept []string) bool {
	for _, a := range accept {
		if strings.EqualFold(a, media) {
			return true
		}
	}
	return false
}

func dispositionName(v string) string {
	if v == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return params["filename"]
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// classify turns a complete answer into a result or a retry decision. Order
// matters: the `error` member decides before the HTTP status.
func (c *Client) classify(req Request, resp *http.Response, ctype string, raw []byte) (*response, *attemptError) {
	status := resp.StatusCode
	retryAfter := parseRetryAfter(resp.Header.Get("Retry-After"))
	trimmed := bytes.TrimSpace(raw)
	var env Envelope
	jsonObj := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &env) == nil
	svc, op := c.cfg.Service, req.Op

	if jsonObj {
		// The service's own text, with the key removed should it echo the path.
		msg := c.red.String(env.Message())
		isFailure := bool(env.Error) || (status/100 != 2 && msg != "")
		if isFailure {
			if rl, quota := c.isRateText(msg); rl || quota || status == http.StatusTooManyRequests {
				e := &RateLimitError{Service: svc, Op: op, StatusCode: status, RetryAfter: retryAfter, Message: msg, Quota: quota}
				return nil, &attemptError{err: e, retry: !quota, retryAfter: retryAfter}
			}
			if msg == "" {
				msg = "the service reported an error without a message"
			}
			return nil, &attemptError{err: &APIError{Service: svc, Op: op, StatusCode: status, Message: msg, Kind: c.sentinel(msg)}}
		}
		if status/100 == 2 {
			return &response{status: status, contentType: ctype, body: trimmed}, nil
		}
	}

	if status/100 == 2 && len(trimmed) > 0 && !jsonObj && json.Valid(trimmed) {
		return &response{status: status, contentType: ctype, body: trimmed}, nil
	}
	// Not a usable JSON answer (or a JSON one with a non-2xx status and no text).
	switch {
	case status == http.StatusTooManyRequests:
		e := &RateLimitError{Service: svc, Op: op, StatusCode: status, RetryAfter: retryAfter, Message: c.snippet(raw)}
		return nil, &attemptError{err: e, retry: true, retryAfter: retryAfter}
	case status/100 == 2 && len(trimmed) == 0:
		return nil, &attemptError{err: &HTTPError{Service: svc, Op: op, StatusCode: status, ContentType: ctype, Cause: "empty answer"}, retry: !req.Submission}
	}
	he := &HTTPError{Service: svc, Op: op, StatusCode: status, ContentType: ctype, Snippet: c.snippet(raw)}
	switch {
	case looksHTML(trimmed, ctype):
		he.Cause = "HTML page instead of JSON"
	case jsonObj:
		he.Cause = "unexpected HTTP status"
	case status/100 == 2:
		he.Cause = "answer is not JSON"
	default:
		he.Cause = "unexpected answer"
	}
	if status == 404 && looksHTML(trimmed, ctype) {
		he.Cause = "no such path at the service (HTML 404); check the base URL"
	}
	// 5xx and odd 2xx bodies are usually a proxy or a crash: worth a retry,
	// except for a submission the server may have acted on.
	retry := !req.Submission && (status >= 500 || status/100 == 2 || status == http.StatusRequestTimeout)
	return nil, &attemptError{err: he, retry: retry, retryAfter: retryAfterIf(status == http.StatusServiceUnavailable, retryAfter)}
}

func retryAfterIf(ok bool, d time.Duration) time.Duration {
	if ok {
		return d
	}
	return 0
}

func (c *Client) isRateText(msg string) (rateLimited, quota bool) {
	for _, t := range c.cfg.QuotaTexts {
		if strings.EqualFold(msg, t) {
			return false, true
		}
	}
	for _, t := range c.cfg.RateLimitTexts {
		if strings.EqualFold(msg, t) {
			return true, false
		}
	}
	return false, false
}

func (c *Client) sentinel(msg string) error {
	if e, ok := c.cfg.Sentinels[msg]; ok {
		return e
	}
	for p, e := range c.cfg.Prefixes {
		if strings.HasPrefix(msg, p) {
			return e
		}
	}
	return nil
}

func looksHTML(b []byte, ctype string) bool {
	if strings.Contains(strings.ToLower(ctype), "html") {
		return true
	}
	head := strings.ToLower(string(b[:min(len(b), 256)]))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") || strings.Contains(head, "<body")
}

// snippet returns up to 120 runes of the body, one line, key redacted.
func (c *Client) snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b[:min(len(b), 2048)])), " ")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "?")
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return c.red.String(s)
}

// parseRetryAfter reads seconds or an HTTP date; zero when absent or bad.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// JSONBody returns a Request.Body for a small JSON value; it can be opened
// any number of times.
func JSONBody(v any) (func() (io.Reader, error), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return func() (io.Reader, error) { return bytes.NewReader(b), nil }, nil
}
