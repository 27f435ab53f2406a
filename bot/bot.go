// Package bot owns the Slack Socket Mode connection: it acks every envelope
// at once, before any network call, turns it into a job (scan the links of
// this message, run this command, handle this click) and hands the job to a
// bounded worker pool, so the events channel is always drained.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocache "github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/store"
)

// Identity is who the bot is in the workspace, learnt at start (auth.test)
// and from the hello frame (app id).
type Identity struct {
	UserID, BotID, TeamID, AppID string
	// EnterpriseID is the Enterprise Grid organisation ("" outside Grid).
	// On an org-wide install TeamID is the enterprise id too: which
	// workspace an event belongs to is Meta.TeamID.
	EnterpriseID string
	// TeamURL is the workspace's URL (https://name.slack.com/).
	TeamURL string
}

// Meta describes the delivery of an Events API event.
type Meta struct {
	EventID      string
	EventTime    time.Time
	RetryAttempt int
	RetryReason  string
	// TeamID is the workspace the event was delivered for: the team of
	// authorizations[0] (on Enterprise Grid, one of the organisation's
	// workspaces; in a Slack Connect channel the outer team_id is the
	// poster's, possibly another organisation's), else the outer team_id.
	TeamID string
	// EnterpriseID is the organisation of that installation ("" outside
	// Grid).
	EnterpriseID string
	// Done must be called once the work the event asked for is complete
	// (for a message: its card is final). Until then the job stays in the
	// journal and is resumed after a restart. Safe to call more than once.
	Done func()
	// Replayed is true for a job resumed after a restart.
	Replayed bool
	// Raw is the inner event's JSON as Slack sent it (nil when unknown),
	// for the fields slack-go does not decode (shared-message blocks).
	Raw json.RawMessage
}

// Handlers receive the jobs. Each runs on a pool worker with the pool's
// context. A nil handler means the kind of payload is acked and ignored.
type Handlers struct {
	Message    func(ctx context.Context, ev *slackevents.MessageEvent, m Meta)
	FileShared func(ctx context.Context, ev *slackevents.FileSharedEvent, m Meta)
	// Interaction gets the decoded callback and its JSON as Slack sent it
	// (for what slack-go does not decode, such as a shortcut message's
	// shared-message blocks).
	Interaction func(ctx context.Context, cb *slack.InteractionCallback, raw json.RawMessage)
	Slash       func(ctx context.Context, cmd *slack.SlashCommand)
	// SlashAck, if set, computes the payload of a slash command's ack. It
	// runs before the ack, so it must be pure and fast (no network).
	SlashAck func(cmd *slack.SlashCommand) any
	// Busy, if set, is called (on a fresh goroutine owned by the bot) when
	// a job could not be queued, so the user can be told.
	Busy func(ctx context.Context, kind string, payload any)
	// MessageNeedsWork, if set, tells at intake, before the ack, whether a
	// message event may need work (a card to post, update or mark
	// deleted); raw is the inner event's JSON as Slack sent it. A message
	// that needs none is acked at once and dropped: no journal write, no
	// event-id record. It runs on the intake goroutine, so it must be pure
	// and fast (no network, no disk), and answer true when in doubt.
	MessageNeedsWork func(ev *slackevents.MessageEvent, raw json.RawMessage) bool
	// FileSharedNeedsWork is MessageNeedsWork for file_shared events.
	FileSharedNeedsWork func(ev *slackevents.FileSharedEvent) bool
	// AppHomeOpened gets app_home_opened (someone opened the app's Home
	// or Messages tab).
	AppHomeOpened func(ctx context.Context, ev *slackevents.AppHomeOpenedEvent)
	// AppMention gets app_mention (someone wrote @verdictbot in a
	// channel the bot is in).
	AppMention func(ctx context.Context, ev *slackevents.AppMentionEvent)
	// TeamAccess gets team_access_granted (granted true) and
	// team_access_revoked: an Org Admin changed the workspaces an
	// org-wide install may see.
	TeamAccess func(ctx context.Context, granted bool, teams []string)
	// Reaction gets reaction_added events that ReactionNeedsWork (which
	// runs before the ack: pure and fast) lets through, e.g. the emoji
	// that reports a message to security.
	Reaction          func(ctx context.Context, ev *slackevents.ReactionAddedEvent, m Meta)
	ReactionNeedsWork func(ev *slackevents.ReactionAddedEvent) bool
	// Joined gets member_joined_channel events that JoinedNeedsWork
	// (before the ack) lets through: the bot added to a channel.
	Joined          func(ctx context.Context, ev *slackevents.MemberJoinedChannelEvent, m Meta)
	JoinedNeedsWork func(ev *slackevents.MemberJoinedChannelEvent) bool
}

