// Package backfill scans a channel's recent history (/scan channel backfill,
// or the bot joining a channel with VERDICTBOT_BACKFILL_ON_JOIN): the links
// shared there before the bot was in it, or before its rechecks ended.
//
// It reads the window with conversations.history (999 a page) and each
// thread with conversations.replies, paced under the methods' tier (Tier 3:
// 50 a minute each, shared between the replicas; a 429's Retry-After is
// waited out), and checks each message as a live one is checked
// (cards.Messages.ScanHistory), a few at a time and in the services' Low
// lane, so that live messages keep the services' budgets first. It is quiet: one progress message in the
// channel, updated in place, cards only for what is not clean (in their
// threads, as usual, saying they come from the history), and a summary at
// the end. Where the reading stands is kept in the state layer after each
// page (store.Backfill), so a restart, or another replica once the runner's
// claim has expired, carries on from the last page; a message already
// checked (it has a card) is not checked again.
package backfill

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/verdictbot/verdictbot/cards"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
)

// DefaultWindow is what /scan channel backfill reads without a window.
const DefaultWindow = 7 * 24 * time.Hour

// Tier3PerMinute is conversations.history's and conversations.replies'
// rate for internal apps (Slack's Tier 3, 50+ a minute).
const Tier3PerMinute = 50

// checkWait is how long a message's check holds its slot at most.
const checkWait = 10 * time.Minute

// claimFor is how long a runner's claim on a backfill lasts; it is renewed
// at each page, and another replica takes over after it.
const claimFor = 2 * time.Minute

// States of a backfill (store.Backfill.State).
const (
	StateRunning = "running"
	StateDone    = "done"
	StateStopped = "stopped"
	StateFailed  = "failed"
)

// Slack is the part of the Web API a backfill calls: the history with its
// messages' JSON (WebAPI), and the progress message (*slack.Client).
type Slack interface {
	History(ctx context.Context, channel, cursor, oldest, latest string, limit int) (Page, error)
	Replies(ctx context.Context, channel, ts, cursor string, limit int) (Page, error)
	PostMessageContext(ctx context.Context, channel string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channel, timestamp string, options ...slack.MsgOption) (string, string, string, error)
}

// Store keeps the backfills (store.State).
type Store interface {
	StartBackfill(b store.Backfill) (store.Backfill, bool, error)
	UpdateBackfill(channel string, fn func(b *store.Backfill) error) (store.Backfill, error)
	Backfill(channel string) (store.Backfill, error)
	ClaimBackfill(channel, owner string, now, until time.Time) (store.Backfill, bool, error)
	RunningBackfills() ([]store.Backfill, error)
}

// Scanner checks one message of the history (cards.Messages).
type Scanner interface {
	ScanHistory(ctx context.Context, channel string, msg *slack.Msg, raw json.RawMessage, done func(found bool)) cards.HistoryCheck
}

// Runner runs the backfills. Set the fields, then Start, Stop and Resume;
// Close stops the runs and waits for them.
type Runner struct {
	Slack   Slack
	Store   Store
	Scanner Scanner
	// Owner names this replica in the backfills' claims.
	Owner string
	// Solo says this process is the only one using the store (the
	// embedded file, which one process holds): another owner's claim is a
	// previous process's, killed before it could give it back, and is not
	// waited for.
	Solo bool
	// PerMinute is each method's rate (default Tier3PerMinute); Share
	// divides it between replicas.
	PerMinute float64
	// InFlight is how many messages are checked at once (default 16). The
	// history's checks wait in the services' Low lane (scan's Background
	// checks): every request of a live check is served first.
	InFlight int
	Log      *slog.Logger
	Now      func() time.Time

	mu       sync.Mutex
	replicas int
	history  *rate.Limiter
	replies  *rate.Limiter
	running  map[string]context.CancelFunc
	wg       sync.WaitGroup
	closed   bool
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Runner) limiters() (*rate.Limiter, *rate.Limiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.history == nil {
		per := r.PerMinute
		if per <= 0 {
			per = Tier3PerMinute
		}
		n := max(r.replicas, 1)
		r.history = rate.NewLimiter(rate.Limit(per/60/float64(n)), 3)
		r.replies = rate.NewLimiter(rate.Limit(per/60/float64(n)), 3)
	}
	return r.history, r.replies
}

