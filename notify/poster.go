package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"
)

// SlackAPI is the part of *slack.Client the poster uses; tests may pass a
// real client pointed at an httptest server (slack.OptionAPIURL).
type SlackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	AddReactionContext(ctx context.Context, name string, item slack.ItemRef) error
	RemoveReactionContext(ctx context.Context, name string, item slack.ItemRef) error
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
}

var _ SlackAPI = (*slack.Client)(nil)

// PosterOptions tune a Poster. Zero values take the defaults.
type PosterOptions struct {
	// MinUpdateInterval is the least time between two chat.update calls
	// for one card's progress, and between its chat.postMessage and its
	// first progress update (default 1s). A final state does not wait it
	// out. See Poster.Update.
	MinUpdateInterval time.Duration
	// PostInterval and PostBurst pace chat.postMessage (and uploads) per
	// channel: Slack allows "one message per second per channel", with
	// short bursts (docs.slack.dev/apis/web-api/rate-limits, "special"
	// tier). Defaults 1s and 3.
	PostInterval time.Duration
	PostBurst    int
	// UpdatesPerMinute and UpdateBurst pace chat.update across the
	// workspace: chat.update is Tier 3, "50+ per minute" (same page; tier
	// from Slack's java-slack-sdk MethodsRateLimits). Defaults 50 and 20 (the tier allows short bursts; a 429 is honoured anyway).
	UpdatesPerMinute float64
	UpdateBurst      int
	// MaxAttempts bounds the calls made for one request when Slack answers
	// 429 (waiting Retry-After each time) or, for idempotent methods
	// (chat.update, reactions), a 5xx. Default 3.
	MaxAttempts int
	// OnCall, if set, is called after every Web API call (each attempt)
	// with the method name, its error (nil on success, and for the benign
	// already_reacted / no_reaction) and its duration. It must be safe for
	// concurrent use and quick.
	OnCall func(method string, err error, d time.Duration)
	// Logger, if set, receives what no caller can: failed background
	// writes of non-final updates, and cards Slack rejected and that were
	// sent again in minimal form. Nil discards.
	Logger *slog.Logger
}

func (o PosterOptions) withDefaults() PosterOptions {
	if o.MinUpdateInterval <= 0 {
		o.MinUpdateInterval = time.Second
	}
	if o.PostInterval <= 0 {
		o.PostInterval = time.Second
	}
	if o.PostBurst <= 0 {
		o.PostBurst = 3
	}
	if o.UpdatesPerMinute <= 0 {
		o.UpdatesPerMinute = 50
	}
	if o.UpdateBurst <= 0 {
		o.UpdateBurst = 20
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ErrClosed is returned by Update once Close has been called.
var ErrClosed = errors.New("notify: poster closed")

// ErrNotImage is returned by Upload for data that is not a PNG or JPEG.
var ErrNotImage = errors.New("notify: upload refused: only PNG and JPEG images are uploaded")

// Poster posts and updates verdict cards in Slack threads, paced to Slack's
// rate limits. It is safe for concurrent use. Its only background work is
// writing coalesced card updates (see Update); Close waits for that.
type Poster struct {
	api        SlackAPI
	opts       PosterOptions
	updateRate *rate.Limiter

	// ctx bounds background update writes; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// hurry is closed by Close: queued updates stop waiting out
	// MinUpdateInterval.
	hurry chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	replicas int                      // the n of the last Share, ≥ 1
	channels map[string]*rate.Limiter // chat.postMessage pacing per channel
	slots    map[string]*updateSlot   // per card (channel + ts)
	seq      uint64
}

// NewPoster returns a poster calling api.
func NewPoster(api SlackAPI, opts PosterOptions) *Poster {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Poster{
		api:        api,
		opts:       opts,
		updateRate: rate.NewLimiter(shareLimit(updateLimit(opts), opts.UpdateBurst, 1)),
		ctx:        ctx,
		cancel:     cancel,
		hurry:      make(chan struct{}),
		replicas:   1,
		channels:   map[string]*rate.Limiter{},
		slots:      map[string]*updateSlot{},
	}
}

// ErrorCode returns the Slack error code err carries ("channel_not_found",
// "not_in_channel", "msg_too_long", "invalid_blocks", …), "ratelimited"
// for a 429 that outlasted the retries, or "" if none.
func ErrorCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return "ratelimited"
	}
	return ""
}

