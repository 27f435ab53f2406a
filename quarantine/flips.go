package quarantine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// A recheck that flips a URL to a channel's quarantine level may concern
// many messages: every card showing the URL. Their removals are not done
// under the announcement, at once, but queued (store.Removal), each in the
// write that shows the flip on its card, and a worker (RunRemovals) takes
// them one at a time, paced within Slack's limits, retrying passing
// failures with backoff, so that:
//
//   - a stop between the decision and chat.delete resumes after the
//     restart, and a stop after it does not delete twice (the message is
//     read back first: gone and kept means done);
//   - several replicas remove each message once (the store's claim);
//   - every card says what happened: queued, removed, or why not.
//
// Above VERDICTBOT_QUARANTINE_FLIP_MAX messages for one URL the removals
// wait, held, for an admin's Remove all: a recheck that wrongly flips a
// popular URL must not empty the workspace's channels. The request is
// posted in VERDICTBOT_ALERT_CHANNEL (a RemovalAsk, retried like a
// removal); without an alert channel the removals wait all the same, the
// cards and the log say why, and verdictbot_quarantine_queue{state="held"}
// counts them (an alert rule fires), until the setting is added.

// ActionQuarantineRemoveAll is the Remove all button of a flip's request
// in the alert channel (admins only): its value is the batch id. Other
// tools drive the bot through this name: keep it.
const ActionQuarantineRemoveAll = "quarantine_remove_all"

// DefaultDeletesPerMinute paces the queued removals: chat.delete is Tier 3,
// "50+ per minute" per workspace (docs.slack.dev rate limits; tier from
// Slack's java-slack-sdk MethodsRateLimits). 40 leaves room for the
// removals of first verdicts, which are not paced (one per message, as it
// is posted).
const DefaultDeletesPerMinute = 40

// Waits of the queue.
var (
	// removalPoll is how often the worker looks for due removals when
	// nothing woke it (a retry coming due, another replica's queue).
	removalPoll = 2 * time.Second
	// removalTimeout bounds one removal (its reads and tries).
	removalTimeout = 90 * time.Second
	// retryBackoff is the wait before the nth retry of a removal that
	// failed for a passing reason (capped at its last value).
	retryBackoff = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute}
	// postWait is how long a removal waits for its card to be shown by
	// the flip's announcement (Shown makes it due then; a quiet channel's
	// card is posted then) before it is due anyway: the announcement
	// stopped, and the removal posts the card itself (ShowCard).
	postWait = time.Minute
	// askRetry is the wait before asking again for an admin when the
	// request could not be posted (no alert channel, the bot not in it).
	askRetry = 10 * time.Minute
)

// maxRemovalAttempts is how many passing failures a queued removal gets
// before the card says it could not be removed (about an hour with the
// backoff above).
const maxRemovalAttempts = 8

// RemovalStore is the removal queue (store.State).
type RemovalStore interface {
	QueueRemovals(rs []store.Removal) error
	ClaimRemoval(now time.Time) (store.Removal, bool, error)
	FinishRemoval(ref card.Ref) error
	RetryRemoval(ref card.Ref, next time.Time, failed bool) error
	PutRemovalBatch(b store.RemovalBatch) error
	RemovalBatch(id string) (store.RemovalBatch, error)
	SetBatchAlert(id, channel, ts string) error
	ApproveBatch(id, by string, at time.Time) (b store.RemovalBatch, released int, first bool, err error)
	RemovalCounts() (queued, held int, err error)
}

// flips is the queue's state in the process.
type flips struct {
	once    sync.Once
	wake    chan struct{}
	mu      sync.Mutex
	lim     *rate.Limiter
	share   int
	unasked map[string]bool // batches whose request could not be posted, logged once
	counts  map[string]int  // messages per batch planned here, for Mark
}

func (q *Quarantine) flipState() *flips {
	q.flips.once.Do(func() {
		q.flips.wake = make(chan struct{}, 1)
		q.flips.share = 1
		q.flips.lim = rate.NewLimiter(q.deleteRate(1), 1)
		// Start empty: a process that just started (after a stop, or a
		// replica joining) shares Slack's bucket with the one before.
		q.flips.lim.Allow()
		q.flips.unasked = map[string]bool{}
		q.flips.counts = map[string]int{}
	})
	return &q.flips
}

func (q *Quarantine) deleteRate(share int) rate.Limit {
	perMinute := q.DeletesPerMinute
	if perMinute <= 0 {
		perMinute = DefaultDeletesPerMinute
	}
	return rate.Limit(perMinute / 60 / float64(max(share, 1)))
}

