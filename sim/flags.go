package sim

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// DefaultAddr is the listen address of `verdictbot sim` without --addr.
const DefaultAddr = "127.0.0.1:8099"

// Flags are the command-line flags of a simulator server (`verdictbot
// sim`): AddFlags registers them on a flag set and, once it is parsed,
// Config turns their values into a Config and Addr gives the listen address.
type Flags struct {
	addr, profile, keys, throttleStyle, baseURL, tz                                  *string
	runRate, reportRate, failRate, scoreScale                                        *float64
	quota, failEvery, shots, firstTask                                               *int
	quota403, strictHTTP, recordOnly, capeCompat, redirect, omitError, legacy, chaos *bool
	shuffle, archiveZip, shotsMissing                                                *bool
	failSeed                                                                         *uint64
	delay                                                                            *time.Duration
	maxFileSize                                                                      *int64
}

// AddFlags registers the simulator's flags on fs (their usage texts are
// what `verdictbot sim -h` prints) and returns their values.
func AddFlags(fs *flag.FlagSet) *Flags {
	var (
		addr          = fs.String("addr", DefaultAddr, "listen address")
		profile       = fs.String("profile", "realistic", "task progression: fast (one status per poll), demo (by time: a URL ~2 s, a file ~5 s) or realistic (by time: a URL ~12 s, a file ~4.5 min)")
		keys          = fs.String("keys", "", "comma-separated accepted API keys (default: any non-empty key)")
		runRate       = fs.Float64("run-rate", 2, "run requests (scan, tasks/create) per second per key and service; 0 = unlimited")
		reportRate    = fs.Float64("report-rate", 10, "report requests per second per key and service; 0 = unlimited")
		quota         = fs.Int("quota", 0, "total requests per key and service; 0 = unlimited")
		quota403      = fs.Bool("quota-403", false, "answer an exhausted quota with 403 instead of 429")
		throttleStyle = fs.String("throttle-style", "json", "sandbox 429 body: json, drf or html")
		failRate      = fs.Float64("fail-rate", 0, "share of requests answered with an injected 502 HTML page (0–1)")
		failEvery     = fs.Int("fail-every", 0, "answer every Nth request with an injected 502 HTML page")
		failSeed      = fs.Uint64("fail-seed", 1, "seed of --fail-rate")
		delay         = fs.Duration("delay", 0, "hold every answer back this long")
		scoreScale    = fs.Float64("score-scale", 1, "top of the URL verdict scale: 1 or 100")
		strictHTTP    = fs.Bool("strict-http", false, "URL service: send 4xx/5xx codes with JSON errors instead of 200")
		recordOnly    = fs.Bool("disposition-record-only", false, "URL service: record fp/fn/restore without changing verdicts")
		capeCompat    = fs.Bool("cape-compat", false, "sandbox: integer ids and CAPE's create-file shape")
		redirect      = fs.Bool("redirect-no-slash", false, "answer GET without trailing slash with 301, like Django")
		omitError     = fs.Bool("omit-report-error", false, "sandbox: leave \"error\" out of simple_report")
		legacy        = fs.Bool("legacy-2021", false, "sandbox: failed tasks say \"Task is still being analyzed\"")
		chaos         = fs.Bool("chaos", false, "sandbox: every task falls back from running to pending once")
		shots         = fs.Int("shots", DefaultShots, "screenshots per sandbox task without a SIM:SHOTS marker")
		shuffle       = fs.Bool("shuffle-shots", false, "sandbox: unsorted screenshot archive members")
		archiveZip    = fs.Bool("archive-zip", false, "sandbox: zip screenshot archive (newer CAPE)")
		shotsMissing  = fs.Bool("shots-dir-missing", false, "sandbox: screenshot endpoints answer HTTP 500")
		maxFileSize   = fs.Int64("max-file-size", DefaultMaxFileSize, "sandbox upload limit in bytes")
		firstTask     = fs.Int("first-task-id", DefaultFirstTaskID, "first sandbox task id")
		baseURL       = fs.String("base-url", "", "base of the sandbox's tracking URLs (default: from the request)")
		tz            = fs.String("tz", "UTC", "time zone of the services' timestamps (IANA name)")
	)
	return &Flags{addr: addr, profile: profile, keys: keys, throttleStyle: throttleStyle, baseURL: baseURL, tz: tz,
		runRate: runRate, reportRate: reportRate, failRate: failRate, scoreScale: scoreScale,
		quota: quota, failEvery: failEvery, shots: shots, firstTask: firstTask,
		quota403: quota403, strictHTTP: strictHTTP, recordOnly: recordOnly, capeCompat: capeCompat, redirect: redirect,
		omitError: omitError, legacy: legacy, chaos: chaos, shuffle: shuffle, archiveZip: archiveZip, shotsMissing: shotsMissing,
		failSeed: failSeed, delay: delay, maxFileSize: maxFileSize}
}

