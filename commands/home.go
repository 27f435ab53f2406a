package commands

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/store"
)

// Action ids of the App Home's selects. They are the contract between the
// view the Home publishes and the block_actions it handles; the channel is
// in the block id (HomeChannelBlock + channel id).
const (
	ActionHomeChannelMode  = "home_channel_mode"
	ActionHomeChannelFiles = "home_channel_files"
	// ActionHomeChannelQuarantine sets the channel's quarantine level.
	ActionHomeChannelQuarantine = "home_channel_quarantine"
	// HomeChannelBlock prefixes the block id of a channel's selects.
	HomeChannelBlock = "home_channel:"
)

// Bounds of the Home view: Slack takes at most 100 blocks in a Home tab
// (docs.slack.dev/reference/block-kit/blocks), and 3000 characters in a
// section's text.
const (
	maxHomeBlocks  = 100
	maxSectionText = 3000
)

// How opens are served. app_home_opened can come in floods (150 people
// opening the tab after an announcement, or one person clicking it again
// and again): the Home is built on goroutines of its own, one waiting
// open per person at most, and a Home published moments ago is not built
// again, so opens never take the workers that make cards.
const (
	// DefaultHomeWorkers is how many Homes are built and published at
	// once.
	DefaultHomeWorkers = 2
	// homeDebounce is how long an open waits before its Home is built:
	// the person's further opens within it are served by that one build,
	// and the envelope's ack (sent before the open is queued) is well on
	// its way before the Home's first call to Slack.
	homeDebounce = 100 * time.Millisecond
	// DefaultHomeFresh is how long a published Home is served as it is:
	// an open within this time of the last publish for that person
	// publishes nothing (Slack shows the view it has). A change made from
	// the Home publishes at once, whatever the age.
	DefaultHomeFresh = 15 * time.Second
	// maxHomeWaiting bounds the people waiting for their Home; past it an
	// open is not served (counted and logged; the person sees the Home
	// they had, and the next open is served).
	maxHomeWaiting = 1000
	// maxHomePublished bounds the publish times remembered.
	maxHomePublished = 10_000
)

// HomeSlack is what the App Home calls in Slack (*slack.Client): it
// publishes the view, and learns the channels and their members
// (MembershipSlack) when Access has no Membership of its own.
type HomeSlack interface {
	PublishViewContext(ctx context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error)
	MembershipSlack
}

// ServiceHealth is how an analysis service has answered lately.
type ServiceHealth struct {
	Name string // "URL reputation", "Sandbox"
	// Configured is false when the bot has no URL for the service.
	Configured bool
	// Reachable: the last request got an answer from the service; Known
	// is false when no request was made since the bot started.
	Reachable, Known bool
	// Detail says why it is not reachable or what it refused ("timeout",
	// "the API key was refused").
	Detail string
	At     time.Time // of the last request
}

// Home is the App Home: the tab a person sees when they open verdictbot.
// It tells what the bot does and how to use it, lists the channels it is
// in with their mode and file scanning (admins change them there, through
// /scan channel's code), the last verdicts in the viewer's channels,
// reports awaiting the service's answer, and whether the services answer.
type Home struct {
	API HomeSlack
	// Scan reads the channel settings and their defaults.
	Scan *Scan
	// Registry is /scan's: its help, and the channel command a change
	// from the Home runs.
	Registry *Registry
	// Run runs a /scan request and answers its errors (Slash.Run).
	Run    func(ctx context.Context, req *Request)
	Access *Access
	// Health, if set, says whether the two services answer.
	Health func() []ServiceHealth
	// Pending, if set, lists the reports being sent (Feedback.Pending).
	Pending func() []PendingReport
	// Mine, if set, lists the messages the viewer reported to security
	// (newest first, at most n) and what became of them.
	Mine func(user string, n int) ([]MyReport, error)
	Log  *slog.Logger
	// MaxChannels bounds the channels listed (default 20); MaxVerdicts
	// the verdicts (default 10).
	MaxChannels, MaxVerdicts int
	// Workers is how many Homes are built at once (DefaultHomeWorkers);
	// Fresh how long a published one is served as it is
	// (DefaultHomeFresh).
	Workers int
	Fresh   time.Duration

	ownMembers sync.Once
	members    *Membership // Access.Members, or one of the Home's own

	mu        sync.Mutex
	waiting   []homeOpen           // FIFO of people whose Home is to be built
	queued    map[string]bool      // the people in waiting
	building  map[string]bool      // the people whose Home a worker builds
	published map[string]time.Time // when each person's published Home was built
	dropped   int                  // opens not served since the last log line
	wake      chan struct{}
	stop      context.CancelFunc
	done      sync.WaitGroup
}