// ShareBudgets makes the queued removals of this replica use 1/n of the
// pace: Slack's limit is the app's, whichever replica calls.
func (q *Quarantine) ShareBudgets(n int) {
	f := q.flipState()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share = max(n, 1)
	f.lim.SetLimit(q.deleteRate(f.share))
}

// DeleteRate is the pace of queued removals in force, per second.
func (q *Quarantine) DeleteRate() float64 {
	return float64(q.flipState().lim.Limit())
}

// Shown tells that the card of a queued removal was shown with the flip
// (cards.FlipRemover): its removal is due now.
func (q *Quarantine) Shown(ref card.Ref) {
	if q == nil || q.Queue == nil {
		return
	}
	if err := q.Queue.RetryRemoval(ref, q.now(), false); err != nil && !errors.Is(err, store.ErrNotFound) {
		q.log().Warn("quarantine: could not make a removal due (it is due within a minute anyway)", "error", err)
	}
	q.Wake()
}

// Wake tells the worker that removals may be due.
func (q *Quarantine) Wake() {
	select {
	case q.flipState().wake <- struct{}{}:
	default:
	}
}

// Plan decides the removals of a flip (cards.FlipRemover): every card
// showing url, as it stands before the flip, whose channel's quarantine
// level the new level reaches, that answers a message, and that was not
// removed, released or queued already. More of them than FlipMax wait for
// an admin's Remove all: their batch and the request are written first.
func (q *Quarantine) Plan(ctx context.Context, url string, level verdict.Level, cards []card.Card) map[card.Ref]*store.Removal {
	if q == nil || q.Queue == nil {
		return nil
	}
	var chosen []card.Card
	for _, c := range cards {
		if !c.AnswersMessage() || isDirect(c.Channel) {
			continue // a /scan card, a DM with the bot: no message to remove
		}
		if s := c.Quarantine; s != nil && s.State != card.QuarantineFailed {
			continue // removed, released, or already queued
		}
		if threshold, on := Threshold(q.Level(c.Channel)); !on || level < threshold {
			continue
		}
		chosen = append(chosen, c)
	}
	if len(chosen) == 0 {
		return nil
	}
	now := q.now()
	held := len(chosen) > q.FlipMax
	batch := ""
	if held {
		b := store.RemovalBatch{ID: store.NewBatchID(), Target: url, Level: level.Key(), Count: len(chosen),
			Channels: map[string]int{}, Created: now}
		for _, c := range chosen {
			b.Channels[c.Channel]++
		}
		if err := q.Queue.PutRemovalBatch(b); err != nil {
			q.log().Error("quarantine: could not keep a recheck's removals for an admin; none is queued", "url", links.Defang(url), "error", err)
			return nil
		}
		ask := store.Removal{Card: store.AskRef(b.ID), Kind: store.RemovalAsk, Target: url, Level: level.Key(), Batch: b.ID, Queued: now, NextAt: now}
		if err := q.Queue.QueueRemovals([]store.Removal{ask}); err != nil {
			q.log().Error("quarantine: could not queue the request for an admin; the removals wait", "error", err)
		}
		batch = b.ID
		f := q.flipState()
		f.mu.Lock()
		f.counts[b.ID] = b.Count
		f.mu.Unlock()
		q.log().Warn("quarantine: a recheck flip would remove more messages than VERDICTBOT_QUARANTINE_FLIP_MAX: they wait for an admin's Remove all",
			"url", links.Defang(url), "level", level.Key(), "messages", len(chosen), "flip_max", q.FlipMax,
			"channels", len(b.Channels), "alert_channel", q.AlertChannel, "batch", b.ID)
	}
	out := make(map[card.Ref]*store.Removal, len(chosen))
	for _, c := range chosen {
		// Due once its card is shown (Shown), so the tombstone updates the
		// card rather than racing its post; at the latest after postWait.
		out[card.Ref{Channel: c.Channel, SourceTS: c.SourceTS}] = &store.Removal{Target: url, Level: level.Key(), Batch: batch,
			Held: held, Queued: now, NextAt: now.Add(cmp.Or(q.PostWait, postWait))}
	}
	if q.OnFlip != nil {
		event := "queued"
		if held {
			event = "held"
		}
		q.OnFlip(event, len(out))
	}
	return out
}

// Mark shows on a card the removal queued for it (cards.FlipRemover). It
// runs inside the card's store write: it reads nothing from the store.
func (q *Quarantine) Mark(c *card.Card, r *store.Removal) {
	level, err := verdict.ParseLevel(r.Level)
	if err != nil {
		level = c.Level()
	}
	st := &card.Quarantine{State: card.QuarantineQueued, Level: level, At: r.Queued}
	if r.Held {
		st.State = card.QuarantineHeld
		st.Problem = q.heldProblem(r.Batch)
	}
	c.Quarantine = st
}

