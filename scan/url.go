// Package scan is the analysis pipeline: it reuses a fresh verdict for the
// same target, joins an analysis already in flight (one submission per
// target, however many messages carry it), submits, polls with adaptive
// backoff, reads the result and turns scores into a level; the recheck job
// checks recorded verdicts again on their schedule. It reaches the services
// only through their clients (packages reputation and sandbox), whose
// context options set the lane each request waits in for the budgets
// (WithPriority: new work before resumed analyses and rechecks) and whom it
// is made for (WithFlows). What it remembers across restarts and replicas
// is behind Memory and the recheck's interfaces; package scan/scanstore
// keeps it in the state layer. It knows no Slack: a shared file reaches it
// through a Fetcher (package slackfile's).
package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/verdict"
)

// Reputation is what the pipeline needs of the URL service client
// (*reputation.Client implements it).
type Reputation interface {
	Scan(ctx context.Context, rawURL string) (*reputation.Submission, error)
	Wait(ctx context.Context, taskID string, o reputation.WaitOptions) (reputation.Status, error)
	Result(ctx context.Context, taskID string) (*reputation.Result, error)
	Detail(ctx context.Context, taskID string) (json.RawMessage, error)
	SearchTaskID(ctx context.Context, rawURL string) (string, error)
	Status(ctx context.Context, taskID string) (reputation.Status, error)
	Report(ctx context.Context, taskID string, verdictType reputation.Category, option reputation.ReportOption) error
}

// URLVerdict is the outcome of checking one URL.
type URLVerdict struct {
	URL      string
	TaskID   string
	Level    verdict.Level
	Category verdict.Category // decided the level (top category when clean)
	Scores   verdict.Scores   // 0–1
	// Title and FinalURL come from the detail, when it was read (for
	// suspicious and malicious URLs) and when it has them.
	Title, FinalURL string
	// Problem is a user-safe sentence when Level is Unknown; Err the cause.
	Problem string
	Err     error
	// Cached is true when this verdict was reused rather than analysed for
	// this request.
	Cached    bool
	CheckedAt time.Time
	// Polls is how many status calls the analysis made (0 if it never got
	// to polling; a cached verdict keeps its analysis's count).
	Polls int
}

// Memory makes a pipeline durable across restarts: V is URLVerdict for
// the URL pipeline (key: the normalised URL) and FileVerdict for the file
// pipeline (key: the file's sha256). The card lifecycle implements it over
// the store. All methods must be safe for concurrent use.
type Memory[V any] interface {
	// Recall returns a verdict for key recorded within ttl.
	Recall(key string, ttl time.Duration) (V, bool)
	// InFlight returns the task of an earlier submission of key whose
	// verdict is not known yet (it is resumed, not submitted again). A
	// record with an empty taskID is an intent: a submission was about to
	// be sent when the process stopped, and may or may not have arrived.
	// A file submission that made several tasks is recorded as their ids
	// joined with ",".
	InFlight(key string) (taskID string, ok bool)
	// Submitting records the intent to submit key, before the request.
	Submitting(key string)
	// Submitted records a new submission (its task id(s)).
	Submitted(key, taskID string)
	// LastTask returns the task of key's last recorded verdict ("" if none).
	LastTask(key string) string
	// Finished records the verdict of an analysis and forgets its
	// submission; source is "scan", "recheck" or (URLs) "deferred" (see
	// CheckOptions.Deferred). A verdict with Err set is a failure (record
	// it or not).
	Finished(v V, source string)
}

