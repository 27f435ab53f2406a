package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// DefaultDeadAfter is how many refusals in a row make an event a dead
// letter (issue 21).
const DefaultDeadAfter = 20

// Sender posts the queued events to the webhook one by one, in sequence
// order, each signed; an event leaves the queue only after a 2xx answer.
//
// Failed attempts are retried with exponential backoff (MinBackoff
// doubling up to MaxBackoff), or after Retry-After on 429 and 503, and the
// event stays queued: network errors, 5xx, 408, 425, 429, the answers that
// say the receiver or its URL is not ready for any event (401, 403, 407:
// credentials; 404, 405, 410, 421: the URL), and 3xx: a redirect is never
// followed (a 302 would turn the POST into a bodiless GET, a 307 would
// send the body and its signature to wherever it points), it is a failed
// delivery, counted (OnRedirect) and logged with where it pointed (scheme
// and host only). Those never make a dead letter: they would fail for
// every event alike.
//
// Every other 4xx (400, 409, 413, 422…) refuses this event: after
// DeadAfter refusals in a row (failures of the other kinds between them
// neither count nor break the row) the event goes to the dead-letter list
// (store.EventQueue.DeadLetterEvent), counted and logged, and the next
// event is sent: one event the receiver will not take never blocks the
// queue, and the order of the others is kept. `verdictbot events retry`
// queues dead letters again.
//
// With Lead set, the sender acts only as the leader of the job "events"
// (store.State.Lead), and only within its term: each attempt ends within
// the term's Remaining time, the event leaves the queue by a write fenced
// by the term, and the sender stops when the term ends. An attempt under
// way when the term ends is not cut short (a receiver may take a request
// whose sender gave up): it ends within the term, and its event leaves the
// queue by the fenced write, which the term's margin leaves time for. A
// replica that lost the lead without noticing sends nothing the new
// leader sends.
type Sender struct {
	Queue store.EventQueue
	// URL is VERDICTBOT_EVENTS_URL; Secret VERDICTBOT_EVENTS_SECRET ("":
	// unsigned).
	URL    string
	Secret []byte
	Client *http.Client
	// Lead, if set, makes this process the one sender among the replicas
	// (store.State.Lead): order holds only with one sender at a time.
	Lead func(ctx context.Context, job string) (store.Lease, bool, error)
	// Wake is signalled when an event is queued here; Poll is how often
	// the queue is read anyway (events of other replicas; default 1s).
	Wake <-chan struct{}
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed attempts
	// (default 1s and 1 min); MaxRetryAfter caps a Retry-After (5 min).
	MinBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// Timeout bounds one attempt (default 30s; less when the lead's term
	// has less left).
	Timeout time.Duration
	// DeadAfter is how many refusals in a row make an event a dead letter
	// (default DefaultDeadAfter).
	DeadAfter int
	UserAgent string
	Log       *slog.Logger
	// Now is the clock of the signatures' timestamps (default time.Now).
	Now func() time.Time
	// OnSent, OnFailed, OnDeadLettered and OnRedirect feed the metrics;
	// OnRedirect's to is same_host, other_host, plain_http (a plain-http
	// Location that is not loopback) or none (no usable Location).
	OnSent         func()
	OnFailed       func(reason string)
	OnDeadLettered func()
	OnRedirect     func(to string)
}

// errLeadLost ends a drain whose term of the lead ended.
var errLeadLost = errors.New("the lead of the event sender ended")

// Run sends until ctx ends; it returns nil then. An attempt under way at
// shutdown is abandoned; its event stays queued and is sent again.
func (s *Sender) Run(ctx context.Context) error {
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		switch err := s.drainLeading(ctx); {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, errLeadLost):
			s.log().Info("the event sender's lead ended; another replica sends, or this one at its next term")
		default:
			s.log().Warn("event sender", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.Wake:
		case <-t.C:
		}
	}
}

