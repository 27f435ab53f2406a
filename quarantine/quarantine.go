// Package quarantine removes the messages (and files) whose verdict reaches
// their channel's quarantine level, keeps the original for release, turns
// the card into the tombstone and tells the author; an admin's click on the
// tombstone's button releases the message (re-posts it as the bot). What
// cannot be removed — no admin token, a token without the rights, a Slack
// Connect message from another organisation, a message already gone — is
// said on the card and counted, and nothing else changes. Each removal,
// release and message not removed also leaves, from here, as a finding for
// the SOC's tools (package events).
//
// The admin's user token (SLACK_ADMIN_USER_TOKEN) is used for deletions
// only, through a Slack client pointed at SLACK_API_URL: it is never logged
// and goes nowhere else.
package quarantine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Levels of VERDICTBOT_QUARANTINE and /scan channel quarantine: the lowest
// verdict whose message is removed.
const (
	Off        = "off"
	Malicious  = "malicious"
	Suspicious = "suspicious"
)

// What a file at the quarantine level removes (VERDICTBOT_QUARANTINE_FILES).
const (
	// FilesMessage removes the message that shared the file (chat.delete);
	// the file stays in Slack, no longer shared there. The default.
	FilesMessage = "message"
	// FilesDelete deletes the file itself, workspace-wide (files.delete);
	// the message stays.
	FilesDelete = "delete"
)

// Levels lists the valid levels, for help and validation.
var Levels = []string{Off, Malicious, Suspicious}

// Threshold is the lowest verdict level a quarantine level removes
// (ok false for off or an unknown level).
func Threshold(level string) (verdict.Level, bool) {
	switch level {
	case Malicious:
		return verdict.Malicious, true
	case Suspicious:
		return verdict.Suspicious, true
	}
	return verdict.Pending, false
}

// Failure reasons (the reason label of verdictbot_quarantine_failures_total).
const (
	ReasonNoToken        = "no_token"
	ReasonNotAllowed     = "not_allowed"
	ReasonOtherOrg       = "other_org"
	ReasonAlreadyDeleted = "already_deleted"
	ReasonError          = "error"
)