// URLOptions configures the URL side of the pipeline.
type URLOptions struct {
	// TTL is how long a verdict is reused (VERDICTBOT_VERDICT_TTL, default 1h).
	TTL time.Duration
	// Thresholds turn scores into a level.
	Thresholds verdict.Thresholds
	// Wait tunes polling (deadline, schedule). Without a Backoff or
	// Schedule, the pipeline polls on a schedule that learns from its own
	// analyses how long the service takes (see LearnedSchedule).
	Wait reputation.WaitOptions
	// MaxConcurrent bounds analyses in flight at once (default 64); the
	// others wait, shown as "queued". One requester holds at most half of
	// them, and a slot that frees goes to the waiter whose requesters hold
	// the fewest (see slots).
	MaxConcurrent int
	// Allowance, if set, is asked before each submission, for its
	// requesters (VERDICTBOT_USER_LINKS_PER_HOUR): an analysis none of
	// whose requesters has one left is not submitted; its verdict is
	// Unknown with ErrOverAllowance and OverAllowanceProblem.
	Allowance Allowance
	// OnSubmitted is called once a task exists for a URL, so it can be
	// recorded durably (and resumed after a restart).
	OnSubmitted func(url, taskID string)
	// OnDone is called with every fresh (non-cached) verdict.
	OnDone func(URLVerdict)
	// OnLearned, if set, is called with every duration the learned
	// schedule learns (an analysis this process submitted, from submission
	// to completion), so that it can be kept (scanstore.Durations). It must
	// not block.
	OnLearned func(time.Duration)
	// Memory, if set, keeps submissions and verdicts across restarts.
	Memory Memory[URLVerdict]
	// Hosts, if set, is asked right before a URL is submitted whether its
	// host leads only inside the network (*links.HostResolver: every
	// address it resolves to is private or special). Such a URL is never
	// submitted: its verdict is verdict.Skipped with the reason as
	// Problem, and it is neither cached nor recorded as a verdict.
	Hosts  HostGate
	Logger *slog.Logger
	Now    func() time.Time
}

// InternalHostProblem is the Problem of a URL not submitted because its
// host leads only inside the network: links.ReasonResolvesPrivate.Text(),
// repeated here so that scan does not link the Slack message parser
// (TestInternalHostProblemIsTheLinksReason keeps the two equal).
const InternalHostProblem = "resolves to a private address"

// HostGate decides whether a URL's host is internal by resolving it
// (*links.HostResolver implements it). It must fail open: a lookup that
// fails says "not internal".
type HostGate interface {
	CheckURL(ctx context.Context, url string) (detail string, internal bool)
}

// URLs checks URLs against the reputation service.
type URLs struct {
	rep   Reputation
	opt   URLOptions
	cache *gocache.Cache
	sem   *slots
	// resumeSem bounds analyses resumed after a restart (a quarter of
	// MaxConcurrent, at least 4), apart from new submissions.
	resumeSem chan struct{}
	log       *slog.Logger

	root   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*urlCall

	learned *reputation.LearnedSchedule // nil: opt.Wait has a fixed schedule
}

type urlCall struct {
	done chan struct{}
	v    URLVerdict
	// who the analysis is for: whoever started it, then whoever joined.
	who *requesters
	// deliver orders the words each subscriber gets: the current one when
	// it subscribes, then every change, never one overtaking another.
	deliver sync.Mutex
	mu      sync.Mutex
	status  string
	subs    []func(string)
}

func (c *urlCall) setStatus(s string) {
	c.deliver.Lock()
	defer c.deliver.Unlock()
	c.mu.Lock()
	c.status = s
	subs := append([]func(string){}, c.subs...)
	c.mu.Unlock()
	for _, f := range subs {
		f(s)
	}
}

// subscribe adds f (if not nil) and gives it the current status at once,
// in order with the changes (as fileCall.subscribe).
func (c *urlCall) subscribe(f func(string)) {
	if f == nil {
		return
	}
	c.deliver.Lock()
	defer c.deliver.Unlock()
	c.mu.Lock()
	c.subs = append(c.subs, f)
	st := c.status
	c.mu.Unlock()
	f(st)
}