// Observer receives measurements for metrics. All methods must be cheap.
type Observer interface {
	Envelope(kind string, ackLatency time.Duration, err error)
	Dropped(kind string, reason string)
}

// Options configure a Bot.
type Options struct {
	Workers   int           // worker pool size (default 8)
	QueueSize int           // pending jobs (default 10,000)
	DedupeTTL time.Duration // how long event ids are remembered (default 24h)
	Logger    *slog.Logger
	Observer  Observer
	// OnTakeOver, if set, is called with the number of jobs taken over
	// from a replica that stopped (for metrics).
	OnTakeOver func(jobs int)
	// OnAuth, if set, is called with auth.test's answer before the
	// Socket Mode connection opens (the install's workspaces are learnt
	// there); an error stops Run.
	OnAuth func(ctx context.Context, at *slack.AuthTestResponse) error
	// Admit, if set, tells whether an envelope delivered for team (see
	// Meta.TeamID) is to be handled: on an org-wide install, whether the
	// workspace is granted. One that is not is acked and dropped, with a
	// log line, before any journal write.
	Admit func(team string) bool
}

// Bot is the Socket Mode adapter.
type Bot struct {
	sm       *socketmode.Client
	api      *slack.Client
	h        Handlers
	opt      Options
	log      *slog.Logger
	pool     *Pool
	seen     *gocache.Cache
	idMu     sync.RWMutex
	id       Identity
	conn     atomic.Bool
	extra    sync.WaitGroup
	busySem  chan struct{}
	dedupeFn func(eventID string) bool
	journal  Journal
	pending  chan pendingAck
	spooled  atomic.Int64 // envelopes acked, waiting for the journal
	fin      *finisher    // jobs done, their finish refused by the store
	// ackPayloads holds slash-command ack payloads computed at intake
	// until the journal acks their envelope.
	ackPayloads sync.Map
}

// New returns a bot reading from sm. api is the Web API client the bot uses
// for auth.test (normally the one sm embeds).
func New(sm *socketmode.Client, api *slack.Client, h Handlers, opt Options) *Bot {
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = 10_000
	}
	if opt.DedupeTTL <= 0 {
		opt.DedupeTTL = 24 * time.Hour
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Bot{sm: sm, api: api, h: h, opt: opt, log: opt.Logger,
		seen: gocache.New(opt.DedupeTTL, time.Hour), busySem: make(chan struct{}, 8), fin: newFinisher()}
	b.dedupeFn = func(id string) bool { return b.seen.Add(id, struct{}{}, gocache.DefaultExpiration) == nil }
	return b
}

// SetJournal makes the bot record every job durably before acking it
// (deduplicating redeliveries on event id across restarts), and resume the
// unfinished ones at start. An envelope with nothing to do (see
// Handlers.MessageNeedsWork) is acked at once and not recorded.
func (b *Bot) SetJournal(j Journal) { b.journal = j }

// SetHandler sets the message handler (it usually needs the bot's
// Identity, so it is wired after New) and its pre-check (see
// Handlers.MessageNeedsWork; nil: every message may need work).
func (b *Bot) SetHandler(h func(ctx context.Context, ev *slackevents.MessageEvent, m Meta), needsWork func(ev *slackevents.MessageEvent, raw json.RawMessage) bool) {
	b.h.Message = h
	b.h.MessageNeedsWork = needsWork
}

