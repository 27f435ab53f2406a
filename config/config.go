// Package config decides verdictbot's settings: the Config struct (one
// field per environment variable, the names being the operator's
// contract), their defaults, how a value is read and trimmed, the rules
// table Validate checks, the unknown-variable check with its nearest-name
// suggestion, secret masking (Secret, DatabaseURL) and the listing
// `verdictbot config` prints. It reads no environment itself: Load takes
// a lookup function and Unknown an environ list, which only cmd/verdictbot
// takes from the process (tests pass a map).
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/slackfile"
	"github.com/verdictbot/verdictbot/verdict"
)

// Secret holds a token or key. It prints as <secret> so that a config dump,
// a %v of the struct or an error never shows it.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "<secret>"
}

// GoString keeps %#v quiet too.
func (s Secret) GoString() string { return s.String() }

// MarshalText keeps JSON and text encodings quiet.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret itself, for the one place that must send it.
func (s Secret) Reveal() string { return string(s) }

// DatabaseURL is a PostgreSQL connection string. It prints with its
// password masked (postgres://user:xxxxx@host/db), so a config dump, a %v
// of the struct or an error never shows the password.
type DatabaseURL string

func (d DatabaseURL) String() string {
	if d == "" {
		return ""
	}
	u, err := url.Parse(string(d))
	if err != nil {
		return "<unparsable database URL>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	// libpq also takes the password as a parameter (?password=…).
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// GoString keeps %#v quiet too.
func (d DatabaseURL) GoString() string { return d.String() }

// MarshalText keeps JSON and text encodings quiet.
func (d DatabaseURL) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Reveal returns the URL itself, for the one place that connects.
func (d DatabaseURL) Reveal() string { return string(d) }

// Password returns the URL's password ("" if none), for the log redactor.
func (d DatabaseURL) Password() Secret {
	u, err := url.Parse(string(d))
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return Secret(p)
	}
	return Secret(u.Query().Get("password"))
}

// Config is every setting, read by Load over Default (the one place
// defaults are written). Names are the contract: keep them, and document
// each in settingDocs (docs.go), from which make docs writes the settings
// tables of README.md and docs/configuration.md. It is a value: copies share nothing
// but the read-only record of which settings Load took from the
// environment.
type Config struct {
	SlackBotToken Secret `envconfig:"SLACK_BOT_TOKEN"`
	SlackAppToken Secret `envconfig:"SLACK_APP_TOKEN"`
	SlackAPIURL   string `envconfig:"SLACK_API_URL"`
	// SlackAdminUserToken (xoxp-…, optional) is a workspace admin's user
	// token: quarantine deletes messages and files with it, nothing else.
	SlackAdminUserToken Secret `envconfig:"SLACK_ADMIN_USER_TOKEN"`

	ReputationURL    string `envconfig:"REPUTATION_URL"`
	ReputationAPIKey Secret `envconfig:"REPUTATION_API_KEY"`
	SandboxURL       string `envconfig:"SANDBOX_URL"`
	SandboxAPIKey    Secret `envconfig:"SANDBOX_API_KEY"`

	DataDir         string        `envconfig:"VERDICTBOT_DATA_DIR"`
	DatabaseURL     DatabaseURL   `envconfig:"VERDICTBOT_DATABASE_URL"`
	Admins          []string      `envconfig:"VERDICTBOT_ADMINS"`
	AdminGroup      string        `envconfig:"VERDICTBOT_ADMIN_GROUP"`
	Reporters       string        `envconfig:"VERDICTBOT_REPORTERS"`
	ChannelMode     string        `envconfig:"VERDICTBOT_CHANNEL_MODE"`
	AllowDomains    []string      `envconfig:"VERDICTBOT_ALLOW_DOMAINS"`
	InternalDomains []string      `envconfig:"VERDICTBOT_INTERNAL_DOMAINS"`
	MaxLinks        int           `envconfig:"VERDICTBOT_MAX_LINKS"`
	VerdictTTL      time.Duration `envconfig:"VERDICTBOT_VERDICT_TTL"`
	URLDeadline     time.Duration `envconfig:"VERDICTBOT_URL_DEADLINE"`
	CleanReaction   string        `envconfig:"VERDICTBOT_CLEAN_REACTION"`
	ResolveHosts    bool          `envconfig:"VERDICTBOT_RESOLVE_HOSTS"`
	URLQuery        string        `envconfig:"VERDICTBOT_URL_QUERY"`
	ScanFiles       bool          `envconfig:"VERDICTBOT_SCAN_FILES"`

	ThresholdPhishing    string `envconfig:"VERDICTBOT_THRESHOLD_PHISHING"`
	ThresholdAdvertising string `envconfig:"VERDICTBOT_THRESHOLD_ADVERTISING"`
	ThresholdMalicious   string `envconfig:"VERDICTBOT_THRESHOLD_MALICIOUS"`
	ThresholdIllegal     string `envconfig:"VERDICTBOT_THRESHOLD_ILLEGAL"`

	MaxFileBytes      int64         `envconfig:"VERDICTBOT_MAX_FILE_BYTES"`
	SkipFiletypes     []string      `envconfig:"VERDICTBOT_SKIP_FILETYPES"`
	SandboxDeadline   time.Duration `envconfig:"VERDICTBOT_SANDBOX_DEADLINE"`
	MaxScreenshots    int           `envconfig:"VERDICTBOT_MAX_SCREENSHOTS"`
	ScreenshotTimeout time.Duration `envconfig:"VERDICTBOT_SCREENSHOT_TIMEOUT"`
	FileVerdictTTL    time.Duration `envconfig:"VERDICTBOT_FILE_VERDICT_TTL"`
	SandboxRunRate    float64       `envconfig:"VERDICTBOT_SANDBOX_RUN_RATE"`
	SandboxReportRate float64       `envconfig:"VERDICTBOT_SANDBOX_REPORT_RATE"`

	RecheckSchedule string          `envconfig:"VERDICTBOT_RECHECK_SCHEDULE"`
	RecheckAfter    []time.Duration `envconfig:"VERDICTBOT_RECHECK_AFTER"`
	RecheckMax      int             `envconfig:"VERDICTBOT_RECHECK_MAX"`
	AlertChannel    string          `envconfig:"VERDICTBOT_ALERT_CHANNEL"`

	// Report to security (package triage): where the triage cards go
	// ("": the alert channel; neither: reporting is off), the reaction
	// that reports a message ("": none), and whether a triage card quotes
	// the message's text.
	ReportChannel     string `envconfig:"VERDICTBOT_REPORT_CHANNEL"`
	ReportEmoji       string `envconfig:"VERDICTBOT_REPORT_EMOJI"`
	ReportIncludeText bool   `envconfig:"VERDICTBOT_REPORT_INCLUDE_TEXT"`

	// Backfill (package backfill): the longest window /scan channel
	// backfill may read, and the window read when the bot joins a channel
	// ("": none).
	BackfillMax    time.Duration `envconfig:"VERDICTBOT_BACKFILL_MAX"`
	BackfillOnJoin string        `envconfig:"VERDICTBOT_BACKFILL_ON_JOIN"`

	// Local signals (package signals): registrable domains protected from
	// lookalikes beside the built-in list, the workspace's own domains
	// and the allowlist; and what a lookalike makes its link ("off": not
	// looked for).
	ProtectedDomains []string `envconfig:"VERDICTBOT_PROTECTED_DOMAINS"`
	Lookalike        string   `envconfig:"VERDICTBOT_LOOKALIKE"`

	Retention time.Duration `envconfig:"VERDICTBOT_RETENTION"`

	Quarantine          string        `envconfig:"VERDICTBOT_QUARANTINE"`
	QuarantineRetention time.Duration `envconfig:"VERDICTBOT_QUARANTINE_RETENTION"`
	// QuarantineFiles is what a malicious file removes: the message that
	// shared it ("message") or the file itself, workspace-wide ("delete").
	QuarantineFiles string `envconfig:"VERDICTBOT_QUARANTINE_FILES"`
	// QuarantineFlipMax is how many messages one recheck flip may remove
	// before the removals wait for an admin's Remove all.
	QuarantineFlipMax int           `envconfig:"VERDICTBOT_QUARANTINE_FLIP_MAX"`
	Lease             time.Duration `envconfig:"VERDICTBOT_LEASE"`

	Workers   int `envconfig:"VERDICTBOT_WORKERS"`
	QueueSize int `envconfig:"VERDICTBOT_QUEUE_SIZE"`

	ReputationRunRate    float64 `envconfig:"VERDICTBOT_REPUTATION_RUN_RATE"`
	ReputationReportRate float64 `envconfig:"VERDICTBOT_REPUTATION_REPORT_RATE"`
	// UserLinksPerHour caps the links and files one requester may have
	// sent to the services per hour (cards.UserCap); 0: no cap.
	UserLinksPerHour int `envconfig:"VERDICTBOT_USER_LINKS_PER_HOUR"`
	// MaxConcurrent bounds URL analyses in flight; 0 derives it from the
	// reputation budgets (see EffectiveMaxConcurrent).
	MaxConcurrent      int    `envconfig:"VERDICTBOT_MAX_CONCURRENT"`
	ServiceCAFile      string `envconfig:"VERDICTBOT_SERVICE_CA_FILE"`
	ServiceInsecureTLS bool   `envconfig:"VERDICTBOT_SERVICE_INSECURE_TLS"`
	// ServicePlainHTTPHosts are host names REPUTATION_URL and SANDBOX_URL
	// may reach over plain http besides loopback ones (a simulator or an
	// appliance on a private network): their API key then crosses that
	// network in clear text.
	ServicePlainHTTPHosts []string `envconfig:"VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS"`

	HTTPAddr  string `envconfig:"VERDICTBOT_HTTP_ADDR"`
	LogLevel  string `envconfig:"VERDICTBOT_LOG_LEVEL"`
	LogFormat string `envconfig:"VERDICTBOT_LOG_FORMAT"`

	// Findings in the SOC's tools (package events).
	EventsURL       string `envconfig:"VERDICTBOT_EVENTS_URL"`
	EventsSecret    Secret `envconfig:"VERDICTBOT_EVENTS_SECRET"`
	EventsFile      string `envconfig:"VERDICTBOT_EVENTS_FILE"`
	EventsMaxQueued int    `envconfig:"VERDICTBOT_EVENTS_MAX_QUEUED"`

	// fromEnv holds the settings Load took from the environment (the
	// others are defaults), for `verdictbot config`'s listing. Load
	// writes it once; nothing changes it afterwards.
	fromEnv map[string]bool
}

// Default is every setting at its default: the one place defaults are
// written (the struct has no `default` tags). Load reads the environment
// over it; the shell starts from it.
func Default() Config {
	cfg := Config{
		SlackAPIURL: "https://slack.com/api/",

		DataDir:       "./data",
		Reporters:     "anyone",
		ChannelMode:   "quiet",
		Lookalike:     "suspicious",
		MaxLinks:      50,
		VerdictTTL:    time.Hour,
		URLDeadline:   10 * time.Minute,
		CleanReaction: "white_check_mark",
		ResolveHosts:  true,
		URLQuery:      "keep",
		ScanFiles:     true,

		ThresholdPhishing:    "0.5,0.8",
		ThresholdAdvertising: "0.8,off",
		ThresholdMalicious:   "0.5,0.8",
		ThresholdIllegal:     "0.5,0.8",

		MaxFileBytes:      30_000_000,
		SkipFiletypes:     slices.Clone(slackfile.DefaultSkipTypes),
		SandboxDeadline:   45 * time.Minute,
		MaxScreenshots:    scan.DefaultMaxScreenshots,
		ScreenshotTimeout: 2 * time.Minute,
		FileVerdictTTL:    24 * time.Hour,
		SandboxRunRate:    1,
		SandboxReportRate: 5,

		RecheckSchedule: "*/15 * * * *",
		RecheckAfter:    []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour},
		RecheckMax:      200,
		BackfillMax:     30 * 24 * time.Hour,

		Retention: 2160 * time.Hour,

		Quarantine:          "off",
		QuarantineRetention: 720 * time.Hour,
		QuarantineFiles:     "message",
		QuarantineFlipMax:   20,
		Lease:               30 * time.Second,

		Workers:   8,
		QueueSize: 10000,

		ReputationRunRate:    1,
		ReputationReportRate: 5,
		UserLinksPerHour:     300,

		HTTPAddr:  "127.0.0.1:8080",
		LogLevel:  "info",
		LogFormat: "text",

		EventsMaxQueued: events.DefaultMaxQueued,
	}
	cfg.trim()
	return cfg
}

