package scan

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"

	"github.com/verdictbot/verdictbot/internal/bytesize"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/verdict"
)

// SandboxAPI is what the file pipeline needs of the sandbox client
// (*sandbox.Client implements it).
type SandboxAPI interface {
	CreateFile(ctx context.Context, name string, r io.Reader) (*sandbox.Submission, error)
	FileView(ctx context.Context, hash string) (*sandbox.File, error)
	SearchTasks(ctx context.Context, hash string) ([]sandbox.Task, error)
	TaskInfo(ctx context.Context, taskID string) (*sandbox.Task, error)
	Status(ctx context.Context, taskID string) (sandbox.Status, error)
	Wait(ctx context.Context, taskID string, o sandbox.WaitOptions) (sandbox.Status, error)
	SimpleReport(ctx context.Context, taskID string) (*sandbox.Report, error)
	Screenshots(ctx context.Context, taskID string, max int) ([]sandbox.Image, error)
}

var _ SandboxAPI = (*sandbox.Client)(nil)

// FileRef is what the pipeline needs to know of a file to check, as its
// source describes it; the Fetcher reads its content.
type FileRef struct {
	ID       string // the source's id of the file: checks of one id are shared
	Name     string
	Filetype string // the source's short type: "pdf", "zip", "html"…
	Mimetype string
	Size     int64 // bytes, as the source reports it
	// External is set when the source only links to a file kept by another
	// service: it cannot be fetched.
	External bool
	// Source is where the Fetcher reads the content (a download URL, a
	// path).
	Source string
}

// Progress words a file check reports through FileCheckOptions.OnStatus,
// before the sandbox's own statuses (pending, running, completed,
// reporting, reported, or any other the service sends).
const (
	FileQueued      = "queued"      // waiting for a download slot
	FileDownloading = "downloading" // fetching the file and hashing
	FileLookingUp   = "looking up"  // asking the sandbox whether it knows the hash
	FileUploading   = "uploading"   // sending the file to the sandbox
	FileSubmitted   = "submitted"   // the sandbox has the file; polling starts
)

// FileVerdict is the outcome of checking one file.
type FileVerdict struct {
	// FileID, Name and Type (the FileRef's Filetype) are the request's: a
	// verdict shared by several files carries each caller's own.
	FileID, Name, Type string
	// Size is the fetched size (the FileRef's when the file was not fetched).
	Size              int64
	SHA256, MD5, SHA1 string
	// Magic is the sandbox's description of the file type ("PE32
	// executable …"), when it gave one.
	Magic string
	// TaskID is the sandbox task the verdict comes from. TaskIDs lists
	// every task of the submission when the sandbox made several (it
	// unpacks some archives); the verdict is then the worst of them.
	TaskID  string
	TaskIDs []string
	Level   verdict.Level
	// MalScore (0–10) and Family come from the simple report.
	MalScore float64
	Family   string
	// AddedOn, StartedOn, CompletedOn are the task's timestamps as the
	// sandbox wrote them (zone undocumented: show them, never compute with
	// them); empty when unknown.
	AddedOn, StartedOn, CompletedOn string
	// Reused is true when the sandbox already had a task for this file and
	// nothing was uploaded.
	Reused bool
	// Cached is true when this verdict was reused from an earlier check.
	Cached bool
	// Problem is a user-safe sentence when Level is Skipped (why it was
	// not checked) or Unknown (why it could not be); Err is the cause of
	// an Unknown.
	Problem string
	Err     error
	// Polls is how many successful status polls the analysis made.
	Polls     int
	CheckedAt time.Time
}