// heldProblem says, on a held card, what it waits for.
func (q *Quarantine) heldProblem(batch string) string {
	f := q.flipState()
	f.mu.Lock()
	n := f.counts[batch]
	f.mu.Unlock()
	many := fmt.Sprintf("More messages carry this link than a recheck removes without an admin (VERDICTBOT_QUARANTINE_FLIP_MAX=%d)", q.FlipMax)
	if n > 0 {
		many = fmt.Sprintf("%d messages carry this link, more than a recheck removes without an admin (VERDICTBOT_QUARANTINE_FLIP_MAX=%d)", n, q.FlipMax)
	}
	if q.AlertChannel == "" {
		return many + "; no alert channel is set (VERDICTBOT_ALERT_CHANNEL), so no admin was asked: the removals wait until one is."
	}
	return many + "; an admin's Remove all in the alert channel removes them."
}

// RunRemovals takes the queued removals, one at a time, each deletion call
// paced (see DefaultDeletesPerMinute), until
// ctx ends (a stop leaves the rest queued, and a removal cut short is
// taken again). onCounts, if set, is told the queue's length (queued,
// held) at most every removalPoll.
func (q *Quarantine) RunRemovals(ctx context.Context) {
	if q == nil || q.Queue == nil {
		return
	}
	f := q.flipState()
	t := time.NewTicker(removalPoll)
	defer t.Stop()
	failing := false
	var counted time.Time
	for ctx.Err() == nil {
		if q.OnCounts != nil && time.Since(counted) >= removalPoll {
			counted = time.Now()
			if queued, held, err := q.Queue.RemovalCounts(); err == nil {
				q.OnCounts(queued, held)
			}
		}
		r, ok, err := q.Queue.ClaimRemoval(q.now())
		if err != nil && !failing {
			q.log().Warn("quarantine: could not read the removal queue; trying again", "error", err)
		}
		failing = err != nil
		if err != nil || !ok {
			select {
			case <-ctx.Done():
			case <-f.wake:
			case <-t.C:
			}
			continue
		}
		if r.Kind == store.RemovalAsk {
			q.ask(ctx, r)
			continue
		}
		q.runRemoval(ctx, r) // paced at each deletion call (act)
	}
}

// putBack returns a claimed removal to the queue, due at next; failed
// counts the try.
func (q *Quarantine) putBack(r store.Removal, next time.Time, failed bool) {
	if err := q.Queue.RetryRemoval(r.Card, next, failed); err != nil && !errors.Is(err, store.ErrNotFound) {
		q.log().Warn("quarantine: could not put a removal back in the queue (another process takes it once this one stops)", "error", err)
	}
}

func (q *Quarantine) finish(r store.Removal) {
	if err := q.Queue.FinishRemoval(r.Card); err != nil {
		q.log().Warn("quarantine: could not mark a removal done (if the store stays down, it is taken again and finds the message gone)", "error", err)
	}
}

// runRemoval does one queued removal.
func (q *Quarantine) runRemoval(ctx context.Context, r store.Removal) {
	rec, ok := q.Cards.Get(r.Card.Channel, r.Card.SourceTS)
	switch {
	case !ok && r.Attempts+1 >= maxRemovalAttempts:
		q.log().Warn("quarantine: a queued removal's card is gone (or the store kept failing): dropped", "channel", r.Card.Channel, "ts", r.Card.SourceTS)
		q.finish(r)
		return
	case !ok:
		// Gone (retention), or the store failing: not told apart here,
		// so it is tried again, as a failure.
		q.putBack(r, q.now().Add(retryBackoff[min(r.Attempts, len(retryBackoff)-1)]), true)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, removalTimeout)
	defer cancel()
	out, code := q.act(rctx, rec.Card, true)
	if rec.Card.CardTS == "" && q.ShowCard != nil && ctx.Err() == nil {
		// The flip's announcement stopped before posting the card (its
		// postWait is over): post it now, as it stands.
		if now, ok := q.Cards.Get(r.Card.Channel, r.Card.SourceTS); ok && now.Card.CardTS == "" {
			c := now.Card.Clone()
			q.ShowCard(rctx, &c)
		}
	}
	switch {
	case out == outcomeRetry && ctx.Err() != nil:
		q.putBack(r, q.now(), false) // a stop: the next process takes it at once
		return
	case out == outcomeRetry && r.Attempts+1 >= maxRemovalAttempts:
		level, _ := verdict.ParseLevel(r.Level)
		q.fail(ctx, rec.Card, cmp.Or(level, rec.Card.Level()), ReasonError,
			fmt.Sprintf("Slack kept failing (`%s`) after %d tries over about an hour, so it was left in place.", code, maxRemovalAttempts))
		q.finish(r)
		return
	case out == outcomeRetry:
		wait := retryBackoff[min(r.Attempts, len(retryBackoff)-1)]
		q.log().Info("quarantine: a queued removal failed for a passing reason; it is tried again", "channel", r.Card.Channel,
			"ts", r.Card.SourceTS, "reason", code, "attempt", r.Attempts+1, "wait", wait.String())
		if q.OnFlip != nil {
			q.OnFlip("retried", 1)
		}
		q.putBack(r, q.now().Add(wait), true)
		return
	case out == outcomeNone:
		q.dropped(ctx, rec.Card)
	}
	q.finish(r)
}