// NewURLs returns the URL pipeline. Analyses run on their own context,
// detached from the requests that started them (another message may be
// waiting for the same URL); Close cancels them and waits.
func NewURLs(rep Reputation, opt URLOptions) *URLs {
	if opt.TTL <= 0 {
		opt.TTL = time.Hour
	}
	if opt.Thresholds == nil {
		opt.Thresholds = verdict.DefaultThresholds()
	}
	if opt.MaxConcurrent <= 0 {
		opt.MaxConcurrent = 64
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	learned := learnedSchedule(&opt.Wait)
	root, cancel := context.WithCancel(context.Background())
	return &URLs{
		learned: learned,
		rep:     rep, opt: opt, log: opt.Logger,
		cache:     gocache.New(opt.TTL, opt.TTL),
		sem:       newSlots(opt.MaxConcurrent),
		resumeSem: make(chan struct{}, max(4, opt.MaxConcurrent/4)),
		root:      root,
		cancel:    cancel,
		inflight:  map[string]*urlCall{},
	}
}

// Close stops every analysis in flight and waits for them.
func (u *URLs) Close() {
	u.cancel()
	u.wg.Wait()
}

// CheckOptions tunes one Check.
type CheckOptions struct {
	// Fresh skips the cache (a recheck) but still joins an analysis in flight.
	Fresh bool
	// OnStatus receives progress words ("queued", "submitted", "pending",
	// "processing", …) while the analysis runs.
	OnStatus func(status string)
	// TaskID resumes an analysis submitted earlier (after a restart)
	// instead of submitting a new one.
	TaskID string
	// Recheck marks a scheduled recheck (recorded as such); it implies Fresh.
	Recheck bool
	// Deferred marks the check of a URL that was not sent earlier because
	// its requesters had used their Allowance, made later by the recheck
	// (see Recheck): a verdict within the TTL is reused (it costs nothing),
	// otherwise the analysis waits behind new links for the service's
	// budgets (Low priority) and is recorded as the URL's first scan
	// (source "deferred": its recheck schedule starts from it). It is made
	// for nobody in particular (For is ignored): no allowance is asked.
	Deferred bool
	// For is who asks (zero: nobody in particular). A new analysis waits
	// for the service's budgets in For's turn; a check that joins an
	// analysis in flight adds For to it, and the analysis's requests then
	// wait in whichever of its requesters' turns comes first (an analysis
	// is one, however many ask; the first of them cannot hold the others
	// back). The Allowance is asked for For when a submission is made.
	For Requester
	// Background marks a check of a link read from a channel's history
	// (package backfill): nobody is waiting for it, so its analysis's
	// requests wait in the Low lane for the service's budgets, behind every
	// check someone is waiting for, until such a check joins it.
	Background bool
}

// Check returns the verdict for a normalised URL. It never returns an error:
// failures are a verdict of level Unknown with a user-safe Problem. If ctx
// ends first, the verdict says so, and the shared analysis carries on for
// whoever else waits for it (and for the cache).
func (u *URLs) Check(ctx context.Context, url string, o CheckOptions) URLVerdict {
	if o.Deferred {
		o.For = Requester{}
	}
	for {
		v := u.check(ctx, url, o)
		// A check for nobody in particular that joined an analysis its
		// requesters' allowance then refused was not refused itself (it
		// asks for no allowance): it starts its own.
		if !o.For.IsZero() || !errors.Is(v.Err, ErrOverAllowance) || ctx.Err() != nil {
			return v
		}
	}
}

func (u *URLs) check(ctx context.Context, url string, o CheckOptions) URLVerdict {
	if !o.Fresh && !o.Recheck && o.TaskID == "" {
		if v, ok := u.cache.Get(url); ok {
			cv := v.(URLVerdict)
			cv.Cached = true
			return cv
		}
		if u.opt.Memory != nil {
			if v, ok := u.opt.Memory.Recall(url, u.opt.TTL); ok {
				u.cache.SetDefault(url, v)
				v.Cached = true
				return v
			}
		}
	}
	u.mu.Lock()
	call, joined := u.inflight[url]
	if joined {
		added, ok := call.who.join(o.For, o.Background || o.Recheck || o.Deferred)
		if added {
			u.sem.poke() // the analysis may take a slot in the newcomer's share
		}
		// A refused analysis is not joined: the newcomer's own allowance
		// may pay for another.
		joined = ok
	}
	if !joined {
		call = &urlCall{done: make(chan struct{}), status: "queued", who: newRequesters(o.For)}
		call.who.background.Store(o.Background)
		u.inflight[url] = call
		u.wg.Add(1)
		source := "scan"
		switch {
		case o.Recheck:
			source = "recheck"
		case o.Deferred:
			source = "deferred"
		}
		go u.analyse(url, o.TaskID, source, call)
	}
	u.mu.Unlock()
	call.subscribe(o.OnStatus)

	select {
	case <-call.done:
		return call.v
	case <-ctx.Done():
		return URLVerdict{URL: url, Level: verdict.Unknown, Err: ctx.Err(), CheckedAt: u.opt.Now(),
			Problem: "the check was interrupted before it finished"}
	}
}

// InFlight returns how many URL analyses are running or queued.
func (u *URLs) InFlight() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.inflight)
}

// Forget drops a cached verdict (after a verdict report changed it).
func (u *URLs) Forget(url string) { u.cache.Delete(url) }