// Load reads the settings through lookup (os.LookupEnv in the program, a
// map in tests) over the defaults. A variable that is unset or empty
// (VAR=) keeps the default. Every value that does not parse is reported,
// one line each (a settingsError, in field order); the config returned
// holds the defaults in their place, so Validate can still report the
// other settings' problems. Unknown VERDICTBOT_* variables are Unknown's
// to report: Load only asks for the names it knows.
func Load(lookup func(string) (string, bool)) (Config, error) {
	cfg := Default()
	var errs settingsError
	v := reflect.ValueOf(&cfg).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name := t.Field(i).Tag.Get("envconfig")
		if name == "" {
			continue
		}
		raw, _ := lookup(name)
		if strings.TrimSpace(raw) == "" {
			continue // unset or empty: the default
		}
		if err := setSetting(v.Field(i), t.Field(i), raw); err != nil {
			shown := raw
			if isSecretField(t.Field(i).Type) {
				shown = "…" // never echoed
			}
			errs = append(errs, fmt.Errorf("%s=%q: not a valid %s", name, shown, typeWord(t.Field(i).Type.String())))
			continue
		}
		if cfg.fromEnv == nil {
			cfg.fromEnv = map[string]bool{}
		}
		cfg.fromEnv[name] = true
	}
	cfg.trim()
	return cfg, errs.orNil()
}