// drainLeading sends what is queued, as the leader, until the queue is
// empty or the term ends.
func (s *Sender) drainLeading(ctx context.Context) error {
	if n, err := s.Queue.EventsQueued(); err != nil || n == 0 {
		return err
	}
	if s.Lead == nil {
		return s.drain(ctx, nil)
	}
	lease, ok, err := s.Lead(ctx, "events")
	if err != nil || !ok {
		return err
	}
	defer lease.Release()
	err = s.drain(ctx, lease)
	if err == nil && ctx.Err() == nil && lease.Remaining() == 0 {
		err = errLeadLost
	}
	return err
}

// flushAfter bounds how long a delivered event waits for the write that
// takes it out of the queue, and flushMax how many wait (see drain).
const (
	flushAfter = 250 * time.Millisecond
	flushMax   = 32
)

// drain sends queued events until the queue is empty or ctx ends.
//
// The events delivered in a row leave the queue in one write
// (DeleteEvents): flushAfter after the first of them was delivered (the
// drain waits that long for more events before it ends), once flushMax
// are waiting, before any wait for a retry or a dead letter, and when the
// drain ends: one commit for the events of a quarter second rather than
// one per event (issue 23: it was a quarter of the store's commits per
// link). A process that dies before that write sends those events again,
// as it would have sent the one event whose write it had not made:
// receivers see each event at least once, in order, with its sequence
// number to drop a repeat by.
func (s *Sender) drain(ctx context.Context, lease store.Lease) (err error) {
	var fence store.Fence
	var ended <-chan struct{} // the term's end stops a wait for a retry
	if lease != nil {
		fence, ended = lease.Fence(), lease.Done()
	}
	var sent []uint64 // delivered, still queued
	var since time.Time
	flush := func() error {
		if len(sent) == 0 {
			return nil
		}
		if err := s.settle(ctx, lease, func() error { return s.Queue.DeleteEvents(sent, fence) }); err != nil {
			// Sent: the next leader (or this one) sends them again. They
			// are not tried again here (the drain ends).
			s.log().Warn("events sent but still queued: they will be sent again", "events", len(sent), "first_seq", sent[0], "error", err)
			sent = sent[:0]
			if errors.Is(err, store.ErrNotLeader) {
				return errLeadLost
			}
			return err
		}
		if s.OnSent != nil {
			for range sent {
				s.OnSent()
			}
		}
		sent = sent[:0]
		return nil
	}
	// Whatever ends the drain, what was delivered leaves the queue (one
	// attempt at shutdown: settle tries once when ctx is done).
	defer func() {
		if ferr := flush(); err == nil && ctx.Err() == nil {
			err = ferr
		}
	}()
	backoff := time.Duration(0)
	lastErr := ""
	for ctx.Err() == nil {
		if len(sent) >= flushMax {
			if err := flush(); err != nil {
				return err
			}
		}
		// Past what was delivered and waits for its write: reading those
		// again for each event delivered was 13 % of the bot's allocations
		// with events on (issue 23).
		var after uint64
		if len(sent) > 0 {
			after = sent[len(sent)-1]
		}
		batch, err := s.Queue.QueuedEvents(after, flushMax+64)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			if len(sent) == 0 {
				return nil
			}
			// Wait a little for more events, then take the delivered
			// ones out of the queue in one write.
			t := time.NewTimer(time.Until(since.Add(flushAfter)))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-ended:
				t.Stop()
				return errLeadLost
			case <-s.Wake:
				t.Stop()
				continue
			case <-t.C:
			}
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		for _, ev := range batch {
			refusals := 0
			for {
				budget, ok := s.budget(lease)
				if !ok {
					return errLeadLost
				}
				a := s.send(ctx, ev, budget, fence.Token)
				if ctx.Err() != nil {
					return nil
				}
				if a.err == nil {
					if lastErr != "" {
						s.log().Info("events delivered again", "seq", ev.Seq, "host", s.host())
						lastErr = ""
					}
					backoff = 0
					if len(sent) == 0 {
						since = time.Now()
					}
					sent = append(sent, ev.Seq)
					if time.Since(since) >= flushAfter {
						if err := flush(); err != nil {
							return err
						}
					}
					break
				}
				// Before a wait or a dead letter, the events delivered so
				// far leave the queue (it stays contiguous from its front).
				if err := flush(); err != nil {
					return err
				}
				if a.refused {
					refusals++
					if refusals >= s.deadAfter() {
						why := store.DeadLetter{Failures: refusals, Status: a.status, Error: a.err.Error()}
						if err := s.settle(ctx, lease, func() error { return s.Queue.DeadLetterEvent(ev.Seq, why, fence) }); err != nil {
							if errors.Is(err, store.ErrNotLeader) {
								return errLeadLost
							}
							return err
						}
						s.log().Error("the events receiver refused an event "+strconv.Itoa(refusals)+" times in a row: it is set aside as a dead letter, and the next events are sent (verdictbot events list; verdictbot events retry)",
							"seq", ev.Seq, "status", a.status, "host", s.host())
						if s.OnDeadLettered != nil {
							s.OnDeadLettered()
						}
						lastErr, backoff = "", 0
						break
					}
				}
				wait := a.wait
				if wait == 0 {
					backoff = s.next(backoff)
					wait = backoff
				}
				// One line per new kind of failure; the repeats at debug level.
				lvl := slog.LevelDebug
				if a.err.Error() != lastErr {
					lvl, lastErr = slog.LevelWarn, a.err.Error()
				}
				attrs := []any{"seq", ev.Seq, "in", wait, "error", a.err}
				if a.refused {
					attrs = append(attrs, "refusals", refusals, "dead_letter_after", s.deadAfter())
				}
				s.log().Log(ctx, lvl, "event not delivered; retrying", attrs...)
				select {
				case <-ctx.Done():
					return nil
				case <-ended:
					return errLeadLost
				case <-time.After(wait):
				}
			}
		}
	}
	return nil
}