// SetFileHandler sets the file_shared handler and its pre-check (see
// Handlers.FileSharedNeedsWork).
func (b *Bot) SetFileHandler(h func(ctx context.Context, ev *slackevents.FileSharedEvent, m Meta), needsWork func(ev *slackevents.FileSharedEvent) bool) {
	b.h.FileShared = h
	b.h.FileSharedNeedsWork = needsWork
}

// SetJoinHandler sets the member_joined_channel handler and its pre-check
// (see Handlers.Joined). Call it before Run.
func (b *Bot) SetJoinHandler(h func(ctx context.Context, ev *slackevents.MemberJoinedChannelEvent, m Meta), needsWork func(ev *slackevents.MemberJoinedChannelEvent) bool) {
	b.h.Joined, b.h.JoinedNeedsWork = h, needsWork
}

// SetReactionHandler sets the reaction_added handler and its pre-check
// (see Handlers.Reaction). Call it before Run.
func (b *Bot) SetReactionHandler(h func(ctx context.Context, ev *slackevents.ReactionAddedEvent, m Meta), needsWork func(ev *slackevents.ReactionAddedEvent) bool) {
	b.h.Reaction, b.h.ReactionNeedsWork = h, needsWork
}

// SetPeopleHandlers sets the app_home_opened and app_mention handlers
// (nil: acked and ignored). Call it before Run.
func (b *Bot) SetPeopleHandlers(home func(ctx context.Context, ev *slackevents.AppHomeOpenedEvent), mention func(ctx context.Context, ev *slackevents.AppMentionEvent)) {
	b.h.AppHomeOpened = home
	b.h.AppMention = mention
}

// Identity returns who the bot is (valid once Run has started).
func (b *Bot) Identity() Identity {
	b.idMu.RLock()
	defer b.idMu.RUnlock()
	return b.id
}

// Connected reports whether the Socket Mode connection is up.
func (b *Bot) Connected() bool { return b.conn.Load() }

// QueueDepth returns the number of jobs waiting for a worker.
func (b *Bot) QueueDepth() int {
	if b.pool == nil {
		return 0
	}
	return b.pool.Depth()
}

// ErrAuth wraps a fatal authentication failure: the process should exit
// non-zero so that it is restarted and someone is alerted.
//
//lint:ignore ST1005 Slack is a name
var ErrAuth = errors.New("Slack refused the credentials")

// Run learns the bot's identity, connects, and processes envelopes until ctx
// ends or a fatal error occurs. On return the queue has been drained for up
// to drain, then jobs are cancelled.
func (b *Bot) Run(ctx context.Context, drain time.Duration) error {
	at, err := b.api.AuthTestContext(ctx)
	if err != nil {
		return classifyAuth("auth.test with SLACK_BOT_TOKEN", err)
	}
	b.idMu.Lock()
	b.id = Identity{UserID: at.UserID, BotID: at.BotID, TeamID: at.TeamID, TeamURL: at.URL, EnterpriseID: at.EnterpriseID}
	b.idMu.Unlock()
	b.log.Info("authenticated", "user_id", at.UserID, "bot_id", at.BotID, "team_id", at.TeamID, "team", at.Team, "enterprise_id", at.EnterpriseID)
	if b.opt.OnAuth != nil {
		if err := b.opt.OnAuth(ctx, at); err != nil {
			return err
		}
	}

	b.pool = NewPool(b.opt.Workers, b.opt.QueueSize, b.log)
	var journalDone chan struct{}
	sweepDone := make(chan struct{})
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	// The finisher outlives ctx: the jobs drained at the end finish too.
	finCtx, stopFin := context.WithCancel(context.Background())
	finDone := make(chan struct{})
	defer func() { stopFin(); <-finDone }()
	if b.journal != nil {
		go func() { defer close(finDone); b.runFinisher(finCtx) }()
		b.pending = make(chan pendingAck, 4096)
		journalDone = make(chan struct{})
		go b.runJournal(ctx, b.pending, journalDone)
		b.replay(b.log)
		if b.journal.SweepEvery() > 0 {
			go func() { defer close(sweepDone); b.sweep(sweepCtx, b.journal) }()
		} else {
			close(sweepDone)
		}
	} else {
		close(sweepDone)
		close(finDone)
	}
	runCtx, stopConn := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- b.sm.RunContext(runCtx) }()

	var result error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-runErr:
			if ctx.Err() == nil {
				result = classifyAuth("Socket Mode connection", err)
			}
			runErr = nil
			break loop
		case evt, ok := <-b.sm.Events:
			if !ok {
				break loop
			}
			if err := b.dispatch(ctx, evt); err != nil {
				result = err
				break loop
			}
		}
	}
	b.conn.Store(false)
	stopConn()
	stopSweep() // no more work taken over: this replica is stopping
	<-sweepDone
	if runErr != nil {
		go func() { <-runErr }() // RunContext ends with runCtx
	}
	if b.pending != nil {
		close(b.pending)
		<-journalDone
	}
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	b.pool.Close(dctx)
	b.extra.Wait()
	return result
}