// AdminAPI is what the admin's user token is used for (*slack.Client).
type AdminAPI interface {
	DeleteMessageContext(ctx context.Context, channel, ts string) (string, string, error)
	DeleteFileContext(ctx context.Context, fileID string) error
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

// BotAPI is what the bot token is used for here (*slack.Client): reading
// the message before it is removed, re-posting it on release (with the
// names of the users and groups it mentions), and looking up the admin
// token's user.
type BotAPI interface {
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	PostMessageContext(ctx context.Context, channel string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channel, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	GetUserGroupsContext(ctx context.Context, options ...slack.GetUserGroupsOption) ([]slack.UserGroup, error)
}

// Store keeps what was removed, for release (store.State).
type Store interface {
	PutQuarantined(q store.Quarantined) error
	Quarantined(channel, ts string) (store.Quarantined, error)
}

// ChannelLevels says each channel's quarantine level (Off, Malicious or
// Suspicious): its own, else VERDICTBOT_QUARANTINE (*settings.Channels).
type ChannelLevels interface {
	Quarantine(channel string) string
}

// CardBook reads and edits a card by the message it answers, each edit one
// store transaction (*cardbook.Book).
type CardBook interface {
	Get(channel, sourceTS string) (*store.CardRecord, bool)
	// EditBySourceEmit edits the card and queues the event fn returns
	// (nil: none) in the same write (the outbox); it returns that event
	// as queued. fn may run more than once (a shared write, see
	// cardbook.Book.Shared), each time with the card read afresh: it
	// changes nothing but the card and variables it sets on every run.
	EditBySourceEmit(channel, sourceTS string, fn func(c *card.Card) (*store.Outgoing, error)) (*store.Outgoing, error)
}

// Poster updates cards and answers people privately (*notify.Poster).
type Poster interface {
	Update(ctx context.Context, c *card.Card) error
	Ephemeral(ctx context.Context, channel, user, text string, blocks ...slack.Block) error
}

// FalsePositive reports a false positive for a card line to the service,
// once, as the card's button does (commands.Feedback.Report); it returns
// the sentence for the user.
type FalsePositive func(ctx context.Context, user, channel, sourceTS string, line int, taskID string, cat verdict.Category) string

// Quarantine acts on verdicts and releases. The zero value of every hook is
// allowed; Admin nil means no admin token (every removal fails, said on
// the card).
type Quarantine struct {
	Admin  AdminAPI
	Bot    BotAPI
	Store  Store
	Cards  CardBook
	Poster Poster
	// Levels says each channel's level; nil: every channel is off.
	Levels ChannelLevels
	// FilesMode is VERDICTBOT_QUARANTINE_FILES: FilesMessage ("" too) or
	// FilesDelete.
	FilesMode string
	// IsAdmin decides who may release (commands.Access.IsAdmin).
	IsAdmin func(user string) bool
	// OwnTeam reports whether a message author's team is of this
	// install (the workspace, or on Enterprise Grid one of the
	// organisation's workspaces): a message from another team is another
	// organisation's (Slack Connect). nil: every team is.
	OwnTeam func(team string) bool
	// Teams, if set, returns the workspaces of an org-wide install, for
	// the methods that need a team_id with an org-level token
	// (usergroups.list, to name the groups of a released message).
	Teams         func() []string
	FalsePositive FalsePositive
	// Events receives a finding for each removal, release and message that
	// reached its channel's level but could not be removed (events.go);
	// nil sends none.
	Events events.Sink
	// Retention is VERDICTBOT_QUARANTINE_RETENTION: how long a removed
	// original is kept for release (a removal's finding says until when).
	Retention time.Duration
	// OnFailure is told about each message that could not be removed, by
	// reason; OnAction about each action done ("removed", "released").
	// Both may be nil.
	OnFailure func(reason string)
	OnAction  func(action string)
	Log       *slog.Logger
	Now       func() time.Time

	// Queue keeps the removals recheck flips decide (flips.go; nil: a
	// flip's cards are acted on at once, through Act).
	Queue RemovalStore
	// FlipMax is VERDICTBOT_QUARANTINE_FLIP_MAX: above it a flip's
	// removals wait for an admin's Remove all in AlertChannel
	// (VERDICTBOT_ALERT_CHANNEL, "" for none).
	FlipMax      int
	AlertChannel string
	// PostWait is how long a flip's removal waits for the announcement to
	// show its card before it is due anyway (0: a minute). Tests shorten
	// it; a process killed between the flip and the card's show leaves
	// its removals waiting this long.
	PostWait time.Duration
	// DeletesPerMinute paces the queued removals (default
	// DefaultDeletesPerMinute), shared by the replicas (ShareBudgets).
	DeletesPerMinute float64
	// OnFlip is told about the queue's events, with a count: "queued",
	// "held" (a flip's removals), "approved", "refused" (a Remove all),
	// "retried", "dropped" (a removal). OnCounts is told the queue's
	// length now and then. Both may be nil.
	OnFlip   func(event string, n int)
	OnCounts func(queued, held int)
	// ShowCard posts a card that was never posted (cards.Messages.Show):
	// the card of a recheck removal whose announcement stopped before
	// posting it. Nil: such a card stays unposted.
	ShowCard func(ctx context.Context, c *card.Card)
	flips    flips

	mu      sync.Mutex
	problem string // the admin token's problem found by Check
}

func (q *Quarantine) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

func (q *Quarantine) log() *slog.Logger {
	if q.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return q.Log
}

// Level returns a channel's quarantine level: its own setting, else the
// default (Off without Levels).
func (q *Quarantine) Level(channel string) string {
	if q == nil || q.Levels == nil {
		return Off
	}
	return q.Levels.Quarantine(channel)
}

// Check verifies the admin token once at start: auth.test, then that its
// user is a workspace admin or owner. It returns "" when the token is fine
// or not set, else a one-line problem (kept for Problem).
func (q *Quarantine) Check(ctx context.Context) string {
	if q.Admin == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	problem := ""
	at, err := q.Admin.AuthTestContext(ctx)
	switch {
	case err != nil:
		problem = "SLACK_ADMIN_USER_TOKEN was refused by auth.test (" + slackCode(err) + "): quarantine cannot remove messages"
	case at.BotID != "":
		problem = "SLACK_ADMIN_USER_TOKEN is a bot token, not an admin's user token: quarantine cannot remove others' messages"
	default:
		u, err := q.Bot.GetUserInfoContext(ctx, at.UserID)
		switch {
		case err != nil:
			problem = "the user of SLACK_ADMIN_USER_TOKEN could not be looked up (" + slackCode(err) + ")"
		case !u.IsAdmin && !u.IsOwner && !u.Enterprise.IsAdmin && !u.Enterprise.IsOwner:
			problem = fmt.Sprintf("SLACK_ADMIN_USER_TOKEN belongs to %s, who is not a workspace admin or owner: Slack will refuse to delete others' messages", at.UserID)
		}
	}
	q.mu.Lock()
	q.problem = problem
	q.mu.Unlock()
	return problem
}

// Problem is the admin token's problem found by Check ("" for none).
func (q *Quarantine) Problem() string {
	if q == nil {
		return ""
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.problem
}

// On reports whether the channel's quarantine level removes anything
// (it is not off).
func (q *Quarantine) On(channel string) bool {
	_, on := Threshold(q.Level(channel))
	return on
}

// CannotRemove says why quarantine cannot remove messages now ("" when it
// can): no admin token, or the one Check found wrong.
func (q *Quarantine) CannotRemove() string {
	if q.Admin == nil {
		return "no admin token is set (SLACK_ADMIN_USER_TOKEN)"
	}
	return q.Problem()
}

// Act is called with a card whose verdict is final, first or after a
// recheck changed it: when its level reaches the channel's quarantine
// level, the message is removed — or, for a file card with
// VERDICTBOT_QUARANTINE_FILES=delete, the files found at that level are
// deleted — whoever asked for the scan (RequestedBy plays no part: asking
// for a scan never weakens the automatic one, and cards stored by earlier
// versions with RequestedBy on a channel message are acted on too). A card
// answering /scan (no message of its own), a card in a direct message with
// the bot (what a person sent it to have checked), and one already removed
// or released are left alone. The level "could not check" (links left out
// past VERDICTBOT_MAX_LINKS, files too large) is below every quarantine
// level: such a message stays, and its card says what was not checked.
func (q *Quarantine) Act(ctx context.Context, c card.Card) {
	if q == nil {
		return
	}
	q.act(ctx, c, false)
}

// outcome is what act did.
type outcome int

const (
	outcomeNone    outcome = iota // nothing to do: below the level, released, removed before
	outcomeRemoved                // removed now
	outcomeFailed                 // could not be removed: the card says why
	outcomeRetry                  // a passing failure (queued removals only): try again later
)

// act is Act. queued is set for a removal taken from the queue (a recheck
// flip's, see Flips): a card that says "removed" whose message is still
// there is one a stop interrupted between the claim and the deletion, and
// is removed now; a passing failure leaves the card queued and returns
// outcomeRetry (with Slack's code) instead of failing it.
func (q *Quarantine) act(ctx context.Context, c card.Card, queued bool) (outcome, string) {
	if !c.AnswersMessage() || isDirect(c.Channel) {
		return outcomeNone, ""
	}
	threshold, on := Threshold(q.Level(c.Channel))
	level := c.Level()
	if !on || level < threshold {
		return outcomeNone, ""
	}
	if s := c.Quarantine; s != nil && (s.State == card.QuarantineReleased || (s.State == card.QuarantineRemoved && !queued)) {
		return outcomeNone, ""
	}
	ts, fileCard := strings.CutSuffix(c.SourceTS, "/files")
	deleteFiles := fileCard && q.FilesMode == FilesDelete
	start := q.now()
	if q.Admin == nil {
		q.fail(ctx, c, level, ReasonNoToken, "no admin token is set (SLACK_ADMIN_USER_TOKEN), so verdictbot cannot remove messages.")
		return outcomeFailed, ""
	}
	var msg *slack.Message
	err := q.retry(ctx, func(int) (err error) {
		msg, err = q.fetch(ctx, c.Channel, ts, c.ThreadTS)
		return err
	})
	if err != nil {
		if _, ok := passing(err); queued && (ok || ctx.Err() != nil) {
			return outcomeRetry, slackCode(err)
		}
		reason, problem := q.explain(err, "")
		if reason == ReasonAlreadyDeleted && q.removedBefore(ctx, c, ts, level) {
			return outcomeNone, ""
		}
		q.fail(ctx, c, level, reason, problem)
		return outcomeFailed, ""
	}
	rec := store.Quarantined{Channel: c.Channel, TS: ts, User: msg.User, Team: msg.Team, Text: msg.Text,
		Level: level.Key(), Reason: reasonLine(c, threshold), RemovedAt: start, Scope: store.ScopeMessage}
	if msg.ThreadTimestamp != "" && msg.ThreadTimestamp != ts {
		rec.ThreadTS = msg.ThreadTimestamp
	}
	if len(msg.Blocks.BlockSet) > 0 {
		rec.Blocks, _ = json.Marshal(msg.Blocks)
	}
	if len(msg.Attachments) > 0 {
		rec.Attachments, _ = json.Marshal(msg.Attachments)
	}
	var names []string
	if fileCard {
		// Only what the verdict is about: the files whose line reached
		// the level, by id. None of them in the message (it no longer
		// shares them) removes nothing: never every file of a message.
		found, all := filesFound(c, msg, threshold)
		if len(found) == 0 {
			if !q.removedBefore(ctx, c, ts, level) {
				q.fail(ctx, c, level, ReasonAlreadyDeleted, fmt.Sprintf("the file found %s (%s) is no longer in this message, so nothing was removed.",
					level, describeFiles(c, threshold)))
			}
			return outcomeFailed, ""
		}
		for _, f := range found {
			names = append(names, f.Name)
		}
		rec.Files = all
		if deleteFiles {
			rec.Scope, rec.Files = store.ScopeFiles, found
		}
	}
	// Claim: the card says "removed" before the deletion, so the
	// message_deleted event that follows is not taken for a person's
	// deletion, and a second Act (a recheck, another replica) does nothing.
	claimed := false
	err = q.edit(c.Channel, c.SourceTS, func(cc *card.Card) error {
		claimed = false // the edit may run more than once (CardBook)
		if s := cc.Quarantine; s != nil && (s.State == card.QuarantineReleased || (s.State == card.QuarantineRemoved && !queued)) {
			return nil
		}
		claimed = true
		cc.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: level, At: start, Files: deleteFiles, Names: names}
		return nil
	})
	if err != nil || !claimed {
		if err != nil {
			q.log().Warn("quarantine: could not mark the card", "channel", c.Channel, "ts", ts, "error", err)
		}
		if err != nil && queued {
			return outcomeRetry, "store"
		}
		return outcomeNone, ""
	}
	if err := q.Store.PutQuarantined(rec); err != nil {
		q.log().Error("quarantine: could not keep the original; the message is left in place", "channel", c.Channel, "ts", ts, "error", err)
		if queued {
			q.requeued(ctx, c, level, "the original could not be kept for release yet")
			return outcomeRetry, "store"
		}
		q.fail(ctx, c, level, ReasonError, "the original could not be kept for release, so it was left in place.")
		return outcomeFailed, ""
	}
	// A deletion retried after a passing failure may find its target gone:
	// the failed try had deleted it (its answer was lost).
	gone := func(attempt int, err error) error {
		if attempt > 0 && err != nil && slices.Contains([]string{"message_not_found", "file_not_found", "file_deleted"}, slackCode(err)) {
			return nil
		}
		return err
	}
	// A queued removal's every deletion call, tries included, takes its
	// turn in the pace (flips.go).
	pace := func() error {
		if !queued {
			return nil
		}
		return q.flipState().lim.Wait(ctx)
	}
	if deleteFiles {
		for _, f := range rec.Files {
			if err = q.retry(ctx, func(attempt int) error {
				if err := pace(); err != nil {
					return err
				}
				return gone(attempt, q.Admin.DeleteFileContext(ctx, f.ID))
			}); err != nil {
				break
			}
		}
	} else {
		err = q.retry(ctx, func(attempt int) error {
			if err := pace(); err != nil {
				return err
			}
			_, _, err := q.Admin.DeleteMessageContext(ctx, c.Channel, ts)
			return gone(attempt, err)
		})
	}
	if err != nil {
		if _, ok := passing(err); queued && (ok || ctx.Err() != nil) {
			q.requeued(ctx, c, level, "Slack answered `"+slackCode(err)+"`")
			return outcomeRetry, slackCode(err)
		}
		reason, problem := q.explain(err, rec.Team)
		q.fail(ctx, c, level, reason, problem)
		return outcomeFailed, ""
	}
	q.log().Info("quarantined", "channel", c.Channel, "ts", ts, "level", level.Key(), "scope", rec.Scope, "files", len(names),
		"queued", queued, "took_ms", q.now().Sub(start).Milliseconds())
	if q.OnAction != nil {
		q.OnAction("removed")
	}
	// The card and the removal's event in one write: the original is kept
	// until its removal plus Retention.
	q.showEmit(ctx, c.Channel, c.SourceTS, nil, func(c card.Card) (events.Finding, bool) {
		return q.removedFinding(rec, c), true
	})
	if rec.User != "" {
		what := "Your message was removed"
		if deleteFiles {
			what = "The file you shared was deleted"
			if len(names) > 1 {
				what = "The files you shared were deleted"
			}
		}
		text := fmt.Sprintf("%s by verdictbot's quarantine: %s was found *%s*. The original is kept; a security admin can release it from the card in the thread if this is a mistake.",
			what, describeTargets(c, threshold), level)
		if deleteFiles {
			text = fmt.Sprintf("%s by verdictbot's quarantine: %s was found *%s*. The sandbox keeps the sample for the security team; a deleted file cannot be released.",
				what, describeTargets(c, threshold), level)
		}
		if err := q.Poster.Ephemeral(ctx, c.Channel, rec.User, text); err != nil {
			q.log().Warn("quarantine: could not tell the author", "channel", c.Channel, "error", err)
		}
	}
	return outcomeRemoved, ""
}

// requeued puts a card claimed for a queued removal back to "queued",
// saying why the removal waits (a passing failure: it is tried again).
func (q *Quarantine) requeued(ctx context.Context, c card.Card, level verdict.Level, why string) {
	at := q.now()
	q.show(ctx, c.Channel, c.SourceTS, func(cc *card.Card) {
		if cc.Quarantine != nil && cc.Quarantine.State == card.QuarantineReleased {
			return
		}
		cc.Quarantine = &card.Quarantine{State: card.QuarantineQueued, Level: level, At: at,
			Problem: why + "; verdictbot tries again shortly."}
	})
}

// removedBefore handles a message (or files) found gone that quarantine
// itself removed: the process stopped after the deletion and before its
// job was done, and the job ran again after the restart on a card begun
// afresh (or the message's other card removed it). The original kept for
// release says so; the card is made the tombstone again (or shows the
// release), instead of saying a person deleted it. It returns false when
// nothing was kept (someone else deleted it).
func (q *Quarantine) removedBefore(ctx context.Context, c card.Card, ts string, level verdict.Level) bool {
	rec, err := q.Store.Quarantined(c.Channel, ts)
	if err != nil {
		return false
	}
	_, fileCard := strings.CutSuffix(c.SourceTS, "/files")
	deleted := rec.FilesDeleted()
	if deleted && !fileCard {
		return false // its files were deleted; the message itself was not
	}
	var names []string
	for _, f := range rec.Files {
		if f.Found || deleted {
			names = append(names, f.Name)
		}
	}
	if !fileCard {
		names = nil
	}
	// The events are at least once: the stop may have come before the
	// removal's event was queued, so it is queued again with the card.
	q.showEmit(ctx, c.Channel, c.SourceTS, func(cc *card.Card) {
		if cc.Quarantine != nil && (cc.Quarantine.State == card.QuarantineRemoved || cc.Quarantine.State == card.QuarantineReleased) {
			return
		}
		st := &card.Quarantine{State: card.QuarantineRemoved, Level: level, At: rec.RemovedAt, Files: deleted, Names: names}
		if rec.Released() {
			st.State, st.ReleasedBy, st.ReleasedAt = card.QuarantineReleased, rec.ReleasedBy, rec.ReleasedAt
		}
		cc.Quarantine = st
	}, func(c card.Card) (events.Finding, bool) {
		return q.removedFinding(rec, c), !rec.Released()
	})
	q.log().Info("quarantine: removed before a restart; the card says so again", "channel", c.Channel, "ts", ts,
		"released", rec.Released())
	return true
}

// edit applies fn to the card, with no event.
func (q *Quarantine) edit(channel, sourceTS string, fn func(c *card.Card) error) error {
	_, err := q.Cards.EditBySourceEmit(channel, sourceTS, func(c *card.Card) (*store.Outgoing, error) { return nil, fn(c) })
	return err
}

// show applies fn (if any) to the card and updates it in Slack; it returns
// the card as saved.
func (q *Quarantine) show(ctx context.Context, channel, sourceTS string, fn func(c *card.Card)) card.Card {
	return q.showEmit(ctx, channel, sourceTS, fn, nil)
}

// showEmit is show whose edit also queues the event of the finding ev
// makes of the edited card (ok false: none), in the same write (the
// outbox), and sends it. Without a receiver, or when the edit fails (the
// card is gone), the finding is emitted after.
func (q *Quarantine) showEmit(ctx context.Context, channel, sourceTS string, fn func(c *card.Card), ev func(c card.Card) (events.Finding, bool)) card.Card {
	var snap card.Card
	out, err := q.Cards.EditBySourceEmit(channel, sourceTS, func(c *card.Card) (*store.Outgoing, error) {
		if fn != nil {
			fn(c)
		}
		snap = c.Clone()
		if ev == nil {
			return nil, nil
		}
		f, ok := ev(snap)
		if !ok {
			return nil, nil
		}
		return events.Prepare(q.Events, f), nil
	})
	switch {
	case out != nil:
		events.Committed(q.Events, []*store.Outgoing{out})
	case ev != nil:
		if f, ok := ev(snap); ok {
			events.Emit(ctx, q.Events, f)
		}
	}
	if err != nil {
		q.log().Warn("quarantine: card edit failed", "channel", channel, "error", err)
		return snap
	}
	if snap.CardTS != "" {
		// A 429 storm outlasting the poster's retries is waited out, as
		// for the verdict's own card (cards.Messages): the card was saved
		// final, so nothing would write it again.
		if err := notify.UntilAdmitted(ctx, func() error { return q.Poster.Update(ctx, &snap) }); err != nil {
			q.log().Warn("quarantine: card update failed", "channel", channel, "error", err)
		}
	}
	return snap
}

// fail leaves the card with a line saying why the message could not be
// removed, and counts it; nothing else changes.
func (q *Quarantine) fail(ctx context.Context, c card.Card, level verdict.Level, reason, problem string) {
	q.log().Warn("quarantine: message not removed", "channel", c.Channel, "ts", c.SourceTS, "reason", reason)
	if q.OnFailure != nil {
		q.OnFailure(reason)
	}
	at := q.now()
	q.showEmit(ctx, c.Channel, c.SourceTS, func(cc *card.Card) {
		cc.Quarantine = &card.Quarantine{State: card.QuarantineFailed, Level: level, At: at, Problem: problem,
			Files: strings.HasSuffix(c.SourceTS, "/files") && q.FilesMode == FilesDelete}
	}, func(cc card.Card) (events.Finding, bool) {
		return finding(events.KindQuarantine, cc, &events.Quarantine{Removed: false, Reason: reason, Level: level.Key()}), true
	})
}

// explain turns a Slack error into a failure reason and the card's
// sentence. team is the message author's team.
func (q *Quarantine) explain(err error, team string) (reason, problem string) {
	code := slackCode(err)
	switch code {
	case "message_not_found", "file_not_found", "file_deleted", "thread_not_found":
		return ReasonAlreadyDeleted, "it was already deleted."
	case "missing_scope", "not_allowed_token_type", "invalid_auth", "not_authed", "token_revoked", "account_inactive", "no_permission":
		return ReasonNotAllowed, fmt.Sprintf("the admin token lacks the rights to delete it (Slack answered `%s`).", code)
	case "cant_delete_message", "cant_delete_file":
		if team != "" && q.OwnTeam != nil && !q.OwnTeam(team) {
			return ReasonOtherOrg, fmt.Sprintf("it was posted by another organisation in this Slack Connect channel, and only they can delete it (Slack answered `%s`).", code)
		}
		return ReasonNotAllowed, fmt.Sprintf("Slack refused (`%s`): the admin token's user must be a workspace admin or owner.", code)
	}
	return ReasonError, fmt.Sprintf("Slack answered `%s`.", code)
}

// slackCode is a Slack error's code, or a generic word: never the error's
// text, which could carry a URL.
func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	if errors.Is(err, errNotFound) {
		return "message_not_found"
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return "ratelimited"
	}
	s := err.Error()
	if !strings.ContainsAny(s, " /:") && len(s) < 60 {
		return s // slack-go's errors are the bare code
	}
	return "request failed"
}

var errNotFound = errors.New("message_not_found")

// isDirect reports whether channel is a direct message (Slack's D prefix):
// the only ones the bot reads are its own Messages tab with a person.
func isDirect(channel string) bool { return strings.HasPrefix(channel, "D") }

// retryWaits are the waits between the tries of one Slack call that
// failed for a passing reason (see passing): four tries in about 13 s, or
// Slack's Retry-After when it asks for longer (up to maxRetryAfter).
var retryWaits = []time.Duration{time.Second, 3 * time.Second, 9 * time.Second}

const maxRetryAfter = 30 * time.Second

// retry calls call (with its try number, from 0) until it succeeds, fails
// for good, the tries are spent, or ctx ends.
func (q *Quarantine) retry(ctx context.Context, call func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := call(attempt)
		if err == nil || attempt >= len(retryWaits) || ctx.Err() != nil {
			return err
		}
		asked, ok := passing(err)
		if !ok {
			return err
		}
		wait := max(retryWaits[attempt], min(asked, maxRetryAfter))
		q.log().Info("quarantine: Slack call failed; trying again", "reason", slackCode(err), "wait", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// passing reports whether err is worth another try (notify.Passing)
// rather than an answer (a refusal, a missing message).
func passing(err error) (time.Duration, bool) {
	if errors.Is(err, errNotFound) {
		return 0, false
	}
	return notify.Passing(err)
}

// fetch reads the message at ts (a reply when thread is another ts).
func (q *Quarantine) fetch(ctx context.Context, channel, ts, thread string) (*slack.Message, error) {
	var msgs []slack.Message
	if thread == "" || thread == ts {
		r, err := q.Bot.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: channel,
			Latest: ts, Oldest: ts, Inclusive: true, Limit: 1})
		if err != nil {
			return nil, err
		}
		msgs = r.Messages
	} else {
		m, _, _, err := q.Bot.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel,
			Timestamp: thread, Latest: ts, Oldest: ts, Inclusive: true, Limit: 2})
		if err != nil {
			return nil, err
		}
		msgs = m
	}
	for i := range msgs {
		if msgs[i].Timestamp == ts {
			return &msgs[i], nil
		}
	}
	return nil, errNotFound
}