// setSetting parses raw, the value of Config's field sf, into f. The
// formats are the ones the settings have always had (they were decoded by
// github.com/kelseyhightower/envconfig, whose rules decode keeps, byte for
// byte, for the kinds Config uses): strings as they are; whole numbers in
// Go syntax (strconv.ParseInt, base 0); durations in Go syntax; booleans
// as strconv.ParseBool takes them; lists split on commas, each element
// decoded alike. f is left as it was when raw does not parse.
func setSetting(f reflect.Value, sf reflect.StructField, raw string) error {
	v := reflect.New(sf.Type).Elem()
	if err := decode(raw, v); err != nil {
		return err
	}
	f.Set(v)
	return nil
}

// decode parses raw into f (see setSetting).
func decode(raw string, f reflect.Value) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Int, reflect.Int64:
		if f.Type() == reflect.TypeFor[time.Duration]() {
			d, err := time.ParseDuration(raw)
			if err != nil {
				return err
			}
			f.SetInt(int64(d))
			return nil
		}
		n, err := strconv.ParseInt(raw, 0, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	case reflect.Slice:
		parts := strings.Split(raw, ",")
		sl := reflect.MakeSlice(f.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := decode(p, sl.Index(i)); err != nil {
				return err
			}
		}
		f.Set(sl)
	default:
		return fmt.Errorf("config: no decoding for %s", f.Type())
	}
	return nil
}

func isSecretField(t reflect.Type) bool {
	return t == reflect.TypeFor[Secret]() || t == reflect.TypeFor[DatabaseURL]()
}

// settingsError is every problem of the settings, one line each.
type settingsError []error

func (e settingsError) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d settings are wrong:", len(e))
	for _, err := range e {
		b.WriteString("\n  " + err.Error())
	}
	return b.String()
}

func (e settingsError) Unwrap() []error { return e }

func (e settingsError) orNil() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// Join puts the problems of several errors (Load's, Unknown's, Validate's,
// or single ones) in one error, one line each, in the order given: with
// one problem its own line, with more "N settings are wrong:" and one
// indented line each. nil when there is none.
func Join(errs ...error) error {
	var all settingsError
	for _, err := range errs {
		var se settingsError
		switch {
		case err == nil:
		case errors.As(err, &se):
			all = append(all, se...)
		default:
			all = append(all, err)
		}
	}
	return all.orNil()
}

