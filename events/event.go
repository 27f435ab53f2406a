// Package events turns what verdictbot finds and does (verdicts, recheck
// flips, feedback reports, quarantines, releases, channel setting changes)
// into events for the SOC's own tools: one JSON object per event, in the
// Open Cybersecurity Schema Framework's Detection Finding shape (class
// 2004), with verdictbot's own fields under "unmapped".
//
// Events are queued durably in the state layer (store.EventQueue) before
// anything sends them; a Sender posts them one by one, in order, signed,
// to VERDICTBOT_EVENTS_URL, and VERDICTBOT_EVENTS_FILE gets them as JSON
// lines. The package knows nothing of Slack: emitters fill a Finding.
//
// Privacy: an event carries the scanned target (the URL as sent to the
// service, or the file's name and hashes), ids (channel, message ts, user
// ids, task id) and the verdict; never the message's text.
package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Kind is what happened.
type Kind string

// The kinds of event. Quarantine and Release are emitted by the quarantine
// feature (issue 16 items 1-2), which fills Finding.Quarantine.
const (
	KindVerdict    Kind = "verdict"    // a target's verdict shown on a card
	KindFlip       Kind = "flip"       // a recheck changed a verdict
	KindReport     Kind = "report"     // feedback reported to the service (fp, fn, restore)
	KindQuarantine Kind = "quarantine" // a message or file was removed (or could not be)
	KindRelease    Kind = "release"    // an admin released a quarantined message
	KindSetting    Kind = "setting"    // a channel setting or the allowlist changed
	// KindUserReport: a member reported a message to the security team
	// (Actor is the reporter); Option is then "" for the report itself,
	// or the triage's outcome ("malicious", "not_a_threat") decided by
	// an admin (Outcome names them).
	KindUserReport Kind = "user_report"
	// KindTest is the event `verdictbot doctor --send-test-event` posts
	// (Sender.SendTest) to check the receiver: informational, never an
	// alert, never queued.
	KindTest Kind = "test"
)

// Finding is what an emitter knows of one fact; Build turns it into the
// OCSF event. Only the fields that apply to the kind are set.
type Finding struct {
	Kind Kind
	// At is when it happened (zero: now).
	At time.Time

	// Where: the channel, the message the card answers, the card itself.
	Channel   string
	MessageTS string
	ThreadTS  string
	CardTS    string
	// Poster is the user who posted the message (a Slack user id).
	Poster string

	// What was checked: TargetKind "url" or "file"; Target the URL as sent
	// to the service, or the file's name. File hashes when known.
	TargetKind string
	Target     string
	FileSHA256 string
	FileMD5    string
	FileSize   int64

	// The verdict: Level, the category that decided it, the scores, the
	// analysis (service, task id); Previous is the level before a flip.
	Level    verdict.Level
	Previous verdict.Level
	Category verdict.Category
	Scores   verdict.Scores
	Service  string
	TaskID   string
	Cached   bool
	Problem  string // user-safe sentence when Level is Unknown

	// Actor is the user who acted (a report, a release, a setting change;
	// "" for the bot itself).
	Actor string
	// Report: Option is fp, fn or restore; Outcome "" when the service
	// accepted it, else its text.
	Option  string
	Outcome string

	// Setting: Name ("mode", "files", "allowlist", "quarantine"), the new
	// Value, and for the allowlist the Domain added or removed (Value
	// "added" or "removed").
	Setting string
	Value   string
	Domain  string

	// Quarantine is set for KindQuarantine and KindRelease.
	Quarantine *Quarantine

	// Backfill marks a finding of a scan of a channel's history.
	Backfill bool
	// Signals are the line's local signals (card.Line.Signals): the
	// finding names them as analytics, so the SOC can tell a service's
	// verdict from the bot's own.
	Signals []card.Signal

	// TeamID is the workspace the finding was made in, when its maker
	// knows it ("": the Emitter finds it from the channel).
	TeamID string
	// Workspace names the workspace and organisation; the Emitter fills
	// it (Emitter.Workspace).
	Workspace *Workspace
}

