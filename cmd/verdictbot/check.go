package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
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

// checkResult is one target's verdict, as --json prints it.
type checkResult struct {
	Target string `json:"target"` // the argument as given
	Kind   string `json:"kind"`   // "url" or "file"
	// URL is the normalised link sent to (or withheld from) the service.
	URL string `json:"url,omitempty"`
	// Level is clean, suspicious, malicious, unknown (could not check) or
	// skipped (not sent on purpose).
	Level    string             `json:"level"`
	Category string             `json:"category,omitempty"`
	Scores   map[string]float64 `json:"scores,omitempty"`   // 0–1, URLs
	MalScore *float64           `json:"malscore,omitempty"` // 0–10, files
	Family   string             `json:"family,omitempty"`
	SHA256   string             `json:"sha256,omitempty"`
	TaskID   string             `json:"task_id,omitempty"`
	// Reused is true when the service already had an analysis (a file it
	// knew by hash).
	Reused bool `json:"reused,omitempty"`
	// QueryNotSent is true when the query was removed before the URL was
	// sent (VERDICTBOT_URL_QUERY=strip); URL is then the URL as sent.
	QueryNotSent bool   `json:"query_not_sent,omitempty"`
	Problem      string `json:"problem,omitempty"` // why it was not or could not be checked

	level verdict.Level
}

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

