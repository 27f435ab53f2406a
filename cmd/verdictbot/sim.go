package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

// simShutdownTimeout bounds the graceful shutdown of `verdictbot sim`.
const simShutdownTimeout = 5 * time.Second

// runSim serves the simulator of both analysis services until ctx is
// cancelled. It prints one line with the two base URLs first.
func runSim(ctx context.Context, env environment, args []string, stdout, stderr io.Writer) error {
	cfg, addr, err := parseSimFlags(env, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		// Listening on every interface (--addr 0.0.0.0:…): the line names
		// the loopback address, the one a bot on this machine may reach
		// over plain http (REPUTATION_URL must be https otherwise).
		base = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	fmt.Fprintf(stdout, "REPUTATION_URL=%s SANDBOX_URL=%s\n", base, base)

	srv := &http.Server{
		Handler:           sim.New(cfg),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), simShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
		<-serveErr
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// parseSimFlags reads the flags of `verdictbot sim` into a simulator
// configuration and a listen address.
func parseSimFlags(env environment, args []string, stderr io.Writer) (sim.Config, string, error) {
	fs, f := newSimFlags()
	fs.SetOutput(io.Discard) // Main prints the error and where help is
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(stderr, env, findCLICommand("sim"))
			return sim.Config{}, "", err
		}
		return sim.Config{}, "", fmt.Errorf("%w: %v", errUsage, err)
	}
	return f.config(fs)
}

// simFlags are the values of sim's flags.
type simFlags struct {
	addr, profile, keys, throttleStyle, baseURL, tz                                  *string
	runRate, reportRate, failRate, scoreScale                                        *float64
	quota, failEvery, shots, firstTask                                               *int
	quota403, strictHTTP, recordOnly, capeCompat, redirect, omitError, legacy, chaos *bool
	shuffle, archiveZip, shotsMissing                                                *bool
	failSeed                                                                         *uint64
	delay                                                                            *time.Duration
	maxFileSize                                                                      *int64
}

// newSimFlags is sim's flag set (also printed by its help).
func newSimFlags() (*flag.FlagSet, *simFlags) {
	fs := flag.NewFlagSet("verdictbot sim", flag.ContinueOnError)
	var (
		addr          = fs.String("addr", "127.0.0.1:8099", "listen address")
		profile       = fs.String("profile", "realistic", "task progression: fast (one status per poll) or realistic (by time)")
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
		shots         = fs.Int("shots", sim.DefaultShots, "screenshots per sandbox task without a SIM:SHOTS marker")
		shuffle       = fs.Bool("shuffle-shots", false, "sandbox: unsorted screenshot archive members")
		archiveZip    = fs.Bool("archive-zip", false, "sandbox: zip screenshot archive (newer CAPE)")
		shotsMissing  = fs.Bool("shots-dir-missing", false, "sandbox: screenshot endpoints answer HTTP 500")
		maxFileSize   = fs.Int64("max-file-size", sim.DefaultMaxFileSize, "sandbox upload limit in bytes")
		firstTask     = fs.Int("first-task-id", sim.DefaultFirstTaskID, "first sandbox task id")
		baseURL       = fs.String("base-url", "", "base of the sandbox's tracking URLs (default: from the request)")
		tz            = fs.String("tz", "UTC", "time zone of the services' timestamps (IANA name)")
	)
	return fs, &simFlags{addr: addr, profile: profile, keys: keys, throttleStyle: throttleStyle, baseURL: baseURL, tz: tz,
		runRate: runRate, reportRate: reportRate, failRate: failRate, scoreScale: scoreScale,
		quota: quota, failEvery: failEvery, shots: shots, firstTask: firstTask,
		quota403: quota403, strictHTTP: strictHTTP, recordOnly: recordOnly, capeCompat: capeCompat, redirect: redirect,
		omitError: omitError, legacy: legacy, chaos: chaos, shuffle: shuffle, archiveZip: archiveZip, shotsMissing: shotsMissing,
		failSeed: failSeed, delay: delay, maxFileSize: maxFileSize}
}