type homeOpen struct {
	user string
	at   time.Time
}

func (h *Home) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// Start runs the Home's workers until ctx ends or Stop is called. Opens
// are queued from the start; they are served once it runs.
func (h *Home) Start(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		return
	}
	ctx, h.stop = context.WithCancel(ctx)
	if h.wake == nil {
		h.wake = make(chan struct{}, 1)
	}
	n := h.Workers
	if n <= 0 {
		n = DefaultHomeWorkers
	}
	for range n {
		h.done.Go(func() { h.work(ctx) })
	}
}

// Stop ends the workers and waits for the Homes being built; those still
// waiting are not built (their people see the Home they had).
func (h *Home) Stop() {
	h.mu.Lock()
	stop := h.stop
	h.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	h.done.Wait()
}

// Opened handles app_home_opened (user opened the app's tab). It never
// waits: the Home is queued for the Home's workers and built
// homeDebounce after the open, unless one build already answers it: the
// person's Home is waiting or being built, or was built less than Fresh
// ago (Slack shows that view). Other tabs (Messages) need nothing.
func (h *Home) Opened(_ context.Context, user, tab string) {
	if user == "" || (tab != "" && tab != "home") {
		return
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queued[user] || h.building[user] || now.Sub(h.published[user]) < h.fresh() {
		return
	}
	if len(h.waiting) >= maxHomeWaiting {
		h.dropped++ // logged by the next worker to take a Home
		return
	}
	if h.queued == nil {
		h.queued = map[string]bool{}
	}
	if h.wake == nil {
		h.wake = make(chan struct{}, 1)
	}
	h.queued[user] = true
	h.waiting = append(h.waiting, homeOpen{user: user, at: now})
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *Home) fresh() time.Duration {
	if h.Fresh > 0 {
		return h.Fresh
	}
	return DefaultHomeFresh
}

// work builds and publishes the queued Homes until ctx ends.
func (h *Home) work(ctx context.Context) {
	for ctx.Err() == nil {
		h.mu.Lock()
		if len(h.waiting) > 0 {
			if wait := time.Until(h.waiting[0].at.Add(homeDebounce)); wait > 0 {
				h.mu.Unlock()
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				continue
			}
		}
		var next homeOpen
		ok := len(h.waiting) > 0
		if ok {
			next = h.waiting[0]
			h.waiting = h.waiting[1:]
			delete(h.queued, next.user)
		}
		// A Home built after this open was queued already answers it.
		served := ok && h.published[next.user].After(next.at)
		if ok && !served {
			if h.building == nil {
				h.building = map[string]bool{}
			}
			h.building[next.user] = true
		}
		dropped := h.dropped
		h.dropped = 0
		more := len(h.waiting) > 0
		h.mu.Unlock()
		if dropped > 0 {
			h.log().Warn("App Home opens not served: too many people waiting", "opens", dropped, "waiting_max", maxHomeWaiting)
		}
		if more {
			select { // another worker may take the next one
			case h.wake <- struct{}{}:
			default:
			}
		}
		if ok && !served {
			h.publish(ctx, next.user, "")
			h.mu.Lock()
			delete(h.building, next.user)
			h.mu.Unlock()
		}
		if ok {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
	}
}

// HandleInteraction handles the block_actions of the Home's selects and
// reports whether cb was one. A change runs /scan channel's code (the same
// checks and audit line), and the Home is published again with the answer
// on top.
func (h *Home) HandleInteraction(ctx context.Context, cb *slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions {
		return false
	}
	handled := false
	var notices []string
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID != ActionHomeChannelMode && a.ActionID != ActionHomeChannelFiles && a.ActionID != ActionHomeChannelQuarantine {
			continue
		}
		handled = true
		channel, ok := strings.CutPrefix(a.BlockID, HomeChannelBlock)
		value := a.SelectedOption.Value
		if !ok || channel == "" || value == "" {
			notices = append(notices, "That control is from an older Home; here is the current one.")
			continue
		}
		args := []string{value}
		switch a.ActionID {
		case ActionHomeChannelFiles:
			args = []string{"files", value}
		case ActionHomeChannelQuarantine:
			args = []string{"quarantine", value}
		}
		notices = append(notices, h.runChannel(ctx, cb.User.ID, channel, args))
	}
	if handled {
		h.publish(ctx, cb.User.ID, strings.Join(notices, "\n"))
	}
	return handled
}

// runChannel runs /scan channel <args> in channel as user, as if typed
// there, and returns the answer.
func (h *Home) runChannel(ctx context.Context, user, channel string, args []string) string {
	c, ok := h.Registry.Lookup("channel")
	if !ok || h.Run == nil {
		return "Channel settings cannot be changed here."
	}
	var answer []string
	req := &Request{Command: c, Args: args, User: user, Channel: channel, Via: "home",
		Answer: func(_ context.Context, text string) error { answer = append(answer, text); return nil }}
	h.Run(ctx, req)
	return fmt.Sprintf("<#%s>: %s", channel, strings.Join(answer, " "))
}

// publish builds user's Home and publishes it, and remembers when it was
// built.
func (h *Home) publish(ctx context.Context, user, notice string) {
	now := time.Now()
	view := h.View(ctx, user, notice)
	if _, err := h.API.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		h.log().Warn("could not publish the App Home", "user", user, "error", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.published == nil {
		h.published = map[string]time.Time{}
	}
	if len(h.published) >= maxHomePublished {
		for u, at := range h.published {
			if now.Sub(at) >= h.fresh() {
				delete(h.published, u)
			}
		}
		if len(h.published) >= maxHomePublished {
			clear(h.published)
		}
	}
	h.published[user] = now
}

// membership is the source of who is in which channel: Access's, shared
// with the commands, or (without one) the Home's own on its API.
func (h *Home) membership() *Membership {
	h.ownMembers.Do(func() {
		if h.Access != nil && h.Access.Members != nil {
			h.members = h.Access.Members
			return
		}
		h.members = &Membership{API: h.API, Log: h.Log}
	})
	return h.members
}

// homeChannel is a channel the bot is in, as the Home shows it.
type homeChannel struct {
	id, name string
	private  bool
	member   bool // the viewer is in it
}

// View builds user's Home tab. notice, if any, is shown on top (the answer
// to a change made from the Home).
func (h *Home) View(ctx context.Context, user, notice string) slack.HomeTabViewRequest {
	maxCh, maxV := h.MaxChannels, h.MaxVerdicts
	if maxCh <= 0 {
		maxCh = 20
	}
	if maxV <= 0 {
		maxV = 10
	}
	admin := h.Access.IsAdmin(user)
	var b homeBlocks
	b.add(slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "verdictbot", false, false)))
	b.text("verdictbot checks the links and files shared in the channels it is in with a URL reputation service and a malware sandbox, " +
		"and answers in the message's thread with a verdict card: clean, suspicious, malicious, or could not check. " +
		"Quiet channels get a :white_check_mark: reaction for clean messages and a card only when something looks wrong; " +
		"verbose channels get a card for everything. Private and internal hosts and allowlisted domains are never sent.\n" +
		"*To have something checked:* send a link or a file here, in the *Messages* tab (nothing else you write here is read); " +
		"mention `@verdictbot scan` in a thread to check its first message; or use `/scan &lt;url&gt;` in a channel.")
	if notice != "" {
		b.add(slack.NewContextBlock("home_notice", slack.NewTextBlockObject(slack.MarkdownType, clipText(notice, maxSectionText), false, false)))
	}

	b.add(slack.NewDividerBlock())
	b.header("Services")
	b.text(h.servicesText())

	channels, listErr := h.botChannels(ctx)
	if listErr == nil {
		// The channels whose members could not be read are not the
		// viewer's here (never shown to someone who may not be in them).
		in, _ := h.membership().Of(ctx, user) // it logs what it could not read
		for i := range channels {
			channels[i].member = in[channels[i].id]
		}
	}

	b.add(slack.NewDividerBlock())
	b.header("Channels")
	h.channelBlocks(&b, channels, admin, maxCh, listErr)

	b.add(slack.NewDividerBlock())
	b.header("Last verdicts in your channels")
	b.text(h.verdictsText(channels, maxV))

	b.add(slack.NewDividerBlock())
	b.header("Reports awaiting an answer")
	b.text(h.reportsText(channels))

	if text := h.mineText(user); text != "" {
		b.add(slack.NewDividerBlock())
		b.header("Messages you reported to security")
		b.text(text)
	}

	b.add(slack.NewDividerBlock())
	b.header("Commands")
	for _, chunk := range chunkLines(h.Registry.HomeHelp(), maxSectionText) {
		b.text(chunk)
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: b.done()}}
}