// blocksRejected reports whether Slack refused a message for its blocks,
// the case where a minimal card is worth a second try.
func blocksRejected(err error) bool {
	switch ErrorCode(err) {
	case "invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long":
		return true
	}
	return false
}

// Post posts the card as a new message in c.ThreadTS (in the channel when
// ThreadTS is empty), unfurls off, with the fallback text for
// notifications, and sets c.CardTS. Posting is paced per channel. If Slack
// rejects the blocks (invalid_blocks, msg_blocks_too_long) the card is
// posted once more in its minimal form (summary and one row per target),
// so the verdict still reaches the thread. The caller must not change c
// during the call.
func (p *Poster) Post(ctx context.Context, c *card.Card) error {
	if c.Channel == "" {
		return errors.New("notify: post: card has no channel")
	}
	blocks, fallback := Blocks(c)
	var ts string
	send := func(blocks []slack.Block) error {
		opts := []slack.MsgOption{
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionText(fallback, false),
			slack.MsgOptionDisableLinkUnfurl(),
			slack.MsgOptionDisableMediaUnfurl(),
		}
		if c.ThreadTS != "" {
			opts = append(opts, slack.MsgOptionTS(c.ThreadTS))
		}
		return p.do(ctx, "chat.postMessage", p.channelRate(c.Channel), false, func(ctx context.Context) error {
			var err error
			_, ts, err = p.api.PostMessageContext(ctx, c.Channel, opts...)
			return err
		})
	}
	err := send(blocks)
	if blocksRejected(err) {
		p.opts.Logger.Warn("card rejected, posting the minimal card", "channel", c.Channel, "error", err)
		if err2 := send(minimalBlocks(c)); err2 != nil {
			return fmt.Errorf("%w; minimal card: %w", err, err2)
		}
		err = nil
	}
	if err != nil {
		return err
	}
	c.CardTS = ts
	p.mu.Lock()
	p.slot(c.Channel, ts).last = time.Now()
	p.mu.Unlock()
	return nil
}

// snapshot is one rendered state of a card, waiting to be written.
type snapshot struct {
	seq         uint64
	channel, ts string
	blocks      []slack.Block
	minimal     []slack.Block
	fallback    string
	final       bool
}

// updateSlot coalesces the updates of one card. Fields are guarded by
// Poster.mu.
type updateSlot struct {
	last    time.Time     // when the latest write (or the post) started
	pending *snapshot     // newest state not yet taken by the writer
	writer  bool          // a flush goroutine owns the slot
	written uint64        // seq of the newest state written (or failed)
	err     error         // that write's result
	wake    chan struct{} // closed, then replaced, when written changes
	kick    chan struct{} // a final state was queued: the writer stops waiting
}

// slot returns the card's slot, creating it. p.mu must be held.
func (p *Poster) slot(channel, ts string) *updateSlot {
	key := channel + "\x00" + ts
	s, ok := p.slots[key]
	if ok {
		return s
	}
	if len(p.slots) >= 256 {
		// Forget idle cards whose last write is older than the interval:
		// their next update may go at once anyway.
		for k, old := range p.slots {
			if !old.writer && old.pending == nil && time.Since(old.last) > p.opts.MinUpdateInterval {
				delete(p.slots, k)
			}
		}
	}
	s = &updateSlot{wake: make(chan struct{}), kick: make(chan struct{}, 1)}
	p.slots[key] = s
	return s
}