// FileOptions configures the file side of the pipeline.
type FileOptions struct {
	// MaxBytes is the largest file checked (VERDICTBOT_MAX_FILE_BYTES,
	// default DefaultMaxFileBytes).
	MaxBytes int64
	// MaxScreenshots is how many screenshots Screenshots reads
	// (VERDICTBOT_MAX_SCREENSHOTS; 0 means DefaultMaxScreenshots, negative
	// none).
	MaxScreenshots int
	// ScreenshotTimeout bounds one Screenshots call, every request of it
	// (VERDICTBOT_SCREENSHOT_TIMEOUT; 0 means DefaultScreenshotTimeout).
	ScreenshotTimeout time.Duration
	// TTL is how long a verdict is reused for the same sha256 (default
	// 24h: a file's content does not change).
	TTL time.Duration
	// Wait tunes polling; its Deadline is VERDICTBOT_SANDBOX_DEADLINE
	// (zero: sandbox.DefaultWaitDeadline, 45 min; backoff: from 1s
	// doubling to 60s). Its OnStatus is called too.
	Wait sandbox.WaitOptions
	// TempDir holds the downloaded files ("" means os.TempDir()).
	TempDir string
	// SkipTypes are filetypes (or, with a "/", mimetypes; "image/*"
	// matches a family) that are not checked (the fetcher's own kinds of
	// non-file, e.g. slackfile.DefaultSkipTypes); none by default.
	SkipTypes []string
	// MaxDownloads bounds the files being downloaded or uploaded at once,
	// and so the temporary files on disk (default 4); the others wait,
	// shown as "queued". Waiting for the sandbox takes no slot. One
	// requester holds at most half of them (see slots).
	MaxDownloads int
	// Allowance, if set, is asked before each upload, for its requesters
	// (see URLOptions.Allowance): a file none of whose requesters has one
	// left is not uploaded; its verdict is Unknown with ErrOverAllowance
	// and OverAllowanceFileProblem. A file the sandbox already knows is
	// not counted.
	Allowance Allowance
	// DownloadRetries is how many times a fetch that failed for a
	// transient reason (FetchError.Retryable: network, 5xx or 429) is tried
	// again (default 2; negative: never); RetryDelay is the first pause
	// (default 1s, doubling; a longer RetryWait is honoured up to 30s).
	DownloadRetries int
	RetryDelay      time.Duration
	// Memory, if set, keeps uploads and verdicts across restarts (key:
	// the sha256; the store records them as service "sandbox", verdict
	// Kind "file").
	Memory Memory[FileVerdict]
	// OnSubmitted is called once a task exists for a file.
	OnSubmitted func(sha256, taskID string)
	// OnDone is called with every fresh (non-cached) verdict of a hash.
	OnDone func(FileVerdict)
	// OnLearned is URLOptions.OnLearned for the sandbox's durations.
	OnLearned func(time.Duration)
	Logger    *slog.Logger
	Now       func() time.Time
}

// FileCheckOptions tunes one Check.
type FileCheckOptions struct {
	// Fresh skips the bot's caches (by file id and by hash, in memory
	// and in the Memory) but still joins an analysis in flight; a task the
	// sandbox already reported for the hash is still reused.
	Fresh bool
	// OnStatus receives progress words (FileQueued … FileSubmitted, then
	// the sandbox's statuses as they change) while the check runs: the
	// current one at once, then each change, in order. It is called from
	// the analysis's goroutine: keep it quick (hand slow work off) and do
	// not call back into Files from it.
	OnStatus func(status string)
	// For is who asks (zero: nobody in particular); see
	// CheckOptions.For. A check that joins a check in flight (the same
	// file, or another file with the same content) adds For to it.
	For Requester
	// Background marks a check of a file read from a channel's history
	// (see CheckOptions.Background): its sandbox requests wait in the Low
	// lane until a check someone waits for joins it.
	Background bool
}

// Files checks files with the sandbox: fetch into a private temporary file
// while hashing, reuse what the sandbox already knows
// of the hash, otherwise upload once, poll, and read the verdict. Analyses
// run on their own context, detached from the requests that started them;
// Close cancels them and waits.
type Files struct {
	sb      SandboxAPI
	fetcher Fetcher
	opt     FileOptions
	log     *slog.Logger

	verdicts *gocache.Cache // sha256 → FileVerdict
	byID     *gocache.Cache // file id → sha256
	slots    *slots
	learned  *sandbox.LearnedSchedule // nil: opt.Wait has a fixed schedule

	root   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	files  map[string]*fileCall // by file id
	hashes map[string]*fileCall // by sha256
}

// fileCall is one check in flight that others may join. Its subscribers
// see its statuses in order: delivery is serialised by deliver.
type fileCall struct {
	done chan struct{}
	v    FileVerdict
	// who the check is for: whoever started it, then whoever joined (a
	// hash's analysis shares the set of the file check that started it).
	who     *requesters
	deliver sync.Mutex
	mu      sync.Mutex
	status  string
	subs    []func(string)
}

func newFileCall(status string, who *requesters) *fileCall {
	return &fileCall{done: make(chan struct{}), status: status, who: who}
}

func (c *fileCall) setStatus(s string) {
	c.deliver.Lock()
	defer c.deliver.Unlock()
	c.mu.Lock()
	if s == c.status {
		c.mu.Unlock()
		return
	}
	c.status = s
	subs := slices.Clone(c.subs)
	c.mu.Unlock()
	for _, f := range subs {
		f(s)
	}
}