// Addr is the listen address (--addr).
func (f *Flags) Addr() string { return *f.addr }

// Config turns the parsed flags into a simulator configuration. Its
// errors name the flag ("--profile: want fast, demo or realistic, got \"slow\""),
// one at a time, in the order the flags are checked.
func (f *Flags) Config() (Config, error) {
	cfg := Config{
		StrictHTTP: *f.strictHTTP, DispositionRecordOnly: *f.recordOnly, CAPECompat: *f.capeCompat,
		RedirectNoSlash: *f.redirect, OmitReportError: *f.omitError, Legacy2021: *f.legacy, Chaos: *f.chaos,
		Shots: *f.shots, ShuffleShots: *f.shuffle, ArchiveZip: *f.archiveZip, ShotsDirMissing: *f.shotsMissing,
		MaxFileSize: *f.maxFileSize, FirstTaskID: *f.firstTask, BaseURL: *f.baseURL, QuotaForbidden: *f.quota403,
	}
	switch *f.profile {
	case "fast":
		cfg.Profile = FastProfile()
	case "demo":
		cfg.Profile = DemoProfile()
	case "realistic":
		cfg.Profile = RealisticProfile()
	default:
		return cfg, fmt.Errorf("--profile: want fast, demo or realistic, got %q", *f.profile)
	}
	for k := range strings.SplitSeq(*f.keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			cfg.Keys = append(cfg.Keys, k)
		}
	}
	if *f.runRate < 0 || *f.reportRate < 0 || *f.quota < 0 {
		return cfg, errors.New("--run-rate, --report-rate and --quota must not be negative")
	}
	limits := Limits{RunRate: *f.runRate, ReportRate: *f.reportRate, Quota: *f.quota}
	cfg.ReputationLimits, cfg.SandboxLimits = limits, limits
	switch *f.throttleStyle {
	case "json":
		cfg.ThrottleStyle = ThrottleJSON
	case "drf":
		cfg.ThrottleStyle = ThrottleDRF
	case "html":
		cfg.ThrottleStyle = ThrottleHTML
	default:
		return cfg, fmt.Errorf("--throttle-style: want json, drf or html, got %q", *f.throttleStyle)
	}
	if *f.failRate < 0 || *f.failRate > 1 {
		return cfg, fmt.Errorf("--fail-rate: want 0–1, got %v", *f.failRate)
	}
	if *f.failEvery < 0 || *f.delay < 0 {
		return cfg, errors.New("--fail-every and --delay must not be negative")
	}
	cfg.Faults = Faults{ErrorRate: *f.failRate, ErrorEvery: *f.failEvery, Seed: *f.failSeed, Delay: *f.delay}
	if *f.scoreScale != 1 && *f.scoreScale != 100 {
		return cfg, fmt.Errorf("--score-scale: want 1 or 100, got %v", *f.scoreScale)
	}
	cfg.ScoreScale = *f.scoreScale
	loc, err := time.LoadLocation(*f.tz)
	if err != nil {
		return cfg, fmt.Errorf("--tz: %w", err)
	}
	cfg.Location = loc
	return cfg, nil
}
