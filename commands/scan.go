package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// UserError is an answer for the user: its text is shown as is (privately).
type UserError struct{ Text string }

func (e *UserError) Error() string { return e.Text }

func userErr(format string, args ...any) error { return &UserError{Text: fmt.Sprintf(format, args...)} }

// URLScanner posts a card for URLs requested with /scan (cards.Messages).
type URLScanner interface {
	ScanRequest(ctx context.Context, channel, user string, targets []links.Target, skipped []links.Skipped) error
}

// URLService is what /scan needs of the URL pipeline (*scan.URLs): a
// task's status. Failures are *scan.LookupError.
type URLService interface {
	Status(ctx context.Context, taskID string) (string, error)
}

// SandboxService is what /scan needs of the file pipeline (*scan.Files): a
// task's state, a file's record by hash, and the SHA-256 the sandbox
// knows a file by. Failures are *scan.LookupError.
type SandboxService interface {
	Task(ctx context.Context, id string) (*scan.SandboxTask, error)
	Sample(ctx context.Context, hash string) (*scan.Sample, error)
	FileSHA256(ctx context.Context, hash string) (string, error)
}

// State is what /scan reads and changes in the store (store.State).
type State interface {
	RecentCards(channel string, n int) ([]*store.CardRecord, error)
	History(target string) ([]store.Verdict, error)
	Reports(target string) ([]store.Report, error)
	RecordReport(r store.Report) error
	TargetOfTask(taskID string) (string, error)
	CardsOfTask(taskID string) ([]*store.CardRecord, error)
	// Target and Card tell where a target was shown (its cards), so an
	// answer shows only what the asker's conversations saw.
	Target(target string) (store.Target, error)
	Card(ref card.Ref) (*store.CardRecord, error)
	ChannelMode(channel string) (string, error)
	// The setting writes queue out, the change's event, in their own
	// transaction (the outbox).
	SetChannelMode(channel, mode string, out ...*store.Outgoing) error
	ChannelFiles(channel string) (string, error)
	SetChannelFiles(channel, v string, out ...*store.Outgoing) error
	ChannelQuarantine(channel string) (string, error)
	SetChannelQuarantine(channel, level string, out ...*store.Outgoing) error
	Allow(domain, by string, out ...*store.Outgoing) error
	Disallow(domain string, out ...*store.Outgoing) (bool, error)
	AllowList() ([]store.AllowEntry, error)
}

// Responder answers the user privately (through the command's response_url).
type Responder func(ctx context.Context, req *Request, text string) error

// HostChecker says whether a URL's host resolves only inside the network
// (*links.HostResolver; nil-safe).
type HostChecker interface {
	CheckURL(ctx context.Context, url string) (detail string, internal bool)
}

// Scan holds what the /scan subcommands use.
type Scan struct {
	// Backfill, if set, checks a channel's history (/scan channel backfill).
	Backfill Backfiller
	Links    *links.Policy
	// Hosts, if set, resolves the hosts of /scan's links before the card
	// is made, so a name that resolves inside the network is answered at
	// once ("resolves to a private address") and never sent.
	Hosts   HostChecker
	Scanner URLScanner
	URLs    URLService
	Sandbox SandboxService // nil when no sandbox is configured
	State   State
	Access  *Access
	// Feedback sends /scan report's reports, exactly as the card buttons do.
	Feedback *Feedback
	Respond  Responder
	// Settings answers what each channel is set to (its own settings, else
	// the configured defaults) and holds the runtime allowlist, reloaded
	// after each change. Nil: the channels' own settings in State, with
	// zero defaults.
	Settings *settings.Channels
	// QuarantineProblem, if set, returns why quarantine cannot remove
	// messages ("" when it can), shown beside the level.
	QuarantineProblem func() string
	// Log receives the audit lines of changes to channel settings.
	Log *slog.Logger
	// Events, if set, gets a finding for each setting change (package events).
	Events events.Sink
}

// respond answers req: through req.Answer when the request carries one
// (the App Home), else through the Responder.
func (s *Scan) respond(ctx context.Context, req *Request, text string) error {
	if req.Answer != nil {
		return req.Answer(ctx, text)
	}
	return s.Respond(ctx, req, text)
}

// settingFinding is the finding of a setting changed to value (domain:
// the allowlist's).
func settingFinding(req *Request, setting, value, domain string) events.Finding {
	return events.Finding{Kind: events.KindSetting, Channel: req.Channel, Actor: req.User, Setting: setting, Domain: domain, Value: value}
}

// settingEvent returns the change's event for the outbox of the write
// that makes it (none: no receiver; emitSetting emits it after).
func (s *Scan) settingEvent(req *Request, setting, value, domain string) []*store.Outgoing {
	if o := events.Prepare(s.Events, settingFinding(req, setting, value, domain)); o != nil {
		return []*store.Outgoing{o}
	}
	return nil
}

// emitSetting tells the events of a committed setting write (out), or
// emits the change's finding when it was not queued with the write.
func (s *Scan) emitSetting(ctx context.Context, req *Request, setting, value, domain string, out []*store.Outgoing) {
	if len(out) > 0 {
		events.Committed(s.Events, out)
		return
	}
	events.Emit(ctx, s.Events, settingFinding(req, setting, value, domain))
}