// filesFound returns the message's files whose card line reached the
// threshold (found), matched by Slack's file id — by exact name only for a
// line stored before ids were kept, and then only a name that one file of
// the message has — and all the message's files (Found marking those).
// found is empty when none of the lines' files is in the message: the
// caller then removes nothing.
func filesFound(c card.Card, msg *slack.Message, threshold verdict.Level) (found, all []store.QuarantinedFile) {
	ids, names := map[string]bool{}, map[string]bool{}
	for _, l := range c.Lines {
		if l.Kind != card.KindFile || l.Level < threshold || l.File == nil {
			continue
		}
		if l.File.ID != "" {
			ids[l.File.ID] = true
		} else {
			names[l.File.Name] = true
		}
	}
	byName := map[string]int{}
	for _, f := range msg.Files {
		if f.Mode != "tombstone" {
			byName[f.Name]++
		}
	}
	for _, f := range msg.Files {
		if f.Mode == "tombstone" {
			continue // deleted: gone from the message
		}
		qf := store.QuarantinedFile{ID: f.ID, Name: cmp.Or(f.Name, f.Title)}
		if ids[f.ID] || (names[f.Name] && byName[f.Name] == 1) {
			qf.Found = true
			found = append(found, qf)
		}
		all = append(all, qf)
	}
	return found, all
}