// subscribe adds f (if not nil) and gives it the current status at once.
func (c *fileCall) subscribe(f func(string)) {
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

// NewFiles returns the file pipeline, reading files with fetcher.
func NewFiles(sb SandboxAPI, fetcher Fetcher, opt FileOptions) *Files {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxFileBytes
	}
	switch {
	case opt.MaxScreenshots == 0:
		opt.MaxScreenshots = DefaultMaxScreenshots
	case opt.MaxScreenshots < 0:
		opt.MaxScreenshots = 0
	}
	if opt.ScreenshotTimeout <= 0 {
		opt.ScreenshotTimeout = DefaultScreenshotTimeout
	}
	if opt.TTL <= 0 {
		opt.TTL = 24 * time.Hour
	}
	// Without a fixed schedule the sandbox is polled on one that learns
	// how long its tasks take and watches their statuses
	// (sandbox.NewLearnedSchedule); this pipeline feeds it.
	var learned *sandbox.LearnedSchedule
	if opt.Wait.Schedule == nil && opt.Wait.Backoff == (sandbox.Backoff{}) {
		learned = sandbox.NewLearnedSchedule()
		opt.Wait.Schedule = learned
	} else if l, ok := opt.Wait.Schedule.(*sandbox.LearnedSchedule); ok {
		learned = l
	}
	if opt.MaxDownloads <= 0 {
		opt.MaxDownloads = 4
	}
	switch {
	case opt.DownloadRetries == 0:
		opt.DownloadRetries = 2
	case opt.DownloadRetries < 0:
		opt.DownloadRetries = 0
	}
	if opt.RetryDelay <= 0 {
		opt.RetryDelay = time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	root, cancel := context.WithCancel(context.Background())
	return &Files{
		sb: sb, fetcher: fetcher, opt: opt, log: opt.Logger,
		verdicts: gocache.New(opt.TTL, opt.TTL),
		byID:     gocache.New(opt.TTL, opt.TTL),
		slots:    newSlots(opt.MaxDownloads),
		learned:  learned,
		root:     root, cancel: cancel,
		files:  map[string]*fileCall{},
		hashes: map[string]*fileCall{},
	}
}

// Close stops every check in flight, removes their temporary files and
// waits for them. An analysis cut short stays in flight in the Memory, to
// be resumed by the next process.
func (f *Files) Close() {
	f.cancel()
	f.wg.Wait()
}

// InFlight returns how many files are being checked (by file id) and how
// many hashes are being analysed.
func (f *Files) InFlight() (files, hashes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.files), len(f.hashes)
}

// Forget drops the cached verdict of a hash (after a verdict report).
func (f *Files) Forget(sha256 string) { f.verdicts.Delete(strings.ToLower(sha256)) }

// MaxBytes returns the size limit in force.
func (f *Files) MaxBytes() int64 { return f.opt.MaxBytes }

// Precheck returns why ref is not checked, as a sentence to show the user
// ("it is larger than the 30 MB limit (45.2 MB)"), or "" when it is. It
// sends nothing: external files, files over the limit by the source's
// size, file types in FileOptions.SkipTypes and files without a Source are
// skipped (the Fetcher words why an external or sourceless file cannot be
// fetched).
func (f *Files) Precheck(ref FileRef) string {
	switch {
	case ref.External:
		return f.unfetchable(ref)
	case ref.Size > f.opt.MaxBytes:
		return fmt.Sprintf("it is larger than the %s limit (%s)", bytesize.Format(f.opt.MaxBytes), bytesize.Format(ref.Size))
	case f.skipType(ref):
		t := cmp.Or(ref.Filetype, ref.Mimetype)
		return fmt.Sprintf("files of type %q are not checked", t)
	case strings.TrimSpace(ref.Source) == "":
		return f.unfetchable(ref)
	}
	return ""
}

func (f *Files) unfetchable(ref FileRef) string {
	return cmp.Or(f.fetcher.Unfetchable(ref), "the bot cannot fetch it")
}

func (f *Files) skipType(ref FileRef) bool {
	ft := strings.ToLower(strings.TrimSpace(ref.Filetype))
	mt := strings.ToLower(strings.TrimSpace(ref.Mimetype))
	for _, s := range f.opt.SkipTypes {
		s = strings.ToLower(strings.TrimSpace(s))
		switch {
		case s == "":
		case strings.Contains(s, "/"):
			if fam, ok := strings.CutSuffix(s, "/*"); ok {
				if mt != "" && strings.HasPrefix(mt, fam+"/") {
					return true
				}
			} else if mt == s {
				return true
			}
		case ft == s:
			return true
		}
	}
	return false
}

