package sim

import (
	"time"
)

// Service names, as they appear in Request.Service and in Count.
const (
	ServiceReputation = "reputation" // URL reputation service, /api/<key>/…
	ServiceSandbox    = "sandbox"    // sandbox service, /apineo/<key>/…
)

// Rate-limit buckets, as they appear in Request.Bucket. The specs (§8 of
// both) say "report requests and run requests have separate limits".
const (
	BucketRun    = "run"    // scan, tasks/create/*
	BucketReport = "report" // everything else
)

// Operation names, as they appear in Request.Op and in Count. Keep in sync
// with the route tables in route.go.
const (
	// URL reputation service.
	OpScan          = "scan"
	OpStatus        = "status" // both services
	OpResult        = "result"
	OpDetail        = "detail"
	OpSearch        = "search"
	OpVerdictReport = "verdict_report"

	// Sandbox service.
	OpCreateFile        = "create_file"
	OpFileView          = "file_view"
	OpTaskSearch        = "task_search"
	OpTaskView          = "task_view"
	OpSimpleReport      = "simple_report"
	OpScreenshot        = "screenshot"
	OpScreenshotArchive = "screenshot_archive"

	// OpNotFound is a request under a service prefix that matches no route.
	OpNotFound = "not_found"
)

// Default values of Config fields.
const (
	// DefaultMaxFileSize is CAPE's web.conf max_sample_size (CAPEv2's tasks/create/file).
	DefaultMaxFileSize = 30_000_000
	// DefaultFirstTaskID is the first sandbox task id.
	DefaultFirstTaskID = 1000
	// DefaultShots is the number of screenshots of a sandbox task.
	DefaultShots = 3
	// MaxShots caps SIM:SHOTS=<n>.
	MaxShots = 1000
	// DefaultMaxLog is how many requests Requests keeps.
	DefaultMaxLog = 10_000
)

// Config configures a Server. The zero value is usable: any non-empty key,
// FastProfile, scores on [0, 1], unlimited rates, UTC timestamps.
type Config struct {
	// Keys lists the accepted API keys. Empty means any non-empty key.
	Keys []string

	// Now is the clock used for progression, timestamps and rate limits.
	// Default time.Now. Fault delays always use real time.
	Now func() time.Time

	// Location is the zone of the sandbox's and the detail's
	// "YYYY-MM-DD HH:MM:SS" timestamps. Default UTC.
	Location *time.Location

	// Profile sets how tasks progress. The zero Profile means FastProfile().
	Profile Profile

	// BaseURL prefixes the sandbox's tracking URLs ("<base>/submit/status/<id>/",
	// CAPE's [api] url). Default "http://" + the request's Host.
	BaseURL string

	// FirstTaskID is the first sandbox task id. Default 1000.
	FirstTaskID int

	// MaxFileSize is the sandbox upload limit in bytes. Default 30,000,000.
	MaxFileSize int64

	// Shots is the number of screenshots of a sandbox task without a
	// SIM:SHOTS marker. 0 means DefaultShots; use SIM:SHOTS=0 for none.
	Shots int

	// MaxLog bounds the request log kept for Requests (oldest dropped
	// first); Count is not affected. Default 10,000.
	MaxLog int

	// ScoreScale is the top of the URL verdict scale: 1 (default) or 100.
	ScoreScale float64

	// StrictHTTP makes URL-service JSON errors carry 400/404/405/409/500
	// instead of 200 (an assumption: the spec gives no HTTP codes).
	StrictHTTP bool

	// DispositionRecordOnly records fp/fn/restore reports without changing
	// the returned verdict.
	DispositionRecordOnly bool

	// RedirectNoSlash answers a GET or HEAD without the trailing slash with a
	// 301 to the slashed path, as Django's APPEND_SLASH does (CAPEv2's URL routes).
	RedirectNoSlash bool

	// CAPECompat emits sandbox ids as JSON integers and the CAPE create
	// shape {"error":false,"data":{"task_ids":[…],"message":…},"errors":[],"url":[…]}.
	CAPECompat bool

	// OmitReportError drops "error" from a successful simple_report, like
	// the spec's sample.
	OmitReportError bool

	// Legacy2021 answers "Task is still being analyzed" instead of
	// "Task failed" for failed tasks (CAPE 2021 validate_task).
	Legacy2021 bool

	// Chaos makes every sandbox task fall back from running to pending
	// once, as CAPE does on a dead VM.
	Chaos bool

	// ShuffleShots writes screenshot archive members in a deterministic
	// unsorted order (CAPE uses os.listdir order).
	ShuffleShots bool

	// ArchiveZip serves the screenshot archive as newer CAPE does: a zip
	// with members shots/0001.jpg…, application/zip, <id>_screenshots.zip.
	ArchiveZip bool

	// ShotsDirMissing makes both screenshot endpoints of a reported task
	// answer a bare HTTP 500 HTML page (CAPE 2021 os.listdir crash).
	ShotsDirMissing bool

	// ReputationLimits and SandboxLimits are the per-key limits of each
	// service. The zero value is unlimited.
	ReputationLimits Limits
	SandboxLimits    Limits

	// QuotaForbidden answers an exhausted quota with 403 instead of 429.
	QuotaForbidden bool

	// ThrottleStyle is the body of the sandbox's 429 answers.
	ThrottleStyle ThrottleStyle

	// Faults is the initial fault set; change it later with SetFaults.
	Faults Faults
}