func typeWord(t string) string {
	switch t {
	case "int", "int64":
		return "whole number"
	case "float64":
		return "number"
	case "bool":
		return "boolean (true or false)"
	case "time.Duration":
		return "duration (Go syntax: 90s, 15m, 1h)"
	case "[]time.Duration":
		return "list of durations (Go syntax, comma-separated: 1h,6h,24h)"
	}
	return t
}

// Unknown refuses the VERDICTBOT_* variables of environ (os.Environ's
// form, NAME=value) that are not settings: a typo would otherwise silently
// keep a default. It returns one line for each (a settingsError, sorted),
// with the nearest setting's name when one is close; nil when there is
// none.
func Unknown(environ []string) error {
	var errs settingsError
	known := knownSettings()
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "VERDICTBOT_") || slices.Contains(known, name) || kubernetesServiceVar(name) {
			continue
		}
		// VERDICTBOT_TEST_* (VERDICTBOT_TEST_DATABASE_URL) configure the
		// test suite, which CI exports for every test; they are not settings.
		if strings.HasPrefix(name, "VERDICTBOT_TEST_") {
			continue
		}
		msg := fmt.Sprintf("unknown setting %s", name)
		if near := Nearest(name, known, 3); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		errs = append(errs, errors.New(msg))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs.orNil()
}

// kubernetesServiceVar reports whether name looks like one of the variables
// Kubernetes adds for every Service in the namespace (for a Service named
// verdictbot-metrics: VERDICTBOT_METRICS_SERVICE_HOST, _SERVICE_PORT,
// _PORT, _PORT_8080_TCP…), which are not settings.
func kubernetesServiceVar(name string) bool {
	return strings.HasSuffix(name, "_SERVICE_HOST") || strings.HasSuffix(name, "_SERVICE_PORT") ||
		strings.Contains(name, "_SERVICE_PORT_") || strings.HasSuffix(name, "_PORT") || strings.Contains(name, "_PORT_")
}