// Update renders the card and writes it over the posted message
// (chat.update on c.Channel, c.CardTS), coalescing rapid updates:
//
//   - Each call renders c at once, so the caller may change c as soon as
//     Update returns.
//   - For each card, progress (c.Final false) is written at most once per
//     MinUpdateInterval (counted from the start of the previous write, or
//     from Post). A state submitted while the card is inside its interval,
//     or while a write is in flight, is queued; a newer state replaces the
//     queued one, which is then never written. When the interval ends, the
//     newest queued state is written. So the latest state always lands,
//     and intermediate ones may be skipped.
//   - A final state never waits for the interval: it takes the place of
//     the progress queued (if any) and is written as soon as the write in
//     flight (if any) returns. The interval keeps progress from crowding
//     the card, never the verdict behind a progress edit just made.
//   - Writes are done by one background goroutine per card with pending
//     states, paced by the workspace-wide chat.update limiter and retried
//     on 429 (see MaxAttempts); an update Slack rejects for its blocks is
//     written once more as the minimal card.
//   - A non-final state (c.Final false) is queued and Update returns nil
//     at once; the error of its write, if any, goes to OnCall and Logger.
//   - A final state (c.Final true) is queued the same way, then Update
//     waits until it (or a newer state) has been written and returns that
//     write's error. If ctx ends first, Update returns ctx's error but the
//     state stays queued and is still written: a final card is never
//     dropped, short of Close's deadline.
//
// After Close, Update returns ErrClosed.
func (p *Poster) Update(ctx context.Context, c *card.Card) error {
	if c.Channel == "" || c.CardTS == "" {
		return errors.New("notify: update: card not posted (no channel or CardTS)")
	}
	blocks, fallback := Blocks(c)
	snap := &snapshot{
		channel: c.Channel, ts: c.CardTS,
		blocks: blocks, minimal: minimalBlocks(c), fallback: fallback,
		final: c.Final,
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	s := p.slot(c.Channel, c.CardTS)
	p.seq++
	snap.seq = p.seq
	s.pending = snap
	if snap.final {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	if !s.writer {
		s.writer = true
		p.wg.Add(1)
		go p.flush(s)
	}
	p.mu.Unlock()
	if !snap.final {
		return nil
	}
	for {
		p.mu.Lock()
		if s.written >= snap.seq {
			err := s.err
			p.mu.Unlock()
			return err
		}
		wake := s.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("chat.update: %w (the final card stays queued)", ctx.Err())
		}
	}
}

// flush writes a card's queued states until none is left: progress at
// least MinUpdateInterval after the previous write started, a final state
// at once.
func (p *Poster) flush(s *updateSlot) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		if s.pending == nil {
			s.writer = false
			p.mu.Unlock()
			return
		}
		wait := time.Until(s.last.Add(p.opts.MinUpdateInterval))
		if s.pending.final {
			wait = 0
		}
		p.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			kicked := false
			select {
			case <-t.C:
			case <-p.hurry:
			case <-p.ctx.Done():
			case <-s.kick:
				kicked = true // a final state replaced the progress queued
			}
			t.Stop()
			if kicked {
				continue
			}
		}
		p.mu.Lock()
		snap := s.pending
		s.pending = nil
		s.last = time.Now()
		p.mu.Unlock()

		err := p.writeUpdate(p.ctx, snap)
		if err != nil && !snap.final {
			p.opts.Logger.Warn("card update failed", "channel", snap.channel, "ts", snap.ts, "error", err)
		}

		p.mu.Lock()
		s.written, s.err = snap.seq, err
		close(s.wake)
		s.wake = make(chan struct{})
		p.mu.Unlock()
	}
}

// writeUpdate calls chat.update with a snapshot, falling back once to the
// minimal card if Slack rejects the blocks.
func (p *Poster) writeUpdate(ctx context.Context, snap *snapshot) error {
	// Final states always wait for the workspace-wide chat.update budget.
	// A progress-only state ("queued", "running") is written only when the
	// budget has a token to spare: under a burst the budget goes to final
	// verdicts, and the card catches up with its next state.
	lim := p.updateRate
	if !snap.final {
		if !p.updateRate.Allow() {
			p.opts.Logger.Debug("progress update skipped: chat.update budget in use", "channel", snap.channel, "ts", snap.ts)
			return nil
		}
		lim = nil // the token is taken
	}
	send := func(blocks []slack.Block) error {
		return p.do(ctx, "chat.update", lim, true, func(ctx context.Context) error {
			_, _, _, err := p.api.UpdateMessageContext(ctx, snap.channel, snap.ts,
				slack.MsgOptionBlocks(blocks...),
				slack.MsgOptionText(snap.fallback, false))
			return err
		})
	}
	err := send(snap.blocks)
	if blocksRejected(err) {
		p.opts.Logger.Warn("card rejected, writing the minimal card", "channel", snap.channel, "ts", snap.ts, "error", err)
		if err2 := send(snap.minimal); err2 != nil {
			return fmt.Errorf("%w; minimal card: %w", err, err2)
		}
		return nil
	}
	return err
}