// MyReport is a message the viewer reported to security (package triage).
type MyReport struct {
	Channel, TS string
	At          time.Time
	// Outcome is "" while open, "malicious" or "not_a_threat".
	Outcome string
}

// mineText lists the viewer's reports to security ("" for none).
func (h *Home) mineText(user string) string {
	if h.Mine == nil {
		return ""
	}
	mine, err := h.Mine(user, 5)
	if err != nil {
		h.log().Warn("home: the viewer's reports could not be read", "error", err)
		return "_Your reports could not be read just now._"
	}
	var lines []string
	for _, r := range mine {
		state := "open: the security team has it"
		switch r.Outcome {
		case "malicious":
			state = "*confirmed malicious*: thank you"
		case "not_a_threat":
			state = "not a threat"
		}
		lines = append(lines, fmt.Sprintf("• a message in <#%s>, %s · %s", r.Channel, r.At.UTC().Format("2006-01-02 15:04 UTC"), state))
	}
	return strings.Join(lines, "\n")
}

// homeBlocks collects a view's blocks within Slack's 100.
type homeBlocks struct{ list []slack.Block }

func (b *homeBlocks) add(bl ...slack.Block) { b.list = append(b.list, bl...) }

func (b *homeBlocks) header(text string) {
	b.add(slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, text, false, false)))
}