func (u *URLs) analyse(url, taskID, source string, call *urlCall) {
	defer u.wg.Done()
	v := u.run(url, taskID, source, call)
	v.CheckedAt = u.opt.Now()
	// A URL withheld because its host is internal was never analysed: no
	// verdict to reuse, record or count.
	withheld := v.Level == verdict.Skipped
	if v.Err == nil && !withheld {
		u.cache.SetDefault(url, v)
	}
	// An analysis cut short by shutdown stays "in flight" in the memory,
	// so the next process resumes it; any other end is recorded (one not
	// sent because its requesters used their allowance: the intent its
	// claim recorded is forgotten).
	// A verdict another replica analysed (Cached) is recorded already.
	if u.opt.Memory != nil && !withheld && !v.Cached && !(v.Err != nil && u.root.Err() != nil) {
		u.opt.Memory.Finished(v, source)
	}
	u.mu.Lock()
	if u.inflight[url] == call { // not a newer analysis that replaced a refused one
		delete(u.inflight, url)
	}
	call.v = v
	close(call.done)
	u.mu.Unlock()
	if u.opt.OnDone != nil && !withheld && !v.Cached && !errors.Is(v.Err, ErrOverAllowance) {
		u.opt.OnDone(v)
	}
}

func (u *URLs) run(url, taskID, source string, call *urlCall) URLVerdict {
	// Its requests wait for the budgets in its requesters' turns.
	ctx := reputation.WithFlows(u.root, call.who.flows)
	if source != "scan" {
		// Nobody is waiting for a scheduled recheck or a deferred check:
		// their requests wait behind new links and clicks for the
		// service's budgets.
		ctx = reputation.WithPriority(ctx, reputation.Low)
	} else {
		// A channel history's analysis waits in Low until someone
		// waiting for it joins.
		ctx = reputation.WithPriorityFunc(ctx, call.who.priority)
	}
	// An analysis known to be in flight (after a restart) only needs
	// polling: it waits for one of the resume slots, so that a backlog of
	// resumed analyses never holds the slots new links are submitted in.
	inFlight := taskID != ""
	if !inFlight && u.opt.Memory != nil {
		_, inFlight = u.opt.Memory.InFlight(url)
	}
	if !inFlight && u.opt.Hosts != nil {
		// Before any slot is taken or anything recorded: a lookup is
		// bounded by its own short timeout and cached per host.
		if detail, internal := u.opt.Hosts.CheckURL(ctx, url); internal {
			u.log.Info("not submitted: the host resolves only to private or special addresses", "detail", detail)
			return URLVerdict{URL: url, Level: verdict.Skipped, Problem: InternalHostProblem}
		}
	}
	if taskID == "" && u.opt.Memory != nil {
		// One replica submits each URL: another replica's analysis in
		// flight is waited for, not submitted again.
		c, err := claimOrFollow(ctx, u.opt.Memory, url, u.opt.TTL, source != "recheck", call.setStatus)
		if err != nil {
			return unknown(url, "", err)
		}
		if c.followed {
			c.v.Cached = true
			return c.v
		}
		if c.existed {
			inFlight = true
			id := c.taskID
			if id == "" {
				id = u.findLostSubmission(ctx, url)
			}
			if id != "" {
				taskID = id
				u.log.Info("resuming an analysis submitted earlier", "task_id", id)
			}
		}
	}
	if inFlight {
		// A resumed analysis is backlog: its polls wait behind new links'
		// for the report budget, so that a restart with many analyses in
		// flight does not delay the next new link's verdict.
		ctx = reputation.WithPriority(ctx, reputation.Low)
		select {
		case u.resumeSem <- struct{}{}:
			defer func() { <-u.resumeSem }()
		case <-ctx.Done():
			return unknown(url, "", ctx.Err())
		}
	} else {
		// About to submit: what the requesters may still send is counted
		// now (a cached verdict or a join never got here), before the slot
		// and the budget are waited for.
		if !call.who.allowed(ctx, u.opt.Allowance, reputation.ServiceName) {
			u.log.Info("URL not submitted: its requesters used their allowance for the hour")
			return URLVerdict{URL: url, Level: verdict.Unknown, Err: ErrOverAllowance, Problem: OverAllowanceProblem}
		}
		release, err := u.sem.acquire(ctx, call.who.keys)
		if err != nil {
			return unknown(url, "", err)
		}
		defer release()
	}
	resumed := taskID != ""
	if !resumed {
		call.setStatus("submitting")
		sub, err := u.rep.Scan(ctx, url)
		if err != nil {
			u.log.Warn("URL scan submission failed", "error", err, "reason", reputation.ReasonOf(err))
			return unknown(url, "", err)
		}
		taskID = sub.TaskID
		if u.opt.Memory != nil {
			u.opt.Memory.Submitted(url, taskID)
		}
		if u.opt.OnSubmitted != nil {
			u.opt.OnSubmitted(url, taskID)
		}
	}
	call.setStatus("submitted")
	polls, learn, err := u.wait(ctx, taskID, !resumed, call)
	if err != nil {
		v := unknown(url, taskID, err)
		v.Polls = polls
		return v
	}
	res, err := u.rep.Result(ctx, taskID)
	learn()
	if err != nil {
		v := unknown(url, taskID, err)
		v.Polls = polls
		return v
	}
	n := res.Verdict.Normalized()
	scores := verdict.Scores{
		verdict.CatPhishing: n.Phishing, verdict.CatAdvertising: n.Advertising,
		verdict.CatMalicious: n.Malicious, verdict.CatIllegal: n.Illegal,
	}
	level, cat := u.opt.Thresholds.Level(scores)
	v := URLVerdict{URL: url, TaskID: taskID, Level: level, Category: cat, Scores: scores, Polls: polls}
	if level.NeedsAttention() {
		// The detail helps an analyst (page title, where it redirects); it
		// is optional, so a failure here does not spoil the verdict.
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		if raw, err := u.rep.Detail(dctx, taskID); err == nil {
			v.Title, v.FinalURL = detailSummary(raw)
		}
		cancel()
	}
	return v
}

