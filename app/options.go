package app

import (
	"cmp"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

// Options are what a caller may change in the wiring besides the
// settings: where the logs go, the version it reports, and the hooks
// tests use. The zero value is production but for Version (cmd passes
// the linker's); each field says what its zero value means. Options
// replace the package variables tests used to set, so that tests with
// different hooks run side by side.
type Options struct {
	// Logger receives the app's logs; nil: LoggerFor(os.Stderr, cfg)
	// (VERDICTBOT_LOG_FORMAT and VERDICTBOT_LOG_LEVEL, the secrets
	// redacted).
	Logger *slog.Logger
	// Version is the build's version, logged at start and sent with the
	// events (their product version, the sender's User-Agent); "": "dev".
	Version string
	// StoreWriteFault, when set, makes the embedded store's writes fail
	// (bolt.Options.WriteFault).
	StoreWriteFault func() error
	// Resolver answers VERDICTBOT_RESOLVE_HOSTS's lookups; nil: the
	// system's (net.DefaultResolver: /etc/resolv.conf, /etc/hosts,
	// nsswitch).
	Resolver links.Resolver
	// FirstPruneDelay is how long after start the first retention prune
	// runs; 0: defaultFirstPruneDelay.
	FirstPruneDelay time.Duration
	// EventsMinBackoff and EventsMaxBackoff bound the event sender's wait
	// between failed attempts; 0: defaultEventsMinBackoff,
	// defaultEventsMaxBackoff.
	EventsMinBackoff, EventsMaxBackoff time.Duration
	// URLPolling and SandboxPolling, when set, are fixed status-polling
	// schedules for the URL and sandbox analyses; zero: the schedules
	// that learn how long the services take (reputation.NewLearnedSchedule,
	// sandbox.NewLearnedSchedule), first checking after about a second.
	// End-to-end tests whose subject is not the polling set them short.
	URLPolling     reputation.Backoff
	SandboxPolling sandbox.Backoff
	// BackfillPerMinute, when set, is the history methods' rate for the
	// backfill (0: Slack's Tier 3, 50 a minute).
	BackfillPerMinute float64
	// FlipPostWait, when set, is how long a recheck flip's removal waits
	// for its card to be shown (quarantine.Quarantine.PostWait; 0: a
	// minute).
	FlipPostWait time.Duration
}

// logger is o.Logger, or the settings' logger on stderr.
func (o Options) logger(cfg config.Config) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return LoggerFor(os.Stderr, cfg)
}

// LoggerFor is the process logger for the settings, writing to w:
// VERDICTBOT_LOG_FORMAT and VERDICTBOT_LOG_LEVEL, and every secret of cfg
// (the tokens, the API keys, the database password, the events secret)
// redacted (NewLogger).
func LoggerFor(w io.Writer, cfg config.Config) *slog.Logger {
	return NewLogger(w, cfg.LogFormat, cfg.LogLevel, cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey, cfg.SandboxAPIKey,
		cfg.DatabaseURL.Password(), cfg.SlackAdminUserToken, cfg.EventsSecret)
}

// version is o.Version, or "dev".
func (o Options) version() string {
	return cmp.Or(o.Version, "dev")
}

// firstPruneDelay is o.FirstPruneDelay, or its default.
func (o Options) firstPruneDelay() time.Duration {
	return cmp.Or(o.FirstPruneDelay, defaultFirstPruneDelay)
}

// eventsBackoff is the event sender's bounds: o's, or the defaults.
func (o Options) eventsBackoff() (lo, hi time.Duration) {
	return cmp.Or(o.EventsMinBackoff, defaultEventsMinBackoff), cmp.Or(o.EventsMaxBackoff, defaultEventsMaxBackoff)
}