// config turns the parsed flags into a simulator configuration and a
// listen address.
func (f *simFlags) config(fs *flag.FlagSet) (sim.Config, string, error) {
	addr, profile, keys, throttleStyle, baseURL, tz := f.addr, f.profile, f.keys, f.throttleStyle, f.baseURL, f.tz
	runRate, reportRate, failRate, scoreScale := f.runRate, f.reportRate, f.failRate, f.scoreScale
	quota, failEvery, shots, firstTask := f.quota, f.failEvery, f.shots, f.firstTask
	quota403, strictHTTP, recordOnly, capeCompat, redirect, omitError, legacy, chaos := f.quota403, f.strictHTTP, f.recordOnly, f.capeCompat, f.redirect, f.omitError, f.legacy, f.chaos
	shuffle, archiveZip, shotsMissing, failSeed, delay, maxFileSize := f.shuffle, f.archiveZip, f.shotsMissing, f.failSeed, f.delay, f.maxFileSize
	if fs.NArg() > 0 {
		return sim.Config{}, "", fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg := sim.Config{
		StrictHTTP: *strictHTTP, DispositionRecordOnly: *recordOnly, CAPECompat: *capeCompat,
		RedirectNoSlash: *redirect, OmitReportError: *omitError, Legacy2021: *legacy, Chaos: *chaos,
		Shots: *shots, ShuffleShots: *shuffle, ArchiveZip: *archiveZip, ShotsDirMissing: *shotsMissing,
		MaxFileSize: *maxFileSize, FirstTaskID: *firstTask, BaseURL: *baseURL, QuotaForbidden: *quota403,
	}
	switch *profile {
	case "fast":
		cfg.Profile = sim.FastProfile()
	case "realistic":
		cfg.Profile = sim.RealisticProfile()
	default:
		return cfg, "", fmt.Errorf("--profile: want fast or realistic, got %q", *profile)
	}
	for k := range strings.SplitSeq(*keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			cfg.Keys = append(cfg.Keys, k)
		}
	}
	if *runRate < 0 || *reportRate < 0 || *quota < 0 {
		return cfg, "", errors.New("--run-rate, --report-rate and --quota must not be negative")
	}
	limits := sim.Limits{RunRate: *runRate, ReportRate: *reportRate, Quota: *quota}
	cfg.ReputationLimits, cfg.SandboxLimits = limits, limits
	switch *throttleStyle {
	case "json":
		cfg.ThrottleStyle = sim.ThrottleJSON
	case "drf":
		cfg.ThrottleStyle = sim.ThrottleDRF
	case "html":
		cfg.ThrottleStyle = sim.ThrottleHTML
	default:
		return cfg, "", fmt.Errorf("--throttle-style: want json, drf or html, got %q", *throttleStyle)
	}
	if *failRate < 0 || *failRate > 1 {
		return cfg, "", fmt.Errorf("--fail-rate: want 0–1, got %v", *failRate)
	}
	if *failEvery < 0 || *delay < 0 {
		return cfg, "", errors.New("--fail-every and --delay must not be negative")
	}
	cfg.Faults = sim.Faults{ErrorRate: *failRate, ErrorEvery: *failEvery, Seed: *failSeed, Delay: *delay}
	if *scoreScale != 1 && *scoreScale != 100 {
		return cfg, "", fmt.Errorf("--score-scale: want 1 or 100, got %v", *scoreScale)
	}
	cfg.ScoreScale = *scoreScale
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		return cfg, "", fmt.Errorf("--tz: %w", err)
	}
	cfg.Location = loc
	return cfg, *addr, nil
}

// Simulator profiles for the built-in services. demo is realistic but
// quick, so a card shows "scanning…" before its verdict; quick is for
// tests and scripts.
var (
	simDemoProfile = sim.Profile{Name: "demo",
		URLPending: 500 * time.Millisecond, URLProcessing: 1500 * time.Millisecond,
		SandboxPending: time.Second, SandboxRunning: 3 * time.Second,
		SandboxCompleted: 200 * time.Millisecond, SandboxReporting: 800 * time.Millisecond}
	simQuickProfile = sim.Profile{Name: "quick",
		URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
		SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
		SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}
)

func simProfile(name string) (sim.Profile, error) {
	switch name {
	case "demo":
		return simDemoProfile, nil
	case "quick":
		return simQuickProfile, nil
	}
	return sim.Profile{}, fmt.Errorf("%w: --sim-profile: want demo or quick, got %q", errUsage, name)
}

// startLocalSim serves a simulator of both services on a free loopback
// port and returns its base URL.
func startLocalSim(cfg sim.Config) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: sim.New(cfg), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: stdlog.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}