// Workspace is where a finding was made: the Slack workspace and, on
// Enterprise Grid, its organisation.
type Workspace struct {
	EnterpriseID, EnterpriseName string
	TeamID, TeamName             string
}

// Quarantine is what the quarantine feature tells of a removal or release.
type Quarantine struct {
	// Removed is true when the message (or file) was removed; false with
	// Reason when it could not be (no admin token, cant_delete_message,
	// already deleted…).
	Removed bool
	Reason  string
	// Level is the channel's quarantine level ("malicious", "suspicious").
	Level string
	// Until is when the kept original is forgotten (the retention).
	Until time.Time
	// ReleasedBy is the admin who released it (KindRelease).
	ReleasedBy string
	// ReleasedTS is the ts of the re-posted message (KindRelease).
	ReleasedTS string
}

// Product names verdictbot in every event's metadata.
type Product struct {
	Name       string // "verdictbot"
	VendorName string // "verdictbot"
	Version    string // the build's version
}

// OCSFVersion is the OCSF schema version the events follow.
const OCSFVersion = "1.3.0"

// OCSF Detection Finding (schema.ocsf.io/1.3.0/classes/detection_finding).
// Required attributes, from github.com/ocsf/ocsf-schema:
//   - events/base_event.json and its traits (classification, occurrence):
//     activity_id, category_uid, class_uid, type_uid, severity_id, time,
//     metadata;
//   - events/findings/finding.json: finding_info;
//   - objects/metadata.json: product, version;
//   - objects/finding_info.json: uid (title is recommended; we set it).
//
// RequiredAttributes lists them as dotted paths; event_test.go checks every
// kind of event against it.
var RequiredAttributes = []string{
	"activity_id", "category_uid", "class_uid", "type_uid", "severity_id", "time",
	"metadata", "metadata.version", "metadata.product",
	"finding_info", "finding_info.uid",
}

const (
	classUID    = 2004 // Detection Finding
	categoryUID = 2    // Findings
)

// OCSF finding activities (events/findings/finding.json activity_id).
const (
	activityCreate = 1
	activityUpdate = 2
	activityClose  = 3
	activityOther  = 99
)

// OCSF status_id values (events/findings/finding.json).
const (
	statusNew        = 1
	statusInProgress = 2
	statusSuppressed = 3
	statusResolved   = 4
)

// Event is one OCSF Detection Finding, as sent.
type Event struct {
	ActivityID   int    `json:"activity_id"`
	ActivityName string `json:"activity_name"`
	CategoryUID  int    `json:"category_uid"`
	CategoryName string `json:"category_name"`
	ClassUID     int    `json:"class_uid"`
	ClassName    string `json:"class_name"`
	TypeUID      int    `json:"type_uid"`
	TypeName     string `json:"type_name"`
	SeverityID   int    `json:"severity_id"`
	Severity     string `json:"severity"`
	Time         int64  `json:"time"` // ms since the epoch
	Message      string `json:"message"`
	StatusID     int    `json:"status_id"`
	Status       string `json:"status"`
	IsAlert      bool   `json:"is_alert"`

	Metadata    Metadata     `json:"metadata"`
	FindingInfo FindingInfo  `json:"finding_info"`
	Observables []Observable `json:"observables,omitempty"`
	Resources   []Resource   `json:"resources,omitempty"`
	// Cloud is the Slack organisation and workspace (OCSF's cloud
	// profile, objects/cloud.json): account and org are the Enterprise
	// Grid organisation (the workspace outside Grid), org's ou the
	// workspace.
	Cloud    *Cloud   `json:"cloud,omitempty"`
	Unmapped Unmapped `json:"unmapped"`
}

// Cloud is OCSF's cloud object.
type Cloud struct {
	Provider string        `json:"provider"`
	Account  *CloudAccount `json:"account,omitempty"`
	Org      *CloudOrg     `json:"org,omitempty"`
}

// CloudAccount is OCSF's account object (type_id 99: Other).
type CloudAccount struct {
	UID    string `json:"uid"`
	Name   string `json:"name,omitempty"`
	Type   string `json:"type"`
	TypeID int    `json:"type_id"`
}

