// Package card is the chat-neutral model of a verdict card: what one card
// shows (lines, skipped targets, notes, the feedback given). It knows nothing
// of Slack, Block Kit or the analysis services' wire formats: the card
// lifecycle fills it from scan results, notify renders it, and the store
// keeps it.
package card

import (
	"errors"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/verdict"
)

// Kind says what a line is about.
type Kind string

// Kinds of target.
const (
	KindURL  Kind = "url"
	KindFile Kind = "file"
)

// ErrNotFound is returned by whatever keeps cards when there is no card
// for the given message or card timestamp.
var ErrNotFound = errors.New("card not found")

// Ref names a card by the message it answers. The JSON tags are part of
// the store's record format.
type Ref struct {
	Channel  string `json:"channel"`
	SourceTS string `json:"source_ts"`
}

// Key is the ref as one string, channel/source_ts: the stores key cards
// (and their locks) by it, so it must not change.
func (r Ref) Key() string { return r.Channel + "/" + r.SourceTS }

// Card is everything one verdict card shows. One card answers one message
// (or one /scan request) and is updated in place through its life.
//
// The JSON tags are the store's record format (schema 2): renaming a tag
// changes the format and needs a store migration.
type Card struct {
	// Channel and ThreadTS say where the card lives; SourceTS is the
	// message it is about; CardTS is the card's own ts once posted.
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts,omitempty"`
	SourceTS string `json:"source_ts"`
	CardTS   string `json:"card_ts,omitempty"`
	// Poster is the user who posted the source message (mentioned in
	// recheck replies). RequestedBy is who asked for the card: the /scan
	// user, the person who sent the bot a DM, or whoever asked for a scan
	// of a message that had no card yet (the shortcut, @verdictbot scan).
	// It says who asked, nothing more: a card that answers a message is
	// acted on (quarantine, rechecks) whoever asked (see AnswersMessage).
	Poster      string `json:"poster,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`

	// Final is false while anything is still being analysed.
	Final bool `json:"final,omitempty"`

	Lines   []Line `json:"lines"`
	Skipped []Skip `json:"skipped"`
	// LeftOut counts targets beyond VERDICTBOT_MAX_LINKS, not checked (the
	// card's level is then at least "could not check": see Level);
	// MaxLinks is that limit, shown beside the count ("limit 50") when set.
	LeftOut  int `json:"left_out,omitempty"`
	MaxLinks int `json:"max_links,omitempty"`
	// Notes are short sentences shown under the verdicts ("The message was
	// deleted.", "Rechecked 2026-11-22 10:15 UTC: now malicious").
	Notes []string `json:"notes"`

	// Quarantine is set once quarantine acted on the message (or tried
	// to): the card is then its tombstone.
	Quarantine *Quarantine `json:"quarantine,omitempty"`
	// ConfirmedBy is the admin who confirmed the message malicious after
	// members reported it to security (package triage): the card's level
	// is then malicious, whatever the services said.
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	// FromHistory is set on a card made by a scan of the channel's
	// history (package backfill).
	FromHistory bool `json:"from_history,omitempty"`
}

// Quarantine states.
const (
	QuarantineRemoved  = "removed"  // the message (or its files) was removed
	QuarantineReleased = "released" // an admin re-posted it
	QuarantineFailed   = "failed"   // it could not be removed: Problem says why
	// A recheck flip's removals wait in a queue, paced: QuarantineQueued
	// until their turn (Problem may say why a try must be repeated),
	// QuarantineHeld while they wait for an admin's Remove all (more
	// messages than VERDICTBOT_QUARANTINE_FLIP_MAX; Problem says where).
	QuarantineQueued = "queued"
	QuarantineHeld   = "held"
)

// Quarantined reports whether quarantine removed the card's message (or
// its files) or released it since: what the message shared is then not
// shown in its thread (screenshots).
func (c *Card) Quarantined() bool {
	if c.Quarantine == nil {
		return false
	}
	switch c.Quarantine.State {
	case QuarantineRemoved, QuarantineReleased:
		return true
	}
	return false
}

