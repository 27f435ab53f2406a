package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/qrscan"
	"github.com/verdictbot/verdictbot/quarantine"
	"github.com/verdictbot/verdictbot/verdict"

	"github.com/robfig/cron/v3"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/backfill"
	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/cardbook"
	"github.com/verdictbot/verdictbot/cards"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/grid"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/metrics"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/scan/scanstore"
	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/slackfile"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/triage"

	"github.com/verdictbot/verdictbot/config"
)

// App is the bot wired from its settings: New builds every part (store,
// clients, pipelines, cards, quarantine, events, commands), Run serves
// until its context ends, Close releases what New opened.
type App struct {
	// signals are the bot's own signals about links (deceptive labels,
	// lookalikes of protected domains).
	signals *Signals
	// allowProtected are the runtime allowlist's domains already
	// protected from lookalikes (protectAllowlisted), under allowMu.
	allowMu        sync.Mutex
	allowProtected map[string]bool

	cfg      config.Config
	opts     Options
	log      *slog.Logger
	api      *slack.Client
	sm       *socketmode.Client
	rep      *reputation.Client
	sb       *sandbox.Client // nil without SANDBOX_URL
	urls     *scan.URLs
	db       store.State
	cards    *cards.Cards
	poster   *notify.Poster
	messages *cards.Messages
	files    *scan.Files
	scan     *commands.Scan
	slash    *commands.Slash
	settings *settings.Channels
	metrics  *metrics.Metrics
	// memory is the URL pipeline's store (its verdicts, deferrals and
	// recheck schedule); hosts checks a host's addresses before a URL is
	// submitted (nil when VERDICTBOT_RESOLVE_HOSTS=false); policy decides
	// which links are scanned; access says who may do what.
	memory *scanstore.URLMemory
	// durations keeps what the polling schedules learn (both services).
	durations *scanstore.Durations
	hosts     *links.HostResolver
	policy    *links.Policy
	access    *commands.Access
	// adminGroup resolves VERDICTBOT_ADMIN_GROUP (nil when not set).
	adminGroup *commands.AdminGroup
	recheck    *scan.Recheck
	// userCap is VERDICTBOT_USER_LINKS_PER_HOUR, for both pipelines.
	userCap  *cards.UserCap
	feedback *commands.Feedback
	// quarantine removes what reaches a channel's quarantine level and
	// releases it (always set; without SLACK_ADMIN_USER_TOKEN every
	// removal fails, said on the card).
	quarantine *quarantine.Quarantine
	bot        *bot.Bot
	// stopping is closed when the bot has stopped taking work: the
	// pipelines' store writes stop retrying then (scanstore.URLMemory.Stop).
	stopping chan struct{}
	// events and eventSender are the findings for the SOC's tools (nil
	// when VERDICTBOT_EVENTS_URL and VERDICTBOT_EVENTS_FILE are unset).
	events      *events.Emitter
	eventSender *events.Sender
	// health follows the services' last answers; home is the App Home,
	// mention answers @verdictbot.
	health  *serviceHealth
	home    *commands.Home
	mention *commands.Mention
	// grid is where the app is installed (one workspace, or the granted
	// workspaces of an Enterprise Grid organisation), learnt at auth.test
	// (onAuth); nil before.
	grid atomic.Pointer[grid.Directory]
	// triage is "Report to security".
	triage *triage.Triage
	// backfill checks channels' history.
	backfill *backfill.Runner
	// teamEvents counts what is handled per workspace (metrics).
	teamEvents *metrics.Workspaces
	// startAdminGroup starts the admin group's lookups (set by Run, called
	// by onAuth).
	startAdminGroup func() error
	// release closes the pipelines and the events file once (Run's end,
	// or Close when Run never ran); closeDB closes the store once.
	release, closeDB sync.Once
}

