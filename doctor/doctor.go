// Package doctor checks an install of verdictbot from its settings, the
// way `verdictbot doctor` runs it after an install: each Slack token (who
// it is, the scopes Slack granted against manifest.yaml's, that Socket
// Mode connects), the two services (a harmless authenticated call each),
// the state (PostgreSQL: reachable, schema, replicas; or the embedded
// file), where the events go (the receiver reachable, optionally a signed
// test event), and the settings that name Slack users, user groups and
// channels (each exists; the bot is in the channels it posts to).
//
// Each check gives one Result: passed, failed (with the fix), a warning,
// or skipped (its setting is unset). Nothing is changed anywhere: the
// database is read, not migrated; the store file is opened read-only and
// left alone while a bot holds it; the Socket Mode connection is closed
// right after Slack's hello; the only thing sent is the test event, when
// asked for. No text of a Result holds a token, an API key, the events
// secret or the database password: the clients keep them out of their
// errors, and every text goes through a redactor of the settings' secrets
// as well. Its flags and exit status are cmd/verdictbot's.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/internal/manifest"
	"github.com/verdictbot/verdictbot/notify"
)

// Status is a check's outcome.
type Status string

// The outcomes. Only Fail makes the install not ready (Report.OK).
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Warn Status = "warn"
	Skip Status = "skip" // not configured: nothing to check
)

// mark is the checklist's symbol of each outcome.
var mark = map[Status]string{Pass: "✓", Fail: "✗", Warn: "!", Skip: "-"}

// Result is one line of the checklist.
type Result struct {
	// Section groups the checks: Configuration, Slack, Services, State,
	// Events, Users and channels.
	Section string `json:"section"`
	// Name is what was checked: "bot scopes", "reputation service", a
	// setting's name.
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail is what was found, in one line.
	Detail string `json:"detail"`
	// Fix says what to do, for a failure or a warning.
	Fix string `json:"fix,omitempty"`
}

// Report is every check's result, in the checklist's order.
type Report struct {
	Results []Result `json:"checks"`
}

// OK reports whether no check failed (warnings are allowed).
func (r Report) OK() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return false
		}
	}
	return true
}

// Count returns how many checks had the outcome s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Options tune Run.
type Options struct {
	// Timeout bounds each network call (default DefaultTimeout).
	Timeout time.Duration
	// SendTestEvent posts one signed test event to VERDICTBOT_EVENTS_URL
	// and requires a 2xx answer.
	SendTestEvent bool
	// Version names this build in the test event.
	Version string
	// Problems are the settings' problems config.Load, config.Unknown
	// and Validate found (nil: none); the first check reports them, and
	// the others check what they can of the settings given.
	Problems error
}

// DefaultTimeout bounds each network call of a check.
const DefaultTimeout = 10 * time.Second

// The sections, in the checklist's order.
const (
	secConfig   = "Configuration"
	secSlack    = "Slack"
	secServices = "Services"
	secState    = "State"
	secEvents   = "Events"
	secIDs      = "Users and channels"
)

var sectionOrder = []string{secConfig, secSlack, secServices, secState, secEvents, secIDs}

// run is one doctor run: the settings, the options and what the checks
// share.
type run struct {
	cfg     config.Config
	opts    Options
	scopes  scopes
	redact  *strings.Replacer
	timeout time.Duration
}

// scopes are the ones manifest.yaml requests.
type scopes struct{ bot, user []string }

// Run checks the install cfg describes and returns the checklist. The
// sections run at the same time; each check's network calls are bounded
// by opts.Timeout, so Run ends within a few of them.
func Run(ctx context.Context, cfg config.Config, opts Options) Report {
	r := &run{cfg: cfg, opts: opts, redact: secretsRedactor(cfg), timeout: opts.Timeout}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	out := Report{Results: []Result{r.configuration()}}
	m, err := manifest.Embedded()
	if err != nil { // the embedded manifest is tested to parse
		out.Results = append(out.Results, Result{Section: secSlack, Name: "manifest", Status: Fail,
			Detail: "the manifest built into this binary does not parse: " + err.Error()})
	} else {
		r.scopes = scopes{bot: m.OAuthConfig.Scopes.Bot, user: m.OAuthConfig.Scopes.User}
	}
	checks := []func(context.Context) []Result{r.slack, r.services, r.state, r.events}
	found := make([][]Result, len(checks))
	var wg sync.WaitGroup
	for i, f := range checks {
		wg.Go(func() { found[i] = f(ctx) })
	}
	wg.Wait()
	for _, rs := range found {
		out.Results = append(out.Results, rs...)
	}
	slices.SortStableFunc(out.Results, func(a, b Result) int {
		return slices.Index(sectionOrder, a.Section) - slices.Index(sectionOrder, b.Section)
	})
	for i := range out.Results {
		res := &out.Results[i]
		res.Detail, res.Fix = r.clean(res.Detail), r.clean(res.Fix)
	}
	return out
}

