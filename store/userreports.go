package store

import (
	"errors"
	"slices"
	"time"
)

// UserReport is a message people reported to the security team (the
// "Report to security" shortcut or reaction): one per message, however
// many report it.
type UserReport struct {
	Channel, TS string     // the message reported
	ThreadTS    string     // its thread's root, when it is a reply
	Author      string     // who posted it ("" unknown)
	AuthorTeam  string     // the author's team (another organisation's in Slack Connect)
	Reporters   []Reporter // in the order they reported, one entry per user
	// TriageChannel and TriageTS are the triage card in the security channel, once posted.
	TriageChannel, TriageTS string
	Assignee                string    // the admin who took it ("" none)
	Outcome                 string    // "" open, "malicious", "not_a_threat"
	DecidedBy               string    // the admin who set Outcome
	DecidedAt               time.Time // when Outcome was set
	Created, Updated        time.Time // set by the store
}

// Reporter is one person's report of a message.
type Reporter struct {
	User string
	// At is when they reported it: the store's clock when AddUserReport is
	// given a zero At.
	At  time.Time
	Via string // "shortcut" or "reaction"
	// Told is true once the reporter was told the outcome.
	Told bool
}

// ErrBadUserReport is returned by AddUserReport for a message without a
// channel or ts or a reporter without a user, and by UpdateUserReport when
// fn leaves a reporter without a user or a user twice: nothing is
// recorded.
var ErrBadUserReport = errors.New("user report: no channel, ts or reporting user, or a user twice")

// ErrTriageTaken is returned by UpdateUserReport when fn gives the report
// a triage card that is another report's (a triage card belongs to one
// report): nothing is recorded.
var ErrTriageTaken = errors.New("user report: the triage card is another report's")

// HasReporter reports whether user is among rep's reporters.
func (rep *UserReport) HasReporter(user string) bool {
	return slices.ContainsFunc(rep.Reporters, func(r Reporter) bool { return r.User == user })
}

// CheckReporters is the check of UpdateUserReport, for the backends:
// ErrBadUserReport when a reporter has no user or a user is there twice.
func (rep *UserReport) CheckReporters() error {
	seen := make(map[string]bool, len(rep.Reporters))
	for _, r := range rep.Reporters {
		if r.User == "" || seen[r.User] {
			return ErrBadUserReport
		}
		seen[r.User] = true
	}
	return nil
}

// HasTriage reports whether rep's triage card is posted (both its channel
// and ts known): only then is it found by UserReportByTriage.
func (rep *UserReport) HasTriage() bool { return rep.TriageChannel != "" && rep.TriageTS != "" }