func (b *homeBlocks) text(text string) {
	b.add(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, clipText(text, maxSectionText), false, false), nil, nil))
}

// done returns the blocks, cut to Slack's limit with a last line saying so
// (the channel list is bounded first, so this is a safety net).
func (b *homeBlocks) done() []slack.Block {
	if len(b.list) <= maxHomeBlocks {
		return b.list
	}
	out := append([]slack.Block(nil), b.list[:maxHomeBlocks-1]...)
	return append(out, slack.NewContextBlock("home_cut", slack.NewTextBlockObject(slack.MarkdownType,
		fmt.Sprintf("… and %d more blocks not shown (a Home holds 100).", len(b.list)-maxHomeBlocks+1), false, false)))
}

func (h *Home) servicesText() string {
	if h.Health == nil {
		return "Service health is not tracked."
	}
	var lines []string
	for _, s := range h.Health() {
		var state string
		switch {
		case !s.Configured:
			state = "not configured"
		case !s.Known:
			state = ":grey_question: no request since the bot started"
		case s.Reachable && s.Detail == "":
			state = ":large_green_circle: answering"
		case s.Reachable:
			state = ":large_orange_circle: answering, but " + s.Detail
		default:
			state = ":red_circle: not reachable (" + s.Detail + ")"
		}
		if s.Known && !s.At.IsZero() {
			state += fmt.Sprintf(" — last request %s", slackDate(s.At))
		}
		lines = append(lines, fmt.Sprintf("*%s*: %s", s.Name, state))
	}
	return strings.Join(lines, "\n")
}