// knownSettings lists every VERDICTBOT_* name Config reads.
func knownSettings() []string {
	var names []string
	for _, tag := range Names() {
		if strings.HasPrefix(tag, "VERDICTBOT_") {
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	return names
}

func (c *Config) trim() {
	c.SlackAPIURL = strings.TrimSpace(c.SlackAPIURL)
	c.ReputationURL = strings.TrimSpace(c.ReputationURL)
	c.SandboxURL = strings.TrimSpace(c.SandboxURL)
	c.ChannelMode = strings.ToLower(strings.TrimSpace(c.ChannelMode))
	c.Lookalike = strings.ToLower(strings.TrimSpace(c.Lookalike))
	c.Quarantine = strings.ToLower(strings.TrimSpace(c.Quarantine))
	c.QuarantineFiles = strings.ToLower(strings.TrimSpace(c.QuarantineFiles))
	c.Reporters = strings.ToLower(strings.TrimSpace(c.Reporters))
	c.URLQuery = strings.ToLower(strings.TrimSpace(c.URLQuery))
	for _, l := range []*[]string{&c.Admins, &c.AllowDomains, &c.InternalDomains, &c.ServicePlainHTTPHosts, &c.ProtectedDomains} {
		var out []string
		for _, s := range *l {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*l = out
	}
}

// Validate checks the settings `run` needs (needSlack false: the ones
// `check` needs). It returns every problem, in configRules order, one line
// each (a settingsError). Messages are exact and tested.
func (c Config) Validate(needSlack bool) error {
	if errs := c.problems(needSlack); len(errs) > 0 {
		return settingsError(errs)
	}
	return nil
}

// Thresholds returns the bands of the VERDICTBOT_THRESHOLD_* settings,
// for a Config that passed Validate (a band that does not parse is left
// out).
func (c Config) Thresholds() verdict.Thresholds {
	th := verdict.Thresholds{}
	for _, t := range thresholdSettings(&c) {
		if b, err := verdict.ParseBand(t.val); err == nil { // checked by configRules
			th[t.cat] = b
		}
	}
	return th
}

// problems returns one error for each rule of configRules that c breaks,
// in table order.
func (c Config) problems(needSlack bool) []error {
	var errs []error
	for _, r := range configRules {
		if r.slackOnly && !needSlack {
			continue
		}
		if err := r.check(&c); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// configRule is one check of a setting: check returns the message for
// the setting's value, or nil. A slackOnly rule applies only when the
// bot talks to Slack (`run`, `shell`), not to `check`.
type configRule struct {
	setting   string
	slackOnly bool
	check     func(c *Config) error
}

// configRules is every check Validate makes, one row per rule, in the
// order the first problem is reported.
var configRules = []configRule{
	{"SLACK_BOT_TOKEN", true, func(c *Config) error {
		return token(c.SlackBotToken, "xoxb-", "SLACK_BOT_TOKEN is not set (the bot token, xoxb-…)",
			"SLACK_BOT_TOKEN must start with xoxb- (a bot token)")
	}},
	{"SLACK_APP_TOKEN", true, func(c *Config) error {
		return token(c.SlackAppToken, "xapp-", "SLACK_APP_TOKEN is not set (the app-level token with connections:write, xapp-…)",
			"SLACK_APP_TOKEN must start with xapp- (an app-level token)")
	}},
	{"SLACK_API_URL", true, func(c *Config) error {
		return checkBaseURL("SLACK_API_URL", c.SlackAPIURL, "the bot token", nil, false)
	}},
	{"REPUTATION_URL", true, func(c *Config) error {
		return set(c.ReputationURL != "", "REPUTATION_URL is not set (the URL reputation service's base URL)")
	}},
	{"REPUTATION_API_KEY", true, func(c *Config) error { return set(c.ReputationAPIKey != "", "REPUTATION_API_KEY is not set") }},
	{"REPUTATION_URL", false, func(c *Config) error {
		return optionalServiceURL("REPUTATION_URL", c.ReputationURL, c.ServicePlainHTTPHosts)
	}},
	{"SANDBOX_URL", false, func(c *Config) error {
		return optionalServiceURL("SANDBOX_URL", c.SandboxURL, c.ServicePlainHTTPHosts)
	}},
	{"VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS", false, func(c *Config) error {
		for _, h := range c.ServicePlainHTTPHosts {
			if strings.ContainsAny(h, ":/@?#[] ") || h != strings.TrimSuffix(h, ".") || h == "" {
				return fmt.Errorf("VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS: %q is not a host name (want names such as sim or sandbox.lab, no scheme, port or path)", h)
			}
		}
		return nil
	}},
	{"SANDBOX_API_KEY", true, func(c *Config) error {
		return set(c.SandboxURL == "" || c.SandboxAPIKey != "", "SANDBOX_API_KEY is not set (SANDBOX_URL is)")
	}},
	{"VERDICTBOT_DATABASE_URL", false, func(c *Config) error {
		if c.DatabaseURL == "" {
			return nil
		}
		u, err := url.Parse(string(c.DatabaseURL))
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			// The value is not echoed: it may hold a password.
			return errors.New("VERDICTBOT_DATABASE_URL: want a postgres:// or postgresql:// URL (postgres://user:password@host:5432/db?sslmode=require)")
		}
		return nil
	}},
	oneOf("VERDICTBOT_CHANNEL_MODE", func(c *Config) string { return c.ChannelMode }, "quiet, verbose or off", "quiet", "verbose", "off"),
	oneOf("VERDICTBOT_LOOKALIKE", func(c *Config) string { return c.Lookalike }, "off, suspicious or malicious", "off", "suspicious", "malicious"),
	{"VERDICTBOT_PROTECTED_DOMAINS", false, func(c *Config) error {
		for _, d := range c.ProtectedDomains {
			if !protectedDomain(d) {
				return fmt.Errorf("VERDICTBOT_PROTECTED_DOMAINS: %q is not a domain name: want registrable domains such as acme-corp.com, comma-separated", d)
			}
		}
		return nil
	}},
	oneOf("VERDICTBOT_QUARANTINE", func(c *Config) string { return c.Quarantine }, "off, malicious or suspicious (the lowest verdict whose message is removed)",
		"off", "malicious", "suspicious"),
	atLeast("VERDICTBOT_QUARANTINE_RETENTION", func(c *Config) time.Duration { return c.QuarantineRetention }, time.Hour,
		"want at least 1h (how long a removed message is kept for release; default 720h)"),
	oneOf("VERDICTBOT_QUARANTINE_FILES", func(c *Config) string { return c.QuarantineFiles },
		"message or delete (a malicious file removes the message that shared it, or deletes the file workspace-wide)", "message", "delete"),
	between("VERDICTBOT_QUARANTINE_FLIP_MAX", func(c *Config) int { return c.QuarantineFlipMax }, 0, 10_000,
		"want 0 to 10000 (messages one recheck may remove before an admin's Remove all; 0: every such removal waits)"),
	{"SLACK_ADMIN_USER_TOKEN", false, func(c *Config) error {
		if c.SlackAdminUserToken != "" && !strings.HasPrefix(string(c.SlackAdminUserToken), "xoxp-") {
			return errors.New("SLACK_ADMIN_USER_TOKEN must start with xoxp- (a workspace admin's user token; quarantine only)")
		}
		return nil
	}},
	oneOf("VERDICTBOT_URL_QUERY", func(c *Config) string { return c.URLQuery }, "keep or strip", "keep", "strip"),
	oneOf("VERDICTBOT_REPORTERS", func(c *Config) string { return c.Reporters }, "anyone or admins", "anyone", "admins"),
	{"VERDICTBOT_ADMINS", false, func(c *Config) error {
		for _, id := range c.Admins {
			if !isUserID(id) {
				return fmt.Errorf("VERDICTBOT_ADMINS: %q is not a Slack user id (U… or W…)", id)
			}
		}
		return nil
	}},
	{"VERDICTBOT_ADMIN_GROUP", false, func(c *Config) error {
		g := c.AdminGroup
		if g == "" || (len(g) >= 3 && g[0] == 'S' && strings.ToUpper(g) == g) {
			return nil
		}
		return fmt.Errorf("VERDICTBOT_ADMIN_GROUP=%q: want a user group id (S…), not a handle", g)
	}},
	between("VERDICTBOT_MAX_LINKS", func(c *Config) int { return c.MaxLinks }, 1, links.MaxMaxLinks,
		"want 1 to 200 (distinct links checked per message; the rest make the message \"could not check\")"),
	atLeast("VERDICTBOT_VERDICT_TTL", func(c *Config) time.Duration { return c.VerdictTTL }, 0, "must not be negative"),
	atLeast("VERDICTBOT_URL_DEADLINE", func(c *Config) time.Duration { return c.URLDeadline }, 10*time.Second, "want at least 10s"),
	{"VERDICTBOT_RECHECK_SCHEDULE", false, func(c *Config) error {
		if _, err := cron.ParseStandard(c.RecheckSchedule); err != nil {
			return fmt.Errorf("VERDICTBOT_RECHECK_SCHEDULE=%q: not a cron schedule (five fields, e.g. \"*/15 * * * *\"): %v", c.RecheckSchedule, err)
		}
		return nil
	}},
	{"VERDICTBOT_RECHECK_AFTER", false, func(c *Config) error {
		for i, d := range c.RecheckAfter {
			if d <= 0 || (i > 0 && d <= c.RecheckAfter[i-1]) {
				return errors.New("VERDICTBOT_RECHECK_AFTER: want increasing positive durations (e.g. 1h,6h,24h,72h)")
			}
		}
		return nil
	}},
	atLeast("VERDICTBOT_MAX_FILE_BYTES", func(c *Config) int64 { return c.MaxFileBytes }, 1, "want a positive number of bytes"),
	atLeast("VERDICTBOT_SANDBOX_DEADLINE", func(c *Config) time.Duration { return c.SandboxDeadline }, time.Minute, "want at least 1m (sandbox runs take minutes)"),
	between("VERDICTBOT_MAX_SCREENSHOTS", func(c *Config) int { return c.MaxScreenshots }, 0, 10, "want 0 to 10"),
	between("VERDICTBOT_SCREENSHOT_TIMEOUT", func(c *Config) time.Duration { return c.ScreenshotTimeout }, time.Second, 30*time.Minute, "want 1s to 30m"),
	atLeast("VERDICTBOT_FILE_VERDICT_TTL", func(c *Config) time.Duration { return c.FileVerdictTTL }, 0, "must not be negative"),
	{"VERDICTBOT_SANDBOX_RUN_RATE", false, func(c *Config) error {
		return set(c.SandboxRunRate > 0 && c.SandboxReportRate > 0,
			"VERDICTBOT_SANDBOX_RUN_RATE and VERDICTBOT_SANDBOX_REPORT_RATE must be above 0 (requests per second)")
	}},
	atLeast("VERDICTBOT_RECHECK_MAX", func(c *Config) int { return c.RecheckMax }, 1, "want at least 1"),
	atLeast("VERDICTBOT_RETENTION", func(c *Config) time.Duration { return c.Retention }, 48*time.Hour,
		"want at least 48h (event ids are kept 48 h for Slack's retries; the default 2160h is 90 days)"),
	between("VERDICTBOT_LEASE", func(c *Config) time.Duration { return c.Lease }, 5*time.Second, 10*time.Minute,
		"want 5s to 10m (how soon a stopped replica's work is taken over; default 30s)"),
	{"VERDICTBOT_ALERT_CHANNEL", false, func(c *Config) error {
		if c.AlertChannel != "" && !isChannelID(c.AlertChannel) {
			return fmt.Errorf("VERDICTBOT_ALERT_CHANNEL=%q: want a channel id (C…, G…), not a name", c.AlertChannel)
		}
		return nil
	}},
	between("VERDICTBOT_BACKFILL_MAX", func(c *Config) time.Duration { return c.BackfillMax }, time.Hour, 90*24*time.Hour,
		"want 1h to 2160h (the longest history /scan channel backfill reads; default 720h, 30 days)"),
	{"VERDICTBOT_BACKFILL_ON_JOIN", false, func(c *Config) error {
		if c.BackfillOnJoin == "" {
			return nil
		}
		d, ok := Window(c.BackfillOnJoin)
		return set(ok && d <= c.BackfillMax, fmt.Sprintf("VERDICTBOT_BACKFILL_ON_JOIN=%q: want a window such as 7d, at most VERDICTBOT_BACKFILL_MAX, or unset (off)", c.BackfillOnJoin))
	}},
	{"VERDICTBOT_REPORT_CHANNEL", false, func(c *Config) error {
		if c.ReportChannel != "" && !isChannelID(c.ReportChannel) {
			return fmt.Errorf("VERDICTBOT_REPORT_CHANNEL=%q: want a channel id (C…, G…), not a name", c.ReportChannel)
		}
		return nil
	}},
	{"VERDICTBOT_REPORT_EMOJI", false, func(c *Config) error {
		name := strings.Trim(c.ReportEmoji, ":")
		if c.ReportEmoji == "" {
			return nil
		}
		ok := len(name) > 0 && len(name) <= 100
		for _, r := range name {
			ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_-+'", r))
		}
		return set(ok, fmt.Sprintf("VERDICTBOT_REPORT_EMOJI=%q: want an emoji name such as phish (lower-case letters, digits, _ - +), without colons or with", c.ReportEmoji))
	}},
	between("VERDICTBOT_WORKERS", func(c *Config) int { return c.Workers }, 1, 256, "want 1 to 256"),
	atLeast("VERDICTBOT_QUEUE_SIZE", func(c *Config) int { return c.QueueSize }, 1, "want at least 1"),
	{"VERDICTBOT_REPUTATION_RUN_RATE", false, func(c *Config) error {
		return set(c.ReputationRunRate > 0 && c.ReputationReportRate > 0,
			"VERDICTBOT_REPUTATION_RUN_RATE and VERDICTBOT_REPUTATION_REPORT_RATE must be above 0 (requests per second)")
	}},
	between("VERDICTBOT_MAX_CONCURRENT", func(c *Config) int { return c.MaxConcurrent }, 0, maxMaxConcurrent,
		"want 0 (derived from the URL-service budgets) to 100000"),
	between("VERDICTBOT_USER_LINKS_PER_HOUR", func(c *Config) int { return c.UserLinksPerHour }, 0, maxUserLinksPerHour,
		"want 0 (no cap) to 1000000 (links and files one person may have sent to the services per hour; default 300)"),
	{"VERDICTBOT_SERVICE_CA_FILE", false, func(c *Config) error {
		if c.ServiceCAFile == "" {
			return nil
		}
		if _, err := os.Stat(c.ServiceCAFile); err != nil {
			return fmt.Errorf("VERDICTBOT_SERVICE_CA_FILE: %v", err)
		}
		return nil
	}},
	{"VERDICTBOT_HTTP_ADDR", false, func(c *Config) error {
		if c.HTTPAddr == "off" {
			return nil
		}
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("VERDICTBOT_HTTP_ADDR=%q: want host:port (e.g. 127.0.0.1:8080), or off", c.HTTPAddr)
		}
		return nil
	}},
	oneOf("VERDICTBOT_LOG_LEVEL", func(c *Config) string { return c.LogLevel }, "debug, info, warn or error", "debug", "info", "warn", "error"),
	oneOf("VERDICTBOT_LOG_FORMAT", func(c *Config) string { return c.LogFormat }, "text or json", "text", "json"),
	{"VERDICTBOT_EVENTS_URL", false, func(c *Config) error { return eventsURL(c.EventsURL) }},
	{"VERDICTBOT_EVENTS_SECRET", false, func(c *Config) error { return eventsSecret(c.EventsURL, c.EventsSecret) }},
	{"VERDICTBOT_EVENTS_FILE", false, func(c *Config) error {
		if c.EventsFile == "" || c.EventsFile == "-" {
			return nil
		}
		if fi, err := os.Stat(filepath.Dir(c.EventsFile)); err != nil || !fi.IsDir() {
			return fmt.Errorf("VERDICTBOT_EVENTS_FILE=%q: its directory does not exist (want a file path, or - for standard output)", c.EventsFile)
		}
		return nil
	}},
	atLeast("VERDICTBOT_EVENTS_MAX_QUEUED", func(c *Config) int { return c.EventsMaxQueued }, 1, "want at least 1 (events kept while the receiver is down)"),
	threshold(verdict.CatPhishing),
	threshold(verdict.CatAdvertising),
	threshold(verdict.CatMalicious),
	threshold(verdict.CatIllegal),
}

// eventsURL checks VERDICTBOT_EVENTS_URL: https, or plain http to a
// loopback host only (a forwarder on the same machine). Messages name the
// host at most: the path may hold a token.
func eventsURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("VERDICTBOT_EVENTS_URL: want an https:// URL (plain http:// only to a loopback host)")
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return fmt.Errorf("VERDICTBOT_EVENTS_URL: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not %s: use https", u.Hostname())
	}
	return nil
}

// eventsSecret checks that VERDICTBOT_EVENTS_SECRET is set when the
// events leave the machine: unsigned events are allowed only to a loopback
// host (a forwarder on the same machine, which may sign or authenticate
// them itself).
func eventsSecret(raw string, secret Secret) error {
	if raw == "" || secret != "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || loopbackHost(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("VERDICTBOT_EVENTS_SECRET is not set: it is required when VERDICTBOT_EVENTS_URL is not on a loopback host (%s), "+
		"so that the receiver can check each event's signature (set a random secret of 32 bytes or more, and give it to the receiver)", u.Hostname())
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Bounds and assumptions of the derived VERDICTBOT_MAX_CONCURRENT.
const (
	// typicalAnalysis is how long a URL analysis typically takes: the
	// middle of the 5–120 s spread issue 14 plans for (the simulator assumes
	// 1–5 s pending plus 5–30 s processing for the URL service).
	typicalAnalysis = 60 * time.Second
	// reportCallsPerAnalysis is the report-budget requests of a typical
	// analysis: about a dozen status calls and the result
	// (scan.BenchmarkPollToVerdictLatency measures them).
	reportCallsPerAnalysis = 13
	// minMaxConcurrent is the floor of the derived value: the fixed
	// number of slots before the setting existed.
	minMaxConcurrent = 64
	// maxDerivedConcurrent caps the derived value: an analysis in flight
	// costs a goroutine and a few KB, and the budgets, not the slots,
	// bound the requests.
	maxDerivedConcurrent = 4096
	// maxMaxConcurrent bounds the setting itself.
	maxMaxConcurrent = 100_000
	// maxUserLinksPerHour bounds VERDICTBOT_USER_LINKS_PER_HOUR: more
	// than 277 a second from one person is no cap.
	maxUserLinksPerHour = 1_000_000
)

// EffectiveMaxConcurrent returns the bound on URL analyses in flight: the setting,
// or, when it is 0, what keeps both reputation budgets busy. By Little's
// law the analyses in flight are the rate at which they can start times
// how long each lasts; they can start as fast as the run budget submits
// them and the report budget polls them, so
//
//	2 × min(run rate, report rate / reportCallsPerAnalysis) × typicalAnalysis
//
// (twice that, for analyses slower than typical and bursts of links),
// within [minMaxConcurrent, maxDerivedConcurrent]. The defaults (1/s and
// 5/s) give 2 × 0.38 × 60 ≈ 47, so 64; budgets raised to 100/s and
// 1,000/s give the cap.
func (c Config) EffectiveMaxConcurrent() int {
	if c.MaxConcurrent > 0 {
		return c.MaxConcurrent
	}
	starts := min(c.ReputationRunRate, c.ReputationReportRate/reportCallsPerAnalysis)
	n := math.Ceil(2 * starts * typicalAnalysis.Seconds())
	if math.IsNaN(n) || n < minMaxConcurrent {
		return minMaxConcurrent
	}
	return int(min(n, maxDerivedConcurrent))
}

// set returns msg as an error unless ok.
func set(ok bool, msg string) error {
	if ok {
		return nil
	}
	return errors.New(msg)
}

// token checks a Slack token: set, and with its kind's prefix.
func token(s Secret, prefix, notSet, wrongPrefix string) error {
	switch {
	case s == "":
		return errors.New(notSet)
	case !strings.HasPrefix(string(s), prefix):
		return errors.New(wrongPrefix)
	}
	return nil
}

// optionalServiceURL checks a service's base URL (REPUTATION_URL,
// SANDBOX_URL) as checkBaseURL does, when it is set: plain http also to
// the hosts of VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS.
func optionalServiceURL(name, v string, plainHosts []string) error {
	if v == "" {
		return nil
	}
	return checkBaseURL(name, v, "the API key", plainHosts, true)
}

// oneOf is a rule: the setting is one of allowed, in any case;
// otherwise `NAME="value": want <want>`.
func oneOf(name string, get func(*Config) string, want string, allowed ...string) configRule {
	return configRule{setting: name, check: func(c *Config) error {
		if v := get(c); !slices.Contains(allowed, strings.ToLower(v)) {
			return fmt.Errorf("%s=%q: want %s", name, v, want)
		}
		return nil
	}}
}

// between is a rule: lo <= value <= hi; otherwise `NAME=value: <want>`.
func between[T ~int | ~int64](name string, get func(*Config) T, lo, hi T, want string) configRule {
	return configRule{setting: name, check: func(c *Config) error {
		if v := get(c); v < lo || v > hi {
			return fmt.Errorf("%s=%v: %s", name, v, want)
		}
		return nil
	}}
}

// atLeast is a rule: value >= lo; otherwise `NAME=value: <want>`.
func atLeast[T ~int | ~int64](name string, get func(*Config) T, lo T, want string) configRule {
	return configRule{setting: name, check: func(c *Config) error {
		if v := get(c); v < lo {
			return fmt.Errorf("%s=%v: %s", name, v, want)
		}
		return nil
	}}
}

// thresholdSetting is one VERDICTBOT_THRESHOLD_* setting.
type thresholdSetting struct {
	name string
	cat  verdict.Category
	val  string
}

func thresholdSettings(c *Config) []thresholdSetting {
	return []thresholdSetting{
		{"VERDICTBOT_THRESHOLD_PHISHING", verdict.CatPhishing, c.ThresholdPhishing},
		{"VERDICTBOT_THRESHOLD_ADVERTISING", verdict.CatAdvertising, c.ThresholdAdvertising},
		{"VERDICTBOT_THRESHOLD_MALICIOUS", verdict.CatMalicious, c.ThresholdMalicious},
		{"VERDICTBOT_THRESHOLD_ILLEGAL", verdict.CatIllegal, c.ThresholdIllegal},
	}
}

// threshold is a rule: the band of cat parses (verdict.ParseBand).
func threshold(cat verdict.Category) configRule {
	name := "VERDICTBOT_THRESHOLD_" + strings.ToUpper(string(cat))
	return configRule{setting: name, check: func(c *Config) error {
		for _, t := range thresholdSettings(c) {
			if t.cat != cat {
				continue
			}
			if _, err := verdict.ParseBand(t.val); err != nil {
				return fmt.Errorf("%s=%s", t.name, err)
			}
		}
		return nil
	}}
}

// checkBaseURL checks the base URL of a service the bot sends secret to
// (the Slack bot token, a service's API key, which sits in the URL path):
// an https:// URL, or plain http:// only to a loopback host (a fake, a
// simulator or a sidecar on the same machine) or to one of plainHosts
// (VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS, named in the message when
// hostsSetting), as for VERDICTBOT_EVENTS_URL. Messages name the host at
// most.
func checkBaseURL(name, v, secret string, plainHosts []string, hostsSetting bool) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q: want an http:// or https:// URL", name, maskURLPassword(v))
	}
	if u.User != nil {
		return fmt.Errorf("%s: must not carry credentials in the URL", name)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) &&
		!slices.ContainsFunc(plainHosts, func(h string) bool { return strings.EqualFold(h, u.Hostname()) }) {
		or := ""
		if hostsSetting {
			or = ", or name the host in VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS"
		}
		return fmt.Errorf("%s: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not %s: use https (%s would cross the network in clear text)%s",
			name, u.Hostname(), secret, or)
	}
	return nil
}