// Close stops accepting updates (Update returns ErrClosed), writes the
// queued ones without waiting out MinUpdateInterval (the rate limiters
// still apply), and waits for them. If ctx ends first, Close abandons the
// remaining writes, waits for the writers to return, and returns ctx's
// error. The other methods use their caller's context and are not affected.
func (p *Poster) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.hurry)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		p.cancel()
		return nil
	case <-ctx.Done():
		p.cancel()
		<-done
		return ctx.Err()
	}
}

// React adds the reaction emoji (with or without colons) to a message.
// A reaction already there is success.
func (p *Poster) React(ctx context.Context, channel, ts, emoji string) error {
	name := strings.Trim(emoji, ":")
	return p.do(ctx, "reactions.add", nil, true, func(ctx context.Context) error {
		return p.api.AddReactionContext(ctx, name, slack.NewRefToMessage(channel, ts))
	}, "already_reacted")
}

// Unreact removes the bot's reaction emoji from a message. A reaction
// already gone is success.
func (p *Poster) Unreact(ctx context.Context, channel, ts, emoji string) error {
	name := strings.Trim(emoji, ":")
	return p.do(ctx, "reactions.remove", nil, true, func(ctx context.Context) error {
		return p.api.RemoveReactionContext(ctx, name, slack.NewRefToMessage(channel, ts))
	}, "no_reaction")
}

// Ephemeral shows text (and blocks, if any) to one user in a channel. The
// text is sent as given (mrkdwn, not escaped): the caller builds it.
func (p *Poster) Ephemeral(ctx context.Context, channel, user, text string, blocks ...slack.Block) error {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if len(blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(blocks...))
	}
	return p.do(ctx, "chat.postEphemeral", nil, false, func(ctx context.Context) error {
		_, err := p.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
}

// EphemeralCard shows a card to one user only, in the card's thread, as
// Blocks draws it but without its controls (a click on an ephemeral
// message's button would find no card to report on; /scan report does
// the same from the task id the card shows). It is not paced per channel:
// nobody else sees it, so it takes nothing from the channel's posts.
func (p *Poster) EphemeralCard(ctx context.Context, c *card.Card, user string) error {
	blocks, fallback := Blocks(c)
	kept := make([]slack.Block, 0, len(blocks))
	for _, b := range blocks {
		if _, controls := b.(*slack.ActionBlock); !controls {
			kept = append(kept, b)
		}
	}
	opts := []slack.MsgOption{slack.MsgOptionText(fallback, false), slack.MsgOptionBlocks(kept...)}
	if c.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(c.ThreadTS))
	}
	return p.do(ctx, "chat.postEphemeral", nil, false, func(ctx context.Context) error {
		_, err := p.api.PostEphemeralContext(ctx, c.Channel, user, opts...)
		return err
	})
}

