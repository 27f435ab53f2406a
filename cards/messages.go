package cards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Channel modes (VERDICTBOT_CHANNEL_MODE and per-channel settings).
const (
	ModeQuiet   = "quiet"   // a card only when something is suspicious or malicious
	ModeVerbose = "verbose" // a card for everything, "scanning…" at once
	ModeOff     = "off"     // not scanned
	// ModeBackfill is a scan of a channel's history (package backfill):
	// as quiet, a card only for what is not clean, and no reaction on
	// clean messages (old messages get nothing unless it matters); its
	// cards say where they come from.
	ModeBackfill = "backfill"
)

// URLChecker checks one URL (*scan.URLs implements it).
type URLChecker interface {
	Check(ctx context.Context, url string, o scan.CheckOptions) scan.URLVerdict
}

// Poster posts and updates cards (*notify.Poster implements it).
type Poster interface {
	Post(ctx context.Context, c *card.Card) error
	Update(ctx context.Context, c *card.Card) error
	React(ctx context.Context, channel, ts, emoji string) error
	// EphemeralCard shows a card to one user only, in its thread, without
	// its controls.
	EphemeralCard(ctx context.Context, c *card.Card, user string) error
}

// Extractor finds the links of a message (*links.Policy implements it).
// rawMsg is the message's JSON as Slack sent it, or nil (see
// links.Policy.ExtractRaw).
type Extractor interface {
	ExtractRaw(msg *slack.Msg, rawMsg []byte) links.Result
}

// CardFinder finds a card of ours already in a thread (after a crash
// between posting it and saving its ts).
type CardFinder interface {
	FindCard(ctx context.Context, channel, threadTS, sourceTS string) (cardTS string, err error)
}

// DefaultPostGrace is Messages.PostGrace's default: a verdict already
// known (cached, or a reputation service answering at once) is typically in
// well within it, and a user still sees a card within a couple of seconds.
const DefaultPostGrace = 2 * time.Second

// Messages turns message events into verdict cards.
type Messages struct {
	Self   func() bot.Identity
	Links  Extractor
	URLs   URLChecker
	Poster Poster
	Cards  *Cards
	Finder CardFinder
	// Deferrals keeps the checks of links refused for their requesters'
	// allowance for the recheck (nil: such links stay not checked).
	Deferrals Deferrals
	// Files handles the files a message shares (nil: files are ignored).
	Files         *Files
	Mode          func(channel string) string
	CleanReaction string
	Log           *slog.Logger
	// Events, if set, gets a finding for each verdict shown on a card and
	// each recheck flip (package events).
	Events events.Sink
	// settled holds, per card generation being tracked, the verdicts its
	// previous generation had (a job resumed after a crash, an edit), so
	// that the same verdict is not emitted twice.
	settled sync.Map // settledKey → map[target]card.Line
	// MaxLinks is shown on cards that left links out.
	MaxLinks int
	// OnUnchecked, if set, is told of targets a message's card shows as
	// not checked although they could not be judged safe: links left out
	// past MaxLinks (kind url), files a quarantine channel could not check
	// (kind file). The metrics count them.
	OnUnchecked func(kind card.Kind, n int)
	// QR, if set, reads the links in the QR codes of the images a
	// message shares; they are checked as the message's own.
	QR *QR
	// Signals, if set, returns the local signals of a link (package
	// signals: a deceptive label, a lookalike domain), read from the
	// message before any service is asked; the line is at least as bad
	// as each (urlLine).
	Signals func(t links.Target) []card.Signal
	// Quarantined, if set, reports whether a channel has quarantine on
	// (a level other than off): there a file that cannot be checked (too
	// large, a skipped type) makes its message "could not check" with a
	// card, and a card that could not be checked is shown, never only
	// logged.
	Quarantined func(channel string) bool
	// StripQuery removes the query of every URL before it is sent
	// (VERDICTBOT_URL_QUERY=strip): the card shows the URL as sent, says
	// "query not sent", and URLs equal once stripped are checked once.
	StripQuery bool
	// MaxTracked bounds the cards being analysed at once (default 20,000);
	// beyond it the worker waits, and so the queue absorbs the burst.
	MaxTracked int
	// PeerPostWait is how long the claim of a card's post (another
	// replica's, sharing the database) is trusted without being renewed:
	// the replica posting renews it every PeerPostWait/4 while its post
	// waits, and a claim older than this is a dead replica's, taken over
	// after the thread is searched for the card (0 with one process: a
	// started post is one a crash interrupted).
	PeerPostWait time.Duration
	// PostGrace is how long a new card in a verbose channel (or a card
	// posted before and rescanned) waits before it is first shown
	// (default DefaultPostGrace; negative: shown at once). A card whose
	// verdicts all arrive within it is posted once, final; a slower one is
	// posted when it ends, as it stands ("scanning…"), and updated. Each
	// card saved is a post and its updates saved from Slack's limits.
	PostGrace time.Duration

	// Act, if set, is given every card whose verdicts are all in, once it
	// is shown, and every card a recheck changed (the Announcer): the
	// quarantine acts on it (quarantine.Quarantine.Act).
	Act func(ctx context.Context, c card.Card)

	once sync.Once
	sem  chan struct{}
	wg   sync.WaitGroup
	// unsaved holds the ts of cards posted while the store could not
	// record it (a full or failing disk), keyed by channel and source ts,
	// until the store has it: such a card is updated, never posted again.
	unsaved sync.Map
	// posting holds, per card this process is posting (channel/source
	// ts), a channel closed once the post is done (see show).
	posting sync.Map
	// stale holds the final cards Slack refused for longer than
	// retryFinal tries, for RunStale (stale.go).
	stale staleCards
}

func (m *Messages) init() {
	m.once.Do(func() {
		if m.MaxTracked <= 0 {
			// Trackers are goroutines waiting on the pipeline: cheap. The
			// bound is high so a backlog resumed after a restart does not
			// make new messages wait for one.
			m.MaxTracked = 20_000
		}
		m.sem = make(chan struct{}, m.MaxTracked)
		if m.PostGrace == 0 {
			m.PostGrace = DefaultPostGrace
		}
		if m.Log == nil {
			m.Log = slog.New(slog.DiscardHandler)
		}
		if m.CleanReaction == "" {
			m.CleanReaction = "white_check_mark"
		}
	})
}

// Wait blocks until every card being analysed is finished.
func (m *Messages) Wait() {
	m.init()
	m.wg.Wait()
}