// audit writes the audit line of a channel setting changed by an admin,
// whether from /scan channel or from the App Home, and sends its event
// (queued with the write: out).
func (s *Scan) audit(ctx context.Context, req *Request, setting, from, to string, out []*store.Outgoing) {
	s.emitSetting(ctx, req, setting, to, "", out)
	if s.Log == nil {
		return
	}
	via := req.Via
	if via == "" {
		via = "slash"
	}
	s.Log.Info("channel setting changed", "audit", true, "user", req.User, "channel", req.Channel,
		"setting", setting, "from", from, "to", to, "via", via)
}

// NewScanRegistry builds the /scan registry with its handlers. With a nil
// Scan it still builds (for the manifest check), with handlers that fail.
func NewScanRegistry(s *Scan) *Registry {
	if s == nil {
		s = &Scan{}
	}
	r := NewRegistry("/scan")
	// One example per command, with values a user could type as they
	// are (TestEveryHelpFormParses feeds each to the parser).
	r.Register(&Command{Name: "", Usage: "<url> [<url>…]", Description: "scan links now; the card is posted in this channel whatever its mode",
		MinArgs: 1, MaxArgs: 10, Handler: s.scanURLs, Examples: []string{"/scan https://login.example.com/verify"}})
	r.Register(&Command{Name: "status", Usage: "<task_id>", Description: "state of a URL task (32 hex) or sandbox task (a number) shown in your conversations",
		MinArgs: 1, MaxArgs: 1, Handler: s.status, Examples: []string{"/scan status 4711"}})
	r.Register(&Command{Name: "hash", Usage: "<md5|sha1|sha256>", Description: "what the sandbox knows of a file shared in your conversations: record, tasks, newest report",
		MinArgs: 1, MaxArgs: 1, Handler: s.hash, Examples: []string{"/scan hash 44d88612fea8a8f36de82e1278abb02f"}})
	r.Register(&Command{Name: "report", Usage: "<task_id> <category> fp|fn|restore", Description: "report a verdict, as the card's buttons do (restore: admins)",
		MinArgs: 3, MaxArgs: 3, Handler: s.report, Examples: []string{"/scan report 5a57c0ffee5a57c0ffee5a57c0ffeed5 phishing fp"}})
	r.Register(&Command{Name: "recent", Usage: "[n]", Description: "the last verdicts seen in this channel, if you are in it (n: 1 to 20, default 5)",
		MaxArgs: 1, Handler: s.recent, Examples: []string{"/scan recent 10"}})
	r.Register(&Command{Name: "history", Usage: "<url|task_id>", Description: "the verdicts of a link or task shown in your conversations, and the reports made there: who and when",
		MinArgs: 1, MaxArgs: 1, Handler: s.history, Examples: []string{"/scan history https://login.example.com/verify"}})
	r.Register(&Command{Name: "channel", Usage: "[on|off|quiet|verbose|files on|off|quarantine off|malicious|suspicious|backfill [7d|14d|30d|stop]]",
		Description: "show or set this channel's mode, whether its shared files are scanned, and the lowest verdict whose message is removed (quarantine); backfill checks the channel's history",
		MaxArgs:     2, Admin: AdminToChange, Handler: s.channel, Examples: []string{"/scan channel files off"}})
	r.Register(&Command{Name: "allow", Usage: "add|remove|list [domain]", Description: "the runtime allowlist: links to these domains are never sent",
		MinArgs: 1, MaxArgs: 2, Admin: AdminToChange, Handler: s.allow, Examples: []string{"/scan allow add example.org"}})
	r.Register(&Command{Name: "help", Description: "this help", MaxArgs: -1, Examples: []string{"/scan help"}, Handler: func(ctx context.Context, req *Request) error {
		return s.respond(ctx, req, r.Help())
	}})
	return r
}

// scanURLs is /scan <url>…: every word must be a URL that may be sent;
// nothing is sent when one is not valid.
func (s *Scan) scanURLs(ctx context.Context, req *Request) error {
	var targets []links.Target
	var skipped []links.Skipped
	var bad []string
	for _, raw := range req.Args {
		u := raw
		if !strings.Contains(u, "://") {
			u = "https://" + u
		}
		norm, err := links.Normalize(u)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s is not a link I can check (%s)", notify.CodeURL(raw, 80), notify.Prose(cleanErr(err), 200)))
			continue
		}
		if reason, ok := s.Links.Check(norm); !ok {
			skipped = append(skipped, links.Skipped{URL: norm, Reason: reason})
			continue
		}
		targets = append(targets, links.Target{URL: norm, Raw: raw})
	}
	if len(bad) > 0 {
		return userErr("Nothing was scanned: %s.", strings.Join(bad, "; "))
	}
	targets, skipped = s.resolve(ctx, targets, skipped)
	if len(targets) == 0 {
		var why []string
		for _, sk := range skipped {
			why = append(why, fmt.Sprintf("%s: %s", notify.CodeURL(sk.URL, 80), notify.Prose(sk.Reason.Text(), 200)))
		}
		return userErr("Nothing to scan: %s. Such links are never sent to the service.", strings.Join(why, "; "))
	}
	if err := s.Scanner.ScanRequest(ctx, req.Channel, req.User, targets, skipped); err != nil {
		return err
	}
	return s.respond(ctx, req, fmt.Sprintf("Scanning %d link(s); the card will appear in this channel.", len(targets)))
}