func classifyAuth(what string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, fatal := range []string{"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type", "missing_scope"} {
		if strings.Contains(msg, fatal) {
			return fmt.Errorf("%w: %s: %s", ErrAuth, what, fatal)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// dispatch handles one event from the Socket Mode client. Acks come first.
func (b *Bot) dispatch(ctx context.Context, evt socketmode.Event) error {
	start := time.Now()
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		b.log.Debug("connecting to Slack")
	case socketmode.EventTypeConnected:
		b.conn.Store(true)
		b.log.Info("connected to Slack")
	case socketmode.EventTypeHello:
		b.conn.Store(true)
		if evt.Request != nil {
			if app := evt.Request.ConnectionInfo.AppID; app != "" {
				b.idMu.Lock()
				b.id.AppID = app
				b.idMu.Unlock()
			}
			if n := evt.Request.NumConnections; n > 1 {
				b.log.Warn("another connection uses this app token: events are split between them", "connections", n)
			}
		}
	case socketmode.EventTypeConnectionError:
		b.conn.Store(false)
		b.log.Warn("Slack connection failed; retrying", "error", fmt.Sprint(evt.Data))
	case socketmode.EventTypeInvalidAuth:
		return fmt.Errorf("%w: Socket Mode: invalid_auth (check SLACK_APP_TOKEN)", ErrAuth)
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		b.log.Warn("Socket Mode error", "type", string(evt.Type), "error", fmt.Sprint(evt.Data))
	case socketmode.EventTypeErrorBadMessage:
		b.ackBadMessage(ctx, evt, start)
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive:
		b.intake(evt, start)
	default:
		if evt.Request != nil && evt.Request.EnvelopeID != "" {
			err := b.ack(evt)
			b.observe(string(evt.Type), start, err)
		}
	}
	return nil
}

func (b *Bot) ack(evt socketmode.Event, payload ...any) error {
	if evt.Request == nil || evt.Request.EnvelopeID == "" {
		return nil
	}
	if len(payload) == 0 || payload[0] == nil {
		if p, ok := b.ackPayloads.LoadAndDelete(evt.Request.EnvelopeID); ok {
			payload = []any{p}
		}
	}
	var err error
	if len(payload) > 0 && payload[0] != nil && evt.Request.AcceptsResponsePayload {
		err = b.sm.Ack(*evt.Request, payload[0])
		if err != nil { // too large: ack bare, the handler answers later
			b.log.Warn("ack payload refused; acking without it", "error", err)
			err = b.sm.Ack(*evt.Request)
		}
	} else {
		err = b.sm.Ack(*evt.Request)
	}
	if err != nil {
		b.log.Error("ack failed", "envelope_id", evt.Request.EnvelopeID, "error", err)
	}
	return err
}

// ackBadMessage acks an envelope slack-go could not decode, taking its id
// from the raw frame: otherwise Slack redelivers it (an unacked envelope is retried).
func (b *Bot) ackBadMessage(ctx context.Context, evt socketmode.Event, start time.Time) {
	bad, ok := evt.Data.(*socketmode.ErrorBadMessage)
	if !ok {
		return
	}
	var env struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	if err := json.Unmarshal(bad.Message, &env); err != nil || env.EnvelopeID == "" {
		b.log.Warn("undecodable Socket Mode frame without an envelope id", "cause", fmt.Sprint(bad.Cause), "bytes", len(bad.Message))
		return
	}
	err := b.sm.AckCtx(ctx, env.EnvelopeID, nil)
	b.observe("bad_message", start, err)
	b.log.Warn("acked an envelope that could not be decoded; it is dropped",
		"envelope_id", env.EnvelopeID, "type", env.Type, "cause", fmt.Sprint(bad.Cause))
	if b.opt.Observer != nil {
		b.opt.Observer.Dropped(env.Type, "undecodable")
	}
}

func (b *Bot) observe(kind string, start time.Time, err error) {
	if b.opt.Observer != nil {
		b.opt.Observer.Envelope(kind, time.Since(start), err)
	}
}

// intake acks an envelope and routes its job: through the journal (ack
// after the job is durably recorded) when there is one, directly otherwise.
// Nothing here makes a network call before the ack.
func (b *Bot) intake(evt socketmode.Event, start time.Time) {
	kind := string(evt.Type)
	var payload any
	if evt.Type == socketmode.EventTypeSlashCommand && b.h.SlashAck != nil {
		if cmd, ok := evt.Data.(slack.SlashCommand); ok {
			payload = b.h.SlashAck(&cmd)
		}
	}
	if !b.needsWork(evt) {
		// Nothing to do (most messages): no journal, no dedupe, since a
		// redelivery has nothing to do either.
		err := b.ack(evt)
		b.observe(kind, start, err)
		return
	}
	if team, ok := b.admitted(evt); !ok {
		// A workspace the org-wide install was not granted, or whose
		// access was revoked: Slack should not send it; if it does, it
		// is not ours to check.
		err := b.ack(evt)
		b.observe(kind, start, err)
		b.log.Info("envelope of a workspace the app is not granted dropped", "kind", kind, "team_id", team)
		if b.opt.Observer != nil {
			b.opt.Observer.Dropped(kind, "workspace_not_granted")
		}
		return
	}
	if b.pending == nil || evt.Request == nil {
		err := b.ack(evt, payload)
		b.observe(kind, start, err)
		if id := eventID(evt); id != "" && !b.dedupeFn(id) {
			b.log.Debug("duplicate delivery ignored", "event_id", id)
			if b.opt.Observer != nil {
				b.opt.Observer.Dropped(kind, "duplicate")
			}
			return
		}
		b.route(evt, nil)
		return
	}
	raw, _ := json.Marshal(jobPayload{Type: evt.Request.Type, Payload: evt.Request.Payload, RetryAttempt: evt.Request.RetryAttempt})
	job := &store.Job{Kind: kind, EventID: eventID(evt), Payload: raw}
	p := pendingAck{evt: evt, job: job, start: start, kind: kind, run: func(j *store.Job) { b.route(evt, j) }}
	if payload != nil { // the slash command's ack payload goes with the ack
		b.ackPayloads.Store(evt.Request.EnvelopeID, payload)
	}
	b.pending <- p
}

// needsWork reports whether an envelope may need work, from its content
// alone (see Handlers.MessageNeedsWork). Slash commands and interactions
// always do; an Events API envelope does when route would hand it to a
// handler and that handler's pre-check, if any, does not rule it out.
func (b *Bot) needsWork(evt socketmode.Event) bool {
	if evt.Type != socketmode.EventTypeEventsAPI {
		return true
	}
	ev, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok || ev.Type != slackevents.CallbackEvent {
		return false
	}
	switch inner := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if b.h.Message == nil {
			return false
		}
		if b.h.MessageNeedsWork == nil {
			return true
		}
		var raw json.RawMessage
		if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.InnerEvent != nil {
			raw = *cb.InnerEvent
		}
		return b.h.MessageNeedsWork(inner, raw)
	case *slackevents.FileSharedEvent:
		if b.h.FileShared == nil {
			return false
		}
		return b.h.FileSharedNeedsWork == nil || b.h.FileSharedNeedsWork(inner)
	case *slackevents.AppHomeOpenedEvent:
		return b.h.AppHomeOpened != nil
	case *slackevents.AppMentionEvent:
		return b.h.AppMention != nil
	case *slackevents.TeamAccessGrantedEvent, *slackevents.TeamAccessRevokedEvent:
		return b.h.TeamAccess != nil
	case *slackevents.ReactionAddedEvent:
		return b.h.Reaction != nil && b.h.ReactionNeedsWork != nil && b.h.ReactionNeedsWork(inner)
	case *slackevents.MemberJoinedChannelEvent:
		return b.h.Joined != nil && b.h.JoinedNeedsWork != nil && b.h.JoinedNeedsWork(inner)
	}
	return false
}

// admitted tells whether evt is delivered for a workspace the bot handles
// (Options.Admit), and which. Envelopes about the install itself
// (team_access_*) always are.
func (b *Bot) admitted(evt socketmode.Event) (string, bool) {
	if b.opt.Admit == nil {
		return "", true
	}
	var team string
	switch d := evt.Data.(type) {
	case slackevents.EventsAPIEvent:
		switch d.InnerEvent.Data.(type) {
		case *slackevents.TeamAccessGrantedEvent, *slackevents.TeamAccessRevokedEvent:
			return "", true
		}
		var exact bool
		var payload json.RawMessage
		if evt.Request != nil {
			payload = evt.Request.Payload
		}
		if team, _, exact = Installation(d, payload); !exact {
			// Only the outer team_id, which is the poster's (another
			// organisation's in Slack Connect): Slack decided.
			return team, true
		}
	case slack.SlashCommand:
		team = d.TeamID
	case slack.InteractionCallback:
		team = d.Team.ID
	default:
		return "", true
	}
	return team, b.opt.Admit(team)
}

// Installation returns the workspace and organisation an Events API
// envelope was delivered for: the team of authorizations[0] (on Enterprise
// Grid, and in Slack Connect channels where the outer team is the
// poster's); when Slack left it null (some org-wide installs),
// context_team_id of payload (the callback as sent); else the outer
// team_id, and then exact is false: that is the poster's workspace, not
// necessarily one of the install's.
func Installation(ev slackevents.EventsAPIEvent, payload json.RawMessage) (team, enterprise string, exact bool) {
	team = ev.TeamID
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return team, "", false
	}
	enterprise = cb.EnterpriseID
	if len(cb.Authorizations) > 0 {
		a := cb.Authorizations[0]
		if a.EnterpriseID != "" {
			enterprise = a.EnterpriseID
		}
		if a.TeamID != "" {
			return a.TeamID, enterprise, true
		}
	}
	if len(payload) > 0 {
		var ctx struct {
			Team string `json:"context_team_id"`
		}
		if json.Unmarshal(payload, &ctx) == nil && ctx.Team != "" {
			return ctx.Team, enterprise, true
		}
	}
	return team, enterprise, false
}