// Share divides the methods' rate between n replicas.
func (r *Runner) Share(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replicas = n
	r.history, r.replies = nil, nil
}

// ParseWindow reads "7d", "14d", "30d" (days) or a Go duration, up to max.
func ParseWindow(s string, maxWindow time.Duration) (time.Duration, error) {
	if s == "" {
		return min(DefaultWindow, maxWindow), nil
	}
	d, ok := config.Window(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a window: use 7d, 14d or 30d", s)
	}
	if d > maxWindow {
		return 0, fmt.Errorf("%s is longer than the %dd this workspace allows (VERDICTBOT_BACKFILL_MAX)", s, int(maxWindow.Hours()/24))
	}
	return d, nil
}

// ErrRunning is returned by Start when the channel's backfill runs already.
var ErrRunning = errors.New("a backfill of this channel is running")

// Start records a backfill of channel over window, started by by ("": the
// bot joining), and runs it.
func (r *Runner) Start(ctx context.Context, channel string, window time.Duration, by string) (store.Backfill, error) {
	now := r.now()
	b, ok, err := r.Store.StartBackfill(store.Backfill{Channel: channel, Since: now.Add(-window), Until: now, StartedBy: by, State: StateRunning})
	if err != nil {
		return b, err
	}
	if !ok {
		return b, ErrRunning
	}
	r.log().Info("backfill started", "channel", channel, "window", window.String(), "by", by)
	r.launch(b)
	return b, nil
}

// Stop stops channel's running backfill.
func (r *Runner) Stop(channel, by string) (store.Backfill, error) {
	b, err := r.Store.UpdateBackfill(channel, func(b *store.Backfill) error {
		if b.State == StateRunning {
			b.State, b.Problem = StateStopped, "stopped by <@"+by+">"
		}
		return nil
	})
	r.mu.Lock()
	if cancel := r.running[channel]; cancel != nil {
		cancel()
	}
	r.mu.Unlock()
	return b, err
}

// Resume claims the running backfills nobody runs (a restart, a replica
// gone) and runs them.
func (r *Runner) Resume() {
	bs, err := r.Store.RunningBackfills()
	if err != nil {
		r.log().Warn("backfills could not be listed", "error", err)
		return
	}
	for _, b := range bs {
		r.mu.Lock()
		mine := r.running[b.Channel] != nil
		r.mu.Unlock()
		if !mine {
			r.launch(b)
		}
	}
}

// RunResume calls Resume now and every minute until ctx ends.
func (r *Runner) RunResume(ctx context.Context) {
	r.Resume()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Resume()
		}
	}
}

// Close stops the runs (their state stays running: the next start or
// another replica carries on), waits for them, and gives their claims
// back, so that the next process or another replica carries on at once.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	var channels []string
	for ch, cancel := range r.running {
		cancel()
		channels = append(channels, ch)
	}
	r.mu.Unlock()
	r.wg.Wait()
	for _, ch := range channels {
		r.release(ch)
	}
}

// release gives back this replica's claim on channel's backfill.
func (r *Runner) release(channel string) {
	_, err := r.Store.UpdateBackfill(channel, func(b *store.Backfill) error {
		if b.Owner == r.Owner {
			b.Owner, b.OwnedUntil = "", time.Time{}
		}
		return nil
	})
	if err != nil {
		r.log().Warn("backfill claim not given back; another replica takes it over when it expires", "channel", channel, "error", err)
	}
}

func (r *Runner) launch(b store.Backfill) {
	r.mu.Lock()
	if r.closed || r.running[b.Channel] != nil {
		r.mu.Unlock()
		return
	}
	if r.running == nil {
		r.running = map[string]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.running[b.Channel] = cancel
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, b.Channel)
			r.mu.Unlock()
			cancel()
		}()
		r.run(ctx, b.Channel)
	}()
}