// resolve moves the targets whose host resolves only to private or special
// addresses to skipped. Lookups run at once, each bounded by the
// resolver's timeout; a failed lookup keeps the target.
func (s *Scan) resolve(ctx context.Context, targets []links.Target, skipped []links.Skipped) ([]links.Target, []links.Skipped) {
	if s.Hosts == nil || len(targets) == 0 {
		return targets, skipped
	}
	internal := make([]string, len(targets)) // detail, "" when not internal
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if detail, ok := s.Hosts.CheckURL(ctx, t.URL); ok {
				internal[i] = detail + " " // never empty when internal
			}
		})
	}
	wg.Wait()
	kept := targets[:0:0]
	for i, t := range targets {
		if internal[i] == "" {
			kept = append(kept, t)
			continue
		}
		skipped = append(skipped, links.Skipped{URL: t.URL, Reason: links.ReasonResolvesPrivate, Detail: strings.TrimSpace(internal[i])})
	}
	return kept, skipped
}

func cleanErr(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "links: ")
	return msg
}

var (
	urlTaskRe     = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	sandboxTaskRe = regexp.MustCompile(`^[0-9]{1,12}$`)
	hexRe         = regexp.MustCompile(`^[0-9a-fA-F]+$`)
)

// taskKind says which service a task id belongs to: URL tasks are 32 hex
// characters, sandbox tasks decimal numbers.
func taskKind(id string) string {
	switch {
	case urlTaskRe.MatchString(id):
		return "url"
	case sandboxTaskRe.MatchString(id):
		return "sandbox"
	}
	return ""
}

func (s *Scan) status(ctx context.Context, req *Request) error {
	id := req.Args[0]
	kind := taskKind(id)
	switch {
	case kind == "":
		return userErr("%s is not a task id: URL tasks are 32 hexadecimal characters, sandbox tasks are numbers.", notify.Code(id, 80))
	case kind == "sandbox" && s.Sandbox == nil:
		return userErr("No sandbox service is configured, so there is no sandbox task %s to look up.", notify.Code(id, 40))
	}
	// A non-admin is answered only about tasks on cards they may see: any
	// other id, unknown or seen elsewhere, gets the same answer and no
	// call to the service (whose answer would tell the two apart).
	sc, err := s.scopeOf(ctx, req)
	if err != nil {
		return err
	}
	if !sc.All() {
		ok, err := s.taskVisible(sc, strings.ToLower(id))
		if err != nil {
			return err
		}
		if !ok {
			return userErr(noTaskHere, notify.Code(id, 40))
		}
	}
	if kind == "url" {
		st, err := s.URLs.Status(ctx, id)
		if err != nil {
			return serviceErr("URL service", err, id)
		}
		return s.respond(ctx, req, fmt.Sprintf("URL task %s: *%s*.", notify.Code(id, 40), notify.Prose(st, 60)))
	}
	task, err := s.Sandbox.Task(ctx, id)
	if err != nil {
		return serviceErr("sandbox", err, id)
	}
	text := fmt.Sprintf("Sandbox task %s: *%s*.", notify.Code(id, 40), notify.Prose(task.Status, 60))
	if task.HaveTimes {
		text += " Added " + vendorWord(task.AddedOn)
		if task.StartedOn != "" {
			text += ", started " + vendorWord(task.StartedOn)
		}
		if task.CompletedOn != "" {
			text += ", completed " + vendorWord(task.CompletedOn)
		}
		text += " (the sandbox's clock)."
	}
	return s.respond(ctx, req, text)
}

// The answers to a record the asker may not see, word for word those to
// an unknown one (no existence oracle).
const (
	// noTaskHere answers /scan status and /scan history for a task id not
	// on a card the asker may see.
	noTaskHere = "I have no record of task %s in your conversations."
	// noFileHere answers /scan hash for a file not on a card the asker
	// may see.
	noFileHere = "I have no record of a file with hash %s in your conversations."
)