// Handle is the bot's message handler. It runs on a pool worker: it does the
// quick part (filter, extract, post "scanning…") and hands the wait for the
// verdicts to a tracked goroutine.
func (m *Messages) Handle(ctx context.Context, ev *slackevents.MessageEvent, meta bot.Meta) {
	m.init()
	if ev.ChannelType == "im" {
		m.direct(ctx, ev, meta)
		return
	}
	if ev.ChannelType == "mpim" || ev.ChannelType == "app_home" {
		finished(meta)
		return // other direct messages are never read
	}
	msg := ev.Message
	if msg == nil {
		finished(meta)
		return
	}
	switch ev.SubType {
	case "", "thread_broadcast", "bot_message", "file_share", "me_message":
	case "message_changed":
		if !linksChanged(ev, meta.Raw) && !m.labelsChanged(ev, meta.Raw) {
			finished(meta)
			return // an unfurl that adds no link, an edit that kept the links, our own card update
		}
	case "message_deleted":
		m.deleted(ctx, ev)
		finished(meta)
		return
	default:
		finished(meta)
		return
	}
	if m.own(msg) {
		finished(meta)
		return
	}
	channel := ev.Channel
	mode := m.Mode(channel)
	if mode == ModeOff {
		finished(meta)
		return
	}
	if ev.SubType == "message_changed" {
		msg = withoutFiles(msg) // an edit never re-announces its files
	}
	m.scanMessage(ctx, channel, msg, messageJSON(meta.Raw, ev.SubType), mode, "", meta)
}

// NeedsWork reports whether Handle may have work to do for a message
// event: a card to post, update or mark deleted. It reads the event only
// (no store, no network, no clock), so the adapter can run it before the
// ack and drop, unjournalled, the messages that need nothing: direct
// messages, subtypes Handle ignores (channel_join, …), the bot's own
// messages, edits that kept the links, and messages with neither a link
// nor a file. What only the store could tell counts as work: an edit that
// changed the links and a deletion may concern a message with a card.
// raw is the inner event's JSON as Slack sent it (see bot.Meta.Raw).
func (m *Messages) NeedsWork(ev *slackevents.MessageEvent, raw json.RawMessage) bool {
	if ev.ChannelType == "mpim" || ev.ChannelType == "app_home" {
		return false
	}
	msg := ev.Message
	if msg == nil {
		return false
	}
	if ev.ChannelType == "im" {
		// A DM to the bot needs work only when it carries a link or a
		// file: anything else is dropped unread, unjournalled, unlogged.
		if !directRequest(ev) || m.own(msg) {
			return false
		}
		if len(msg.Files) > 0 && m.Files != nil || len(m.QR.Images(ev.Channel, msg.Files)) > 0 {
			return true
		}
		res := m.Links.ExtractRaw(msg, raw)
		return len(res.Targets) > 0 || len(res.Skipped) > 0 || res.LeftOut > 0
	}
	// Keep in sync with Handle.
	switch ev.SubType {
	case "", "thread_broadcast", "bot_message", "file_share", "me_message":
	case "message_changed":
		return !m.own(msg) && (linksChanged(ev, raw) || m.labelsChanged(ev, raw))
	case "message_deleted":
		return true
	default:
		return false
	}
	if m.own(msg) {
		return false
	}
	if len(msg.Files) > 0 && m.Files != nil || len(m.QR.Images(ev.Channel, msg.Files)) > 0 {
		return true
	}
	res := m.Links.ExtractRaw(msg, messageJSON(raw, ev.SubType))
	return len(res.Targets) > 0 || len(res.Skipped) > 0 || res.LeftOut > 0
}

// linksChanged reports whether a message_changed event changed the links
// of its message, comparing the full extraction of the new message with
// that of the previous one (links.SameLinks), both read the same way from
// the event's JSON as Slack sent it (raw), so that what slack-go does not
// decode (attachments[].message_blocks: the blocks of a message a
// permalink unfurl shows) counts. An unfurl that brings a link is a
// change; one that repeats the message's links, an edit that only moves
// or respaces them, a reaction, are not. Without previous_message the
// event counts as a change. Pure: no store, no network (NeedsWork runs it
// before the ack).
func linksChanged(ev *slackevents.MessageEvent, raw json.RawMessage) bool {
	if ev.PreviousMessage == nil {
		return true
	}
	prev, msg := editJSON(raw)
	return !links.SameLinks(ev.PreviousMessage, prev, ev.Message, msg)
}

// labelsChanged reports whether an edit that kept its links changed the
// labels people wrote for them: a label edited to show another domain
// ("click here" made "https://okta.com/login") is a deceptive label the
// card must show (Signals), so the message is checked again (its
// verdicts are reused).
func (m *Messages) labelsChanged(ev *slackevents.MessageEvent, raw json.RawMessage) bool {
	if m.Signals == nil || ev.PreviousMessage == nil || ev.Message == nil || m.own(ev.Message) {
		return false
	}
	prevRaw, msgRaw := editJSON(raw)
	before, after := m.Links.ExtractRaw(ev.PreviousMessage, prevRaw), m.Links.ExtractRaw(ev.Message, msgRaw)
	labels := func(r links.Result) map[string][]string {
		out := map[string][]string{}
		for _, t := range r.Targets {
			out[t.URL] = t.Labels
		}
		return out
	}
	a, b := labels(before), labels(after)
	for u, l := range b {
		if !slices.Equal(a[u], l) {
			return true
		}
	}
	return false
}

// messageJSON returns the JSON of the message an event carries: the event
// itself, or its "message" member for message_changed (see editJSON). nil
// when unknown.
func messageJSON(raw json.RawMessage, subtype string) json.RawMessage {
	if len(raw) == 0 || subtype != "message_changed" {
		return raw
	}
	_, msg := editJSON(raw)
	return msg
}