// Quarantine is what quarantine did to the message a card answers.
type Quarantine struct {
	State string `json:"state"`
	// Level is the verdict level that reached the channel's quarantine
	// level; At is when the message was removed (or the try failed).
	Level verdict.Level `json:"level"`
	At    time.Time     `json:"at,omitzero"`
	// Files is set when files were deleted workspace-wide
	// (VERDICTBOT_QUARANTINE_FILES=delete) and the message stays: the
	// sandbox keeps the sample; there is no release. A file card whose
	// message was removed (the default) has it unset.
	Files bool `json:"files,omitempty"`
	// Names are the files that reached the level, for a file card (what
	// was deleted, or what made the message go).
	Names []string `json:"names,omitempty"`
	// Problem is a user-safe sentence saying why it could not be removed.
	Problem string `json:"problem,omitempty"`
	// ReleasedBy and ReleasedAt say which admin released it, and when.
	ReleasedBy string    `json:"released_by,omitempty"`
	ReleasedAt time.Time `json:"released_at,omitzero"`
}

// Line is one checked target.
type Line struct {
	Kind Kind `json:"kind"`
	// Target is the URL (normalised) or the file name, as found. Renderers
	// defang and truncate it; it is never made clickable.
	Target string        `json:"target"`
	Level  verdict.Level `json:"level"`
	// Category is the category the feedback buttons report for: the one
	// that decided the level, or the top one when clean.
	Category verdict.Category `json:"category"`
	Scores   verdict.Scores   `json:"scores"`
	// Service and TaskID identify the analysis ("reputation", "sandbox").
	Service string `json:"service,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
	// Status is a short progress word while pending ("submitted",
	// "queued", "running", "reporting").
	Status string `json:"status,omitempty"`
	// Problem is a user-safe sentence when Level is Unknown.
	Problem string `json:"problem,omitempty"`
	// Detail is one extra line worth showing (page title, final URL —
	// renderers defang URLs in it).
	Detail string `json:"detail,omitempty"`
	// QueryNotSent is true when the URL's query was removed before it was
	// sent (VERDICTBOT_URL_QUERY=strip); Target is then the URL as sent.
	QueryNotSent bool `json:"query_not_sent,omitempty"`
	// Cached is true when the verdict was reused from an earlier analysis.
	Cached    bool      `json:"cached,omitempty"`
	CheckedAt time.Time `json:"checked_at,omitzero"`

	File *FileInfo `json:"file,omitempty"`

	// Via names where a URL line's link was found when it is not the
	// message's text: the image whose QR code holds it.
	Via string `json:"via,omitempty"`
	// Signals are what the bot saw in the message itself, before any
	// service was asked (package signals): a label that shows one address
	// and opens another, a lookalike of a protected domain. The line's
	// Level is at least each signal's; ServiceLevel is then the service's
	// own verdict, still shown.
	Signals      []Signal      `json:"signals,omitempty"`
	ServiceLevel verdict.Level `json:"service_level,omitempty"`

	// Reports are the feedback given on this line, oldest first.
	Reports []Report `json:"reports"`
	// Actions shows the feedback controls (URL lines with a completed task).
	Actions bool `json:"actions,omitempty"`
}

// Signal is one local signal on a line (see Line.Signals).
type Signal struct {
	// Kind is the rule: "deceptive_label" or "lookalike".
	Kind string `json:"kind"`
	// Reason is the card's words, e.g. "shows okta.com, opens evil.test"
	// or "looks like okta.com (one letter differs)": domains only, no URL.
	Reason string `json:"reason"`
	// Level is the least the line is for it (Suspicious or Malicious).
	Level verdict.Level `json:"level"`
}

// SignalLevel is the most concerning of the line's signals' levels
// (Pending when it has none).
func (l *Line) SignalLevel() verdict.Level {
	w := verdict.Pending
	for _, s := range l.Signals {
		w = verdict.Worst(w, s.Level)
	}
	return w
}

// FileInfo is what a file line shows (sandbox analyses).
type FileInfo struct {
	// ID is Slack's file id (F…): quarantine acts on exactly this file.
	// Lines stored before it was kept have none.
	ID       string  `json:"id,omitempty"`
	Name     string  `json:"name"`
	Type     string  `json:"type,omitempty"`
	Size     int64   `json:"size,omitempty"`
	MD5      string  `json:"md5,omitempty"`
	SHA1     string  `json:"sha1,omitempty"`
	SHA256   string  `json:"sha256,omitempty"`
	MalScore float64 `json:"mal_score,omitempty"`
	Family   string  `json:"family,omitempty"`
	// AddedOn, StartedOn and DoneOn are the sandbox's own timestamps,
	// shown as given.
	AddedOn   string `json:"added_on,omitempty"`
	StartedOn string `json:"started_on,omitempty"`
	DoneOn    string `json:"done_on,omitempty"`
	// Screenshots is how many were posted in the thread.
	Screenshots int `json:"screenshots,omitempty"`
	// ScreenshotsFailed: the screenshots could not be fetched (or posted);
	// the card says so.
	ScreenshotsFailed bool `json:"screenshots_failed,omitempty"`
	// ScreenshotsWithheld: the message was quarantined, so its
	// screenshots were not posted in its thread.
	ScreenshotsWithheld bool `json:"screenshots_withheld,omitempty"`
}

// Skip is a target that was deliberately not sent to a service.
type Skip struct {
	// Kind is KindFile for a file (Target is then its name), else a URL.
	Kind   Kind   `json:"kind"`
	Target string `json:"target"`
	Reason string `json:"reason,omitempty"` // user-facing: "allowlisted domain", "private or internal host", …
}

// Report is one piece of feedback, for the audit trail.
type Report struct {
	User     string           `json:"user"`   // Slack user id
	Option   string           `json:"option"` // "fp", "fn" or "restore"
	Category verdict.Category `json:"category"`
	At       time.Time        `json:"at,omitzero"`
	// Outcome is "" when the service accepted it, else its text.
	Outcome string `json:"outcome,omitempty"`
	// TaskID is the analysis reported. A line scanned again (its message
	// edited) shows its URL's newer analysis and keeps the reports on the
	// older one; "" in reports made before it was kept: the line's task.
	TaskID string `json:"task_id,omitempty"`
}

// On reports whether r is about the analysis taskID, on line l.
func (r Report) On(l Line, taskID string) bool {
	if r.TaskID != "" {
		return r.TaskID == taskID
	}
	return l.TaskID == taskID
}

// ReportsOn reports whether c has a report on the analysis taskID.
func ReportsOn(c *Card, taskID string) bool {
	for _, l := range c.Lines {
		for _, r := range l.Reports {
			if r.On(l, taskID) {
				return true
			}
		}
	}
	return false
}

// ScanRequestPrefix starts the SourceTS of a card that answers a /scan
// request rather than a message: such a card has no message to act on.
const ScanRequestPrefix = "scan-"

// AnswersMessage reports whether the card is about a message in its
// channel (its SourceTS is the message's ts, or "<ts>/files"), and not a
// /scan request's card: quarantine and rechecks act on the first kind
// only. Who asked for the card (RequestedBy) plays no part.
func (c *Card) AnswersMessage() bool {
	return c.SourceTS != "" && !strings.HasPrefix(c.SourceTS, ScanRequestPrefix)
}

// Level is the card's overall level: the worst of its lines, and at least
// Unknown ("could not check") when links were left out past the limit
// (LeftOut): a message is never clean while one of its links is
// unchecked. A card of skipped targets only is Skipped.
func (c *Card) Level() verdict.Level {
	levels := make([]verdict.Level, 0, len(c.Lines)+1)
	for _, l := range c.Lines {
		levels = append(levels, l.Level)
	}
	if c.LeftOut > 0 {
		levels = append(levels, verdict.Unknown)
	}
	if c.ConfirmedBy != "" {
		levels = append(levels, verdict.Malicious)
	}
	if len(levels) == 0 && len(c.Skipped) > 0 {
		return verdict.Skipped
	}
	return verdict.Worst(levels...)
}

// Clone returns a deep copy of the card, safe to render while the original
// keeps changing.
func (c *Card) Clone() Card {
	cp := *c
	cp.Lines = make([]Line, len(c.Lines))
	for i, l := range c.Lines {
		cp.Lines[i] = l.clone()
	}
	cp.Skipped = append([]Skip(nil), c.Skipped...)
	cp.Notes = append([]string(nil), c.Notes...)
	if c.Quarantine != nil {
		q := *c.Quarantine
		q.Names = append([]string(nil), q.Names...)
		cp.Quarantine = &q
	}
	return cp
}

func (l Line) clone() Line {
	if l.Scores != nil {
		s := make(map[verdict.Category]float64, len(l.Scores))
		for k, v := range l.Scores {
			s[k] = v
		}
		l.Scores = s
	}
	if l.File != nil {
		f := *l.File
		l.File = &f
	}
	l.Reports = append([]Report(nil), l.Reports...)
	return l
}