// Check returns the verdict for a file. It never returns an error:
// a file not checked on purpose is a verdict of level Skipped, a failure one
// of level Unknown, each with a user-safe Problem. If ctx ends first, the
// verdict says so and the shared analysis carries on for whoever else
// waits for it (and for the cache).
func (f *Files) Check(ctx context.Context, ref FileRef, o FileCheckOptions) FileVerdict {
	if reason := f.Precheck(ref); reason != "" {
		return f.skipped(FileVerdict{}, reason).forRef(ref)
	}
	key := ref.ID
	if key == "" {
		key = "url:" + ref.Source
	}
	if !o.Fresh {
		if sha, ok := f.byID.Get(key); ok {
			if v, ok := f.cached(sha.(string)); ok {
				return v.forRef(ref)
			}
		}
	}
	f.mu.Lock()
	call, joined := f.files[key]
	if joined {
		added, ok := call.who.join(o.For, o.Background)
		if added {
			f.slots.poke() // the check may take a slot in the newcomer's share
		}
		joined = ok // a refused check is not joined (see URLs.Check)
	}
	if !joined {
		call = newFileCall(FileQueued, newRequesters(o.For))
		call.who.background.Store(o.Background)
		f.files[key] = call
		f.wg.Add(1)
	}
	f.mu.Unlock()
	// Subscribe before the work starts, so the first status is seen.
	call.subscribe(o.OnStatus)
	if !joined {
		go f.runFile(key, ref, o.Fresh, call)
	}
	select {
	case <-call.done:
		return call.v.forRef(ref)
	case <-ctx.Done():
		return f.interrupted(FileVerdict{}, ctx.Err()).forRef(ref)
	}
}

// Resume finishes the analysis of a file known only by its sha256 (a
// restart found it in flight in the Memory), without downloading or
// uploading it: the task recorded is polled; an intent without a task is
// resolved with the sandbox's task search. If there is nothing to resume
// and the sandbox has no task for the hash, the verdict is Unknown (check
// the file again to upload it).
func (f *Files) Resume(ctx context.Context, sha256 string, o FileCheckOptions) FileVerdict {
	sha := strings.ToLower(strings.TrimSpace(sha256))
	if !isSHA256(sha) {
		return FileVerdict{SHA256: sha256, Level: verdict.Unknown, Err: errors.New("scan: Resume: not a sha256"),
			Problem: "the file's fingerprint is not valid", CheckedAt: f.opt.Now()}
	}
	call := f.startHash(sha, nil, nil, "", o.OnStatus, newRequesters(Requester{}))
	select {
	case <-call.done:
		return call.v
	case <-ctx.Done():
		return f.interrupted(FileVerdict{SHA256: sha}, ctx.Err())
	}
}

func (f *Files) runFile(key string, ref FileRef, fresh bool, call *fileCall) {
	defer f.wg.Done()
	v := f.fileVerdict(ref, fresh, call)
	if v.CheckedAt.IsZero() {
		v.CheckedAt = f.opt.Now()
	}
	if v.SHA256 != "" && v.Err == nil && v.Level != verdict.Skipped {
		f.byID.SetDefault(key, v.SHA256)
	}
	f.mu.Lock()
	if f.files[key] == call {
		delete(f.files, key)
	}
	call.v = v
	close(call.done)
	f.mu.Unlock()
}

// fileVerdict downloads and hashes the file, then reuses a verdict for its
// hash or joins (or starts) the analysis of the hash.
func (f *Files) fileVerdict(ref FileRef, fresh bool, call *fileCall) FileVerdict {
	ctx := f.root
	release, err := f.slots.acquire(ctx, call.who.keys)
	if err != nil {
		return f.interrupted(FileVerdict{}, err)
	}
	defer release()
	call.setStatus(FileDownloading)
	tf, err := f.fetch(ctx, ref)
	if err != nil {
		return f.downloadFailed(err)
	}
	defer tf.remove()
	base := FileVerdict{SHA256: tf.sha256, MD5: tf.md5, SHA1: tf.sha1, Size: tf.size}
	if tf.size == 0 {
		return f.skipped(base, "it is empty")
	}
	if !fresh {
		if v, ok := f.cached(tf.sha256); ok {
			return v.withHashes(base)
		}
	}
	hc := f.startHash(tf.sha256, tf, release, uploadName(ref), call.setStatus, call.who)
	<-hc.done
	return hc.v.withHashes(base)
}