// Window reads a history window: "7d" (days) or a Go duration.
func Window(s string) (time.Duration, bool) {
	if len(s) > 1 && s[len(s)-1] == 'd' {
		n, err := strconv.Atoi(s[:len(s)-1])
		return time.Duration(n) * 24 * time.Hour, err == nil && n > 0
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func isChannelID(s string) bool {
	if len(s) < 3 || (s[0] != 'C' && s[0] != 'G') {
		return false
	}
	for _, r := range s[1:] {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func isUserID(s string) bool {
	if len(s) < 3 || (s[0] != 'U' && s[0] != 'W') {
		return false
	}
	for _, r := range s[1:] {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Nearest returns the candidate closest to name (edit distance), if it is
// at most maxDistance edits away; the first in order on a tie; "" when
// none is that close. The unknown-setting check and the CLI's unknown
// command suggest with it.
func Nearest(name string, candidates []string, maxDistance int) string {
	best, dist := "", maxDistance+1
	for _, k := range candidates {
		if d := levenshtein(name, k); d < dist {
			best, dist = k, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// protectedDomain reports whether d reads as a domain name (letters,
// digits, hyphens and dots; at least two labels; no scheme or path).
func protectedDomain(d string) bool {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(d), "."), ".")
	if len(labels) < 2 || len(d) > 253 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