// dropped clears the "queued" mark of a card whose removal was not done
// because it no longer reaches its channel's level (an admin lowered it,
// the verdict was corrected): the card says so.
func (q *Quarantine) dropped(ctx context.Context, c card.Card) {
	if s := c.Quarantine; s == nil || (s.State != card.QuarantineQueued && s.State != card.QuarantineHeld) {
		return
	}
	at := q.now()
	q.show(ctx, c.Channel, c.SourceTS, func(cc *card.Card) {
		if s := cc.Quarantine; s != nil && (s.State == card.QuarantineQueued || s.State == card.QuarantineHeld) {
			cc.Quarantine = nil
			cc.Notes = append(cc.Notes, "A recheck's removal of this message was dropped "+at.UTC().Format("2006-01-02 15:04 UTC")+
				": it no longer reaches the channel's quarantine level.")
		}
	})
	if q.OnFlip != nil {
		q.OnFlip("dropped", 1)
	}
}

// ask posts a held batch's request for an admin in the alert channel.
func (q *Quarantine) ask(ctx context.Context, r store.Removal) {
	b, err := q.Queue.RemovalBatch(r.Batch)
	switch {
	case errors.Is(err, store.ErrNotFound):
		q.finish(r) // pruned
		return
	case err != nil:
		q.putBack(r, q.now().Add(retryBackoff[0]), false)
		return
	case b.ApprovedBy != "" || b.AlertTS != "":
		q.finish(r)
		return
	}
	f := q.flipState()
	if q.AlertChannel == "" {
		f.mu.Lock()
		first := !f.unasked[b.ID]
		f.unasked[b.ID] = true
		f.mu.Unlock()
		if first {
			q.log().Error("quarantine: a recheck's removals wait for an admin's Remove all, but VERDICTBOT_ALERT_CHANNEL is not set, so nobody was asked: set it (the request is posted then)",
				"url", links.Defang(b.Target), "messages", b.Count, "batch", b.ID)
		}
		q.putBack(r, q.now().Add(askRetry), false)
		return
	}
	text, blocks := requestMessage(b, q.FlipMax)
	actx, cancel := context.WithTimeout(ctx, removalTimeout)
	defer cancel()
	_, ts, err := q.Bot.PostMessageContext(actx, q.AlertChannel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl(), slack.MsgOptionParse(false), slack.MsgOptionLinkNames(false))
	if err != nil {
		wait := retryBackoff[min(r.Attempts, len(retryBackoff)-1)]
		if _, ok := passing(err); !ok {
			wait = askRetry
		}
		q.log().Error("quarantine: could not ask for an admin's Remove all in the alert channel; trying again", "channel", q.AlertChannel,
			"reason", slackCode(err), "wait", wait.String(), "batch", b.ID)
		q.putBack(r, q.now().Add(wait), true)
		return
	}
	if err := q.Queue.SetBatchAlert(b.ID, q.AlertChannel, ts); err != nil {
		q.log().Warn("quarantine: could not record the request's message", "error", err)
	}
	q.log().Info("quarantine: asked for an admin's Remove all", "channel", q.AlertChannel, "ts", ts, "batch", b.ID, "messages", b.Count)
	q.finish(r)
}

// maxRequestChannels bounds the channels the request lists by name.
const maxRequestChannels = 10