// startHash joins the analysis of sha in flight, or starts one that owns tf
// and release (the download slot), and subscribes forward to its progress.
// A joining caller's tf and slot are given back at once, and its
// requesters (who) join the analysis's; a new analysis shares who.
func (f *Files) startHash(sha string, tf *tempFile, release func(), name string, forward func(string), who *requesters) *fileCall {
	f.mu.Lock()
	call, joined := f.hashes[sha]
	if joined && call.who.isSealed() {
		joined = false // refused: this file's requesters start another
	}
	if joined && call.who != who {
		for _, r := range who.all() {
			if _, ok := call.who.add(r); !ok {
				joined = false // refused: this file's requesters start another
				break
			}
		}
		if joined && !who.background.Load() {
			call.who.background.Store(false) // someone waits for it now
		}
	}
	if !joined {
		call = newFileCall(FileLookingUp, who)
		f.hashes[sha] = call
		f.wg.Add(1)
	}
	f.mu.Unlock()
	call.subscribe(forward)
	if !joined {
		go f.runHash(sha, tf, release, name, call)
		return call
	}
	if tf != nil {
		tf.remove()
	}
	if release != nil {
		release()
	}
	return call
}

func (f *Files) runHash(sha string, tf *tempFile, release func(), name string, call *fileCall) {
	defer f.wg.Done()
	v := f.analyse(sha, tf, release, name, call)
	if tf != nil {
		tf.remove()
	}
	if release != nil {
		release()
	}
	v.CheckedAt = f.opt.Now()
	if v.Err == nil {
		f.verdicts.SetDefault(sha, v)
	}
	// An analysis cut short by shutdown stays in flight in the memory, so
	// the next process resumes it; any other end is recorded.
	// A verdict another replica analysed (Cached) is recorded already.
	if f.opt.Memory != nil && !v.Cached && !(v.Err != nil && f.root.Err() != nil) {
		f.opt.Memory.Finished(v, "scan")
	}
	f.mu.Lock()
	if f.hashes[sha] == call {
		delete(f.hashes, sha)
	}
	call.v = v
	close(call.done)
	f.mu.Unlock()
	if f.opt.OnDone != nil && !v.Cached && !errors.Is(v.Err, ErrOverAllowance) {
		f.opt.OnDone(v)
	}
}

// errNothingToResume: Resume found no task and has no file to upload.
var errNothingToResume = errors.New("no sandbox task to resume and no file to upload")

// analyse finds or makes the sandbox task(s) for sha and reads the verdict.
func (f *Files) analyse(sha string, tf *tempFile, release func(), name string, call *fileCall) FileVerdict {
	// Its requests wait for the budgets in its requesters' turns.
	ctx := sandbox.WithPriorityFunc(sandbox.WithFlows(f.root, call.who.flows), call.who.priority)
	v := FileVerdict{SHA256: sha}
	if tf != nil {
		v.MD5, v.SHA1, v.Size = tf.md5, tf.sha1, tf.size
	}
	done := func() { // the file is no longer needed
		if tf != nil {
			tf.remove()
		}
		if release != nil {
			release()
		}
	}
	var ids []string
	fresh := false // uploaded by this analysis: its wait teaches the schedule
	reported := map[string]bool{}
	if f.opt.Memory != nil {
		// One replica uploads each file: another replica's analysis in
		// flight is waited for, not uploaded again.
		c, err := claimOrFollow(ctx, f.opt.Memory, sha, f.opt.TTL, true, call.setStatus)
		if err != nil {
			done()
			return f.unknown(v, err, "")
		}
		if c.followed {
			done()
			c.v.MD5, c.v.SHA1, c.v.Size = v.MD5, v.SHA1, v.Size
			c.v.Cached = true
			return c.v
		}
		if c.existed {
			// Resumed backlog: its requests wait behind new work's for
			// the sandbox's budgets (sandbox.WithPriority).
			ctx = sandbox.WithPriority(ctx, sandbox.Low)
			id := c.taskID
			if id == "" {
				id = f.findLostUpload(ctx, sha)
			}
			if id != "" {
				ids = splitTaskIDs(id)
				f.log.Info("resuming a file analysis submitted earlier", "sha256", sha, "task_id", id)
			}
		}
	}
	if len(ids) == 0 {
		call.setStatus(FileLookingUp)
		if t, ok := f.known(ctx, sha); ok {
			ids, v.Reused = []string{t.ID}, true
			reported[t.ID] = t.Status.IsSuccess()
			f.log.Info("the sandbox knows this file; nothing uploaded", "sha256", sha, "task_id", t.ID, "status", string(t.Status))
		}
	}
	if len(ids) == 0 {
		if tf == nil {
			done()
			return f.unknown(v, errNothingToResume, "the analysis was interrupted by a restart and could not be resumed; share the file again")
		}
		if err := ctx.Err(); err != nil {
			done()
			return f.unknown(v, err, "")
		}
		// About to upload: what the requesters may still send is counted
		// now (a file the sandbox knows never got here).
		if !call.who.allowed(ctx, f.opt.Allowance, sandbox.ServiceName) {
			done()
			f.log.Info("file not uploaded: its requesters used their allowance for the hour", "sha256", sha)
			return f.unknown(v, ErrOverAllowance, OverAllowanceFileProblem)
		}
		call.setStatus(FileUploading)
		var sub *sandbox.Submission
		err := tf.rewind()
		if err == nil {
			sub, err = f.sb.CreateFile(ctx, name, tf.f)
		}
		done()
		if err != nil {
			f.log.Warn("sandbox upload failed", "sha256", sha, "error", err)
			return f.unknown(v, err, "")
		}
		ids = sub.TaskIDs
		fresh = true
		joined := strings.Join(ids, ",")
		if f.opt.Memory != nil {
			f.opt.Memory.Submitted(sha, joined)
		}
		if f.opt.OnSubmitted != nil {
			f.opt.OnSubmitted(sha, joined)
		}
		call.setStatus(FileSubmitted)
	} else {
		done()
	}

	// Every task of the submission: the verdict is the worst.
	var best *taskOutcome
	for _, id := range ids {
		o := f.task(ctx, id, reported[id], fresh, call)
		v.Polls += o.polls
		if best == nil || o.level > best.level {
			best = &o
		}
	}
	if len(ids) > 1 {
		v.TaskIDs = ids
	}
	v.TaskID = best.id
	if best.err != nil {
		return f.unknown(v, best.err, best.problem)
	}
	v.Level, v.MalScore, v.Family = best.level, best.score, best.family
	f.details(ctx, &v)
	return v
}