// channelBlocks lists the channels the bot is in: to admins all of them,
// each with its two selects; to others only those they are in, as text
// (a private channel's name is not shown to non-members).
func (h *Home) channelBlocks(b *homeBlocks, channels []homeChannel, admin bool, maxCh int, listErr error) {
	if listErr != nil {
		b.text("I could not list my channels just now (" + notify.Prose(cleanSlackErr(listErr), 80) + "); open the Home again in a minute.")
		return
	}
	shown := channels
	if !admin {
		shown = nil
		for _, c := range channels {
			if c.member {
				shown = append(shown, c)
			}
		}
	}
	if len(shown) == 0 {
		if admin {
			b.text("I am in no channel yet: invite me with `/invite @verdictbot` in a channel to have its links checked.")
		} else {
			b.text("I am in none of your channels. Ask an admin to invite me, or send me links here in Messages.")
		}
		return
	}
	more := 0
	if len(shown) > maxCh {
		more = len(shown) - maxCh
		shown = shown[:maxCh]
	}
	if admin {
		b.add(slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType,
			"You are an admin: changes here are the same as `/scan channel …` in the channel, and are logged.", false, false)))
	}
	var lines []string
	for _, c := range shown {
		mode, modeDefault := h.mode(c.id)
		files, filesDefault := h.files(c.id)
		quar, quarDefault := h.quarantine(c.id)
		line := fmt.Sprintf("<#%s> — mode *%s*%s · files *%s*%s · quarantine *%s*%s", c.id, mode, dflt(modeDefault), files, dflt(filesDefault),
			quar, dflt(quarDefault))
		if h.Scan.Backfill != nil {
			// A scan of the channel's history, running or finished.
			if st, ok := h.Scan.Backfill.Status(c.id); ok {
				line += "\n      " + st
			}
		}
		if !admin {
			lines = append(lines, "• "+line)
			continue
		}
		b.add(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, line, false, false), nil, nil))
		b.add(slack.NewActionBlock(HomeChannelBlock+c.id,
			selectOf(ActionHomeChannelMode, "Mode", mode, "quiet", "verbose", "off"),
			selectOf(ActionHomeChannelFiles, "Files", files, "on", "off"),
			selectOf(ActionHomeChannelQuarantine, "Quarantine", quar, "off", "malicious", "suspicious")))
	}
	if len(lines) > 0 {
		b.text(strings.Join(lines, "\n"))
	}
	if more > 0 {
		b.add(slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType,
			fmt.Sprintf("… and %d more channel(s); use `/scan channel` in them.", more), false, false)))
	}
}

func dflt(isDefault bool) string {
	if isDefault {
		return " (default)"
	}
	return ""
}

// selectOf is a static select of values, labelled by their value.
func selectOf(actionID, placeholder, current string, values ...string) *slack.SelectBlockElement {
	var opts []*slack.OptionBlockObject
	var initial *slack.OptionBlockObject
	for _, v := range values {
		label := v
		switch actionID {
		case ActionHomeChannelFiles:
			label = "files " + v
		case ActionHomeChannelQuarantine:
			label = "quarantine " + v
		}
		o := slack.NewOptionBlockObject(v, slack.NewTextBlockObject(slack.PlainTextType, label, false, false), nil)
		opts = append(opts, o)
		if v == current {
			initial = o
		}
	}
	el := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, slack.NewTextBlockObject(slack.PlainTextType, placeholder, false, false), actionID, opts...)
	el.InitialOption = initial
	return el
}

// mode is a channel's effective mode and whether it is the default.
func (h *Home) mode(channel string) (string, bool) {
	m, isDefault, _ := h.Scan.settings().ModeOf(channel)
	return m, isDefault
}

// files is whether a channel's files are scanned ("on", "off") and
// whether that is the default.
func (h *Home) files(channel string) (string, bool) {
	on, isDefault, _ := h.Scan.settings().FilesOf(channel)
	if on {
		return settings.FilesOn, isDefault
	}
	return settings.FilesOff, isDefault
}

// quarantine is a channel's quarantine level ("off", "malicious",
// "suspicious") and whether that is the default.
func (h *Home) quarantine(channel string) (string, bool) {
	v, isDefault, _ := h.Scan.settings().QuarantineOf(channel)
	return v, isDefault
}