// claim takes or renews this replica's claim on channel's backfill.
func (r *Runner) claim(channel string) (store.Backfill, bool) {
	now := r.now()
	if r.Solo {
		// Another owner is a process before this one (see Solo).
		if _, err := r.Store.UpdateBackfill(channel, func(b *store.Backfill) error {
			if b.Owner != r.Owner {
				b.Owner, b.OwnedUntil = "", time.Time{}
			}
			return nil
		}); err != nil {
			r.log().Warn("backfill claim failed", "channel", channel, "error", err)
			return store.Backfill{}, false
		}
	}
	b, ok, err := r.Store.ClaimBackfill(channel, r.Owner, now, now.Add(claimFor))
	if err != nil {
		r.log().Warn("backfill claim failed", "channel", channel, "error", err)
		return b, false
	}
	return b, ok && b.State == StateRunning
}

// run reads channel's history from where its backfill stands.
func (r *Runner) run(ctx context.Context, channel string) {
	b, ok := r.claim(channel)
	if !ok {
		return
	}
	r.progress(ctx, &b)
	slots := make(chan struct{}, cmp.Or(r.InFlight, 16))
	history, replies := r.limiters()
	for {
		if ctx.Err() != nil {
			return
		}
		var resp Page
		err := r.call(ctx, history, func() (err error) {
			resp, err = r.Slack.History(ctx, channel, b.Cursor, slackTS(b.Since), slackTS(b.Until), 999)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				r.fail(ctx, channel, err)
			}
			return
		}
		// The page's messages are checked InFlight at a time; the page is
		// recorded once they all were, so a restart re-reads at most the
		// page under way (its messages with a card are not checked again).
		var page sync.WaitGroup
		var pageLinks, pageFiles, pageMsgs atomic.Int64
		// ScanHistory begins a message's check and calls back once its
		// cards are final: a slot is held until then.
		check := func(m Message) bool {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			page.Add(1)
			var once sync.Once
			release := func(found bool) {
				once.Do(func() {
					defer page.Done()
					defer func() { <-slots }()
					if found {
						if _, err := r.Store.UpdateBackfill(channel, func(x *store.Backfill) error { x.Found++; return nil }); err != nil {
							r.log().Warn("backfill count not recorded", "error", err)
						}
					}
				})
			}
			// A check whose card waits longer than this (a line deferred
			// past a budget) gives its slot back: the card is still
			// finished by the pipeline, the reading goes on.
			t := time.AfterFunc(checkWait, func() {
				r.log().Warn("backfill: a message's check is taking long; going on without waiting for it", "channel", channel, "ts", m.Timestamp)
				release(false)
			})
			hc := r.Scanner.ScanHistory(ctx, channel, &m.Msg, m.Raw, func(found bool) {
				t.Stop()
				release(found)
			})
			pageMsgs.Add(1)
			pageLinks.Add(int64(hc.Links))
			pageFiles.Add(int64(hc.Files))
			return true
		}
		for i := range resp.Messages {
			msgs := []Message{resp.Messages[i]}
			if resp.Messages[i].ReplyCount > 0 {
				msgs = append(msgs, r.thread(ctx, replies, channel, resp.Messages[i].Timestamp)...)
			}
			for _, m := range msgs {
				if !check(m) {
					return
				}
			}
		}
		if !waitOrDone(ctx, &page) {
			return // stopping: the page is read again at the next start
		}
		next := resp.NextCursor
		b, err = r.Store.UpdateBackfill(channel, func(x *store.Backfill) error {
			x.Pages++
			x.Messages += int(pageMsgs.Load())
			x.Links += int(pageLinks.Load())
			x.Files += int(pageFiles.Load())
			x.Cursor = next
			return nil
		})
		if err != nil {
			r.log().Warn("backfill progress not recorded", "error", err)
		}
		if b.State != StateRunning {
			return // stopped meanwhile
		}
		if _, ok := r.claim(channel); !ok {
			return // another replica took it over
		}
		r.progress(ctx, &b)
		if next == "" || !resp.HasMore {
			break
		}
	}
	b, err := r.Store.UpdateBackfill(channel, func(x *store.Backfill) error {
		if x.State == StateRunning {
			x.State = StateDone
		}
		return nil
	})
	if err != nil {
		r.log().Warn("backfill end not recorded", "error", err)
	}
	r.log().Info("backfill finished", "channel", channel, "pages", b.Pages, "messages", b.Messages, "links", b.Links, "files", b.Files, "found", b.Found)
	r.progress(context.Background(), &b)
}