// Reply posts a plain text reply in a thread, unfurls off, paced per
// channel. The text is sent as given (mrkdwn, not escaped): the caller
// builds it, and must defang any URL in it.
func (p *Poster) Reply(ctx context.Context, channel, threadTS, text string) error {
	opts := []slack.MsgOption{
		slack.MsgOptionText(text, false),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
	}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	return p.do(ctx, "chat.postMessage", p.channelRate(channel), false, func(ctx context.Context) error {
		_, _, err := p.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
}

// Upload shares an image (a sandbox screenshot) in a thread with Slack's
// three-step upload (files.getUploadURLExternal, POST to the upload URL,
// files.completeUploadExternal with thread_ts; slack-go's
// UploadFileContext) and returns the file id. Only PNG and JPEG data are
// sent, checked by their magic bytes; anything else gets ErrNotImage.
// Uploads are paced with the channel's posts, since each one shows as a
// message in the thread. A 429 at any step restarts the three steps.
func (p *Poster) Upload(ctx context.Context, channel, threadTS, name string, data []byte, title string) (string, error) {
	ext := imageExt(data)
	if ext == "" {
		return "", ErrNotImage
	}
	if name == "" {
		name = "screenshot" + ext
	}
	var id string
	err := p.do(ctx, "files.upload_v2", p.channelRate(channel), false, func(ctx context.Context) error {
		f, err := p.api.UploadFileContext(ctx, slack.UploadFileParameters{
			Reader:          bytes.NewReader(data),
			FileSize:        len(data),
			Filename:        name,
			Title:           title,
			Channel:         channel,
			ThreadTimestamp: threadTS,
		})
		if err != nil {
			return err
		}
		id = f.ID
		return nil
	})
	return id, err
}

// imageExt returns ".png" or ".jpg" when data starts with the PNG signature
// (PNG spec §5.2) or a JPEG SOI marker followed by another marker (ITU T.81
// B.1.1.3), else "".
func imageExt(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return ".png"
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return ".jpg"
	}
	return ""
}

// channelRate returns the posting limiter of a channel.
func (p *Poster) channelRate(channel string) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lim, ok := p.channels[channel]; ok {
		return lim
	}
	if len(p.channels) >= 1024 {
		// Forget channels that have been quiet long enough to have a full
		// bucket: a fresh limiter behaves the same.
		for k, lim := range p.channels {
			if lim.Tokens() >= float64(lim.Burst()) {
				delete(p.channels, k)
			}
		}
	}
	lim := rate.NewLimiter(p.postLimit())
	p.channels[channel] = lim
	return lim
}

// updateLimit is the configured workspace-wide chat.update rate.
func updateLimit(o PosterOptions) rate.Limit { return rate.Limit(o.UpdatesPerMinute / 60) }

// postLimit returns this replica's share of the per-channel posting pace.
// p.mu must be held.
func (p *Poster) postLimit() (rate.Limit, int) {
	return shareLimit(rate.Every(p.opts.PostInterval), p.opts.PostBurst, p.replicas)
}

// shareLimit returns one of n replicas' share of a token bucket: rate r/n
// and burst ceil(burst/n), at least 1 (n ≥ 1).
func shareLimit(r rate.Limit, burst, n int) (rate.Limit, int) {
	return r / rate.Limit(n), max((burst+n-1)/n, 1)
}

// Share divides Slack's per-app limits among n replicas posting as the same
// app (n < 1 counts as 1), so that together they stay within them: the
// workspace-wide chat.update budget and the per-channel posting pace (that
// of every channel seen so far, and of channels seen later) each get
// rate/n and a burst of ceil(burst/n), at least 1. Tokens above the new
// burst are dropped. Share(1) restores the configured pacing. Call it again
// whenever n changes. It is safe for concurrent use with the other
// methods; a call already waiting for a token keeps the delay it was given.
func (p *Poster) Share(n int) {
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replicas = n
	r, burst := shareLimit(updateLimit(p.opts), p.opts.UpdateBurst, n)
	p.updateRate.SetLimit(r)
	p.updateRate.SetBurst(burst)
	r, burst = p.postLimit()
	for _, lim := range p.channels {
		lim.SetLimit(r)
		lim.SetBurst(burst)
	}
}

// Pacing is a poster's share of Slack's per-app limits (see Poster.Share).
type Pacing struct {
	// Replicas is the n of the last Share (1 before any).
	Replicas int
	// UpdatesPerMinute and UpdateBurst pace chat.update across the
	// workspace.
	UpdatesPerMinute float64
	UpdateBurst      int
	// PostInterval and PostBurst pace chat.postMessage and uploads per
	// channel.
	PostInterval time.Duration
	PostBurst    int
}