// taskOutcome is the result of one task.
type taskOutcome struct {
	id      string
	level   verdict.Level
	score   float64
	family  string
	polls   int
	err     error
	problem string
}

// task waits for a task (unless it is known to be reported) and reads its
// simple report.
func (f *Files) task(ctx context.Context, id string, reported, fresh bool, call *fileCall) taskOutcome {
	out := taskOutcome{id: id, level: verdict.Unknown}
	if !reported {
		wo := f.opt.Wait
		var stats sandbox.PollStats
		userEnd := f.opt.Wait.OnEnd
		wo.OnEnd = func(s sandbox.PollStats) {
			stats = s
			if userEnd != nil {
				userEnd(s)
			}
		}
		user := f.opt.Wait.OnStatus
		wo.OnStatus = func(s sandbox.Status, changed bool) {
			out.polls++
			// "reported" ends the wait and the report is fetched at once:
			// the verdict follows (see URLs.wait).
			if changed && !s.IsSuccess() {
				call.setStatus(string(s))
			}
			if user != nil {
				user(s, changed)
			}
		}
		if _, err := f.sb.Wait(ctx, id, wo); err != nil {
			out.err = err
			return out
		}
		// A task uploaded by this analysis waited from its submission: it
		// teaches the schedule how long the sandbox takes, once the report
		// is fetched (rebuilding the plan takes milliseconds).
		if fresh && f.learned != nil {
			defer func() {
				d := stats.Completion()
				f.learned.Observe(d)
				if f.opt.OnLearned != nil && d > 0 {
					f.opt.OnLearned(d)
				}
			}()
		}
	}
	rep, err := f.sb.SimpleReport(ctx, id)
	if err != nil {
		out.err = err
		return out
	}
	if math.IsNaN(rep.MalScore) || math.IsInf(rep.MalScore, 0) {
		out.err, out.problem = errors.New("sandbox report without a usable malscore"), "the sandbox gave no score"
		return out
	}
	out.level, out.score, out.family = verdict.MalscoreLevel(rep.MalScore), rep.MalScore, rep.MalFamily
	return out
}

// details adds what helps an analyst and is optional: the task's
// timestamps, the sandbox's file type (and hashes a resumed analysis did not
// compute). Screenshots are not read here: the verdict is given first, and
// its screenshots are asked for afterwards (Screenshots).
func (f *Files) details(ctx context.Context, v *FileVerdict) {
	if t, err := f.sb.TaskInfo(ctx, v.TaskID); err == nil {
		v.AddedOn, v.StartedOn, v.CompletedOn = string(t.AddedOn), string(t.StartedOn), string(t.CompletedOn)
	} else {
		f.log.Debug("task info unavailable", "task_id", v.TaskID, "error", err)
	}
	if fv, err := f.sb.FileView(ctx, v.SHA256); err == nil {
		v.Magic = fv.FileType
		if v.MD5 == "" {
			v.MD5, v.SHA1 = strings.ToLower(fv.MD5), strings.ToLower(fv.SHA1)
		}
		if v.Size == 0 {
			v.Size = fv.FileSize
		}
	} else {
		f.log.Debug("file view unavailable", "sha256", v.SHA256, "error", err)
	}
}