func apiURL(u string) string {
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// openState opens the state layer: PostgreSQL when VERDICTBOT_DATABASE_URL
// is set (its schema migrated first, under the migration lock), else the
// embedded file in VERDICTBOT_DATA_DIR (writeFault: Options.StoreWriteFault).
func openState(ctx context.Context, cfg config.Config, writeFault func() error, log *slog.Logger) (store.State, error) {
	if cfg.DatabaseURL == "" {
		return bolt.Open(cfg.DataDir, bolt.Options{WriteFault: writeFault})
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	db, err := pg.Open(ctx, cfg.DatabaseURL.Reveal(), pg.Options{Replica: replicaID(), Lease: cfg.Lease})
	if err != nil {
		return nil, err
	}
	log.Info("state in PostgreSQL", "database", pg.Describe(cfg.DatabaseURL.Reveal()), "schema", pg.SchemaVersion,
		"replica", db.Replica(), "lease", cfg.Lease.String())
	return db, nil
}

// New wires the bot from cfg (checked already: config.Load and
// Config.Validate) and opts (the zero value in production): it opens the
// store and builds every part, in the order the wire steps below need
// each other, but connects to nothing yet. On an error, what was opened
// is closed. Run serves; Close releases the store.
func New(cfg config.Config, opts Options) (_ *App, err error) {
	log := opts.logger(cfg)
	db, err := openState(context.Background(), cfg, opts.StoreWriteFault, log)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, opts: opts, log: log, db: db, stopping: make(chan struct{})}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	for _, wire := range []func() error{
		a.wireMetrics,
		a.wireEvents,
		a.wireSlack,
		a.wireReputation,
		a.wireURLs,
		a.wireSettings,
		a.wireCards,
		a.wireAccess,
		a.wireQuarantine,
		a.wireBot,
		a.wireMessages,
		a.wireCommands,
		a.wireTriage,
		a.wireBackfill,
		a.wireFiles,
		a.wireReplicas,
		a.wireRecheck,
	} {
		if err := wire(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// wireMetrics registers the metrics; the gauges read the bot's queue and
// the pipelines, wired later (0 until they are).
func (a *App) wireMetrics() error {
	a.metrics = metrics.New(
		func() int {
			if a.bot == nil {
				return 0
			}
			return a.bot.QueueDepth()
		},
		func() int {
			n := 0
			if a.urls != nil {
				n += a.urls.InFlight()
			}
			if a.files != nil {
				f, _ := a.files.InFlight()
				n += f
			}
			return n
		},
		func() bool { ok, _ := a.ready(); return ok })
	return nil
}

// wireSlack builds the Web API and Socket Mode clients.
func (a *App) wireSlack() error {
	cfg := a.cfg
	// Every outbound connection honours HTTPS_PROXY, HTTP_PROXY and
	// NO_PROXY: the Web API, file uploads and downloads through slackHTTP,
	// the Socket Mode WebSocket through slack-go's dialer (which sets the
	// same http.ProxyFromEnvironment), the service clients through
	// internal/apiclient's transport (TestEveryOutboundConnectionGoesThroughHTTPSProxy).
	a.api = slack.New(cfg.SlackBotToken.Reveal(),
		slack.OptionHTTPClient(slackHTTP()),
		slack.OptionAppLevelToken(cfg.SlackAppToken.Reveal()),
		slack.OptionAPIURL(apiURL(cfg.SlackAPIURL)))
	a.sm = socketmode.New(a.api)
	a.poster = notify.NewPoster(a.api, notify.PosterOptions{Logger: a.log.With("component", "notify"),
		OnCall: func(method string, err error, _ time.Duration) { a.metrics.SlackCall(method, notify.ErrorCode(err)) }})
	return nil
}

// wireReputation builds the URL service's client, its answers followed by
// the metrics and the App Home's service health.
func (a *App) wireReputation() error {
	a.health = newServiceHealth(true, a.cfg.SandboxURL != "")
	rep, err := NewReputation(a.cfg, a.log, func(e reputation.Event) {
		a.metrics.ReputationEvent(e)
		a.health.observe("URL reputation", string(e.Reason), e.IsWait)
	})
	if err != nil {
		return err
	}
	a.rep = rep
	return nil
}

// wireURLs builds the URL pipeline: its memory in the store, the host
// check, the per-person cap.
func (a *App) wireURLs() error {
	cfg, log, db := a.cfg, a.log, a.db
	// A URL claimed for its recheck is held off the other replicas' runs
	// for as long as an analysis may take.
	a.durations = scanstore.NewDurations(db, 0, log.With("component", "store"))
	a.memory = &scanstore.URLMemory{DB: db, Schedule: store.Schedule(cfg.RecheckAfter), Log: log.With("component", "store"), Stop: a.stopping,
		RecheckHold: cfg.URLDeadline + time.Minute}
	a.hosts = NewHostResolver(cfg, a.opts.Resolver, log)
	// VERDICTBOT_USER_LINKS_PER_HOUR; its admins and alerts are wired
	// by wireAccess, before any traffic.
	a.userCap = &cards.UserCap{Store: db, PerHour: cfg.UserLinksPerHour, AlertChannel: cfg.AlertChannel, FirstTime: db.SeenEvent,
		OnRefused: a.metrics.UserCapRefused, Log: log.With("component", "cap")}
	a.urls = scan.NewURLs(a.rep, scan.URLOptions{
		Allowance:  a.userCap,
		Memory:     a.memory,
		Hosts:      HostGate(a.hosts),
		TTL:        cfg.VerdictTTL,
		Thresholds: cfg.Thresholds(),
		Wait:       reputation.WaitOptions{Deadline: cfg.URLDeadline, Backoff: a.opts.URLPolling},
		// Analyses in flight follow the budgets (VERDICTBOT_MAX_CONCURRENT).
		MaxConcurrent: cfg.EffectiveMaxConcurrent(),
		Logger:        log.With("component", "scan"),
		OnDone:        a.metrics.URLDone,
		OnLearned:     a.durations.Observed("reputation"),
	})
	// The polling plan starts from the durations learned before a restart
	// (and, on PostgreSQL, by the other replicas).
	if l := a.urls.LearnedSchedule(); l != nil {
		if err := a.durations.Learn("reputation", l); err != nil {
			log.Warn("the analysis durations kept could not be read: the polling plan starts from the prior", "service", "reputation", "error", err)
		}
		a.metrics.WatchLearned("reputation", func() (int, bool) { st := l.Stats(); return st.Samples, st.Learning })
	}
	return nil
}

// wireSettings reads the channels' settings (defaults from cfg) and
// builds the link policy with the allowlist they hold.
func (a *App) wireSettings() error {
	cfg := a.cfg
	a.settings = &settings.Channels{Store: a.db, Log: a.log,
		Defaults: settings.Defaults{Mode: cfg.ChannelMode, Files: cfg.ScanFiles, Quarantine: cfg.Quarantine}}
	a.settings.LoadAllowlist()
	policy, err := links.NewPolicy(links.Config{AllowDomains: cfg.AllowDomains, InternalDomains: cfg.InternalDomains,
		MaxLinks: cfg.MaxLinks, AllowFunc: a.settings.Allowed, StripQuery: cfg.URLQuery == "strip"})
	if err != nil {
		return fmt.Errorf("VERDICTBOT_ALLOW_DOMAINS / VERDICTBOT_INTERNAL_DOMAINS: %w", err)
	}
	a.policy = policy
	return nil
}

// wireCards opens the cards' records.
func (a *App) wireCards() error {
	a.cards = cards.NewCards(a.db)
	a.cards.TeamOf = a.teamOf
	return nil
}

// wireAccess decides who may do what: the admins (VERDICTBOT_ADMINS,
// VERDICTBOT_ADMIN_GROUP) and the channels' members.
func (a *App) wireAccess() error {
	cfg, log := a.cfg, a.log
	// Who is in which channel, from Slack, shared by /scan, the report
	// answers and the App Home: what each shows a person.
	a.access = &commands.Access{Admins: cfg.Admins, ReportersAdminsOnly: cfg.Reporters == "admins",
		Members: &commands.Membership{API: a.api, Log: log.With("component", "membership"), Teams: a.teams}}
	if cfg.AdminGroup != "" {
		a.adminGroup = &commands.AdminGroup{Group: cfg.AdminGroup, API: a.api, Log: log.With("component", "admins"), Teams: a.teams}
		a.access.IsGroupAdmin = a.adminGroup.IsMember
	}
	a.metrics.WatchAdminGroup(a.adminGroup.Expired) // nil-safe: 0 without a group
	a.userCap.IsAdmin, a.userCap.Replier = a.access.IsAdmin, a.poster
	return nil
}

// wireQuarantine builds the feedback buttons and quarantine, which edit
// cards they did not make in the store and send their own events.
func (a *App) wireQuarantine() error {
	cfg, log, db, access := a.cfg, a.log, a.db, a.access
	// Quarantine and feedback edit cards they did not make in the store.
	book := &cardbook.Book{Store: db}
	a.feedback = &commands.Feedback{Cards: book, Rep: a.urls, Poster: a.poster, Access: access,
		Forget: a.urls.Forget, Log: log.With("component", "feedback"), TaskCards: book.TaskCards,
		Audit: db, Claims: db, Events: a.sink()}
	a.quarantine = &quarantine.Quarantine{Bot: a.api, Store: db, Cards: &cardbook.Book{Store: db, Shared: true}, Poster: a.poster, Levels: a.settings, FilesMode: cfg.QuarantineFiles,
		IsAdmin: access.IsAdmin, Log: log.With("component", "quarantine"),
		Events: a.sink(), Retention: cfg.QuarantineRetention,
		OwnTeam: a.ownTeam, Teams: a.teams,
		OnFailure: a.metrics.QuarantineFailure, OnAction: a.metrics.Quarantine,
		Queue: db, FlipMax: cfg.QuarantineFlipMax, AlertChannel: cfg.AlertChannel, PostWait: a.opts.FlipPostWait,
		OnFlip: a.metrics.QuarantineFlip, OnCounts: a.metrics.QuarantineQueue,
		FalsePositive: func(ctx context.Context, user, channel, sourceTS string, line int, taskID string, cat verdict.Category) string {
			return a.feedback.Report(ctx, commands.ReportRequest{User: user, Channel: channel, SourceTS: sourceTS, Line: line,
				TaskID: taskID, Category: cat, Option: "fp"})
		}}
	if cfg.SlackAdminUserToken != "" {
		// The admin's token goes only to SLACK_API_URL, through this client.
		a.quarantine.Admin = slack.New(cfg.SlackAdminUserToken.Reveal(), slack.OptionHTTPClient(slackHTTP()), slack.OptionAPIURL(apiURL(cfg.SlackAPIURL)))
	}
	return nil
}

// wireBot builds the Socket Mode adapter (ack first, its journal in the
// store) with the slash command and interaction handlers.
func (a *App) wireBot() error {
	cfg, log, db := a.cfg, a.log, a.db
	a.slash = &commands.Slash{Access: a.access, Respond: a.respond, Log: log.With("component", "commands")}
	a.bot = bot.New(a.sm, a.api, bot.Handlers{
		Interaction: func(ctx context.Context, cb *slack.InteractionCallback, raw json.RawMessage) {
			a.seenIn(cb.Channel.ID, cb.Team.ID)
			a.interaction(ctx, cb, raw)
		},
		Slash: func(ctx context.Context, cmd *slack.SlashCommand) {
			a.seenIn(cmd.ChannelID, cmd.TeamID)
			a.slash.Handle(ctx, cmd)
		},
		TeamAccess: a.teamAccess,
		SlashAck:   func(cmd *slack.SlashCommand) any { return a.slash.Ack(cmd) },
		Busy: func(ctx context.Context, kind string, payload any) {
			const msg = "verdictbot is overloaded right now and could not take this; please try again in a minute."
			switch p := payload.(type) {
			case *slack.SlashCommand:
				_ = a.poster.Ephemeral(ctx, p.ChannelID, p.UserID, msg)
			case *slack.InteractionCallback:
				_ = a.poster.Ephemeral(ctx, p.Channel.ID, p.User.ID, msg)
			}
		},
	}, bot.Options{Workers: cfg.Workers, QueueSize: cfg.QueueSize, Logger: log.With("component", "bot"), Observer: a.metrics,
		OnTakeOver: a.metrics.WatchReplicas(db.Replicas), OnAuth: a.onAuth, Admit: a.admit})
	a.bot.SetJournal(db)
	a.metrics.WatchJournal(a.bot.Spooled)
	a.metrics.WatchConnection(a.bot.Connected)
	a.teamEvents = a.metrics.WatchWorkspaces(a.workspaceCounts)
	a.metrics.WatchCards(a.cards.Scanning)
	return nil
}

// qrMaxPixels bounds the images read for QR codes: 16 megapixels (a
// 4,000 × 4,000 image, more than a phone's 12 MP photo) keep one decode
// under about 60 MiB for a baseline JPEG (docs/PERFORMANCE.md); larger
// images are not read.
const qrMaxPixels = 16_000_000

// wireMessages builds the card lifecycle of the messages the bot reads
// and hands it the bot's message events.
func (a *App) wireMessages() error {
	cfg := a.cfg
	a.messages = &cards.Messages{
		Self:          a.bot.Identity,
		Links:         a.policy,
		URLs:          a.urls,
		Poster:        a.poster,
		Cards:         a.cards,
		Finder:        &cards.ThreadSearch{API: a.api, Self: a.bot.Identity},
		Deferrals:     a.memory,
		Mode:          a.settings.Mode,
		CleanReaction: cfg.CleanReaction,
		MaxLinks:      cfg.MaxLinks,
		StripQuery:    cfg.URLQuery == "strip",
		Log:           a.log.With("component", "messages"),
		Act:           a.quarantine.Act,
		Events:        a.sink(),
		OnUnchecked:   func(kind card.Kind, n int) { a.metrics.Unchecked(string(kind), n) },
		Quarantined:   a.quarantine.On,
	}
	if cfg.DatabaseURL != "" {
		// Another replica may be posting a card this one is about to post:
		// its claim, renewed every 2.5 s while the post waits, is trusted
		// for 10 s (a dead replica's is then taken over).
		a.messages.PeerPostWait = 10 * time.Second
	}
	sg, err := NewSignals(cfg, a.log.With("component", "signals"))
	if err != nil {
		return err
	}
	sg.OnSignal = a.metrics.Signal
	a.signals = sg
	// The runtime allowlist's domains are protected too, as they are
	// loaded (at start, after each /scan allow, and on the replicas'
	// refresh).
	a.settings.OnAllowlist = a.protectAllowlisted
	a.settings.LoadAllowlist()
	a.messages.Signals = sg.Of
	// QR codes in shared images: downloaded like files (the token goes
	// only to Slack's file hosts), decoded here, sent nowhere.
	qrDL, err := slackfile.NewDownloader(cfg.SlackBotToken.Reveal(), apiURL(cfg.SlackAPIURL))
	if err != nil {
		return err
	}
	a.messages.QR = &cards.QR{Fetch: qrDL, Limits: qrscan.Limits{MaxBytes: qrscan.DefaultMaxBytes, MaxPixels: qrMaxPixels},
		Enabled: a.settings.Files, Log: a.log.With("component", "qr"),
		OnSkipped: func() { a.metrics.Signal("qr_skipped") }, OnFound: func(n int) {
			for range n {
				a.metrics.Signal("qr_code")
			}
		}}
	a.quarantine.ShowCard = a.messages.Show
	a.bot.SetHandler(func(ctx context.Context, ev *slackevents.MessageEvent, m bot.Meta) {
		a.seenIn(ev.Channel, m.TeamID)
		a.messages.Handle(ctx, ev, m)
	}, a.messages.NeedsWork)
	return nil
}

// wireCommands builds /scan's registry, the App Home and the answer to
// @verdictbot.
func (a *App) wireCommands() error {
	log := a.log
	a.scan = &commands.Scan{Links: a.policy, Hosts: a.hosts, Scanner: a.messages, URLs: a.urls, State: a.db, Access: a.access, Feedback: a.feedback,
		Respond: a.respond, Settings: a.settings, QuarantineProblem: a.quarantine.CannotRemove,
		Log: log.With("component", "audit"), Events: a.sink()}
	a.slash.Registry = commands.NewScanRegistry(a.scan)
	a.home = &commands.Home{API: a.api, Scan: a.scan, Registry: a.slash.Registry, Run: a.slash.Run, Access: a.access,
		Health: a.health.states, Pending: a.feedback.Pending, Log: log.With("component", "home")}
	a.mention = &commands.Mention{API: a.api, Scanner: a.messages, Self: func() string { return a.bot.Identity().UserID },
		Log: log.With("component", "mention")}
	a.bot.SetPeopleHandlers(func(ctx context.Context, ev *slackevents.AppHomeOpenedEvent) {
		a.home.Opened(ctx, ev.User, ev.Tab)
	}, func(ctx context.Context, ev *slackevents.AppMentionEvent) {
		if ev.BotID != "" {
			return // another app's post: mentions are for people
		}
		a.mention.Handle(ctx, ev.User, ev.Channel, ev.Text, ev.TimeStamp, ev.ThreadTimeStamp)
	})
	return nil
}

// wireReplicas shares the budgets between the replicas: the vendor
// budgets and Slack's per-app limits hold for all replicas together, so
// each takes its share, again whenever a replica comes or goes.
func (a *App) wireReplicas() error {
	var sb budgetSharer
	if a.sb != nil {
		sb = a.sb
	}
	a.db.OnReplicas(func(n int) {
		shareBudgets(n, a.rep, sb, shareFunc(a.poster.Share), a.quarantine)
		a.backfill.Share(n)
		if n > 1 {
			a.log.Info("budgets shared between replicas", "replicas", n)
		}
	})
	inForce := budgetsInForce(a.rep, a.sb, a.poster)
	a.metrics.WatchBudgets(func() []metrics.Budget {
		// Recheck removals are paced too (chat.delete, Tier 3).
		return append(inForce(), metrics.Budget{Service: "slack", Budget: "chat.delete", Rate: a.quarantine.DeleteRate()})
	})
	return nil
}

// wireRecheck builds the recheck job (run on its schedule by Run): one
// replica leads each run, changes are announced on the cards.
func (a *App) wireRecheck() error {
	cfg, db := a.cfg, a.db
	announcer := &cards.Announcer{Messages: a.messages, Replier: a.poster, AlertChannel: cfg.AlertChannel, Remover: a.quarantine,
		TeamURL: func() string { return a.bot.Identity().TeamURL }}
	a.recheck = &scan.Recheck{Store: a.memory, URLs: a.urls, Max: cfg.RecheckMax,
		OnChange: announcer.Announce, OnRun: a.metrics.RecheckRun, Log: a.log.With("component", "recheck"),
		Lead: func(ctx context.Context) (scan.Lease, bool, error) {
			l, ok, err := db.Lead(ctx, scanstore.RecheckJob)
			if err != nil || !ok {
				return nil, false, err
			}
			return recheckLease{l}, true, nil
		}}
	return nil
}

// recheckLease is a term of the recheck's lead as scan.Recheck takes it.
type recheckLease struct{ store.Lease }

func (l recheckLease) Token() uint64 { return l.Fence().Token }

// wireFiles sets up the file pipeline when a sandbox is configured (files
// are listed as not checked otherwise).
func (a *App) wireFiles() error {
	cfg, log := a.cfg, a.log
	files := &cards.Files{Messages: a.messages, Info: a.api, Uploader: a.poster, MaxScreenshots: cfg.MaxScreenshots,
		FirstTime: a.db.SeenEvent, Enabled: a.settings.Files}
	a.messages.Files = files
	a.bot.SetFileHandler(func(ctx context.Context, ev *slackevents.FileSharedEvent, m bot.Meta) {
		a.seenIn(ev.ChannelID, m.TeamID)
		files.Shared(ctx, ev, m)
	}, files.NeedsWork)
	if cfg.SandboxURL == "" {
		log.Info("no SANDBOX_URL: shared files are not checked")
		return nil
	}
	sb, err := NewSandbox(cfg, log, func(e sandbox.Event) {
		a.metrics.SandboxEvent(e)
		a.health.observe("Sandbox", string(e.Reason), e.IsWait)
	})
	if err != nil {
		return err
	}
	a.sb = sb
	dl, err := slackfile.NewDownloader(cfg.SlackBotToken.Reveal(), apiURL(cfg.SlackAPIURL))
	if err != nil {
		return err
	}
	tmp := filepath.Join(cfg.DataDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("VERDICTBOT_DATA_DIR: %w", err)
	}
	shots := cfg.MaxScreenshots
	if shots == 0 {
		shots = -1 // scan.FileOptions reads 0 as "the default"; the setting's 0 means none
	}
	a.files = scan.NewFiles(sb, dl, scan.FileOptions{
		Allowance: a.userCap,
		MaxBytes:  cfg.MaxFileBytes, MaxScreenshots: shots, ScreenshotTimeout: cfg.ScreenshotTimeout, TTL: cfg.FileVerdictTTL,
		SkipTypes: cfg.SkipFiletypes, TempDir: tmp,
		Wait:      sandbox.WaitOptions{Deadline: cfg.SandboxDeadline, Backoff: a.opts.SandboxPolling},
		Memory:    &scanstore.FileMemory{DB: a.db, Log: log.With("component", "store"), Stop: a.stopping},
		Logger:    log.With("component", "files"),
		OnDone:    a.metrics.FileDone,
		OnLearned: a.durations.Observed("sandbox"),
	})
	if l := a.files.LearnedSchedule(); l != nil {
		if err := a.durations.Learn("sandbox", l); err != nil {
			log.Warn("the analysis durations kept could not be read: the polling plan starts from the prior", "service", "sandbox", "error", err)
		}
		a.metrics.WatchLearned("sandbox", func() (int, bool) { st := l.Stats(); return st.Samples, st.Learning })
	}
	files.Check = a.files
	a.scan.Sandbox = a.files
	return nil
}

// ready reports whether the bot can do its job: Socket Mode connected and
// the store open (it is, while the app exists) and writable (no envelope
// waits in memory for the journal).
func (a *App) ready() (bool, string) {
	if a.bot == nil || !a.bot.Connected() {
		return false, "Socket Mode is not connected"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.db.Ping(ctx); err != nil {
		msg := "database unreachable: " + err.Error()
		if n := a.bot.Spooled(); n > 0 {
			msg += fmt.Sprintf(" (%d acked envelope(s) held in memory until it answers)", n)
		}
		return false, msg
	}
	if n := a.bot.Spooled(); n > 0 {
		return false, fmt.Sprintf("the store cannot be written: %d acked envelope(s) held in memory until it can", n)
	}
	// Quarantine is optional: a bad admin token is shown, not a reason to
	// stop taking traffic.
	if p := a.quarantine.Problem(); p != "" {
		return true, "quarantine: " + p
	}
	return true, ""
}

// startRecheck runs the recheck job on its cron schedule until ctx ends;
// the returned function waits for a run in progress to stop.
func (a *App) startRecheck(ctx context.Context) (wait func()) {
	c := cron.New(cron.WithChain(cron.Recover(cronLogger{a.log})))
	if _, err := c.AddFunc(a.cfg.RecheckSchedule, func() {
		if _, err := a.recheck.Run(ctx); err != nil && !errors.Is(err, scan.ErrRunning) {
			a.log.Warn("recheck run failed", "error", err)
		}
	}); err != nil {
		a.log.Error("recheck schedule refused", "error", err) // validated at start; not expected
	}
	c.Start()
	return func() { <-c.Stop().Done() }
}

// cronLogger sends robfig/cron's own messages to slog.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "error", err)...)
}

// pruneEvents forgets processed event ids older than 48 h, hourly (Slack's
// retries end within minutes, or 24 h with Delayed Events on).
func (a *App) pruneEvents(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := a.db.PruneEvents(time.Now().Add(-48*time.Hour), 100_000); err != nil {
			a.log.Warn("pruning processed event ids failed", "error", err)
		} else if n > 0 {
			a.log.Debug("pruned processed event ids", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Run connects to Slack and serves until ctx ends (nil: a clean stop)
// or a fatal error: the background jobs (pruning, retention, events,
// removals, the recheck schedule), the ops server unless
// VERDICTBOT_HTTP_ADDR=off, the admin group and the App Home run beside
// the bot while it does. Call it once; Close after it returns.
func (a *App) Run(ctx context.Context) error {
	cfg, opts, log := a.cfg, a.opts, a.log
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	var bgDone sync.WaitGroup
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.pruneEvents(bg) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.pruneRetention(bg, opts.firstPruneDelay(), time.Hour) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.runEvents(bg) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.quarantine.RunRemovals(bg) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.durations.Run(bg, time.Minute) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.messages.RunStale(bg) }()
	if a.db.SweepEvery() > 0 {
		// Replicas: another's /scan allow is followed within this.
		bgDone.Add(1)
		go func() { defer bgDone.Done(); a.settings.RefreshAllowlist(bg, allowlistRefresh) }()
	}
	waitRecheck := a.startRecheck(bg)
	if cfg.HTTPAddr != "off" {
		ops, err := startOps(cfg.HTTPAddr, a.metrics, a.ready, log)
		if err != nil {
			stopBG()
			waitRecheck()
			bgDone.Wait()
			return err
		}
		defer ops.shutdown()
	}

	// The admin group's first lookup waits for auth.test (onAuth): on an
	// org-wide install it needs the workspaces.
	a.startAdminGroup = func() error {
		if a.adminGroup == nil {
			return nil
		}
		if err := a.adminGroup.Start(bg); err != nil {
			return fmt.Errorf("VERDICTBOT_ADMIN_GROUP=%s: %w", cfg.AdminGroup, err)
		}
		return nil
	}
	if a.adminGroup != nil {
		defer a.adminGroup.Stop()
	}
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.runGridRefresh(bg) }()
	bgDone.Add(1)
	go func() { defer bgDone.Done(); a.backfill.RunResume(bg) }()
	if cfg.Quarantine != quarantine.Off && cfg.AlertChannel == "" {
		log.Warn("quarantine: VERDICTBOT_ALERT_CHANNEL is not set: a recheck that would remove more than VERDICTBOT_QUARANTINE_FLIP_MAX messages for one link cannot ask an admin, so those removals wait",
			"flip_max", cfg.QuarantineFlipMax)
	}
	if cfg.SlackAdminUserToken != "" {
		if p := a.quarantine.Check(ctx); p != "" {
			log.Warn("quarantine: " + p)
		} else {
			log.Info("quarantine: the admin token is a workspace admin's", "default_level", cfg.Quarantine)
		}
	}
	// The App Home is built on workers of its own: opens never wait for,
	// nor hold up, the workers that make cards.
	a.home.Start(bg)
	defer a.home.Stop()
	log.Info("starting verdictbot", "version", opts.version(), "mode", cfg.ChannelMode, "quarantine", cfg.Quarantine, "slack_api", cfg.SlackAPIURL)
	// Run returns when ctx ends (SIGTERM) or on a fatal error. It stops
	// intake and gives queued jobs a few seconds; everything acked is in
	// the journal, and analyses in flight are in the store, so what does
	// not finish now resumes after the restart.
	err := a.bot.Run(ctx, 3*time.Second)
	close(a.stopping)
	done := make(chan struct{})
	go func() { a.messages.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		log.Warn("shutdown: cards still in flight resume after the restart")
	}
	stopBG()
	waitRecheck()
	bgDone.Wait()
	a.releasePipelines()
	if errors.Is(err, context.Canceled) || (err == nil && ctx.Err() != nil) {
		log.Info("stopped")
		return nil
	}
	return err
}

// releasePipelines closes the pipelines and the events file, once.
func (a *App) releasePipelines() {
	a.release.Do(func() {
		a.triage.Close()   // its triage cards waiting for verdicts
		a.backfill.Close() // the history scans: they resume at the next start
		if a.urls != nil {
			a.urls.Close()
		}
		if a.files != nil {
			a.files.Close()
		}
		if a.events != nil {
			a.events.Flush()
			a.events.File.Close()
		}
	})
}

// Close releases what New opened: the pipelines and the events file (when
// Run did not) and the store. Call it after Run returns.
func (a *App) Close() error {
	a.releasePipelines()
	var err error
	a.closeDB.Do(func() { err = a.db.Close() })
	return err
}

// Config is the settings the app was wired from.
func (a *App) Config() config.Config { return a.cfg }

// Store is the app's state: the one handle on the embedded file (bbolt
// allows one per file), so an adapter running beside the bot (the
// terminal shell) reads the cards through it.
func (a *App) Store() store.State { return a.db }

// Registry is /scan's command registry (its help, for the shell).
func (a *App) Registry() *commands.Registry { return a.slash.Registry }

// Recheck is the recheck job, which Run runs on VERDICTBOT_RECHECK_SCHEDULE;
// the shell runs it on demand.
func (a *App) Recheck() *scan.Recheck { return a.recheck }

// Metrics is the app's metrics (what /metrics serves).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// EventSender is the sender of the events to VERDICTBOT_EVENTS_URL (nil
// when it is unset); the deployment checks call its hooks to register
// every metric it feeds.
func (a *App) EventSender() *events.Sender { return a.eventSender }