// minAttempt is the least time an attempt is given: with less left in the
// term, the sender stops rather than risk outliving it.
const minAttempt = time.Second

// budget is how long the next attempt may take: Timeout, within the
// term's remaining time; ok is false when too little is left.
func (s *Sender) budget(lease store.Lease) (time.Duration, bool) {
	d := s.Timeout
	if d <= 0 {
		d = 30 * time.Second
	}
	if lease == nil {
		return d, true
	}
	r := lease.Remaining()
	if r < minAttempt {
		return 0, false
	}
	return min(d, r), true
}

// settle makes the write that follows an attempt (the event leaves the
// queue), retrying a failed one a few times while the term lasts: the
// event was delivered, and sending it again is what a failure costs.
// store.ErrNotLeader is returned at once.
func (s *Sender) settle(ctx context.Context, lease store.Lease, write func() error) error {
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		err := write()
		if err == nil || errors.Is(err, store.ErrNotLeader) || try == 5 {
			return err
		}
		if lease != nil && lease.Remaining() < wait {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (s *Sender) deadAfter() int {
	if s.DeadAfter > 0 {
		return s.DeadAfter
	}
	return DefaultDeadAfter
}

func (s *Sender) next(b time.Duration) time.Duration {
	lo, hi := s.MinBackoff, s.MaxBackoff
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = time.Minute
	}
	if b < lo {
		return lo
	}
	return min(2*b, hi)
}

// SendTest posts one test event (KindTest, built for product p) to URL
// as a queued event is posted: the same headers, signed with Secret when
// set, within Timeout, no redirect followed. It is outside the queue: its
// sequence number (header and metadata) is 0. It returns the answer's
// HTTP status (0 when there was none) and nil for a 2xx answer, else the
// attempt's error, whose text names URL's scheme and host only (the path
// and query may hold a token). `verdictbot doctor --send-test-event`.
func (s *Sender) SendTest(ctx context.Context, p Product) (int, error) {
	body, err := json.Marshal(Build(Finding{Kind: KindTest}, p, NewUID()))
	if err != nil {
		return 0, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	a := s.send(ctx, store.QueuedEvent{Body: body}, timeout, 0)
	return a.status, a.err
}

// deliveryError is a failed attempt; reason feeds the metric.
type deliveryError struct {
	reason string
	msg    string
}

func (e *deliveryError) Error() string { return e.msg }

// attempt is the outcome of one POST: err nil when delivered; refused when
// the receiver refused this event (status); wait the Retry-After (0: back
// off).
type attempt struct {
	err     error
	refused bool
	status  int
	wait    time.Duration
}

// noRedirects makes a client return a 3xx as it is.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// send makes one attempt, within budget.
func (s *Sender) send(ctx context.Context, ev store.QueuedEvent, budget time.Duration, term uint64) (a attempt) {
	defer func() {
		var de *deliveryError
		if errors.As(a.err, &de) && s.OnFailed != nil {
			s.OnFailed(de.reason)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return attempt{err: &deliveryError{"request", "VERDICTBOT_EVENTS_URL: cannot build the request"}}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ts := now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SequenceHeader, strconv.FormatUint(ev.Seq, 10))
	req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
	if term > 0 {
		req.Header.Set(TermHeader, strconv.FormatUint(term, 10))
	}
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	if len(s.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(s.Secret, ts, ev.Body))
		req.Header.Set(LegacySignatureHeader, SignLegacy(s.Secret, ev.Body))
	}
	client := http.Client{Transport: http.DefaultTransport}
	if s.Client != nil {
		client = *s.Client
	}
	client.CheckRedirect = noRedirects
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error carries the URL, which may carry a token: keep the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return attempt{err: &deliveryError{"network", fmt.Sprintf("POST to %s: %v", s.host(), err)}}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	c := resp.StatusCode
	failed := func(reason, msg string) attempt {
		return attempt{err: &deliveryError{reason, fmt.Sprintf("POST to %s: %s%s", s.host(), resp.Status, msg)}, status: c}
	}
	switch {
	case c >= 200 && c < 300:
		return attempt{status: c}
	case c >= 300 && c < 400:
		where, to := s.location(resp.Header.Get("Location"))
		if s.OnRedirect != nil {
			s.OnRedirect(to)
		}
		return failed("redirect", ", a redirect to "+where+", not followed: set VERDICTBOT_EVENTS_URL to the receiver's own URL")
	case c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable:
		a := failed("rate_limited", "")
		a.wait = s.retryAfter(resp.Header.Get("Retry-After"))
		return a
	case c == http.StatusUnauthorized || c == http.StatusForbidden || c == http.StatusProxyAuthRequired:
		return failed("auth", " (check VERDICTBOT_EVENTS_SECRET and the receiver's token)")
	case c >= 500 || c == http.StatusRequestTimeout || c == http.StatusTooEarly:
		return failed("server", "")
	case c == http.StatusNotFound || c == http.StatusMethodNotAllowed || c == http.StatusGone || c == http.StatusMisdirectedRequest:
		return failed("client", " (the URL does not take events: check VERDICTBOT_EVENTS_URL)")
	case c >= 400:
		a := failed("refused", " (the receiver refused this event)")
		a.refused = true
		return a
	}
	return failed("client", "")
}

// location says where a redirect pointed, for the log and the metric:
// scheme and host only ("/…" when it had a path), since the path and the
// query may hold a token and the user info a password; and the kind of
// place (same_host, other_host, plain_http, none).
func (s *Sender) location(raw string) (where, to string) {
	base, err := url.Parse(s.URL)
	if raw == "" || err != nil {
		return "(no Location)", "none"
	}
	u, err := base.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "(an unusable Location)", "none"
	}
	where = u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" {
		where += "/…"
	}
	switch {
	case u.Scheme == "http" && !loopback(u.Hostname()):
		to = "plain_http"
	case strings.EqualFold(u.Host, base.Host):
		to = "same_host"
	default:
		to = "other_host"
	}
	return where, to
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// retryAfter reads a Retry-After (seconds or an HTTP date), capped.
func (s *Sender) retryAfter(h string) time.Duration {
	limit := s.MaxRetryAfter
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	var d time.Duration
	if n, err := strconv.Atoi(h); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = time.Until(t)
	}
	if d <= 0 {
		return 0
	}
	return min(d, limit)
}

// host is the webhook's scheme and host, for logs: the path and query may
// hold a token.
func (s *Sender) host() string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return "VERDICTBOT_EVENTS_URL"
	}
	return u.Scheme + "://" + u.Host
}

func (s *Sender) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