// configuration is the first check: the settings as `verdictbot run`
// would take them.
func (r *run) configuration() Result {
	res := Result{Section: secConfig, Name: "settings", Status: Pass, Detail: "verdictbot run accepts every setting"}
	if r.opts.Problems != nil {
		lines := strings.Split(strings.TrimSpace(r.opts.Problems.Error()), "\n")
		if len(lines) > 1 {
			lines = lines[1:] // "N settings are wrong:", then one indented line each
		}
		for i := range lines {
			lines[i] = strings.TrimSpace(lines[i])
		}
		res.Status, res.Detail = Fail, strings.Join(lines, "; ")
		res.Fix = "correct them (verdictbot config lists every setting and each problem, one line each); the checks below use the rest"
	}
	return res
}

// clean makes a text safe to print: secrets replaced, one line, no
// terminal escapes, bounded.
func (r *run) clean(s string) string {
	s = notify.TermLine(r.redact.Replace(s))
	const maxLen = 600
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// secretsRedactor replaces every secret of cfg (tokens, API keys, the
// events secret, the database password), as written and URL-escaped, by
// "<secret>". Secrets shorter than 4 bytes are left out: replacing such
// short strings would garble the text, and none is a real token or key.
func secretsRedactor(cfg config.Config) *strings.Replacer {
	var pairs []string
	for _, s := range []config.Secret{cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAdminUserToken,
		cfg.ReputationAPIKey, cfg.SandboxAPIKey, cfg.EventsSecret, cfg.DatabaseURL.Password()} {
		v := s.Reveal()
		if len(v) < 4 {
			continue
		}
		pairs = append(pairs, v, "<secret>")
		for _, esc := range []string{url.PathEscape(v), url.QueryEscape(v)} {
			if esc != v {
				pairs = append(pairs, esc, "<secret>")
			}
		}
	}
	return strings.NewReplacer(pairs...)
}

// WriteText writes the checklist: a heading per section, one line per
// check (its mark, name and what was found), a "fix:" line under each
// failure and warning, then the totals. The marks are ✓ passed, ✗
// failed, ! warning, - skipped.
func WriteText(w io.Writer, rep Report) error {
	var b bytes.Buffer
	width := 0
	for _, res := range rep.Results {
		width = max(width, utf8.RuneCountInString(res.Name))
	}
	section := ""
	for _, res := range rep.Results {
		if res.Section != section {
			section = res.Section
			fmt.Fprintf(&b, "%s\n", section)
		}
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(res.Name))
		fmt.Fprintf(&b, "  %s %s%s  %s\n", mark[res.Status], res.Name, pad, res.Detail)
		if res.Fix != "" && (res.Status == Fail || res.Status == Warn) {
			fmt.Fprintf(&b, "      fix: %s\n", res.Fix)
		}
	}
	fmt.Fprintf(&b, "\n%d passed, %d failed, %s, %d skipped: %s\n",
		rep.Count(Pass), rep.Count(Fail), plural(rep.Count(Warn), "warning"), rep.Count(Skip), verdictWords(rep))
	_, err := w.Write(b.Bytes())
	return err
}

func verdictWords(rep Report) string {
	if rep.OK() {
		return "ready"
	}
	return "not ready (fix the ✗ lines, then run verdictbot doctor again)"
}

// WriteJSON writes the report as one JSON object: ok, the counts and the
// checks (section, name, status, detail, fix), with no escape sequence a
// terminal would act on.
func WriteJSON(w io.Writer, rep Report) error {
	out := struct {
		OK       bool     `json:"ok"`
		Passed   int      `json:"passed"`
		Failed   int      `json:"failed"`
		Warnings int      `json:"warnings"`
		Skipped  int      `json:"skipped"`
		Checks   []Result `json:"checks"`
	}{rep.OK(), rep.Count(Pass), rep.Count(Fail), rep.Count(Warn), rep.Count(Skip), rep.Results}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := w.Write(notify.TermJSON(buf.Bytes()))
	return err
}

// within runs f with a context bounded by the run's timeout.
func within[T any](ctx context.Context, r *run, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return f(ctx)
}