// eventID returns the Events API event id of an envelope ("" for others).
func eventID(evt socketmode.Event) string {
	ev, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok {
		// A slash command or a click has no event id, and Slack does not
		// retry it; but an envelope whose ack did not arrive may come again
		// on another connection (another replica) with the same envelope id.
		if evt.Request != nil && evt.Request.EnvelopeID != "" &&
			(evt.Type == socketmode.EventTypeSlashCommand || evt.Type == socketmode.EventTypeInteractive) {
			return "envelope:" + evt.Request.EnvelopeID
		}
		return ""
	}
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
		return cb.EventID
	}
	return ""
}

// route hands the event's work to the pool. job is its journal entry (nil
// when there is no journal).
func (b *Bot) route(evt socketmode.Event, job *store.Job) {
	var id uint64
	if job != nil {
		id = job.ID
	}
	var once sync.Once
	done := func() { once.Do(func() { b.finish(id) }) }
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok || ev.Type != slackevents.CallbackEvent {
			done()
			return
		}
		m := Meta{Done: done, Replayed: job != nil && evt.Request != nil && evt.Request.EnvelopeID == ""}
		var payload json.RawMessage
		if evt.Request != nil {
			payload = evt.Request.Payload
		}
		m.TeamID, m.EnterpriseID, _ = Installation(ev, payload)
		if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
			m.EventID = cb.EventID
			m.EventTime = time.Unix(int64(cb.EventTime), 0)
			if cb.InnerEvent != nil {
				m.Raw = *cb.InnerEvent
			}
		}
		if evt.Request != nil {
			m.RetryAttempt, m.RetryReason = evt.Request.RetryAttempt, evt.Request.RetryReason
		}
		switch inner := ev.InnerEvent.Data.(type) {
		case *slackevents.MessageEvent:
			if b.h.Message != nil {
				b.submit("message", inner, done, func(ctx context.Context) { b.h.Message(ctx, inner, m) })
				return
			}
		case *slackevents.FileSharedEvent:
			if b.h.FileShared != nil {
				b.submit("file_shared", inner, done, func(ctx context.Context) { b.h.FileShared(ctx, inner, m) })
				return
			}
		case *slackevents.AppHomeOpenedEvent:
			if b.h.AppHomeOpened != nil {
				b.submit("app_home_opened", inner, done, func(ctx context.Context) { defer done(); b.h.AppHomeOpened(ctx, inner) })
				return
			}
		case *slackevents.AppMentionEvent:
			if b.h.AppMention != nil {
				b.submit("app_mention", inner, done, func(ctx context.Context) { defer done(); b.h.AppMention(ctx, inner) })
				return
			}
		case *slackevents.MemberJoinedChannelEvent:
			if b.h.Joined != nil {
				b.submit("member_joined_channel", inner, done, func(ctx context.Context) { defer done(); b.h.Joined(ctx, inner, m) })
				return
			}
		case *slackevents.ReactionAddedEvent:
			if b.h.Reaction != nil {
				b.submit("reaction_added", inner, done, func(ctx context.Context) { defer done(); b.h.Reaction(ctx, inner, m) })
				return
			}
		case *slackevents.TeamAccessGrantedEvent:
			if b.h.TeamAccess != nil {
				b.submit("team_access", inner, done, func(ctx context.Context) { defer done(); b.h.TeamAccess(ctx, true, inner.TeamIDs) })
				return
			}
		case *slackevents.TeamAccessRevokedEvent:
			if b.h.TeamAccess != nil {
				b.submit("team_access", inner, done, func(ctx context.Context) { defer done(); b.h.TeamAccess(ctx, false, inner.TeamIDs) })
				return
			}
		}
		done()
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		if !ok || b.h.Slash == nil {
			done()
			return
		}
		b.submit("slash_commands", &cmd, done, func(ctx context.Context) { defer done(); b.h.Slash(ctx, &cmd) })
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok || b.h.Interaction == nil {
			done()
			return
		}
		var raw json.RawMessage
		if evt.Request != nil {
			raw = evt.Request.Payload
		}
		b.submit("interactive", &cb, done, func(ctx context.Context) { defer done(); b.h.Interaction(ctx, &cb, raw) })
	default:
		done()
	}
}

func (b *Bot) submit(kind string, payload any, done func(), run func(ctx context.Context)) {
	err := b.pool.Submit(Job{Name: kind, Run: run})
	if err == nil {
		return
	}
	// Not queued. With a journal the job stays recorded and runs after the
	// next restart; it is not finished here.
	b.log.Error("job not queued: the bot is overloaded", "kind", kind, "error", err, "queue", b.pool.Depth())
	if b.opt.Observer != nil {
		b.opt.Observer.Dropped(kind, "queue_full")
	}
	if b.h.Busy == nil || errors.Is(err, ErrPoolClosed) {
		return
	}
	select {
	case b.busySem <- struct{}{}: // at most 8 "busy" replies at once
		b.extra.Add(1)
		go func() {
			defer func() { <-b.busySem; b.extra.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b.h.Busy(ctx, kind, payload)
		}()
	default:
	}
}