// Pacing returns the pacing in force now: the configured one divided by
// the last Share.
func (p *Poster) Pacing() Pacing {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.replicas
	_, updateBurst := shareLimit(updateLimit(p.opts), p.opts.UpdateBurst, n)
	_, postBurst := p.postLimit()
	return Pacing{
		Replicas:         n,
		UpdatesPerMinute: p.opts.UpdatesPerMinute / float64(n),
		UpdateBurst:      updateBurst,
		PostInterval:     p.opts.PostInterval * time.Duration(n),
		PostBurst:        postBurst,
	}
}

// do runs one Web API call: it waits for lim (if any), calls fn, reports to
// OnCall, and retries a 429 after its Retry-After — and, for idempotent
// methods, a 5xx after a short pause — up to MaxAttempts calls. Errors
// whose Slack code is in benign count as success. Other errors are
// returned at once, wrapped with the method name. All waits end with ctx.
func (p *Poster) do(ctx context.Context, method string, lim *rate.Limiter, idempotent bool, fn func(context.Context) error, benign ...string) error {
	var err error
	for attempt := 1; ; attempt++ {
		if lim != nil {
			if werr := lim.Wait(ctx); werr != nil {
				if err != nil {
					return fmt.Errorf("%s: %w (no retry: %v)", method, err, werr)
				}
				return fmt.Errorf("%s: waiting for the rate limiter: %w", method, werr)
			}
		}
		start := time.Now()
		err = fn(ctx)
		if err != nil {
			code := ErrorCode(err)
			for _, b := range benign {
				if code == b {
					err = nil
				}
			}
		}
		if p.opts.OnCall != nil {
			p.opts.OnCall(method, err, time.Since(start))
		}
		if err == nil {
			return nil
		}
		if rl := (*slack.RateLimitedError)(nil); errors.As(err, &rl) {
			p.backOff(method, lim)
		}
		wait, retry := p.retryWait(err, attempt, idempotent)
		if !retry {
			return fmt.Errorf("%s: %w", method, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (no retry: %v)", method, err, ctx.Err())
		case <-t.C:
		}
	}
}

// backOff empties the bucket a 429 came through (the channel's posting
// pace, or the workspace's chat.update budget, which a progress update
// took its token from without waiting): Slack says the app is over its
// limit, so every caller sharing it waits for fresh tokens rather than
// spending the rest of a burst Slack refuses. Without it the bot's own
// bursts (PostBurst, UpdateBurst) stay out of step with Slack's and 429s
// recur until a card runs out of attempts.
func (p *Poster) backOff(method string, lim *rate.Limiter) {
	if lim == nil && method == "chat.update" {
		lim = p.updateRate
	}
	if lim == nil {
		return
	}
	now := time.Now()
	if n := int(lim.TokensAt(now)); n > 0 {
		lim.ReserveN(now, n)
	}
}

// UntilAdmitted calls write until it returns something other than Slack's
// rate limit (HTTP 429, once the poster's own retries are spent): Slack
// asks the app to wait, not to give up, and a card or verdict dropped for
// it would never be shown. Each wait is the error's Retry-After (at least
// 1 s); ctx ending returns the last error.
func UntilAdmitted(ctx context.Context, write func() error) error {
	for {
		err := write()
		var rl *slack.RateLimitedError
		if err == nil || !errors.As(err, &rl) {
			return err
		}
		t := time.NewTimer(max(rl.RetryAfter, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retryWait classifies an error: a 429 is retried after its Retry-After
// (at least 1s); a 5xx, for idempotent methods, after attempt seconds;
// nothing else is retried, nor anything once MaxAttempts calls are made.
func (p *Poster) retryWait(err error, attempt int, idempotent bool) (time.Duration, bool) {
	if attempt >= p.opts.MaxAttempts {
		return 0, false
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return max(rl.RetryAfter, time.Second), true
	}
	var sc slack.StatusCodeError
	if idempotent && errors.As(err, &sc) && sc.Code >= 500 {
		return time.Duration(attempt) * time.Second, true
	}
	return 0, false
}