// describeFiles names the card's files at or above the threshold,
// defanged, for a card line.
func describeFiles(c card.Card, threshold verdict.Level) string {
	var names []string
	for _, l := range c.Lines {
		if l.Kind == card.KindFile && l.Level >= threshold {
			names = append(names, "`"+strings.ReplaceAll(links.DefangTruncate(l.Target, 80), "`", "'")+"`")
		}
	}
	return strings.Join(names, ", ")
}

// reasonLine says why, for the record: each target at or above the
// threshold with its level and top score.
func reasonLine(c card.Card, threshold verdict.Level) string {
	var parts []string
	for _, l := range c.Lines {
		if l.Level < threshold {
			continue
		}
		p := links.DefangTruncate(l.Target, 120) + " " + l.Level.Key()
		if s, ok := l.Scores[l.Category]; ok && l.Category != "" {
			p += fmt.Sprintf(" (%s %.2f)", l.Category, s)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// describeTargets names what was found, defanged, for the author.
func describeTargets(c card.Card, threshold verdict.Level) string {
	var names []string
	for _, l := range c.Lines {
		if l.Level >= threshold {
			names = append(names, notify.CodeURL(l.Target, 80))
		}
	}
	switch len(names) {
	case 0:
		return "something in it"
	case 1:
		return names[0]
	}
	return strings.Join(names, ", ")
}
