// Package check is the work of `verdictbot check`: one-shot checks of
// links and files from the terminal, for scripts and CI. Run decides what
// each argument is (a local file, a link to send, a link not sent on
// purpose), checks the targets at once with the bot's own URL and file
// pipelines (built by app's constructors, without a store: nothing is
// remembered between runs) and returns one Result per argument; WriteText
// and WriteJSON print them, safe for a terminal.
//
// It sits beside shell, above app: it reuses app's constructors of the
// service clients and of the host check, and reads no environment, parses
// no flag and chooses no exit status (cmd/verdictbot does).
package check

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/verdict"

	"github.com/verdictbot/verdictbot/config"
)

// The settings a kind of target needs, missing: Run checks nothing.
var (
	ErrNoURLService  = errors.New("REPUTATION_URL and REPUTATION_API_KEY must be set to check links")
	ErrNoFileService = errors.New("SANDBOX_URL and SANDBOX_API_KEY must be set to check files")
)

// Options are a run's choices beside the settings. The zero value is
// production.
type Options struct {
	// Timeout is how long one analysis may take; 0 keeps the settings'
	// (cfg.URLDeadline for links, cfg.SandboxDeadline for files).
	Timeout time.Duration
	// Resolver looks host names up for the private-host check (nil: the
	// system's; see app.NewHostResolver).
	Resolver links.Resolver
	// Logger gets the pipelines' logs (nil: discarded).
	Logger *slog.Logger
}

// Result is one target's verdict, as WriteJSON prints it.
type Result struct {
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
	// Signals are the bot's own reasons to distrust the link, found
	// before any service was asked ("looks like okta.com (one letter
	// differs)"); the level is at least theirs.
	Signals []string `json:"signals,omitempty"`

	level verdict.Level
}

// Verdict is the result's level: Clean, Suspicious, Malicious, Unknown
// (could not check) or Skipped; never Pending.
func (r Result) Verdict() verdict.Level { return r.level }

// Worst is the worst verdict of rs, in the order the bot's cards use
// (verdict.Worst: malicious > suspicious > could not check > clean >
// skipped).
func Worst(rs []Result) verdict.Level {
	levels := make([]verdict.Level, len(rs))
	for i, r := range rs {
		levels[i] = r.level
	}
	return verdict.Worst(levels...)
}

// Run checks each target once and returns their results, in the order of
// targets; the checks run at the same time. An existing local file goes
// to the sandbox; anything else is read as a link (links.Policy.ClassifyArg).
// Private and internal hosts, allowlisted domains, empty files and files
// over cfg.MaxFileBytes are never sent: they are Skipped. A target that
// cannot be checked (service error, timeout, not a link, no such file) is
// Unknown with its Problem.
//
// An error means nothing was checked: the domain lists do not parse, the
// services a kind of target needs are not set (ErrNoURLService,
// ErrNoFileService), or a client cannot be built. cfg is used as given:
// the caller validates it.
func Run(ctx context.Context, cfg config.Config, targets []string, opts Options) ([]Result, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	policy, err := links.NewPolicy(links.Config{AllowDomains: cfg.AllowDomains, InternalDomains: cfg.InternalDomains, MaxLinks: cfg.MaxLinks})
	if err != nil {
		return nil, fmt.Errorf("VERDICTBOT_ALLOW_DOMAINS / VERDICTBOT_INTERNAL_DOMAINS: %v", err)
	}

	results := make([]Result, len(targets))
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
		return nil, ErrNoURLService
	}
	if len(fileIdx) > 0 && (cfg.SandboxURL == "" || cfg.SandboxAPIKey == "") {
		return nil, ErrNoFileService
	}

	// Both pipelines are built before any check starts: a client that
	// cannot be built leaves nothing running.
	var urls *scan.URLs
	if len(urlIdx) > 0 {
		if urls, err = urlPipeline(cfg, opts.Resolver, opts.Timeout, logger); err != nil {
			return nil, err
		}
		defer urls.Close()
	}
	var files *scan.Files
	if len(fileIdx) > 0 {
		if files, err = filePipeline(cfg, opts.Timeout, logger); err != nil {
			return nil, err
		}
		defer files.Close()
	}
	var wg sync.WaitGroup
	for _, i := range urlIdx {
		wg.Go(func() { results[i] = urlResult(results[i], urls.Check(ctx, results[i].URL, scan.CheckOptions{})) })
	}
	for n, i := range fileIdx {
		ref, err := localRef(n, targets[i])
		if err != nil {
			results[i].level, results[i].Problem = verdict.Unknown, err.Error()
			continue
		}
		wg.Go(func() { results[i] = fileResult(results[i], files.Check(ctx, ref, scan.FileCheckOptions{})) })
	}
	wg.Wait()

	// The bot's own signals: a lookalike of a protected domain is at
	// least VERDICTBOT_LOOKALIKE's level, as on a card.
	sg, err := app.NewSignals(cfg, logger)
	if err != nil {
		return nil, err
	}
	for _, i := range urlIdx {
		r := &results[i]
		u, perr := url.Parse(r.URL)
		if perr != nil {
			continue
		}
		for _, s := range sg.Of(links.Target{URL: r.URL, Host: strings.ToLower(u.Hostname())}) {
			r.Signals = append(r.Signals, s.Reason)
			r.level = verdict.Worst(r.level, s.Level)
		}
	}

	for i := range results {
		if results[i].level == verdict.Pending {
			results[i].level = verdict.Unknown // not expected: never report it as clean
		}
		results[i].Level = results[i].level.Key()
	}
	return results, nil
}

// classify decides what an argument is: a file, a link to send, or a
// link that is not sent (Skipped) or cannot be (Unknown). Targets to
// check are left Pending. An existing file wins over reading the
// argument as a link (links.Policy.ClassifyArg) when it has no scheme.
func classify(arg string, policy *links.Policy) Result {
	r := Result{Target: arg, Kind: "url"}
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

// urlPipeline is the bot's URL pipeline (without a store: nothing is
// remembered between runs).
func urlPipeline(cfg config.Config, resolver links.Resolver, timeout time.Duration, log *slog.Logger) (*scan.URLs, error) {
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

// filePipeline is the bot's file pipeline, reading local files
// (scan.LocalFiles) instead of downloading from Slack: the same
// fetch-and-hash, lookup by sha256, upload, wait and report as for a file
// shared in a channel.
func filePipeline(cfg config.Config, timeout time.Duration, log *slog.Logger) (*scan.Files, error) {
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

func urlResult(r Result, v scan.URLVerdict) Result {
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

func fileResult(r Result, v scan.FileVerdict) Result {
	r.level, r.TaskID, r.Problem, r.SHA256 = v.Level, v.TaskID, v.Problem, v.SHA256
	r.Reused = v.Reused
	if v.Level == verdict.Clean || v.Level == verdict.Suspicious || v.Level == verdict.Malicious {
		score := v.MalScore
		r.MalScore, r.Family = &score, v.Family
	}
	return r
}
