package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// SignatureHeader carries the body's HMAC-SHA256 under
// VERDICTBOT_EVENTS_SECRET, as "sha256=<hex>".
const SignatureHeader = "X-Verdictbot-Signature"

// SequenceHeader carries the event's sequence number (also in the body,
// metadata.sequence), so a receiver can spot a resent event.
const SequenceHeader = "X-Verdictbot-Sequence"

// Sign returns the signature header's value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify is what a receiver does: recompute the HMAC of the body it read
// and compare in constant time.
func Verify(secret, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(Sign(secret, body)))
}

// Sender posts the queued events to the webhook one by one, in sequence
// order, each signed; an event leaves the queue only after a 2xx answer.
// Failed attempts are retried with exponential backoff (MinBackoff
// doubling up to MaxBackoff), or after Retry-After on 429 and 503. A
// receiver that refuses one event as malformed (400, 413, 422) would stop
// the queue for ever: that event is dropped, counted and logged.
type Sender struct {
	Queue store.EventQueue
	// URL is VERDICTBOT_EVENTS_URL; Secret VERDICTBOT_EVENTS_SECRET ("":
	// unsigned).
	URL    string
	Secret []byte
	Client *http.Client
	// Lead, if set, makes this process the one sender among the replicas
	// (store.State.Lead): order holds only with one sender at a time.
	Lead func(ctx context.Context, job string) (release func(), ok bool, err error)
	// Wake is signalled when an event is queued here; Poll is how often
	// the queue is read anyway (events of other replicas; default 1s).
	Wake <-chan struct{}
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed attempts
	// (default 1s and 1 min); MaxRetryAfter caps a Retry-After (5 min).
	MinBackoff, MaxBackoff, MaxRetryAfter time.Duration
	UserAgent                             string
	Log                                   *slog.Logger
	// OnSent, OnFailed and OnDropped feed the metrics.
	OnSent    func()
	OnFailed  func(reason string)
	OnDropped func(reason string, n int)
}

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
		if err := s.drainLeading(ctx); err != nil && ctx.Err() == nil {
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

// drainLeading sends what is queued, as the leader.
func (s *Sender) drainLeading(ctx context.Context) error {
	if n, err := s.Queue.EventsQueued(); err != nil || n == 0 {
		return err
	}
	if s.Lead != nil {
		release, ok, err := s.Lead(ctx, "events")
		if err != nil || !ok {
			return err
		}
		defer release()
	}
	return s.drain(ctx)
}

// drain sends queued events until the queue is empty or ctx ends.
func (s *Sender) drain(ctx context.Context) error {
	backoff := time.Duration(0)
	lastErr := ""
	for ctx.Err() == nil {
		batch, err := s.Queue.QueuedEvents(64)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, ev := range batch {
			for {
				wait, err := s.send(ctx, ev)
				if ctx.Err() != nil {
					return nil
				}
				if err == nil {
					if lastErr != "" {
						s.log().Info("events delivered again", "seq", ev.Seq, "host", s.host())
						lastErr = ""
					}
					backoff = 0
					break
				}
				if wait == 0 {
					backoff = s.next(backoff)
					wait = backoff
				}
				// One line per new kind of failure; the repeats at debug level.
				lvl := slog.LevelDebug
				if err.Error() != lastErr {
					lvl, lastErr = slog.LevelWarn, err.Error()
				}
				s.log().Log(ctx, lvl, "event not delivered; retrying", "seq", ev.Seq, "in", wait, "error", err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
	}
	return nil
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

// deliveryError is a failed attempt; reason feeds the metric.
type deliveryError struct {
	reason string
	msg    string
}

func (e *deliveryError) Error() string { return e.msg }

// send makes one attempt. nil: delivered (or dropped as refused), and
// removed from the queue. Otherwise wait is the Retry-After (0: back off).
func (s *Sender) send(ctx context.Context, ev store.QueuedEvent) (wait time.Duration, err error) {
	defer func() {
		var de *deliveryError
		if errors.As(err, &de) && s.OnFailed != nil {
			s.OnFailed(de.reason)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, &deliveryError{"request", "VERDICTBOT_EVENTS_URL: cannot build the request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SequenceHeader, strconv.FormatUint(ev.Seq, 10))
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	if len(s.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(s.Secret, ev.Body))
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error carries the URL, which may carry a token: keep the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, &deliveryError{"network", fmt.Sprintf("POST to %s: %v", s.host(), err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		if err := s.Queue.DeleteEvent(ev.Seq); err != nil {
			// Sent: the receiver may get it again after a restart.
			s.log().Warn("event sent but still queued", "seq", ev.Seq, "error", err)
		}
		if s.OnSent != nil {
			s.OnSent()
		}
		return 0, nil
	case c == http.StatusBadRequest || c == http.StatusRequestEntityTooLarge || c == http.StatusUnprocessableEntity:
		s.log().Warn("the events receiver refused an event; it is dropped", "seq", ev.Seq, "status", c, "host", s.host())
		if err := s.Queue.DeleteEvent(ev.Seq); err != nil {
			return 0, err
		}
		if s.OnDropped != nil {
			s.OnDropped("refused", 1)
		}
		return 0, nil
	case c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable:
		return s.retryAfter(resp.Header.Get("Retry-After")), &deliveryError{"rate_limited", fmt.Sprintf("POST to %s: %s", s.host(), resp.Status)}
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return 0, &deliveryError{"auth", fmt.Sprintf("POST to %s: %s (check VERDICTBOT_EVENTS_SECRET and the receiver's token)", s.host(), resp.Status)}
	case c >= 500:
		return 0, &deliveryError{"server", fmt.Sprintf("POST to %s: %s", s.host(), resp.Status)}
	default:
		return 0, &deliveryError{"client", fmt.Sprintf("POST to %s: %s", s.host(), resp.Status)}
	}
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