// waitOrDone waits for wg, or for ctx to end (false): a check whose
// analysis a shutdown cancelled may never call back.
func waitOrDone(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// thread reads a thread's replies (the root excluded).
func (r *Runner) thread(ctx context.Context, lim *rate.Limiter, channel, root string) []Message {
	var out []Message
	cursor := ""
	for range 100 {
		var p Page
		err := r.call(ctx, lim, func() (err error) {
			p, err = r.Slack.Replies(ctx, channel, root, cursor, 1000)
			return err
		})
		if err != nil {
			r.log().Warn("backfill: a thread could not be read", "channel", channel, "thread", root, "error", slackCode(err))
			return out
		}
		for _, m := range p.Messages {
			if m.Timestamp != root {
				out = append(out, m)
			}
		}
		if !p.HasMore || p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
	return out
}

// call runs fn in its turn under lim, waiting out a 429's Retry-After.
func (r *Runner) call(ctx context.Context, lim *rate.Limiter, fn func() error) error {
	for attempt := 0; ; attempt++ {
		if err := lim.Wait(ctx); err != nil {
			return err
		}
		err := fn()
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || attempt == 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(rl.RetryAfter, time.Second)):
		}
	}
}

func (r *Runner) fail(ctx context.Context, channel string, err error) {
	r.log().Error("backfill failed", "channel", channel, "error", err)
	b, uerr := r.Store.UpdateBackfill(channel, func(x *store.Backfill) error {
		x.State, x.Problem = StateFailed, "Slack answered: "+slackCode(err)
		return nil
	})
	if uerr == nil {
		r.progress(ctx, &b)
	}
}

// progress posts the progress message, or updates it.
func (r *Runner) progress(ctx context.Context, b *store.Backfill) {
	text := Describe(*b)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
	if b.ProgressTS != "" {
		if _, _, _, err := r.Slack.UpdateMessageContext(ctx, b.Channel, b.ProgressTS, opts...); err != nil {
			r.log().Warn("backfill progress message not updated", "channel", b.Channel, "error", slackCode(err))
		}
		return
	}
	_, ts, err := r.Slack.PostMessageContext(ctx, b.Channel, opts...)
	if err != nil {
		r.log().Warn("backfill progress message not posted", "channel", b.Channel, "error", slackCode(err))
		return
	}
	nb, err := r.Store.UpdateBackfill(b.Channel, func(x *store.Backfill) error { x.ProgressTS = ts; return nil })
	if err == nil {
		*b = nb
	}
}

// Describe says where a backfill stands, in one message.
func Describe(b store.Backfill) string {
	days := int(b.Until.Sub(b.Since).Hours()/24 + 0.5)
	counts := fmt.Sprintf("%d pages read, %d messages, %d links, %d files; %d found not clean", b.Pages, b.Messages, b.Links, b.Files, b.Found)
	switch b.State {
	case StateDone:
		return fmt.Sprintf(":mag: Finished checking this channel's history (the last %d days): %s. Those have a card in their thread.", days, counts)
	case StateStopped:
		return fmt.Sprintf(":mag: Checking this channel's history (the last %d days) was %s: %s.", days, b.Problem, counts)
	case StateFailed:
		return fmt.Sprintf(":mag: Checking this channel's history (the last %d days) stopped: %s. %s.", days, b.Problem, counts)
	}
	return fmt.Sprintf(":mag: Checking this channel's history (the last %d days), quietly: %s so far.", days, counts)
}

// slackTS is t as a Slack ts.
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

func slackCode(err error) string {
	if c := notify.ErrorCode(err); c != "" {
		return c
	}
	if err != nil {
		return "error"
	}
	return ""
}