// DefaultScreenshotTimeout bounds one Screenshots call when
// FileOptions.ScreenshotTimeout is zero.
const DefaultScreenshotTimeout = 2 * time.Minute

// DefaultMaxScreenshots is how many screenshots of a file are read and
// posted when FileOptions.MaxScreenshots is zero (and the default of
// VERDICTBOT_MAX_SCREENSHOTS).
const DefaultMaxScreenshots = 3

// Screenshot is one image of a sandbox task, as the pipeline hands it on:
// JPEG or PNG bytes (checked), with the service's file name.
type Screenshot struct {
	Name        string // "0001.jpg", without directories
	ContentType string // "image/jpeg" or "image/png"
	Data        []byte
}

// Screenshots reads up to FileOptions.MaxScreenshots images of a reported
// task, within FileOptions.ScreenshotTimeout: the archive, listed by the
// client, which itself falls back to numbered shots (a few misses in a row
// end that) when the archive is unusable. It is asked once: a failure is
// returned, not retried. Only JPEG and PNG bytes are kept. A task without
// screenshots gives none and a nil error.
func (f *Files) Screenshots(ctx context.Context, taskID string) ([]Screenshot, error) {
	n := f.opt.MaxScreenshots
	if n <= 0 || taskID == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.opt.ScreenshotTimeout)
	defer cancel()
	imgs, err := f.sb.Screenshots(ctx, taskID, n)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("screenshots not fetched within %s: %w", f.opt.ScreenshotTimeout, err)
		}
		f.log.Warn("screenshots could not be fetched", "task_id", taskID, "error", err)
		return nil, err
	}
	out := make([]Screenshot, 0, min(len(imgs), n))
	for _, img := range imgs {
		if len(out) == n {
			break
		}
		if isImage(img.Data) {
			out = append(out, Screenshot{Name: img.Name, ContentType: img.ContentType, Data: img.Data})
		}
	}
	return out, nil
}

// isImage checks JPEG and PNG magic bytes.
func isImage(b []byte) bool {
	return len(b) > 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff ||
		len(b) > 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n"
}

// known returns the task to use for a hash the sandbox already has: the
// newest reported one, else the newest still in progress (joined rather
// than uploading the file again). Tasks search answers newest first (as
// CAPEv2's tasks/search does); a task without a status there has it asked,
// for the newest three at most. A failed search is logged and means
// "unknown": the file is uploaded.
func (f *Files) known(ctx context.Context, sha string) (sandbox.Task, bool) {
	tasks, err := f.sb.SearchTasks(ctx, sha)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("sandbox task search failed; uploading the file", "sha256", sha, "error", err)
		}
		return sandbox.Task{}, false
	}
	var running *sandbox.Task
	for i := range tasks {
		t := &tasks[i]
		if t.ID == "" {
			continue
		}
		if t.Status == "" && i < 3 {
			if st, err := f.sb.Status(ctx, t.ID); err == nil {
				t.Status = st
			}
		}
		switch {
		case t.Status == "":
		case t.Status.IsSuccess():
			return *t, true
		case running == nil && t.Status.InProgress():
			running = t
		}
	}
	if running != nil {
		return *running, true
	}
	return sandbox.Task{}, false
}

// findLostUpload resolves an intent left by a process that stopped while
// uploading: the newest task for the hash, unless it is the task of the
// last recorded verdict (then the upload never arrived and "" is returned).
func (f *Files) findLostUpload(ctx context.Context, sha string) string {
	tasks, err := f.sb.SearchTasks(ctx, sha)
	if err != nil {
		f.log.Warn("could not look for an upload lost in a restart", "sha256", sha, "error", err)
		return ""
	}
	if len(tasks) == 0 || tasks[0].ID == "" {
		return ""
	}
	if slices.Contains(splitTaskIDs(f.opt.Memory.LastTask(sha)), tasks[0].ID) {
		return ""
	}
	return tasks[0].ID
}