// requestMessage is the request for an admin: what flipped (defanged),
// how many messages, in which channels by count, and the button.
func requestMessage(b store.RemovalBatch, flipMax int) (string, []slack.Block) {
	url := "`" + strings.ReplaceAll(html.EscapeString(links.DefangTruncate(b.Target, 200)), "`", "'") + "`"
	chans := slices.SortedFunc(maps.Keys(b.Channels), func(x, y string) int {
		return cmp.Or(b.Channels[y]-b.Channels[x], strings.Compare(x, y))
	})
	var where []string
	for i, ch := range chans {
		if i == maxRequestChannels {
			where = append(where, fmt.Sprintf("%d more channels", len(chans)-i))
			break
		}
		where = append(where, fmt.Sprintf("%d in <#%s>", b.Channels[ch], ch))
	}
	text := fmt.Sprintf(":rotating_light: *A recheck found %s %s.* %d messages in quarantine channels carry it (%s): more than a recheck removes without an admin (VERDICTBOT_QUARANTINE_FLIP_MAX=%d), so they stay until an admin removes them. Their cards say so.",
		url, b.Level, b.Count, strings.Join(where, ", "), flipMax)
	confirm := slack.NewConfirmationBlockObject(slack.NewTextBlockObject(slack.PlainTextType, "Remove all these messages?", false, false),
		slack.NewTextBlockObject(slack.PlainTextType, fmt.Sprintf("Remove the %d messages that carry this link, paced to Slack's limits. Each can be released from its card.", b.Count), false, false),
		slack.NewTextBlockObject(slack.PlainTextType, "Remove all", false, false),
		slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false))
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, true), nil, nil, slack.SectionBlockOptionBlockID("request")),
		slack.NewActionBlock("request-actions", slack.NewButtonBlockElement(ActionQuarantineRemoveAll, b.ID,
			slack.NewTextBlockObject(slack.PlainTextType, "Remove all", false, false)).WithStyle(slack.StyleDanger).WithConfirm(confirm)),
	}
	return fmt.Sprintf("A recheck found a link %s in %d messages: an admin's Remove all is needed.", b.Level, b.Count), blocks
}

// removeAll handles a click on Remove all: admins only (anyone else is
// answered privately and the refusal is audited); the first approval
// releases the batch's removals, a later one (a second click, another
// replica) says who approved it. It returns the answer for user.
func (q *Quarantine) removeAll(ctx context.Context, channel, batch, user string) string {
	if q.IsAdmin == nil || !q.IsAdmin(user) {
		q.log().Warn("quarantine: Remove all refused: not an admin", "audit", true, "user", user, "channel", channel, "batch", batch)
		if q.OnFlip != nil {
			q.OnFlip("refused", 1)
		}
		return "Only admins can remove these messages."
	}
	if q.Queue == nil {
		return "This request is no longer kept, so nothing was removed."
	}
	at := q.now()
	b, n, first, err := q.Queue.ApproveBatch(batch, user, at)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "This request is no longer kept (its retention ended), so nothing was removed."
	case err != nil:
		q.log().Error("quarantine: Remove all could not be recorded", "error", err)
		return "Something went wrong on our side; nothing was removed. Try again in a minute."
	case !first && b.ApprovedBy != user:
		return fmt.Sprintf("Already approved by %s at %s; the removals are under way.", newQuieter(ctx, q.Bot).user(b.ApprovedBy, ""),
			b.ApprovedAt.UTC().Format("2006-01-02 15:04 UTC"))
	case !first:
		return "You approved these removals already; they are under way."
	}
	q.log().Info("quarantine: Remove all approved", "audit", true, "user", user, "batch", batch, "messages", n, "url", links.Defang(b.Target))
	if q.OnFlip != nil {
		q.OnFlip("approved", n)
	}
	q.Wake()
	if b.AlertTS != "" {
		text := fmt.Sprintf(":white_check_mark: Approved by %s %s: removing %d messages that carry %s, paced to Slack's limits; each card says when.",
			newQuieter(ctx, q.Bot).user(user, ""), at.UTC().Format("2006-01-02 15:04 UTC"), max(n, b.Count),
			"`"+strings.ReplaceAll(html.EscapeString(links.DefangTruncate(b.Target, 200)), "`", "'")+"`")
		if _, _, _, err := q.Bot.UpdateMessageContext(ctx, b.AlertChannel, b.AlertTS, slack.MsgOptionText(text, false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, true), nil, nil))); err != nil {
			q.log().Warn("quarantine: could not update the request", "error", slackCode(err))
		}
	}
	count := max(n, b.Count) // the flip's cards may still be being written
	minutes := float64(count) / max(q.DeleteRate()*60, 1)
	return fmt.Sprintf("Approved: %d messages will be removed, paced to Slack's limits (about %.0f minutes); each card says when.", count, max(minutes, 1))
}