// findLostSubmission resolves an intent left by a process that stopped
// while submitting url: the service's "search task id" names the latest task
// for the URL; if it is not the task we already knew, it is the submission
// that arrived, and it is resumed instead of submitting the URL again.
func (u *URLs) findLostSubmission(ctx context.Context, url string) string {
	id, err := u.rep.SearchTaskID(ctx, url)
	if err != nil {
		if !errors.Is(err, reputation.ErrTaskNotFound) {
			u.log.Warn("could not look for a submission lost in a restart; submitting again", "error", err)
		}
		return ""
	}
	if id == u.opt.Memory.LastTask(url) {
		return "" // the latest task is an older analysis: ours never arrived
	}
	return id
}

// detailSummary picks the page title and final URL out of a detail object
// whose shape is not documented; absent members are simply left empty.
func detailSummary(raw json.RawMessage) (title, finalURL string) {
	var d map[string]any
	if json.Unmarshal(raw, &d) != nil {
		return "", ""
	}
	for _, k := range []string{"page_title", "title"} {
		if s, ok := d[k].(string); ok && s != "" {
			title = s
			break
		}
	}
	for _, k := range []string{"final_url", "landing_url"} {
		if s, ok := d[k].(string); ok && s != "" {
			finalURL = s
			break
		}
	}
	return title, finalURL
}

func unknown(url, taskID string, err error) URLVerdict {
	return URLVerdict{URL: url, TaskID: taskID, Level: verdict.Unknown, Err: err, Problem: Problem("URL service", err)}
}

// Problem turns an error from a service client into a sentence that is safe
// to show in Slack: no URL, no key, no stack.
func Problem(service string, err error) string {
	var tf *reputation.TaskFailedError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &tf):
		return fmt.Sprintf("the %s could not analyse it (status %q)", service, tf.Status)
	case errors.Is(err, reputation.ErrDeadline), errors.Is(err, sandbox.ErrDeadline):
		return fmt.Sprintf("the %s did not finish in time", service)
	}
	if msg, ok := serviceMessage(err); ok {
		return fmt.Sprintf("the %s said: %s", service, msg)
	}
	switch reputation.Reason(reasonOf(err)) {
	case reputation.ReasonRateLimited:
		return fmt.Sprintf("the %s is rate limiting us; try again later", service)
	case reputation.ReasonQuota:
		return fmt.Sprintf("our %s quota is used up", service)
	case reputation.ReasonAuth:
		return fmt.Sprintf("the %s refused our key", service)
	case reputation.ReasonServer, reputation.ReasonBadBody:
		return fmt.Sprintf("the %s answered with an error", service)
	case reputation.ReasonTimeout:
		return fmt.Sprintf("the %s did not answer in time", service)
	case reputation.ReasonCanceled:
		return "the check was stopped (the bot is shutting down)"
	}
	return fmt.Sprintf("the %s could not be reached", service)
}