func (s *Scan) hash(ctx context.Context, req *Request) error {
	h := strings.ToLower(req.Args[0])
	if !hexRe.MatchString(h) || (len(h) != 32 && len(h) != 40 && len(h) != 64) {
		return userErr("%s is not a hash: give an MD5 (32), SHA-1 (40) or SHA-256 (64) hexadecimal digest.", notify.Code(req.Args[0], 80))
	}
	if s.Sandbox == nil {
		return userErr("No sandbox service is configured.")
	}
	sc, err := s.scopeOf(ctx, req)
	if err != nil {
		return err
	}
	if !sc.All() {
		// Files are recorded by SHA-256. An MD5 or SHA-1 is first turned
		// into one by the sandbox: one call for every such hash, known or
		// not, so the calls made do not tell a file seen elsewhere from
		// an unknown one.
		sha := h
		if len(h) != 64 {
			sha, err = s.Sandbox.FileSHA256(ctx, h)
			if errors.Is(err, scan.ErrNotFound) {
				return s.respond(ctx, req, fmt.Sprintf(noFileHere, notify.Code(h, 80)))
			}
			if err != nil {
				return serviceErr("sandbox", err, "")
			}
		}
		ok, err := s.targetVisible(sc, strings.ToLower(sha))
		if err != nil {
			return err
		}
		if !ok {
			return s.respond(ctx, req, fmt.Sprintf(noFileHere, notify.Code(h, 80)))
		}
	}
	f, err := s.Sandbox.Sample(ctx, h)
	if errors.Is(err, scan.ErrNotFound) {
		if !sc.All() {
			return s.respond(ctx, req, fmt.Sprintf(noFileHere, notify.Code(h, 80)))
		}
		return s.respond(ctx, req, fmt.Sprintf("The sandbox has never seen a file with hash %s.", notify.Code(h, 80)))
	}
	if err != nil {
		return serviceErr("sandbox", err, "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*File* %s — %s, %d bytes\nmd5 %s · sha1 %s\nsha256 %s\n", notify.Code(h, 80), vendorWord(f.Type), f.Size,
		notify.Code(f.MD5, 80), notify.Code(f.SHA1, 80), notify.Code(f.SHA256, 80))
	fmt.Fprintf(&b, "%d task(s)", len(f.Tasks))
	for i, t := range f.Tasks {
		if i == 5 {
			fmt.Fprintf(&b, ", …")
			break
		}
		fmt.Fprintf(&b, "%s %s %s (added %s)", sep(i), notify.Code(t.ID, 40), vendorWord(t.Status), vendorWord(t.AddedOn))
	}
	b.WriteString("\n")
	if r := f.Report; r != nil {
		level := verdict.MalscoreLevel(r.MalScore)
		fmt.Fprintf(&b, "Newest report: task %s, malscore *%.1f*/10 (%s)", notify.Code(r.TaskID, 40), r.MalScore, level)
		if r.MalFamily != "" {
			fmt.Fprintf(&b, ", family *%s*", notify.Prose(r.MalFamily, 80))
		}
		b.WriteString(".")
	}
	return s.respond(ctx, req, b.String())
}

func sep(i int) string {
	if i == 0 {
		return ":"
	}
	return ","
}

// report is /scan report: the same report as a card's button, through the
// same code (Feedback.Report). The task must be shown on a card in this
// channel that the asker may see (admins: on a card in any channel), so
// nobody reports tasks of conversations they are not in, and every report
// lands on a card's audit line. To a non-admin, a task on no card and a
// task on cards elsewhere get the same answer.
func (s *Scan) report(ctx context.Context, req *Request) error {
	id, catWord, option := strings.ToLower(req.Args[0]), req.Args[1], strings.ToLower(req.Args[2])
	if taskKind(id) != "url" {
		return userErr("%s is not a URL task id (32 hexadecimal characters); reports are for URL verdicts.", notify.Code(req.Args[0], 80))
	}
	cat, err := verdict.ParseCategory(catWord)
	if err != nil {
		return userErr("%s is not a category: use phishing, advertising, malicious or illegal.", notify.Code(catWord, 40))
	}
	if option != "fp" && option != "fn" && option != "restore" {
		return userErr("%s is not a report: use fp (false positive), fn (false negative) or restore.", notify.Code(option, 20))
	}
	if !s.Access.CanReport(req.User, option) {
		if option == "restore" {
			return userErr("Only admins can restore a verdict.")
		}
		return userErr("Only admins can report verdicts in this workspace.")
	}
	if s.Feedback == nil {
		return errors.New("/scan report: no feedback handler wired")
	}
	sc, err := s.scopeOf(ctx, req)
	if err != nil {
		return err
	}
	cards, err := s.State.CardsOfTask(id)
	if err != nil {
		return err
	}
	if !sc.All() {
		cards = slices.DeleteFunc(cards, func(rec *store.CardRecord) bool { return !sc.Card(&rec.Card) })
	}
	var pick *store.CardRecord
	for _, rec := range cards {
		if rec.Card.Channel == req.Channel {
			pick = rec
			break
		}
	}
	if pick == nil && len(cards) > 0 && sc.All() {
		pick = cards[0]
	}
	const notHere = "Task %s has no card in this channel; run the command in the channel where its card is."
	if pick == nil {
		if len(cards) == 0 && sc.All() {
			return userErr("Task %s is not on any verdict card of mine, so there is nothing to report; reports are for tasks shown on a card.", notify.Code(id, 40))
		}
		return userErr(notHere, notify.Code(id, 40))
	}
	line := -1
	for i, l := range pick.Card.Lines {
		if l.TaskID == id {
			line = i
			break
		}
	}
	if line < 0 { // the card changed since the lookup
		return userErr(notHere, notify.Code(id, 40))
	}
	return s.respond(ctx, req, s.Feedback.Report(ctx, ReportRequest{User: req.User, Channel: pick.Card.Channel,
		SourceTS: pick.Card.SourceTS, Line: line, TaskID: id, Category: cat, Option: option}))
}

// recent is /scan recent: the newest cards of the channel the command is
// typed in, each shown only if the asker may see it (a member of the
// channel; in a DM with the bot, its own person). Typing the command in
// a channel grants nothing: a channel the asker is not in answers as an
// empty one.
func (s *Scan) recent(ctx context.Context, req *Request) error {
	n := 5
	if len(req.Args) == 1 {
		v, err := strconv.Atoi(req.Args[0])
		if err != nil || v < 1 || v > 20 {
			return userErr("%s: give a number from 1 to 20.", notify.Code(req.Args[0], 20))
		}
		n = v
	}
	sc, err := s.scopeOf(ctx, req)
	if err != nil {
		return err
	}
	cards, err := s.State.RecentCards(req.Channel, n)
	if err != nil {
		return err
	}
	cards = slices.DeleteFunc(cards, func(rec *store.CardRecord) bool { return !sc.Card(&rec.Card) })
	if len(cards) == 0 {
		return s.respond(ctx, req, "No verdicts in this channel yet.")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*The last %d verdict(s) in this channel:*\n", len(cards))
	for _, rec := range cards {
		c := rec.Card
		when := rec.Updated.UTC().Format("2006-01-02 15:04 UTC")
		var targets []string
		for i, l := range c.Lines {
			if i == 3 {
				targets = append(targets, fmt.Sprintf("+%d more", len(c.Lines)-3))
				break
			}
			targets = append(targets, notify.CodeURL(l.Target, 60))
		}
		level := c.Level().String()
		if !c.Final {
			level = "scanning"
		}
		fmt.Fprintf(&b, "• *%s* · %s · %s\n", level, strings.Join(targets, ", "), when)
	}
	return s.respond(ctx, req, b.String())
}

// history is /scan history: the verdicts of a link (or of a task's link)
// and the reports made on it. A non-admin sees a link only once it was
// shown on a card they may see, and then its verdicts (what the service
// said of the link) and the reports made on cards they may see; a link
// or task seen only elsewhere is answered as an unknown one.
func (s *Scan) history(ctx context.Context, req *Request) error {
	arg := req.Args[0]
	kind := taskKind(arg)
	target := ""
	if kind == "" {
		u := arg
		if !strings.Contains(u, "://") {
			u = "https://" + u
		}
		norm, err := links.Normalize(u)
		if err != nil {
			return userErr("%s is neither a task id nor a link I can read (%s).", notify.CodeURL(arg, 80), notify.Prose(cleanErr(err), 200))
		}
		target = norm
	}
	sc, err := s.scopeOf(ctx, req)
	if err != nil {
		return err
	}
	if kind != "" {
		noRecord := "I have no record of task %s."
		if !sc.All() {
			noRecord = noTaskHere
		}
		t, err := s.State.TargetOfTask(arg)
		if err != nil {
			return userErr(noRecord, notify.Code(arg, 40))
		}
		if ok, err := s.taskVisible(sc, strings.ToLower(arg)); err != nil {
			return err
		} else if !ok {
			return userErr(noRecord, notify.Code(arg, 40))
		}
		target = t
	}
	hist, reports, err := s.historyOf(sc, target, kind != "")
	if err != nil {
		return err
	}
	if stripped, dropped := links.StripQuery(target); dropped && len(hist) == 0 && len(reports) == 0 {
		// With VERDICTBOT_URL_QUERY=strip the link was recorded as sent,
		// without its query.
		target = stripped
		if hist, reports, err = s.historyOf(sc, target, false); err != nil {
			return err
		}
	}
	if len(hist) == 0 && len(reports) == 0 {
		return s.respond(ctx, req, fmt.Sprintf("No verdicts recorded for %s.", notify.CodeURL(target, 120)))
	}
	type entry struct {
		at   time.Time
		text string
	}
	var entries []entry
	for _, v := range hist {
		text := fmt.Sprintf("*%s* (%s, task %s)", v.Level, notify.Prose(v.Source, 20), notify.Code(v.TaskID, 40))
		if v.Kind == "file" {
			text += fmt.Sprintf(", malscore %.1f", v.MalScore)
		} else if v.Category != "" {
			text += fmt.Sprintf(", %s %.0f%%", v.Category, v.Scores[v.Category]*100)
		}
		entries = append(entries, entry{v.At, text})
	}
	for _, r := range reports {
		text := fmt.Sprintf("%s reported %s (%s)", notify.Mention(r.User), optionWords[r.Option], notify.Prose(string(r.Category), 20))
		if r.Outcome != "" {
			text += ", refused: " + notify.Prose(r.Outcome, 200)
		}
		entries = append(entries, entry{r.At, text})
	}
	// Oldest first.
	for i := 1; i < len(entries); i++ {
		for j := i; j > 0 && entries[j].at.Before(entries[j-1].at); j-- {
			entries[j], entries[j-1] = entries[j-1], entries[j]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*History of* %s\n", notify.CodeURL(target, 120))
	for i, e := range entries {
		if i == 40 {
			fmt.Fprintf(&b, "… and %d more\n", len(entries)-40)
			break
		}
		fmt.Fprintf(&b, "• %s — %s\n", e.at.UTC().Format("2006-01-02 15:04 UTC"), e.text)
	}
	return s.respond(ctx, req, b.String())
}

func (s *Scan) channel(ctx context.Context, req *Request) error {
	current, isDefault, err := s.settings().ModeOf(req.Channel)
	if err != nil {
		return err
	}
	if len(req.Args) > 0 && strings.EqualFold(req.Args[0], "files") {
		return s.channelFiles(ctx, req)
	}
	if len(req.Args) > 0 && strings.EqualFold(req.Args[0], "quarantine") {
		return s.channelQuarantine(ctx, req)
	}
	if len(req.Args) > 0 && strings.EqualFold(req.Args[0], "backfill") {
		return s.channelBackfill(ctx, req)
	}
	if len(req.Args) > 1 {
		return userErr("`/scan channel` takes one mode (on, off, quiet or verbose), or `files on|off`, or `quarantine off|malicious|suspicious`.")
	}
	if len(req.Args) == 0 {
		files, err := s.filesLine(req.Channel)
		if err != nil {
			return err
		}
		quar, err := s.quarantineLine(req.Channel)
		if err != nil {
			return err
		}
		back := ""
		if s.Backfill != nil {
			if st, ok := s.Backfill.Status(req.Channel); ok {
				back = "\n" + st
			}
		}
		if isDefault {
			return s.respond(ctx, req, fmt.Sprintf("This channel uses the default mode: *%s*. %s %s%s", current, files, quar, back))
		}
		return s.respond(ctx, req, fmt.Sprintf("This channel's mode is *%s*. %s %s%s", current, files, quar, back))
	}
	mode := strings.ToLower(req.Args[0])
	switch mode {
	case "on":
		mode = s.settings().Defaults.Mode
		if mode == "off" {
			mode = "quiet"
		}
	case "off", "quiet", "verbose":
	default:
		return userErr("%s is not a mode: use on, off, quiet or verbose.", notify.Code(req.Args[0], 20))
	}
	if !s.Access.IsAdmin(req.User) {
		return userErr("Only admins can change this channel's mode.")
	}
	out := s.settingEvent(req, "mode", mode, "")
	if err := s.State.SetChannelMode(req.Channel, mode, out...); err != nil {
		return err
	}
	prev := current
	if isDefault {
		prev = "default"
	}
	s.audit(ctx, req, "mode", prev, mode, out)
	return s.respond(ctx, req, fmt.Sprintf("This channel's mode is now *%s*.", mode))
}

// Backfiller checks a channel's history (package backfill, through app).
type Backfiller interface {
	// Start begins a backfill of channel over window ("" the default),
	// and says what happens, or why not (a *UserError for the person).
	Start(ctx context.Context, channel, window, by string) (string, error)
	// Stop stops channel's running backfill and says so.
	Stop(channel, by string) (string, error)
	// Status says where channel's backfill stands (false: none).
	Status(channel string) (string, bool)
}

// channelBackfill is /scan channel backfill [window|stop] (admins).
func (s *Scan) channelBackfill(ctx context.Context, req *Request) error {
	if s.Backfill == nil {
		return userErr("Checking a channel's history is not available here.")
	}
	if !s.Access.IsAdmin(req.User) {
		return userErr("Only admins can check this channel's history.")
	}
	arg := ""
	if len(req.Args) > 1 {
		arg = strings.ToLower(req.Args[1])
	}
	var text string
	var err error
	if arg == "stop" {
		text, err = s.Backfill.Stop(req.Channel, req.User)
	} else {
		text, err = s.Backfill.Start(ctx, req.Channel, arg, req.User)
	}
	if err != nil {
		return err
	}
	s.Log.Info("channel backfill", "audit", true, "user", req.User, "channel", req.Channel, "arg", arg)
	return s.respond(ctx, req, text)
}

// filesLine says whether the channel's shared files are scanned, and why.
func (s *Scan) filesLine(channel string) (string, error) {
	on, isDefault, err := s.settings().FilesOf(channel)
	switch {
	case err != nil:
		return "", err
	case on && !isDefault:
		return "Shared files: *on* (sent to the sandbox).", nil
	case !isDefault:
		return "Shared files: *off* (not downloaded, not sent).", nil
	case on:
		return "Shared files: *on* by default (VERDICTBOT_SCAN_FILES).", nil
	}
	return "Shared files: *off* by default (VERDICTBOT_SCAN_FILES).", nil
}

// channelFiles is /scan channel files [on|off]: anyone may look, admins
// switch.
func (s *Scan) channelFiles(ctx context.Context, req *Request) error {
	if len(req.Args) == 1 {
		line, err := s.filesLine(req.Channel)
		if err != nil {
			return err
		}
		return s.respond(ctx, req, line)
	}
	v := strings.ToLower(req.Args[1])
	if v != "on" && v != "off" {
		return userErr("%s: use `/scan channel files on` or `/scan channel files off`.", notify.Code(req.Args[1], 20))
	}
	if !s.Access.IsAdmin(req.User) {
		return userErr("Only admins can change whether this channel's files are scanned.")
	}
	prev, err := s.State.ChannelFiles(req.Channel)
	if err != nil {
		return err
	}
	out := s.settingEvent(req, "files", v, "")
	if err := s.State.SetChannelFiles(req.Channel, v, out...); err != nil {
		return err
	}
	s.audit(ctx, req, "files", cmp.Or(prev, "default"), v, out)
	if v == "off" {
		return s.respond(ctx, req, "Files shared in this channel are now *not scanned*: they are not downloaded and not sent to the sandbox.")
	}
	return s.respond(ctx, req, "Files shared in this channel are now *scanned*: they are sent to the sandbox.")
}

// quarantineLine says the channel's quarantine level, and why it cannot
// act when it cannot.
func (s *Scan) quarantineLine(channel string) (string, error) {
	v, isDefault, err := s.settings().QuarantineOf(channel)
	if err != nil {
		return "", err
	}
	var line string
	switch {
	case v == settings.QuarantineOff:
		suffix := "."
		if isDefault {
			suffix = " by default (VERDICTBOT_QUARANTINE)."
		}
		return "Quarantine: *off*" + suffix + " Nothing is removed.", nil
	case isDefault:
		line = fmt.Sprintf("Quarantine: *%s* by default (VERDICTBOT_QUARANTINE): %s", v, quarantineWords(v))
	default:
		line = fmt.Sprintf("Quarantine: *%s*: %s", v, quarantineWords(v))
	}
	if s.QuarantineProblem != nil {
		if p := s.QuarantineProblem(); p != "" {
			line += " But messages cannot be removed now: " + p + "."
		}
	}
	return line, nil
}

// settings returns s.Settings, or the channels' own settings in s.State
// with zero defaults when it is nil.
func (s *Scan) settings() *settings.Channels {
	if s.Settings == nil {
		return &settings.Channels{Store: s.State}
	}
	return s.Settings
}

func quarantineWords(level string) string {
	if level == "suspicious" {
		return "messages found suspicious or malicious are removed (kept for release by an admin)."
	}
	return "messages found malicious are removed (kept for release by an admin)."
}

// channelQuarantine is /scan channel quarantine [off|malicious|suspicious]:
// anyone may look, admins change it.
func (s *Scan) channelQuarantine(ctx context.Context, req *Request) error {
	if len(req.Args) == 1 {
		line, err := s.quarantineLine(req.Channel)
		if err != nil {
			return err
		}
		return s.respond(ctx, req, line)
	}
	v := strings.ToLower(req.Args[1])
	switch v {
	case "off", "malicious", "suspicious":
	default:
		return userErr("%s: use `/scan channel quarantine off`, `malicious` or `suspicious`.", notify.Code(req.Args[1], 20))
	}
	if !s.Access.IsAdmin(req.User) {
		return userErr("Only admins can change this channel's quarantine.")
	}
	prev, err := s.State.ChannelQuarantine(req.Channel)
	if err != nil {
		return err
	}
	out := s.settingEvent(req, "quarantine", v, "")
	if err := s.State.SetChannelQuarantine(req.Channel, v, out...); err != nil {
		return err
	}
	s.audit(ctx, req, "quarantine", cmp.Or(prev, "default"), v, out)
	line, err := s.quarantineLine(req.Channel)
	if err != nil {
		return err
	}
	return s.respond(ctx, req, "Changed. "+line)
}

func (s *Scan) allow(ctx context.Context, req *Request) error {
	verb := strings.ToLower(req.Args[0])
	switch verb {
	case "list":
		list, err := s.State.AllowList()
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return s.respond(ctx, req, "The runtime allowlist is empty (Slack's own domains and VERDICTBOT_ALLOW_DOMAINS always apply).")
		}
		var b strings.Builder
		b.WriteString("*Runtime allowlist* (subdomains included):\n")
		for _, e := range list {
			fmt.Fprintf(&b, "• %s — added by %s %s\n", notify.Code(e.Domain, 120), notify.Mention(e.By), e.At.UTC().Format("2006-01-02"))
		}
		return s.respond(ctx, req, b.String())
	case "add", "remove":
	default:
		return userErr("%s: use `/scan allow add &lt;domain&gt;`, `/scan allow remove &lt;domain&gt;` or `/scan allow list`.", notify.Code(req.Args[0], 20))
	}
	if len(req.Args) != 2 {
		return userErr("Which domain? `/scan allow %s &lt;domain&gt;`.", verb)
	}
	if !s.Access.IsAdmin(req.User) {
		return userErr("Only admins can change the allowlist.")
	}
	domain, err := links.NormalizeDomain(req.Args[1])
	if err != nil {
		return userErr("%s is not a domain I can allow (%s).", notify.Code(req.Args[1], 80), notify.Prose(cleanErr(err), 200))
	}
	if ps, _ := publicsuffix.PublicSuffix(domain); ps == domain {
		return userErr("%s is not a domain I can allow: it is a public suffix, which would allow every site under it.", notify.Code(domain, 120))
	}
	change := map[string]string{"add": "added", "remove": "removed"}[verb]
	out := s.settingEvent(req, "allowlist", change, domain)
	if verb == "add" {
		if err := s.State.Allow(domain, req.User, out...); err != nil {
			return err
		}
	} else {
		found, err := s.State.Disallow(domain, out...)
		if err != nil {
			return err
		}
		if !found {
			return userErr("%s is not on the runtime allowlist.", notify.Code(domain, 120))
		}
	}
	s.settings().LoadAllowlist()
	s.emitSetting(ctx, req, "allowlist", change, domain, out)
	if verb == "add" {
		return s.respond(ctx, req, fmt.Sprintf("Links to %s and its subdomains are no longer sent for scanning.", notify.Code(domain, 120)))
	}
	return s.respond(ctx, req, fmt.Sprintf("%s was removed from the allowlist; its links are scanned again.", notify.Code(domain, 120)))
}

// serviceErr turns a service failure into an answer.
func serviceErr(service string, err error, id string) error {
	var le *scan.LookupError
	switch {
	case !errors.As(err, &le):
	case le.NotFound:
		return userErr("The %s has no task %s.", service, notify.Code(id, 40))
	case le.Message != "":
		return userErr("The %s said: %s.", service, notify.Prose(le.Message, 300))
	case le.Throttled():
		return userErr("The %s is rate limiting us; try again in a minute.", service)
	case le.KeyRefused():
		return userErr("The %s refused our API key; tell the bot's operators.", service)
	}
	return userErr("The %s could not be reached; try again later.", service)
}

// vendorWord is a service's short field (a status, a file type, a
// timestamp) for mrkdwn: escaped prose, "—" when empty.
func vendorWord(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return notify.Prose(s, 80)
}

// historyOf returns the verdicts and reports recorded for target that sc
// may see: nothing when target was not shown on a card sc sees (shown:
// the caller knows it was, from a task on such a card), else its
// verdicts and the reports made on cards sc sees.
func (s *Scan) historyOf(sc *Scope, target string, shown bool) ([]store.Verdict, []store.Report, error) {
	if !shown {
		ok, err := s.targetVisible(sc, target)
		if err != nil || !ok {
			return nil, nil, err
		}
	}
	hist, err := s.State.History(target)
	if err != nil {
		return nil, nil, err
	}
	reports, err := s.State.Reports(target)
	if err != nil {
		return nil, nil, err
	}
	if !sc.All() {
		v := s.visibility(sc)
		var keep []store.Report
		for _, r := range reports {
			ok, err := v.ref(r.Card)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				keep = append(keep, r)
			}
		}
		reports = keep
	}
	return hist, reports, nil
}

// scopeOf returns what req's asker may see, or the answer to give when
// Slack could not tell (fail closed; Membership logs why).
func (s *Scan) scopeOf(ctx context.Context, req *Request) (*Scope, error) {
	sc, err := s.Access.Scope(ctx, req.User)
	if err != nil {
		return nil, &UserError{Text: AccessUnknownText}
	}
	return sc, nil
}

// visibility answers, for one scope, whether records are in it, reading
// each direct message's card once.
type visibility struct {
	sc    *Scope
	state State
	dm    map[card.Ref]bool
}

func (s *Scan) visibility(sc *Scope) *visibility {
	return &visibility{sc: sc, state: s.State, dm: map[card.Ref]bool{}}
}

// ref reports whether the card at ref is in the scope: its channel is, or
// it is in a direct message whose person is the scope's.
func (v *visibility) ref(ref card.Ref) (bool, error) {
	if v.sc.Channel(ref.Channel) {
		return true, nil
	}
	if !isDirect(ref.Channel) {
		return false, nil
	}
	if ok, seen := v.dm[ref]; seen {
		return ok, nil
	}
	rec, err := v.state.Card(ref)
	if errors.Is(err, store.ErrNotFound) {
		v.dm[ref] = false
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ok := v.sc.Card(&rec.Card)
	v.dm[ref] = ok
	return ok, nil
}

// targetVisible reports whether target (a URL or a file's SHA-256) was
// shown on a card sc sees.
func (s *Scan) targetVisible(sc *Scope, target string) (bool, error) {
	if sc.All() {
		return true, nil
	}
	tg, err := s.State.Target(target)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	v := s.visibility(sc)
	for _, ref := range tg.Cards {
		if ok, err := v.ref(ref); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// taskVisible reports whether a task is on a card sc sees, or is an
// analysis of a target shown on one (a recheck's task).
func (s *Scan) taskVisible(sc *Scope, taskID string) (bool, error) {
	if sc.All() {
		return true, nil
	}
	cards, err := s.State.CardsOfTask(taskID)
	if err != nil {
		return false, err
	}
	for _, rec := range cards {
		if sc.Card(&rec.Card) {
			return true, nil
		}
	}
	target, err := s.State.TargetOfTask(taskID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return s.targetVisible(sc, target)
}