// Limits are the per-key limits of one service: two token buckets and a
// total quota. Zero values mean unlimited.
type Limits struct {
	RunRate     float64 // run requests per second
	RunBurst    int     // bucket size; default max(1, ceil(RunRate))
	ReportRate  float64 // report requests per second
	ReportBurst int     // bucket size; default max(1, ceil(ReportRate))
	Quota       int     // total accepted requests per key, both buckets
}

// ThrottleStyle selects the body of the sandbox's 429 answers.
type ThrottleStyle int

const (
	// ThrottleJSON: {"error":true,"error_value":"Rate limit exceeded for this API"}
	// (CAPE 2020 limit_exceeded view).
	ThrottleJSON ThrottleStyle = iota
	// ThrottleDRF: {"detail":"Request was throttled. Expected available in N seconds."}
	// (Django REST framework throttling).
	ThrottleDRF
	// ThrottleHTML: an HTML page (CAPE 2020 handler403 with status 429).
	ThrottleHTML
)

// Profile sets how tasks move through their statuses.
//
// With PerPoll, each status is shown by PollsPerPhase status polls (default
// 1) and the next status poll moves the task on; result, report and view
// endpoints never move a task. Otherwise a task moves by elapsed time on
// Config.Now: each status lasts its duration from the task's creation; a
// zero duration skips the status.
type Profile struct {
	Name          string // informational: "fast", "realistic", …
	PerPoll       bool
	PollsPerPhase int

	URLPending    time.Duration
	URLProcessing time.Duration

	SandboxPending   time.Duration
	SandboxRunning   time.Duration
	SandboxCompleted time.Duration
	SandboxReporting time.Duration
}

// FastProfile moves every task one status per status poll: a URL task
// shows pending, processing, completed; a sandbox task pending, running,
// completed, reporting, reported.
func FastProfile() Profile {
	return Profile{Name: "fast", PerPoll: true, PollsPerPhase: 1}
}

// RealisticProfile moves tasks by elapsed time. URL task: pending 2s,
// processing 10s (assumed: 1–5 s and 5–30 s). Sandbox task:
// pending 10s, running 200s (CAPE's default analysis timeout), completed 1s,
// reporting 60s (the simulator's sandbox model).
func RealisticProfile() Profile {
	return Profile{
		Name:             "realistic",
		URLPending:       2 * time.Second,
		URLProcessing:    10 * time.Second,
		SandboxPending:   10 * time.Second,
		SandboxRunning:   200 * time.Second,
		SandboxCompleted: 1 * time.Second,
		SandboxReporting: 60 * time.Second,
	}
}

// DemoProfile is realistic but quick, so a card shows "scanning…" before
// its verdict (`verdictbot shell`'s default). URL task: pending 0.5s,
// processing 1.5s. Sandbox task: pending 1s, running 3s, completed 0.2s,
// reporting 0.8s.
func DemoProfile() Profile {
	return Profile{
		Name:             "demo",
		URLPending:       500 * time.Millisecond,
		URLProcessing:    1500 * time.Millisecond,
		SandboxPending:   time.Second,
		SandboxRunning:   3 * time.Second,
		SandboxCompleted: 200 * time.Millisecond,
		SandboxReporting: 800 * time.Millisecond,
	}
}

// QuickProfile moves tasks by time, fast enough for tests and scripts
// (`verdictbot check --sim`). URL task: pending 0.1s, processing 0.2s.
// Sandbox task: pending 0.1s, running 0.2s, completed 0.05s, reporting 0.1s.
func QuickProfile() Profile {
	return Profile{
		Name:             "quick",
		URLPending:       100 * time.Millisecond,
		URLProcessing:    200 * time.Millisecond,
		SandboxPending:   100 * time.Millisecond,
		SandboxRunning:   200 * time.Millisecond,
		SandboxCompleted: 50 * time.Millisecond,
		SandboxReporting: 100 * time.Millisecond,
	}
}

// Scores are the four verdict scores of a URL task. Scores passed to and
// returned by the Server API are on the unit scale [0, 1]; the wire shows
// them multiplied by Config.ScoreScale.
type Scores struct {
	Phishing    float64 `json:"phishing"`
	Advertising float64 `json:"advertising"`
	Malicious   float64 `json:"malicious"`
	Illegal     float64 `json:"illegal"`
}

// withDefaults returns cfg with every zero field replaced by its default.
func (cfg Config) withDefaults() Config {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Profile == (Profile{}) {
		cfg.Profile = FastProfile()
	}
	if cfg.Profile.PollsPerPhase <= 0 {
		cfg.Profile.PollsPerPhase = 1
	}
	if cfg.FirstTaskID <= 0 {
		cfg.FirstTaskID = DefaultFirstTaskID
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.Shots <= 0 {
		cfg.Shots = DefaultShots
	}
	if cfg.Shots > MaxShots {
		cfg.Shots = MaxShots
	}
	if cfg.MaxLog <= 0 {
		cfg.MaxLog = DefaultMaxLog
	}
	if cfg.ScoreScale <= 0 {
		cfg.ScoreScale = 1
	}
	cfg.Keys = append([]string(nil), cfg.Keys...)
	return cfg
}