// CloudOrg is OCSF's organization object.
type CloudOrg struct {
	UID    string `json:"uid"`
	Name   string `json:"name,omitempty"`
	OUUID  string `json:"ou_uid,omitempty"`
	OUName string `json:"ou_name,omitempty"`
}

// Metadata is OCSF's metadata object.
type Metadata struct {
	Version  string      `json:"version"`
	Product  MetaProduct `json:"product"`
	UID      string      `json:"uid"`
	Sequence uint64      `json:"sequence,omitempty"`
	LogName  string      `json:"log_name,omitempty"`
	Profiles []string    `json:"profiles,omitempty"`
}

// MetaProduct is OCSF's product object.
type MetaProduct struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
	Version    string `json:"version,omitempty"`
}

// FindingInfo is OCSF's finding_info object.
type FindingInfo struct {
	UID          string   `json:"uid"`
	Title        string   `json:"title"`
	Desc         string   `json:"desc,omitempty"`
	Types        []string `json:"types,omitempty"`
	CreatedTime  int64    `json:"created_time"`
	ModifiedTime int64    `json:"modified_time,omitempty"`
	// Analytic is the bot's own rule that found it (a local signal:
	// "verdictbot deceptive_label"), absent for a service's verdict;
	// RelatedAnalytics lists every such rule when there are several.
	Analytic         *Analytic  `json:"analytic,omitempty"`
	RelatedAnalytics []Analytic `json:"related_analytics,omitempty"`
}

// Analytic is OCSF's analytic object (objects/analytic.json; type_id 1:
// Rule).
type Analytic struct {
	Name   string `json:"name"`
	UID    string `json:"uid,omitempty"`
	Type   string `json:"type"`
	TypeID int    `json:"type_id"`
	Desc   string `json:"desc,omitempty"`
}

// Observable is OCSF's observable object (type_id: 6 URL String, 7 File
// Name, 8 Hash, 4 User Name... see objects/observable.json).
type Observable struct {
	Name   string `json:"name"`
	TypeID int    `json:"type_id"`
	Type   string `json:"type"`
	Value  string `json:"value"`
}

