package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/check"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"

	"github.com/verdictbot/verdictbot/config"
)

// Exit statuses of `verdictbot check`.
const (
	checkExitClean      = 0 // every target clean or skipped
	checkExitSuspicious = 1
	checkExitMalicious  = 2
	checkExitUnknown    = 3 // at least one could not be checked (and none is worse)
	checkExitUsage      = 4 // bad flags or settings: nothing was checked
)

// checkSimKey is the API key `check --sim`'s built-in simulator gets (any
// works; the shell's is the same).
const checkSimKey = "shell-sim-key"

// checkUsage is what check does (verdictbot help check adds the usage
// line, the flags and the settings).
const checkUsage = `Checks each argument once and prints its verdict, one line per target (or a
JSON array with --json):
  - an existing local file goes to the sandbox: looked up by its sha256
    first, uploaded only when the sandbox does not know it;
  - anything else is a link for the URL reputation service: http(s)://…,
    or host/path for https://host/path (a bare name must end in a real
    top-level domain; write https://… for others, e.g. .test hosts).
Private and internal hosts (RFC 1918, loopback, .local, .internal, single
labels, VERDICTBOT_INTERNAL_DOMAINS, names whose every address is private
unless VERDICTBOT_RESOLVE_HOSTS=false) and allowlisted domains are never sent,
nor are empty files and files over VERDICTBOT_MAX_FILE_BYTES: they are
printed as skipped and do not raise the exit status.

The services are REPUTATION_URL / REPUTATION_API_KEY and SANDBOX_URL /
SANDBOX_API_KEY, with the VERDICTBOT_* settings the bot uses (thresholds,
internal and allowed domains, VERDICTBOT_URL_QUERY, deadlines, size limit,
rates); --sim uses a built-in simulator of both instead.

Exit status: that of the worst verdict, in the order the bot's cards use
(malicious > suspicious > could not check > clean > skipped):
  0  every target is clean, or skipped
  1  suspicious
  2  malicious
  3  could not check (service error, timeout, failed analysis, not a link)
  4  usage or configuration error: nothing was checked
`

// checkFlags are the values of check's flags.
type checkFlags struct {
	asJSON, useSim *bool
	timeout        *time.Duration
}

// newCheckFlags is check's flag set (also printed by its help).
func newCheckFlags() (*flag.FlagSet, checkFlags) {
	fs := flag.NewFlagSet("verdictbot check", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed by runCheck, in one line
	fs.Usage = func() {}
	return fs, checkFlags{
		asJSON:  fs.Bool("json", false, "print a JSON array of results instead of one line per target"),
		useSim:  fs.Bool("sim", false, "use a built-in simulator of both services, whose analyses take about a second (REPUTATION_URL and SANDBOX_URL are ignored)"),
		timeout: fs.Duration("timeout", 0, "how long one analysis may take (default: VERDICTBOT_URL_DEADLINE for links, VERDICTBOT_SANDBOX_DEADLINE for files)"),
	}
}

// runCheck is `verdictbot check`: it parses the flags, loads the settings
// (or starts the simulator), hands the arguments to check.Run, prints the
// results and returns the exit status.
func runCheck(ctx context.Context, env environment, opts Options, args []string, stdout, stderr io.Writer) int {
	fs, f := newCheckFlags()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "verdictbot check: "+format+"\n", a...)
		return checkExitUsage
	}
	targets, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp): // Main answers -h; this is for direct callers
		writeCommandHelp(stderr, env, findCLICommand("check"))
		return checkExitClean
	case err != nil:
		return fail("%v (verdictbot check -h for help)", err)
	case len(targets) == 0:
		return fail("give at least one URL or file (verdictbot check -h for help)")
	case *f.timeout < 0:
		return fail("--timeout must not be negative")
	}

	cfg, loadErr := config.Load(env.lookup)
	loadErr = config.Join(loadErr, config.Unknown(env.environ()))
	if *f.useSim {
		base, stop, err := sim.StartLocal(sim.Config{Profile: sim.QuickProfile()})
		if err != nil {
			return fail("%v", err)
		}
		defer stop()
		cfg.ReputationURL, cfg.ReputationAPIKey = base, checkSimKey
		cfg.SandboxURL, cfg.SandboxAPIKey = base, checkSimKey
	}
	if err := config.Join(loadErr, cfg.Validate(false)); err != nil {
		return fail("%v", err) // every problem at once
	}
	run := check.Options{Timeout: *f.timeout, Resolver: opts.Resolver}
	if env.get("VERDICTBOT_LOG_LEVEL") != "" {
		run.Logger = app.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel, cfg.ReputationAPIKey, cfg.SandboxAPIKey)
	}
	results, err := check.Run(ctx, cfg, targets, run)
	switch {
	case errors.Is(err, check.ErrNoURLService), errors.Is(err, check.ErrNoFileService):
		return fail("%v (or use --sim)", err)
	case err != nil:
		return fail("%v", err)
	}
	if *f.asJSON {
		_ = check.WriteJSON(stdout, results)
	} else {
		_ = check.WriteText(stdout, results)
	}
	switch check.Worst(results) {
	case verdict.Malicious:
		return checkExitMalicious
	case verdict.Suspicious:
		return checkExitSuspicious
	case verdict.Unknown:
		return checkExitUnknown
	}
	return checkExitClean
}

// parseInterleaved parses flags placed before, between or after the
// arguments; after "--" everything is an argument.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var out []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(out, rest...), nil
		}
		if len(rest) == 0 {
			return out, nil
		}
		out = append(out, rest[0])
		args = rest[1:]
	}
}