// fetch reads ref into a new temporary file with the Fetcher, hashing on
// the way, trying again after transient failures.
func (f *Files) fetch(ctx context.Context, ref FileRef) (*tempFile, error) {
	tf, err := newTempFile(f.opt.TempDir)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := tf.reset(); err != nil {
				tf.remove()
				return nil, err
			}
		}
		n, err := f.fetcher.Fetch(ctx, ref, f.opt.MaxBytes, tf)
		if err == nil && n > f.opt.MaxBytes { // a Fetcher that did not stop
			err = fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, f.opt.MaxBytes)
		}
		if err == nil {
			tf.finish(n)
			return tf, nil
		}
		var fe FetchError
		if !errors.As(err, &fe) || !fe.Retryable() || attempt >= f.opt.DownloadRetries || ctx.Err() != nil {
			tf.remove()
			return nil, err
		}
		delay := f.opt.RetryDelay << attempt
		if w := fe.RetryWait(); w > delay {
			delay = min(w, 30*time.Second)
		}
		f.log.Warn("file download failed, trying again", "file", ref.ID, "error", err, "in", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			tf.remove()
			return nil, err
		}
	}
}

// cached returns a verdict for sha from the cache or the memory.
func (f *Files) cached(sha string) (FileVerdict, bool) {
	if v, ok := f.verdicts.Get(sha); ok {
		cv := v.(FileVerdict)
		cv.Cached = true
		return cv, true
	}
	if f.opt.Memory != nil {
		if v, ok := f.opt.Memory.Recall(sha, f.opt.TTL); ok {
			v.SHA256 = sha
			f.verdicts.SetDefault(sha, v)
			v.Cached = true
			return v, true
		}
	}
	return FileVerdict{}, false
}

func (f *Files) skipped(v FileVerdict, reason string) FileVerdict {
	v.Level, v.Problem, v.CheckedAt = verdict.Skipped, reason, f.opt.Now()
	return v
}

func (f *Files) interrupted(v FileVerdict, err error) FileVerdict {
	v.Level, v.Err, v.CheckedAt = verdict.Unknown, err, f.opt.Now()
	v.Problem = "the check was interrupted before it finished"
	return v
}

// unknown makes v a could-not-check verdict; problem "" derives the
// sentence from err.
func (f *Files) unknown(v FileVerdict, err error, problem string) FileVerdict {
	v.Level, v.Err = verdict.Unknown, err
	v.Problem = cmp.Or(problem, FileProblem(err))
	return v
}

// downloadFailed turns a download failure into a verdict: a file over the
// limit is Skipped, anything else Unknown.
func (f *Files) downloadFailed(err error) FileVerdict {
	if errors.Is(err, ErrTooLarge) {
		return f.skipped(FileVerdict{}, fmt.Sprintf("it is larger than the %s limit", bytesize.Format(f.opt.MaxBytes)))
	}
	f.log.Warn("file download failed", "error", err)
	v := f.unknown(FileVerdict{}, err, "")
	v.CheckedAt = f.opt.Now()
	return v
}

// FileProblem turns an error of the file pipeline into a sentence that is
// safe to show users.
func FileProblem(err error) string {
	var (
		tf *sandbox.TaskFailedError
		fe FetchError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &tf):
		return fmt.Sprintf("the sandbox could not analyse it (%s)", tf.Status)
	case errors.Is(err, sandbox.ErrTaskFailed):
		return "the sandbox could not analyse it"
	case errors.Is(err, sandbox.ErrFileTooLarge):
		return "the sandbox refused it as too large"
	case errors.Is(err, sandbox.ErrEmptyFile):
		return "it is empty"
	case errors.Is(err, context.Canceled):
		return "the check was stopped (the bot is shutting down)"
	case errors.As(err, &fe):
		return cmp.Or(fe.Problem(), "the file could not be fetched")
	case errors.Is(err, errTempFile):
		return "the bot could not store the file to check it"
	}
	return Problem("sandbox", err)
}

// forRef returns v as the answer to a request for ref.
func (v FileVerdict) forRef(ref FileRef) FileVerdict {
	v.FileID, v.Name, v.Type = ref.ID, ref.Name, ref.Filetype
	if v.Size == 0 && v.Level == verdict.Skipped {
		v.Size = ref.Size
	}
	return v
}

// withHashes fills the hashes and size v lacks (a recalled verdict) from
// the download.
func (v FileVerdict) withHashes(h FileVerdict) FileVerdict {
	v.SHA256 = cmp.Or(v.SHA256, h.SHA256)
	v.MD5 = cmp.Or(v.MD5, h.MD5)
	v.SHA1 = cmp.Or(v.SHA1, h.SHA1)
	if v.Size == 0 {
		v.Size = h.Size
	}
	return v
}

// uploadName is the name the sandbox is given: the source's, or the file id.
func uploadName(ref FileRef) string {
	return cmp.Or(strings.TrimSpace(ref.Name), ref.ID, "sample")
}

// splitTaskIDs reads a task id list recorded with ",".
func splitTaskIDs(s string) []string {
	var out []string
	for id := range strings.SplitSeq(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