// runCheck is `verdictbot check`; it returns the exit status.
func runCheck(ctx context.Context, env environment, opts Options, args []string, stdout, stderr io.Writer) int {
	fs, f := newCheckFlags()
	asJSON, useSim, timeout := f.asJSON, f.useSim, f.timeout
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
	case *timeout < 0:
		return fail("--timeout must not be negative")
	}

	cfg, loadErr := config.Load(env.lookup)
	loadErr = config.Join(loadErr, config.Unknown(env.environ()))
	if *useSim {
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
	logger := slog.New(slog.DiscardHandler)
	if env.get("VERDICTBOT_LOG_LEVEL") != "" {
		logger = app.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel, cfg.ReputationAPIKey, cfg.SandboxAPIKey)
	}
	policy, err := links.NewPolicy(links.Config{AllowDomains: cfg.AllowDomains, InternalDomains: cfg.InternalDomains, MaxLinks: cfg.MaxLinks})
	if err != nil {
		return fail("VERDICTBOT_ALLOW_DOMAINS / VERDICTBOT_INTERNAL_DOMAINS: %v", err)
	}

	results := make([]checkResult, len(targets))
	var urlIdx, fileIdx []int
	for i, arg := range targets {
		results[i] = classify(arg, policy)
		if cfg.URLQuery == "strip" && results[i].URL != "" {
			results[i].URL, results[i].QueryNotSent = links.StripQuery(results[i].URL)
		}
		switch {
		case results[i].level != verdict.Pending:
		case results[i].Kind == "url":
			urlIdx = append(urlIdx, i)
		default:
			fileIdx = append(fileIdx, i)
		}
	}
	if len(urlIdx) > 0 && (cfg.ReputationURL == "" || cfg.ReputationAPIKey == "") {
		return fail("REPUTATION_URL and REPUTATION_API_KEY must be set to check links (or use --sim)")
	}
	if len(fileIdx) > 0 && (cfg.SandboxURL == "" || cfg.SandboxAPIKey == "") {
		return fail("SANDBOX_URL and SANDBOX_API_KEY must be set to check files (or use --sim)")
	}

	var wg sync.WaitGroup
	if len(urlIdx) > 0 {
		urls, err := checkURLPipeline(cfg, opts.Resolver, *timeout, logger)
		if err != nil {
			return fail("%v", err)
		}
		defer urls.Close()
		for _, i := range urlIdx {
			wg.Go(func() { results[i] = urlResult(results[i], urls.Check(ctx, results[i].URL, scan.CheckOptions{})) })
		}
	}
	if len(fileIdx) > 0 {
		files, err := checkFilePipeline(cfg, *timeout, logger)
		if err != nil {
			return fail("%v", err)
		}
		defer files.Close()
		for n, i := range fileIdx {
			ref, err := localRef(n, targets[i])
			if err != nil {
				results[i].level, results[i].Problem = verdict.Unknown, err.Error()
				continue
			}
			wg.Go(func() { results[i] = fileResult(results[i], files.Check(ctx, ref, scan.FileCheckOptions{})) })
		}
	}
	wg.Wait()

	levels := make([]verdict.Level, len(results))
	for i := range results {
		if results[i].level == verdict.Pending {
			results[i].level = verdict.Unknown // not expected: never report it as clean
		}
		results[i].Level = results[i].level.Key()
		levels[i] = results[i].level
	}
	if *asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(results)
		// encoding/json leaves DEL, C1 controls and bidi overrides raw:
		// escaped, the values stay the same and the terminal sees none.
		_, _ = stdout.Write(notify.TermJSON(buf.Bytes()))
	} else {
		for _, r := range results {
			fmt.Fprintln(stdout, r.text())
		}
	}
	switch verdict.Worst(levels...) {
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

// classify decides what an argument is: a file, a link to send, or a
// link that is not sent (Skipped) or cannot be (Unknown). Targets to
// check are left Pending. An existing file wins over reading the
// argument as a link (links.Policy.ClassifyArg) when it has no scheme.
func classify(arg string, policy *links.Policy) checkResult {
	r := checkResult{Target: arg, Kind: "url"}
	a := policy.ClassifyArg(arg)
	if a.MayBeFile {
		if st, err := os.Stat(arg); err == nil {
			r.Kind = "file"
			if !st.Mode().IsRegular() {
				r.level, r.Problem = verdict.Unknown, "not a regular file"
			}
			return r
		}
	}
	switch a.Kind {
	case links.ArgPath:
		r.Kind, r.level, r.Problem = "file", verdict.Unknown, "no such file"
	case links.ArgBareName:
		r.Kind, r.level, r.Problem = "file", verdict.Unknown, "no such file (write https://… to check it as a link)"
	case links.ArgInvalid:
		r.level, r.Problem = verdict.Unknown, "not a link I can check ("+strings.TrimPrefix(a.Err.Error(), "links: ")+")"
	default:
		r.URL = a.URL
		if a.Reason != links.ReasonNone {
			r.level, r.Problem = verdict.Skipped, a.Reason.Text()
		}
	}
	return r
}

// checkURLPipeline is the bot's URL pipeline (without a store: nothing is
// remembered between runs).
func checkURLPipeline(cfg config.Config, resolver links.Resolver, timeout time.Duration, log *slog.Logger) (*scan.URLs, error) {
	rep, err := app.NewReputation(cfg, log, nil)
	if err != nil {
		return nil, err
	}
	deadline := cfg.URLDeadline
	if timeout > 0 {
		deadline = timeout
	}
	// A one-shot check has no history to learn from, and someone waits
	// on it (often with a short --timeout): it polls on the blind backoff,
	// first after 1 s, not on the learned schedule's prior, whose first
	// check (4 s) is planned for a bot that analyses many links.
	return scan.NewURLs(rep, scan.URLOptions{TTL: cfg.VerdictTTL, Thresholds: cfg.Thresholds(), Hosts: app.HostGate(app.NewHostResolver(cfg, resolver, log)),
		Wait: reputation.WaitOptions{Deadline: deadline, Backoff: reputation.DefaultBackoff}, Logger: log.With("component", "scan")}), nil
}

// checkFilePipeline is the bot's file pipeline, reading local files
// (scan.LocalFiles) instead of downloading from Slack: the same
// fetch-and-hash, lookup by sha256, upload, wait and report as for a file
// shared in a channel.
func checkFilePipeline(cfg config.Config, timeout time.Duration, log *slog.Logger) (*scan.Files, error) {
	sb, err := app.NewSandbox(cfg, log, nil)
	if err != nil {
		return nil, err
	}
	deadline := cfg.SandboxDeadline
	if timeout > 0 {
		deadline = timeout
	}
	return scan.NewFiles(sb, scan.LocalFiles{}, scan.FileOptions{
		MaxBytes: cfg.MaxFileBytes, MaxScreenshots: -1, // no images needed
		SkipTypes: []string{}, // Slack's document types do not apply to local files
		Wait:      sandbox.WaitOptions{Deadline: deadline},
		Logger:    log.With("component", "files"),
	}), nil
}

// localRef is the pipeline's reference to the file at path, the n-th file
// argument; a file that cannot be opened is reported at once.
func localRef(n int, path string) (scan.FileRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return scan.FileRef{}, fmt.Errorf("cannot read the file: %v", errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return scan.FileRef{}, err
	}
	return scan.FileRef{ID: "local-" + strconv.Itoa(n), Name: filepath.Base(path),
		Filetype: strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")),
		Size:     st.Size(), Source: path}, nil
}

func urlResult(r checkResult, v scan.URLVerdict) checkResult {
	r.level, r.TaskID, r.Problem = v.Level, v.TaskID, v.Problem
	if v.Level != verdict.Unknown && len(v.Scores) > 0 {
		r.Category = string(v.Category)
		r.Scores = map[string]float64{}
		for c, s := range v.Scores {
			r.Scores[string(c)] = s
		}
	}
	return r
}

func fileResult(r checkResult, v scan.FileVerdict) checkResult {
	r.level, r.TaskID, r.Problem, r.SHA256 = v.Level, v.TaskID, v.Problem, v.SHA256
	r.Reused = v.Reused
	if v.Level == verdict.Clean || v.Level == verdict.Suspicious || v.Level == verdict.Malicious {
		score := v.MalScore
		r.MalScore, r.Family = &score, v.Family
	}
	return r
}

// text is the one-line form: level, target, then scores or the problem.
func (r checkResult) text() string {
	target := r.Target
	if r.Kind == "url" {
		target = links.DefangTruncate(r.Target, 200)
		if r.URL != "" {
			target = links.DefangTruncate(r.URL, 200)
		}
	}
	var details []string
	switch {
	case r.level == verdict.Skipped:
		details = append(details, "not checked: "+r.Problem)
	case r.level == verdict.Unknown:
		details = append(details, r.Problem)
	case r.Scores != nil:
		for _, c := range verdict.Categories {
			details = append(details, fmt.Sprintf("%s %d%%", c, int(math.Round(100*r.Scores[string(c)]))))
		}
	case r.MalScore != nil:
		details = append(details, fmt.Sprintf("malscore %.1f/10", *r.MalScore))
		if r.Family != "" {
			details = append(details, "family "+r.Family)
		}
	}
	if r.QueryNotSent {
		details = append(details, "query not sent")
	}
	if r.TaskID != "" {
		t := "task " + r.TaskID
		if r.Reused {
			t += " (already analysed)"
		}
		details = append(details, t)
	}
	// The services' words (problems, families, task ids) and the
	// arguments go to a terminal: one line, no escape sequence.
	return notify.TermLine(fmt.Sprintf("%-15s  %s  %s", strings.ToUpper(r.level.String()), target, strings.Join(details, " · ")))
}