// Resource is OCSF's resource_details object: the Slack message affected.
type Resource struct {
	UID  string `json:"uid"`
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// Unmapped holds verdictbot's own fields.
type Unmapped struct {
	Kind       string             `json:"kind"`
	Channel    string             `json:"channel,omitempty"`
	MessageTS  string             `json:"message_ts,omitempty"`
	ThreadTS   string             `json:"thread_ts,omitempty"`
	CardTS     string             `json:"card_ts,omitempty"`
	Poster     string             `json:"poster,omitempty"`
	TargetKind string             `json:"target_kind,omitempty"`
	Target     string             `json:"target,omitempty"`
	FileSHA256 string             `json:"file_sha256,omitempty"`
	FileMD5    string             `json:"file_md5,omitempty"`
	FileSize   int64              `json:"file_size,omitempty"`
	Level      string             `json:"level,omitempty"`
	Previous   string             `json:"previous_level,omitempty"`
	Category   string             `json:"category,omitempty"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	Service    string             `json:"service,omitempty"`
	TaskID     string             `json:"task_id,omitempty"`
	Cached     bool               `json:"cached,omitempty"`
	Problem    string             `json:"problem,omitempty"`
	Actor      string             `json:"actor,omitempty"`
	Option     string             `json:"option,omitempty"`
	Outcome    string             `json:"outcome,omitempty"`
	Setting    string             `json:"setting,omitempty"`
	Value      string             `json:"value,omitempty"`
	Domain     string             `json:"domain,omitempty"`
	Quarantine *QuarantineFields  `json:"quarantine,omitempty"`
	// TeamID and EnterpriseID repeat the workspace and organisation of
	// cloud, for filters that read unmapped only.
	TeamID       string `json:"team_id,omitempty"`
	EnterpriseID string `json:"enterprise_id,omitempty"`
	// Backfill is true for a finding of a scan of a channel's history.
	Backfill bool `json:"backfill,omitempty"`
}

// QuarantineFields is Quarantine as sent.
type QuarantineFields struct {
	Removed    bool   `json:"removed"`
	Reason     string `json:"reason,omitempty"`
	Level      string `json:"level,omitempty"`
	Until      int64  `json:"until,omitempty"` // ms since the epoch
	ReleasedBy string `json:"released_by,omitempty"`
	ReleasedTS string `json:"released_ts,omitempty"`
}

// severity maps a verdict level to OCSF severity_id (base_event.json:
// 0 Unknown, 1 Informational, 2 Low, 3 Medium, 4 High, 5 Critical).
func severity(l verdict.Level) (int, string) {
	switch l {
	case verdict.Malicious:
		return 4, "High"
	case verdict.Suspicious:
		return 3, "Medium"
	case verdict.Clean, verdict.Skipped:
		return 1, "Informational"
	case verdict.Unknown:
		return 0, "Unknown"
	}
	return 0, "Unknown"
}

var activityNames = map[int]string{activityCreate: "Create", activityUpdate: "Update", activityClose: "Close", activityOther: "Other"}
var statusNames = map[int]string{statusNew: "New", statusInProgress: "In Progress", statusSuppressed: "Suppressed", statusResolved: "Resolved"}

// Build makes the OCSF event of f. uid is the event's own id (metadata.uid).
func Build(f Finding, p Product, uid string) Event {
	at := f.At
	if at.IsZero() {
		at = time.Now()
	}
	ms := at.UnixMilli()
	level := f.Level
	activity, status := activityCreate, statusNew
	var title string
	var types []string
	what := f.Target
	if f.TargetKind == "" && what == "" {
		what = f.Channel
	}
	switch f.Kind {
	case KindVerdict:
		title = fmt.Sprintf("%s %s: %s", nonEmpty(f.TargetKind, "target"), level, what)
		types = []string{"verdict"}
	case KindFlip:
		activity = activityUpdate
		title = fmt.Sprintf("recheck: %s is now %s (was %s)", what, level, f.Previous)
		types = []string{"verdict", "recheck"}
	case KindReport:
		activity, status = activityUpdate, statusInProgress
		if f.Option == "fp" {
			status = statusSuppressed
		}
		title = fmt.Sprintf("%s reported on %s", reportWords(f.Option), what)
		types = []string{"report", f.Option}
	case KindQuarantine:
		activity, status = activityUpdate, statusResolved
		title = "message quarantined: " + what
		if f.Quarantine != nil && !f.Quarantine.Removed {
			status = statusNew
			title = "message could not be quarantined: " + what
		}
		types = []string{"quarantine"}
	case KindRelease:
		activity, status = activityClose, statusSuppressed
		title = "quarantined message released: " + what
		types = []string{"release"}
	case KindUserReport:
		activity, status = activityCreate, statusNew
		level = verdict.Suspicious // a person's suspicion, until triaged
		title = "message reported to security by a member"
		types = []string{"user_report"}
		switch f.Option {
		case "malicious":
			activity, status, level = activityUpdate, statusResolved, verdict.Malicious
			title = "reported message confirmed malicious"
			types = append(types, "confirmed")
		case "not_a_threat":
			activity, status, level = activityClose, statusSuppressed, verdict.Clean
			title = "reported message found not a threat"
			types = append(types, "dismissed")
		}
	case KindSetting:
		activity, status = activityOther, statusNew
		level = verdict.Clean // informational
		title = fmt.Sprintf("channel setting %s set to %s", f.Setting, f.Value)
		if f.Setting == "allowlist" {
			title = fmt.Sprintf("allowlist: %s %s", f.Domain, f.Value)
		}
		types = []string{"setting", f.Setting}
	case KindTest:
		activity, status = activityOther, statusNew
		level = verdict.Clean // informational
		title = "verdictbot test event: the receiver is reachable (not a finding)"
		types = []string{"test"}
	default:
		activity = activityOther
		title = string(f.Kind)
	}
	sevID, sev := severity(level)
	e := Event{
		ActivityID: activity, ActivityName: activityNames[activity],
		CategoryUID: categoryUID, CategoryName: "Findings",
		ClassUID: classUID, ClassName: "Detection Finding",
		TypeUID: classUID*100 + activity, TypeName: "Detection Finding: " + activityNames[activity],
		SeverityID: sevID, Severity: sev,
		Time: ms, Message: title,
		StatusID: status, Status: statusNames[status],
		IsAlert: (f.Kind == KindVerdict || f.Kind == KindFlip) && level >= verdict.Suspicious,
		Metadata: Metadata{Version: OCSFVersion, UID: uid, LogName: "verdictbot",
			Product: MetaProduct{Name: nonEmpty(p.Name, "verdictbot"), VendorName: nonEmpty(p.VendorName, "verdictbot"), Version: p.Version}},
		FindingInfo: FindingInfo{UID: findingUID(f), Title: title, Types: types, CreatedTime: ms},
		Unmapped: Unmapped{Kind: string(f.Kind), Channel: f.Channel, MessageTS: f.MessageTS, ThreadTS: f.ThreadTS,
			CardTS: f.CardTS, Poster: f.Poster, TargetKind: f.TargetKind, Target: f.Target,
			FileSHA256: f.FileSHA256, FileMD5: f.FileMD5, FileSize: f.FileSize,
			Category: string(f.Category), Service: f.Service, TaskID: f.TaskID, Cached: f.Cached, Problem: f.Problem,
			Actor: f.Actor, Option: f.Option, Outcome: f.Outcome, Setting: f.Setting, Value: f.Value, Domain: f.Domain},
	}
	if f.Kind != KindSetting && f.Kind != KindTest && f.Level != verdict.Pending {
		e.Unmapped.Level = f.Level.Key()
	}
	if f.Kind == KindFlip {
		e.Unmapped.Previous = f.Previous.Key()
	}
	e.Unmapped.Backfill = f.Backfill
	for _, sg := range f.Signals {
		a := Analytic{Name: "verdictbot " + sg.Kind, UID: sg.Kind, Type: "Rule", TypeID: 1, Desc: sg.Reason}
		if e.FindingInfo.Analytic == nil {
			e.FindingInfo.Analytic = &a
		}
		e.FindingInfo.RelatedAnalytics = append(e.FindingInfo.RelatedAnalytics, a)
	}
	if len(f.Scores) > 0 {
		e.Unmapped.Scores = make(map[string]float64, len(f.Scores))
		for k, v := range f.Scores {
			e.Unmapped.Scores[string(k)] = v
		}
	}
	if q := f.Quarantine; q != nil {
		e.Unmapped.Quarantine = &QuarantineFields{Removed: q.Removed, Reason: q.Reason, Level: q.Level,
			ReleasedBy: q.ReleasedBy, ReleasedTS: q.ReleasedTS}
		if !q.Until.IsZero() {
			e.Unmapped.Quarantine.Until = q.Until.UnixMilli()
		}
	}
	e.Observables = observables(f)
	if f.Channel != "" && f.MessageTS != "" {
		e.Resources = []Resource{{UID: f.Channel + "/" + f.MessageTS, Type: "slack_message", Name: f.Channel}}
	} else if f.Channel != "" {
		e.Resources = []Resource{{UID: f.Channel, Type: "slack_channel", Name: f.Channel}}
	}
	if w := f.Workspace; w != nil && (w.TeamID != "" || w.EnterpriseID != "") {
		e.Cloud = cloud(*w)
		e.Metadata.Profiles = []string{"cloud"}
		e.Unmapped.TeamID, e.Unmapped.EnterpriseID = w.TeamID, w.EnterpriseID
		if w.TeamID != "" {
			e.Resources = append(e.Resources, Resource{UID: w.TeamID, Type: "slack_workspace", Name: w.TeamName})
		}
	}
	return e
}

// cloud is the cloud object of a workspace: on Enterprise Grid the
// account and org are the organisation and the org's unit the workspace;
// outside Grid all three are the workspace.
func cloud(w Workspace) *Cloud {
	c := &Cloud{Provider: "Slack"}
	if w.EnterpriseID != "" {
		c.Account = &CloudAccount{UID: w.EnterpriseID, Name: w.EnterpriseName, Type: "Slack Enterprise Grid organization", TypeID: 99}
		c.Org = &CloudOrg{UID: w.EnterpriseID, Name: w.EnterpriseName, OUUID: w.TeamID, OUName: w.TeamName}
		return c
	}
	c.Account = &CloudAccount{UID: w.TeamID, Name: w.TeamName, Type: "Slack workspace", TypeID: 99}
	c.Org = &CloudOrg{UID: w.TeamID, Name: w.TeamName, OUUID: w.TeamID, OUName: w.TeamName}
	return c
}

// observables lists the event's observables (objects/observable.json
// type_id: 1 Hostname, 6 URL String, 7 File Name, 8 Hash, 4 User Name is
// not used: Slack user ids go under 99 Other).
func observables(f Finding) []Observable {
	var out []Observable
	switch f.TargetKind {
	case "url":
		if f.Target != "" {
			out = append(out, Observable{Name: "unmapped.target", TypeID: 6, Type: "URL String", Value: f.Target})
		}
	case "file":
		if f.Target != "" {
			out = append(out, Observable{Name: "unmapped.target", TypeID: 7, Type: "File Name", Value: f.Target})
		}
		if f.FileSHA256 != "" {
			out = append(out, Observable{Name: "unmapped.file_sha256", TypeID: 8, Type: "Hash", Value: f.FileSHA256})
		}
	}
	if f.Domain != "" {
		out = append(out, Observable{Name: "unmapped.domain", TypeID: 1, Type: "Hostname", Value: f.Domain})
	}
	for _, u := range []struct{ name, v string }{{"unmapped.poster", f.Poster}, {"unmapped.actor", f.Actor}} {
		if u.v != "" {
			out = append(out, Observable{Name: u.name, TypeID: 99, Type: "Other", Value: u.v})
		}
	}
	return out
}

// findingUID names the finding an event is about, the same for every
// event of it: a target on a message (its verdict, flips, reports,
// quarantine, release), or a channel's setting.
func findingUID(f Finding) string {
	if f.Kind == KindSetting {
		parts := []string{"setting", f.Channel, f.Setting}
		if f.Domain != "" {
			parts = append(parts, f.Domain)
		}
		return strings.Join(parts, "/")
	}
	return strings.Join([]string{f.Channel, f.MessageTS, f.TargetKind, f.Target}, "/")
}

func reportWords(option string) string {
	switch option {
	case "fp":
		return "false positive"
	case "fn":
		return "false negative"
	case "restore":
		return "restore"
	}
	return option
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// NewUID returns a random event id (128 bits, hex).
func NewUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sink receives findings. Emit must not block on the network: it records
// the event durably (or writes the file) and returns. A nil Sink is
// allowed wherever one is taken: Emit(nil, …) does nothing.
//
// A finding whose state change is a card write rides in that write (the
// outbox, store.CardRecord.Outbox), so a process killed after the write
// loses no event: Prepare returns its event for the write's outbox (nil
// when nothing is queued: no receiver; the caller then Emits it after the
// write) and Committed is told of the events a committed write queued.
type Sink interface {
	Emit(ctx context.Context, f Finding)
	Prepare(f Finding) *store.Outgoing
	Committed(outs []*store.Outgoing)
}

// Prepare returns f's event for the outbox of the card write that reports
// it (Sink.Prepare), or nil when s is nil or queues nothing: Emit f after
// the write then.
func Prepare(s Sink, f Finding) *store.Outgoing {
	if s == nil {
		return nil
	}
	return s.Prepare(f)
}

// Committed tells s, unless nil, of the events a committed write queued.
func Committed(s Sink, outs []*store.Outgoing) {
	if s != nil && len(outs) > 0 {
		s.Committed(outs)
	}
}

// Emit sends f to s unless s is nil.
func Emit(ctx context.Context, s Sink, f Finding) {
	if s != nil {
		s.Emit(ctx, f)
	}
}