// verdictsText lists the newest cards of the channels the viewer is in.
func (h *Home) verdictsText(channels []homeChannel, maxV int) string {
	var recs []*store.CardRecord
	for _, c := range channels {
		if !c.member {
			continue // never a channel the viewer is not in
		}
		rs, err := h.Scan.State.RecentCards(c.id, maxV)
		if err != nil {
			h.log().Warn("home: recent cards", "channel", c.id, "error", err)
			continue
		}
		recs = append(recs, rs...)
	}
	if len(recs) == 0 {
		return "No verdicts yet in the channels you share with me."
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Updated.After(recs[j].Updated) })
	var lines []string
	for i, rec := range recs {
		if i == maxV {
			lines = append(lines, fmt.Sprintf("… and %d more", len(recs)-maxV))
			break
		}
		c := rec.Card
		var targets []string
		for j, l := range c.Lines {
			if j == 2 {
				targets = append(targets, fmt.Sprintf("+%d more", len(c.Lines)-2))
				break
			}
			targets = append(targets, notify.CodeURL(l.Target, 60))
		}
		if len(targets) == 0 {
			targets = []string{"nothing checked"}
		}
		level := c.Level().String()
		if !c.Final {
			level = "scanning"
		}
		lines = append(lines, fmt.Sprintf("• *%s* · %s · <#%s> · %s", level, strings.Join(targets, ", "), c.Channel,
			rec.Updated.UTC().Format("2006-01-02 15:04 UTC")))
	}
	return strings.Join(lines, "\n")
}

// reportsText lists the false-positive/negative reports the URL service
// has not answered: those being sent now, and those on the viewer's
// channels' recent cards that never got through (the service could not
// be reached).
func (h *Home) reportsText(channels []homeChannel) string {
	member := map[string]bool{}
	for _, c := range channels {
		if c.member {
			member[c.id] = true
		}
	}
	var lines []string
	if h.Pending != nil {
		for _, p := range h.Pending() {
			if !member[p.Channel] {
				continue
			}
			lines = append(lines, fmt.Sprintf("• %s: %s (%s) for task %s in <#%s> — being sent since %s",
				notify.Mention(p.User), optionWords[p.Option], p.Category, notify.Code(p.TaskID, 40), p.Channel, slackDate(p.Since)))
		}
	}
	for _, c := range channels {
		if !c.member {
			continue
		}
		recs, err := h.Scan.State.RecentCards(c.id, 20)
		if err != nil {
			continue
		}
		for _, rec := range recs {
			for _, l := range rec.Card.Lines {
				for _, r := range l.Reports {
					if r.Outcome != OutcomeUnreachable || answeredLater(l.Reports, r) {
						continue
					}
					lines = append(lines, fmt.Sprintf("• %s: %s (%s) for task %s in <#%s> — not answered (%s), %s; report it again from the card",
						notify.Mention(r.User), optionWords[r.Option], r.Category, notify.Code(l.TaskID, 40), c.id, notify.Prose(r.Outcome, 200), slackDate(r.At)))
				}
			}
		}
	}
	if len(lines) == 0 {
		return "None: the service has answered every report in your channels."
	}
	if len(lines) > 15 {
		lines = append(lines[:15], fmt.Sprintf("… and %d more", len(lines)-15))
	}
	return strings.Join(lines, "\n")
}

// answeredLater reports whether a report r that never got through was sent
// again and answered.
func answeredLater(all []card.Report, r card.Report) bool {
	for _, o := range all {
		if o.At.After(r.At) && o.Option == r.Option && o.Category == r.Category && o.Outcome != OutcomeUnreachable {
			return true
		}
	}
	return false
}

// botChannels lists the public and private channels the bot is in, sorted
// by name (Membership.Channels: users.conversations, bounded and cached).
func (h *Home) botChannels(ctx context.Context) ([]homeChannel, error) {
	list, err := h.membership().Channels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]homeChannel, len(list))
	for i, c := range list {
		out[i] = homeChannel{id: c.ID, name: c.Name, private: c.Private}
	}
	return out, nil
}

// chunkLines splits text at line ends into pieces of at most n bytes.
func chunkLines(text string, n int) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if cur.Len() > 0 && cur.Len()+len(line)+1 > n {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(clipText(line, n))
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// clipText cuts text to at most n bytes at a rune boundary.
func clipText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return strings.ToValidUTF8(text[:n-len("…")], "") + "…"
}

// cleanSlackErr is a Slack error for a person: its code, no URL.
func cleanSlackErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}