// editJSON returns the "previous_message" and "message" members of a
// message_changed event's JSON, or nils when the event has no
// message_blocks, the only part of them links.Policy.ExtractRaw and
// links.Set read from JSON (slack-go decodes the rest into the event), so
// that the usual edit costs one byte search.
func editJSON(raw json.RawMessage) (prev, msg json.RawMessage) {
	if !bytes.Contains(raw, []byte(`"message_blocks"`)) {
		return nil, nil // nothing ExtractRaw reads from them
	}
	var ev struct {
		Message         json.RawMessage `json:"message"`
		PreviousMessage json.RawMessage `json:"previous_message"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return nil, nil
	}
	return ev.PreviousMessage, ev.Message
}

// directRequest reports whether a message event in the bot's Messages tab
// (channel_type "im": with a bot token, message.im delivers only the DMs
// the bot is in) is a person's new message, the only kind read there: a
// new message or a file share. Edits, deletions and the rest are ignored.
func directRequest(ev *slackevents.MessageEvent) bool {
	return ev.ChannelType == "im" && (ev.SubType == "" || ev.SubType == "file_share") && ev.BotID == ""
}

// IsDirect reports whether channel is a direct message (an ID starting
// with D, Slack's prefix for IMs); the only ones the bot sees are its own
// Messages tab with each person.
func IsDirect(channel string) bool { return strings.HasPrefix(channel, "D") }

// direct handles a message someone sent the bot in its Messages tab: its
// links and files are checked on that person's request and the card is
// posted in the message's thread, in the DM. A message without a link or a
// file is not read further and gets no answer (NeedsWork already dropped
// it; this is the replay path's guard).
func (m *Messages) direct(ctx context.Context, ev *slackevents.MessageEvent, meta bot.Meta) {
	msg := ev.Message
	if msg == nil || !directRequest(ev) || m.own(msg) || msg.User == "" {
		finished(meta)
		return
	}
	m.scanMessage(ctx, ev.Channel, msg, meta.Raw, ModeVerbose, msg.User, meta)
}

// withoutFiles returns a copy of msg without its files.
func withoutFiles(msg *slack.Msg) *slack.Msg {
	cp := *msg
	cp.Files = nil
	return &cp
}

// scanMessage makes the cards of one message: one for its links, one for
// its files. meta.Done is called once both are final. requestedBy is who
// asked ("" for the automatic scan; the person, for a DM to the bot).
func (m *Messages) scanMessage(ctx context.Context, channel string, msg *slack.Msg, rawMsg json.RawMessage, mode, requestedBy string, meta bot.Meta) {
	if len(msg.Files) > 0 && m.Files != nil {
		// The message's files get their own card; the job is done when
		// both cards are.
		var parts atomic.Int32
		parts.Store(2)
		whole := meta.Done
		partDone := func() {
			if parts.Add(-1) == 0 && whole != nil {
				whole()
			}
		}
		meta.Done = partDone
		fmsg := *msg
		fmsg.Channel = channel
		m.Files.handle(ctx, channel, &fmsg, fileJob{mode: mode, requestedBy: requestedBy, again: requestedBy != "", who: requesterOf(channel, msg, requestedBy), resumed: meta.Replayed}, partDone)
	}
	if imgs := m.QR.Images(channel, msg.Files); len(imgs) > 0 && m.QR.Admit() {
		// The links in the images' QR codes are checked with the
		// message's: its card waits for the images to be read (bounded by
		// QR.Timeout), in a goroutine of its own, so the worker goes on.
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer m.QR.Done()
			qr := m.QR.Read(ctx, imgs)
			m.scanLinksQR(ctx, channel, msg, rawMsg, mode, requestedBy, false, nil, meta, qr)
		}()
		return
	}
	m.scanLinks(ctx, channel, msg, rawMsg, mode, requestedBy, false, nil, meta)
}

// scanLinks makes the card of a message's links and tracks it; meta.Done
// is called once it is final (or at once when there is nothing to do).
// With onlyNew (a request) the card is begun only if the message has none,
// or, when orphaned is the card the request found orphaned, only if no
// one began it again since (Cards.BeginIfAt): rec is otherwise the card
// found, and began false. A message whose links are all gone (an edit)
// still gets its card updated when it had one.
func (m *Messages) scanLinks(ctx context.Context, channel string, msg *slack.Msg, rawMsg json.RawMessage, mode, requestedBy string, onlyNew bool, orphaned *store.CardRecord, meta bot.Meta) (began bool, rec *store.CardRecord) {
	return m.scanLinksQR(ctx, channel, msg, rawMsg, mode, requestedBy, onlyNew, orphaned, meta, nil)
}

// scanLinksQR is scanLinks with the links read from the QR codes of the
// message's images (QR.Read), checked as its own.
func (m *Messages) scanLinksQR(ctx context.Context, channel string, msg *slack.Msg, rawMsg json.RawMessage, mode, requestedBy string, onlyNew bool, orphaned *store.CardRecord, meta bot.Meta, qr []QRLink) (began bool, rec *store.CardRecord) {
	res := m.Links.ExtractRaw(msg, rawMsg)
	prev, hadCard := m.Cards.Get(channel, msg.Timestamp)
	var via map[string]string
	res, via = m.withQR(res, qr, prev)
	if len(res.Targets) == 0 && len(res.Skipped) == 0 && res.LeftOut == 0 && (!hadCard || onlyNew && orphaned == nil) {
		finished(meta)
		return false, nil
	}
	thread := msg.ThreadTimestamp
	if thread == "" {
		thread = msg.Timestamp
	}
	poster := msg.User
	draft := card.Card{Channel: channel, ThreadTS: thread, SourceTS: msg.Timestamp, Poster: poster, LeftOut: res.LeftOut,
		MaxLinks: m.MaxLinks, RequestedBy: requestedBy}
	for _, s := range res.Skipped {
		draft.Skipped = append(draft.Skipped, card.Skip{Target: s.URL, Reason: s.Reason.Text()})
	}
	res.Targets, draft.Lines = m.lines(res.Targets, via)
	draft.Final = len(draft.Lines) == 0
	if mode == ModeBackfill {
		draft.Notes = append(draft.Notes, HistoryNote)
		draft.FromHistory = true
	}
	var gen int
	var snap card.Card
	if onlyNew {
		var err error
		gen, snap, rec, err = m.Cards.BeginIfAt(channel, msg.Timestamp, genOf(orphaned), draft, mode)
		switch {
		case rec != nil:
			finished(meta)
			return false, rec // the message has its card: left as it is
		case err != nil:
			m.Log.Error("could not save the card of a requested scan", "channel", channel, "ts", msg.Timestamp, "error", err)
			finished(meta)
			return false, nil
		}
		if orphaned != nil && m.Events != nil {
			m.remember(channel, msg.Timestamp, gen, orphaned.Card.Lines)
		}
	} else {
		var ok bool
		if gen, snap, ok = m.begin(ctx, channel, msg.Timestamp, draft, mode); !ok {
			return false, nil // the job stays in the journal and resumes after the restart
		}
	}
	if res.LeftOut > 0 && m.OnUnchecked != nil {
		m.OnUnchecked(card.KindURL, res.LeftOut)
	}
	m.Log.Info("scanning message", "channel", channel, "ts", msg.Timestamp, "links", len(res.Targets),
		"skipped", len(res.Skipped), "left_out", res.LeftOut, "mode", mode, "event_id", meta.EventID, "resumed", meta.Replayed,
		"requested", requestedBy != "")

	m.start(ctx, snap, mode, func(hold time.Time) bool {
		who := requesterOf(channel, msg, requestedBy)
		if mode == ModeBackfill {
			// Nobody sends history now: its links are not counted
			// against their poster's hourly cap; they wait behind live
			// checks for the services (track's Background checks).
			who = scan.Requester{}
		}
		return m.track(ctx, channel, msg.Timestamp, gen, mode, hold, res.Targets, who)
	}, doneOf(meta))
	return true, nil
}

// begin starts a card's generation (Cards.Begin). A store that cannot be
// written (disk full, I/O error, a database restart) is waited for: the
// message was acked, so it must get its card once the store is back
// (docs/operations.md, "When the disk fails"). The job stays in the
// journal meanwhile, so a restart resumes it too. ok is false when ctx
// ends first.
func (m *Messages) begin(ctx context.Context, channel, src string, draft card.Card, mode string) (int, card.Card, bool) {
	var prev *store.CardRecord
	if m.Events != nil {
		prev, _ = m.Cards.Get(channel, src)
	}
	gen, snap, err := m.Cards.Begin(channel, src, draft, mode)
	defer func() {
		if err == nil && prev != nil {
			m.remember(channel, src, gen, prev.Card.Lines)
		}
	}()
	if err != nil {
		m.Log.Error("could not save the card; retrying until the store can be written", "channel", channel, "ts", src, "error", err)
		err = store.Retry(ctx.Done(), -1, func() (err error) {
			gen, snap, err = m.Cards.Begin(channel, src, draft, mode)
			return err
		}, nil)
		if err != nil {
			return 0, card.Card{}, false
		}
	}
	return gen, snap, true
}

// lines turns targets into the URLs to send and their pending card lines.
// With StripQuery the query is removed first and targets that became equal
// are merged (the first one's line says the query was not sent if any of
// them had one).
func (m *Messages) lines(targets []links.Target, via map[string]string) ([]links.Target, []card.Line) {
	out := make([]links.Target, 0, len(targets))
	lines := make([]card.Line, 0, len(targets))
	at := map[string]int{}
	for _, t := range targets {
		dropped := t.QueryDropped // the policy stripped it already (links.Config.StripQuery)
		if m.StripQuery {
			var d bool
			t.URL, d = links.StripQuery(t.URL)
			dropped = dropped || d
		}
		var sigs []card.Signal
		if m.Signals != nil {
			sigs = m.Signals(t)
		}
		if i, dup := at[t.URL]; dup {
			lines[i].QueryNotSent = lines[i].QueryNotSent || dropped
			lines[i].Signals = mergeSignals(lines[i].Signals, sigs)
			continue
		}
		at[t.URL] = len(out)
		out = append(out, t)
		lines = append(lines, card.Line{Kind: card.KindURL, Target: t.URL, Level: verdict.Pending, Service: "reputation",
			Status: "queued", QueryNotSent: dropped, Signals: sigs, Via: via[t.URL]})
	}
	return out, lines
}

// mergeSignals adds to dst the signals of add it does not have (the same
// link written twice, with two labels).
func mergeSignals(dst, add []card.Signal) []card.Signal {
	for _, s := range add {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// finished calls the delivery's Done, if any: the work the event asked for
// is complete.
func finished(mt bot.Meta) {
	if mt.Done != nil {
		mt.Done()
	}
}

// doneOf is finished for this delivery, to be called later.
func doneOf(mt bot.Meta) func() { return func() { finished(mt) } }

// ScanRequest posts a card for URLs requested with /scan: a new message in
// the channel (not in a thread), shown at once and updated in place,
// whatever the channel's mode. It returns once the card is under way.
func (m *Messages) ScanRequest(ctx context.Context, channel, user string, targets []links.Target, skipped []links.Skipped) error {
	m.init()
	src := fmt.Sprintf("%s%d", card.ScanRequestPrefix, time.Now().UnixNano())
	draft := card.Card{Channel: channel, SourceTS: src, RequestedBy: user, MaxLinks: m.MaxLinks}
	for _, s := range skipped {
		draft.Skipped = append(draft.Skipped, card.Skip{Target: s.URL, Reason: s.Reason.Text()})
	}
	targets, draft.Lines = m.lines(targets, nil)
	gen, snap, err := m.Cards.Begin(channel, src, draft, ModeVerbose)
	if err != nil {
		return err
	}
	m.Log.Info("scan requested", "channel", channel, "user", user, "links", len(targets))
	return m.launch(ctx, func() {
		// The card outlives the command's job: it has its own context.
		cctx := context.WithoutCancel(ctx)
		m.show(cctx, &snap)
		m.track(cctx, channel, src, gen, ModeVerbose, time.Time{}, targets, scan.Requester{User: user, Channel: channel})
	})
}

// own reports whether msg was posted by this bot (its app, bot or user).
func (m *Messages) own(msg *slack.Msg) bool {
	id := m.Self()
	if msg.User != "" && msg.User == id.UserID {
		return true
	}
	if msg.BotID != "" && msg.BotID == id.BotID {
		return true
	}
	return msg.BotProfile != nil && id.AppID != "" && msg.BotProfile.AppID == id.AppID
}

// Show posts the card, or updates it when it was posted before (see
// show): quarantine posts with it the card of a recheck removal whose
// announcement stopped before posting it.
func (m *Messages) Show(ctx context.Context, c *card.Card) {
	m.init()
	_ = m.showOnce(ctx, c)
}

// show posts the card, or updates it when it was posted before. A post is
// bracketed in the store (PostStarted, then the ts): if the process died in
// between, the card is looked for in the thread before posting again. A
// final card Slack refuses for a passing reason is tried again for a while
// (retryFinal): show is for the card's own job, which waits for it; one
// Slack refuses for longer is left to RunStale.
func (m *Messages) show(ctx context.Context, c *card.Card) { _ = m.present(ctx, c, true) }

// showOnce is show without retryFinal, for the callers that show many
// cards in a row (the recheck, quarantine's pending removals): a Slack
// outage must not hold them up to finalRetryFor a card. It returns why
// Slack does not show the card (nil once it does), for the recheck to try
// again at its next run.
func (m *Messages) showOnce(ctx context.Context, c *card.Card) error { return m.present(ctx, c, false) }

// present shows c (see show) and returns the error of its post or update,
// ctx's error if it ended first; nil once Slack has the card as c has it.
func (m *Messages) present(ctx context.Context, c *card.Card, retry bool) error {
	key := c.Channel + "/" + c.SourceTS
	if ts, ok := m.unsaved.Load(key); ok {
		// Posted, but the store did not take the ts: try again now.
		c.CardTS = ts.(string)
		if _, saved := m.Cards.Change(c.Channel, c.SourceTS, 0, func(r *store.CardRecord) { r.Card.CardTS, r.PostStarted = c.CardTS, false }); saved {
			m.unsaved.Delete(key)
		}
	}
	// Two goroutines of this process may show the same unposted card at
	// once (two generations of one card: a request's that overtook the
	// message's own event, and the automatic one begun after it): the
	// second waits for the first's post and updates it, rather than
	// taking the post for one a crash interrupted and posting a second.
	for c.CardTS == "" {
		done := make(chan struct{})
		prev, busy := m.posting.LoadOrStore(key, done)
		if !busy {
			defer func() { m.posting.Delete(key); close(done) }()
			break
		}
		select {
		case <-prev.(chan struct{}):
		case <-ctx.Done():
			return ctx.Err()
		}
		if rec, ok := m.Cards.Get(c.Channel, c.SourceTS); ok {
			c.CardTS = rec.Card.CardTS
		}
		if ts, ok := m.unsaved.Load(key); ok && c.CardTS == "" {
			c.CardTS = ts.(string)
		}
	}
	if c.CardTS == "" {
		ts, ok := m.claimPost(ctx, c)
		if !ok {
			return ctx.Err() // shutting down: the job resumes after the restart
		}
		c.CardTS = ts
	}
	if c.CardTS != "" {
		err := notify.UntilAdmitted(ctx, func() error { return m.Poster.Update(ctx, c) })
		if err != nil && c.Final && retry {
			err = m.retryFinal(ctx, c, err)
			if _, passing := notify.Passing(err); passing && ctx.Err() == nil {
				m.markStale(c) // Slack down for longer: RunStale shows it once Slack answers
			}
		}
		if err != nil {
			m.Log.Warn("card update failed", "channel", c.Channel, "error", err)
		}
		return err
	}
	stopRenew := m.renewPostClaim(ctx, c)
	err := notify.UntilAdmitted(ctx, func() error { return m.Poster.Post(ctx, c) })
	stopRenew()
	if err != nil {
		m.Log.Error("card post failed", "channel", c.Channel, "thread", c.ThreadTS, "error", err)
		m.Cards.settle(ctx, c.Channel, c.SourceTS, 0, "", func(r *store.CardRecord) { r.PostStarted = false })
		return err
	}
	// The message may have been deleted while the card was being posted:
	// deleted found no ts to update then, and left its note on the record
	// only. Whichever of the two writes comes second shows the note. The
	// ts is saved as a verdict is (retried while the store is down): until
	// it is, another replica would take the claim for a dead one's.
	deletedMeanwhile := false
	snap, saved := m.Cards.settle(ctx, c.Channel, c.SourceTS, 0, "", func(r *store.CardRecord) {
		r.Card.CardTS, r.PostStarted = c.CardTS, false
		deletedMeanwhile = r.Deleted && len(r.Card.Notes) != len(c.Notes)
	})
	if !saved {
		m.Log.Warn("card posted but its ts could not be saved; it is kept in memory until the store takes it", "channel", c.Channel, "card_ts", c.CardTS)
		m.unsaved.Store(key, c.CardTS)
		return nil
	}
	if deletedMeanwhile {
		if err := notify.UntilAdmitted(ctx, func() error { return m.Poster.Update(ctx, &snap) }); err != nil {
			m.Log.Warn("card update after deletion failed", "error", err)
		}
	}
	return nil
}

// A final card Slack did not take for a passing reason (a 5xx page, its
// internal errors, the network; notify.Passing) is tried again, backing
// off from finalRetryMin to finalRetryMax, for up to finalRetryFor: the
// store has the verdict, and the message would otherwise say "Scanning…"
// to the channel for good. The job stays unfinished meanwhile, so a
// process stopped during the retries resumes it (Files.reshowFinal, the
// message's job again). Past finalRetryFor the card is left to RunStale
// (stale.go) and the job ends.
var (
	finalRetryMin = 2 * time.Second
	finalRetryMax = 30 * time.Second
	finalRetryFor = 3 * time.Minute
)

// retryFinal tries the final card c again after the update's error err
// (see finalRetryFor), each time as the store has it then (another change,
// quarantine's tombstone or a report, may have come meanwhile); it returns
// the last error, nil once Slack took it.
func (m *Messages) retryFinal(ctx context.Context, c *card.Card, err error) error {
	deadline := time.Now().Add(finalRetryFor)
	for wait := finalRetryMin; ; wait = min(2*wait, finalRetryMax) {
		if _, ok := notify.Passing(err); !ok || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		m.Log.Warn("Slack did not take a final card; trying again", "channel", c.Channel, "card_ts", c.CardTS,
			"in", wait.String(), "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if rec, ok := m.Cards.Get(c.Channel, c.SourceTS); ok && rec.Card.Final && rec.Card.CardTS == c.CardTS {
			cur := rec.Card.Clone()
			c = &cur
		}
		if err = notify.UntilAdmitted(ctx, func() error { return m.Poster.Update(ctx, c) }); err == nil {
			m.Log.Info("final card shown after a retry", "channel", c.Channel, "card_ts", c.CardTS)
			return nil
		}
	}
}

// claimPost makes this process the one that posts c, or finds the card
// someone else posted: it returns the card's ts ("" when this process is
// to post it, the claim is then its own); ok is false when ctx ended. A
// store that cannot be written is waited for (Cards.StoreRetry) before the
// card is posted without a claim: posting at once without one is how a
// message got two cards, one from each replica, after a database outage.
//
// Whoever sets PostStarted first posts. A claim found is another
// replica's post under way, or one a process died in the middle of: it is
// waited for while it is renewed (PostAt, every PeerPostWait/4 while the
// post waits its turn or for a 429), and taken over once it has not been
// for PeerPostWait; the thread is then searched for the card before
// posting. With one process (PeerPostWait 0) every claim found is a dead
// process's.
func (m *Messages) claimPost(ctx context.Context, c *card.Card) (string, bool) {
	for first := true; ; first = false {
		// A claim being renewed is watched with reads; the write below
		// claims (or takes over) only what a read found free or stale.
		if rec, ok := m.Cards.Get(c.Channel, c.SourceTS); ok && !first {
			switch {
			case rec.Card.CardTS != "":
				return rec.Card.CardTS, true
			case rec.PostStarted && m.PeerPostWait > 0 && time.Since(rec.PostAt) <= m.PeerPostWait:
				select {
				case <-ctx.Done():
					return "", false
				case <-time.After(250 * time.Millisecond):
				}
				continue
			}
		}
		var ts string
		var mine, takeOver bool
		_, ok := m.Cards.settle(ctx, c.Channel, c.SourceTS, 0, "", func(r *store.CardRecord) {
			ts, mine, takeOver = r.Card.CardTS, false, false
			now := time.Now()
			switch {
			case ts != "":
			case !r.PostStarted:
				mine = true
			case m.PeerPostWait <= 0 || now.Sub(r.PostAt) > m.PeerPostWait:
				mine, takeOver = true, true
			}
			if mine {
				r.PostStarted, r.PostAt = true, now
			}
		})
		switch {
		case !ok && ctx.Err() != nil:
			return "", false
		case !ok:
			// The store stayed unwritable for StoreRetry, or the record is
			// gone (retention): the card is posted all the same (a second
			// card is less harm than none).
			m.Log.Warn("could not claim the card's post in the store; posting it without the claim", "channel", c.Channel, "ts", c.SourceTS)
			return "", true
		case ts != "":
			return ts, true
		case takeOver:
			return m.searchThread(ctx, c), ctx.Err() == nil
		case mine:
			return "", true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// renewPostClaim renews c's post claim (PostAt) every PeerPostWait/4 until
// the returned stop is called, so replicas waiting for the post do not
// take it over while it waits its turn.
func (m *Messages) renewPostClaim(ctx context.Context, c *card.Card) (stop func()) {
	if m.PeerPostWait <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(m.PeerPostWait / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			m.Cards.Change(c.Channel, c.SourceTS, 0, func(r *store.CardRecord) {
				if r.PostStarted && r.Card.CardTS == "" {
					r.PostAt = time.Now()
				}
			})
		}
	})
	return func() { close(done); wg.Wait() }
}

// searchThread returns the ts of c's card found in its thread (a post a
// process died in the middle of), saved on the record; "" when there is
// none: the caller posts it. A search that fails (Slack's errors, a 429
// the client gave up on) is tried again a few times before the card is
// posted: a second card is what a failed search costs.
func (m *Messages) searchThread(ctx context.Context, c *card.Card) string {
	if m.Finder == nil {
		return ""
	}
	var ts string
	var err error
	for attempt, wait := 0, time.Second; attempt < 4; attempt, wait = attempt+1, 2*wait {
		if ts, err = m.Finder.FindCard(ctx, c.Channel, c.ThreadTS, c.SourceTS); err == nil {
			break
		}
		m.Log.Warn("could not search the thread for a card whose post was interrupted", "channel", c.Channel, "attempt", attempt+1, "error", err)
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(wait):
		}
	}
	if ts == "" {
		return ""
	}
	m.Log.Info("found a card posted before a restart", "channel", c.Channel, "card_ts", ts)
	m.Cards.settle(ctx, c.Channel, c.SourceTS, 0, "", func(r *store.CardRecord) { r.Card.CardTS, r.PostStarted = ts, false })
	return ts
}

// track checks the URLs of one card (see the generic track), for who.
func (m *Messages) track(ctx context.Context, channel, sourceTS string, gen int, mode string, hold time.Time, targets []links.Target, who scan.Requester) bool {
	lines := make([]pending[scan.URLVerdict], len(targets))
	for i, t := range targets {
		lines[i] = pending[scan.URLVerdict]{line: i, check: func(ctx context.Context, onStatus func(string)) scan.URLVerdict {
			// A history's links wait behind live ones for the service
			// (Background: the Low lane until a live check joins).
			v := m.URLs.Check(ctx, t.URL, scan.CheckOptions{OnStatus: onStatus, For: who, Background: mode == ModeBackfill})
			if errors.Is(v.Err, scan.ErrOverAllowance) {
				m.deferCheck(channel, sourceTS, t.URL, &v)
			}
			return v
		}}
	}
	kind := lineKind[scan.URLVerdict]{
		err:  func(v scan.URLVerdict) error { return v.Err },
		fill: urlLine,
		target: func(v scan.URLVerdict) string {
			// A URL withheld (its host resolves inside the network) has no
			// verdict to recheck.
			if v.Err != nil || v.Level == verdict.Skipped {
				return ""
			}
			return v.URL
		},
	}
	return track(ctx, m, kind, channel, sourceTS, gen, mode, hold, lines)
}

// finish shows the final card as the channel's mode asks. earlier, if set,
// waits for a show of an earlier state of the card that its tracker has
// under way, and reports whether there was one (see track): it is called
// once quarantine has acted, and then the final card is shown after that
// show, whatever quarantine did.
func (m *Messages) finish(ctx context.Context, c *card.Card, mode string, earlier func() bool) {
	level := c.Level()
	for _, l := range c.Lines {
		m.Log.Info("verdict", "url", links.Defang(l.Target), "level", l.Level.Key(), "task_id", l.TaskID,
			"cached", l.Cached, "channel", c.Channel)
	}
	switch {
	case mode == ModeVerbose, c.CardTS != "", level.NeedsAttention(), m.notCleared(c, level), overAllowance(c):
		// A line not checked because its poster sent too many links this
		// hour is shown in a quiet channel too: nobody is told otherwise,
		// and its level (could not check) gets no reaction.
		m.noteLeftInPlace(c, level)
		// Quarantine acts before the card is posted: a channel's posts are
		// paced (about one a second), and a removal must not wait behind
		// other people's cards. What it did is on the card record; the
		// card posted is then the tombstone (or says why it could not be
		// removed). A card already in Slack was updated by quarantine.
		acted, ok := m.actFirst(ctx, c)
		if earlier != nil && earlier() {
			// An earlier state was being shown meanwhile: its post may
			// have saved the card's ts after quarantine found none to
			// update, or its update gone out after quarantine's. The card
			// is shown once more, after it, on the message it posted.
			if ok {
				c = &acted
			}
			m.show(ctx, c)
			return
		}
		if ok {
			if acted.CardTS != "" {
				return
			}
			c = &acted
		}
		m.show(ctx, c)
	case level == verdict.Clean && mode == ModeBackfill:
		// History: nothing on a clean old message.
	case level == verdict.Clean:
		// A file card's source key is "<ts>/files": react on the message.
		if err := m.Poster.React(ctx, c.Channel, strings.TrimSuffix(c.SourceTS, "/files"), m.CleanReaction); err != nil {
			m.Log.Warn("clean reaction failed", "channel", c.Channel, "error", err)
		}
	case level == verdict.Unknown:
		m.Log.Warn("could not check the links of a message (quiet channel: no card)",
			"channel", c.Channel, "ts", c.SourceTS, "problem", firstProblem(c))
	}
}

// notCleared reports whether a quiet channel's card must be shown although
// nothing on it needs attention: it could not be checked in full (level
// Unknown) and either links were left out past MaxLinks (someone may have
// padded the message to push a link out) or the channel has quarantine on
// (its members rely on the bot). Such a message never gets the clean
// reaction; a service error alone in a quiet channel without quarantine
// stays a log line.
func (m *Messages) notCleared(c *card.Card, level verdict.Level) bool {
	return level == verdict.Unknown && (c.LeftOut > 0 || m.quarantineOn(c.Channel))
}

// noteLeftInPlacePrefix starts the note a card gets when its message
// could not be checked in full in a channel with quarantine on.
const noteLeftInPlacePrefix = "Left in place "

// noteLeftInPlace adds, once, a dated note to a card that could not be
// checked in full (level Unknown) in a channel with quarantine on, saying
// why its message stays: quarantine removes only what is found suspicious
// or malicious (quarantine.Act), and "could not check" is neither. Like
// the recheck notes it records what happened then; a later recheck that
// finds the message malicious still removes it. c is updated with the
// note.
func (m *Messages) noteLeftInPlace(c *card.Card, level verdict.Level) {
	if level != verdict.Unknown || !c.AnswersMessage() || IsDirect(c.Channel) || !m.quarantineOn(c.Channel) {
		return
	}
	has := func(notes []string) bool {
		return slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, noteLeftInPlacePrefix) })
	}
	if has(c.Notes) {
		return
	}
	note := noteLeftInPlacePrefix + time.Now().UTC().Format("2006-01-02 15:04 UTC") +
		": not everything in it could be checked, and quarantine removes only what is found suspicious or malicious."
	if slices.ContainsFunc(c.Lines, isDeferredLine) {
		note = noteLeftInPlacePrefix + time.Now().UTC().Format("2006-01-02 15:04 UTC") +
			": a link in it is not checked yet (too many links from its poster this hour); quarantine removes only what is found" +
			" suspicious or malicious, and acts on that link when it is checked, at low priority."
	}
	if snap, ok := m.Cards.Change(c.Channel, c.SourceTS, 0, func(r *store.CardRecord) {
		if !has(r.Card.Notes) {
			r.Card.Notes = append(r.Card.Notes, note)
		}
	}); ok {
		*c = snap
	}
}

// quarantineOn reports whether channel has quarantine on (Quarantined).
func (m *Messages) quarantineOn(channel string) bool {
	return m.Quarantined != nil && m.Quarantined(channel)
}

// act hands a final card to Act.
func (m *Messages) act(ctx context.Context, c *card.Card) {
	if m.Act != nil && c.Final {
		m.Act(ctx, c.Clone())
	}
}

// actFirst hands a final card to Act before it is shown, and returns the
// card as quarantine left it when quarantine changed it (ok), so that what
// is shown is what it did.
func (m *Messages) actFirst(ctx context.Context, c *card.Card) (card.Card, bool) {
	if m.Act == nil || !c.Final {
		return card.Card{}, false
	}
	before := c.Quarantine
	m.act(ctx, c)
	rec, ok := m.Cards.Get(c.Channel, c.SourceTS)
	if !ok || sameQuarantine(before, rec.Card.Quarantine) {
		return card.Card{}, false
	}
	return rec.Card.Clone(), true
}

// sameQuarantine reports whether two quarantine states are the same (a
// new state, a new try or a release changes one of these).
func sameQuarantine(a, b *card.Quarantine) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.State == b.State && a.At.Equal(b.At) && a.Problem == b.Problem && a.ReleasedAt.Equal(b.ReleasedAt)
}

// Deferrals keeps the checks of URLs refused for their requesters'
// allowance for the recheck to make later (*scanstore.URLMemory
// implements it).
type Deferrals interface {
	// Defer records that url's check is deferred, for the card ref (linked
	// to url); an error means it was not.
	Defer(url string, ref card.Ref) error
}

// deferCheck defers the check of a URL that was not sent because its
// requesters had used their allowance (VERDICTBOT_USER_LINKS_PER_HOUR):
// the recheck makes it later, at low priority, and the Announcer puts its
// verdict on this card (and quarantine acts on it). The deferral is
// recorded before the card shows it (v's problem becomes
// scan.DeferredProblem): a card never promises a check nothing will make.
// Without a store to keep it, or when the store fails, the line says what
// it said before: not checked.
func (m *Messages) deferCheck(channel, sourceTS, url string, v *scan.URLVerdict) {
	if m.Deferrals == nil {
		return
	}
	if err := m.Deferrals.Defer(url, card.Ref{Channel: channel, SourceTS: sourceTS}); err != nil {
		m.Log.Error("could not defer the check of a link refused for its poster's allowance; the card says it is not checked",
			"channel", channel, "ts", sourceTS, "error", err)
		return
	}
	v.Problem = scan.DeferredProblem
}

// overAllowance reports whether a line of c was not checked because its
// requesters used their allowance (VERDICTBOT_USER_LINKS_PER_HOUR).
func overAllowance(c *card.Card) bool {
	for _, l := range c.Lines {
		if l.Level == verdict.Unknown && (l.Problem == scan.OverAllowanceProblem || l.Problem == scan.OverAllowanceFileProblem ||
			l.Problem == scan.DeferredProblem) {
			return true
		}
	}
	return false
}

// requesterOf is who the checks of a message are for: who asked for them
// (the shortcut, a mention), else who posted it: a person, else an
// integration (bot_message: its bot id), else nobody but the channel. The
// fair queues and the allowance (VERDICTBOT_USER_LINKS_PER_HOUR) count per
// requester.
func requesterOf(channel string, msg *slack.Msg, requestedBy string) scan.Requester {
	switch {
	case requestedBy != "":
		return scan.Requester{User: requestedBy, Channel: channel}
	case msg.User != "":
		return scan.Requester{User: msg.User, Channel: channel}
	case msg.BotID != "":
		return scan.Requester{User: BotRequester + msg.BotID, Channel: channel}
	}
	return scan.Requester{Channel: channel}
}

// BotRequester prefixes the requester of an integration's message (its bot
// id): Slack user ids never start with it.
const BotRequester = "bot:"

func firstProblem(c *card.Card) string {
	for _, l := range c.Lines {
		if l.Problem != "" {
			return l.Problem
		}
	}
	return ""
}

// urlLine fills a card line from a URL verdict.
func urlLine(l card.Line, v scan.URLVerdict) card.Line {
	l.Level = v.Level
	if sl := l.SignalLevel(); sl > v.Level {
		// The message itself shows the lure: the worse level wins, and
		// the service's verdict is still shown.
		l.Level, l.ServiceLevel = sl, v.Level
	} else {
		l.ServiceLevel = 0
	}
	l.Category = v.Category
	l.Scores = v.Scores
	l.TaskID = v.TaskID
	l.Problem = v.Problem
	l.Cached = v.Cached
	l.CheckedAt = v.CheckedAt
	l.Status = ""
	switch {
	case v.Title != "" && v.FinalURL != "" && v.FinalURL != v.URL:
		l.Detail = "“" + v.Title + "”, lands on " + v.FinalURL
	case v.Title != "":
		l.Detail = "“" + v.Title + "”"
	case v.FinalURL != "" && v.FinalURL != v.URL:
		l.Detail = "lands on " + v.FinalURL
	}
	l.Actions = v.TaskID != "" && v.Level >= verdict.Clean && v.Level != verdict.Unknown
	return l
}

// deleted notes on a card that its message was deleted; the verdict stays
// for the audit trail.
func (m *Messages) deleted(ctx context.Context, ev *slackevents.MessageEvent) {
	ts := ev.DeletedTimeStamp
	if ts == "" && ev.PreviousMessage != nil {
		ts = ev.PreviousMessage.Timestamp
	}
	noted := false
	// The message's file card may be the one whose quarantine removed it.
	byFiles := false
	if rec, ok := m.Cards.Get(ev.Channel, fileCardTS(ts)); ok {
		q := rec.Card.Quarantine
		byFiles = q != nil && q.State == card.QuarantineRemoved && !q.Files
	}
	// Written as a verdict is (retried while the store is down): the
	// deletion's event is not delivered again.
	snap, ok := m.Cards.settle(ctx, ev.Channel, ts, 0, "", func(r *store.CardRecord) {
		noted = false
		if r.Deleted {
			return
		}
		if q := r.Card.Quarantine; q != nil && q.State == card.QuarantineRemoved {
			return // quarantine removed it: the tombstone says so already
		}
		if byFiles {
			noted = true
			r.Deleted = true
			r.Card.Notes = append(r.Card.Notes, "The message this card is about was removed by quarantine "+time.Now().UTC().Format("2006-01-02 15:04 UTC")+
				" for a file it shared (see the file card in this thread); the verdict is kept for the record.")
			return
		}
		noted = true
		r.Deleted = true
		r.Card.Notes = append(r.Card.Notes, "The message this card is about was deleted "+time.Now().UTC().Format("2006-01-02 15:04 UTC")+"; the verdict is kept for the record.")
	})
	if ok && noted && snap.CardTS != "" {
		// A 429 storm is waited out: the note is the card's last word.
		if err := notify.UntilAdmitted(ctx, func() error { return m.Poster.Update(ctx, &snap) }); err != nil {
			m.Log.Warn("card update after deletion failed", "error", err)
		}
	}
}

type settledKey struct {
	channel, src string
	gen          int
}

// remember keeps the verdicts a card's previous generation showed, for
// emitted, until the new generation's tracking ends (forget).
func (m *Messages) remember(channel, src string, gen int, lines []card.Line) {
	prev := map[string]card.Line{}
	for _, l := range lines {
		if l.Level != verdict.Pending {
			prev[l.Target] = l
		}
	}
	if len(prev) > 0 {
		m.settled.Store(settledKey{channel, src, gen}, prev)
	}
}

// emitted reports whether the card's previous generation already showed
// l's verdict (same level, same analysis): its event went out then.
func (m *Messages) emitted(channel, src string, gen int, l card.Line) bool {
	v, ok := m.settled.Load(settledKey{channel, src, gen})
	if !ok {
		return false
	}
	old, ok := v.(map[string]card.Line)[l.Target]
	return ok && old.Level == l.Level && old.TaskID == l.TaskID
}

func (m *Messages) forget(channel, src string, gen int) {
	m.settled.Delete(settledKey{channel, src, gen})
}

// withQR adds to res the links read from the message's QR codes (qr), and
// those its card had from them (prev: an edit carries no files, and must
// not drop a QR code's verdict from the card), as the policy reads a link
// (allowlist, private hosts, the cap on links); via maps each added
// target to its image's name.
func (m *Messages) withQR(res links.Result, qr []QRLink, prev *store.CardRecord) (links.Result, map[string]string) {
	if prev != nil {
		for _, l := range prev.Card.Lines {
			if l.Kind == card.KindURL && l.Via != "" {
				qr = append(qr, QRLink{URL: l.Target, File: l.Via})
			}
		}
	}
	if len(qr) == 0 {
		return res, nil
	}
	have := map[string]bool{}
	for _, t := range res.Targets {
		have[t.URL] = true
	}
	via := map[string]string{}
	for _, l := range qr {
		// The policy reads the link as text a person wrote: "<url>".
		got := m.Links.ExtractRaw(&slack.Msg{Text: "<" + qrEscaper.Replace(l.URL) + ">"}, nil)
		res.Skipped = append(res.Skipped, got.Skipped...)
		for _, t := range got.Targets {
			if have[t.URL] {
				continue // the message's text (or another image) has it too
			}
			if m.MaxLinks > 0 && len(res.Targets) >= m.MaxLinks {
				res.LeftOut++
				continue
			}
			have[t.URL] = true
			res.Targets = append(res.Targets, t)
			via[t.URL] = l.File
		}
	}
	return res, via
}

// qrEscaper keeps a QR code's URL one "<url>" sequence of message text.
var qrEscaper = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C")
