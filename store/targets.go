package store

import (
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// Analysis is a submission in flight: the task exists at the service, its
// verdict is not known yet. A restart resumes it instead of submitting the
// target again.
type Analysis struct {
	Service     string    `json:"service"` // "reputation", "sandbox"
	Target      string    `json:"target"`  // normalised URL, or sha256
	TaskID      string    `json:"task_id"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// Verdict is one verdict in a target's history.
type Verdict struct {
	Target   string           `json:"target"`
	Kind     string           `json:"kind"` // "url" or "file"
	TaskID   string           `json:"task_id"`
	Level    verdict.Level    `json:"level"`
	Category verdict.Category `json:"category,omitempty"`
	Scores   verdict.Scores   `json:"scores,omitempty"`
	MalScore float64          `json:"malscore,omitempty"`
	Family   string           `json:"family,omitempty"`
	At       time.Time        `json:"at"`
	Source   string           `json:"source"` // "scan", "recheck"
}

// Target is what the store knows of one URL or file.
type Target struct {
	Target    string           `json:"target"`
	Kind      string           `json:"kind"`
	FirstSeen time.Time        `json:"first_seen"`
	Checked   time.Time        `json:"checked"`
	Level     verdict.Level    `json:"level"`
	Category  verdict.Category `json:"category,omitempty"`
	TaskID    string           `json:"task_id"`
	// Rechecks counts the rechecks done; NextCheck is when the next is due
	// (zero: none planned).
	Rechecks  int       `json:"rechecks"`
	NextCheck time.Time `json:"next_check"`
	// Deferred is when the deferred check of a URL is due (zero: none
	// pending): a check refused for its requesters' allowance
	// (VERDICTBOT_USER_LINKS_PER_HOUR) that the recheck makes later, apart
	// from the schedule (State.DeferCheck). The embedded file keeps it out
	// of the target record.
	Deferred time.Time `json:"deferred"`
	// Cards are the cards that show this target.
	Cards []card.Ref `json:"cards,omitempty"`
}

// PendingFlip is a recheck's change of a URL's level not announced yet
// (State.PendingFlips): the target as it stands (its new level) and the
// level it had before, since when.
type PendingFlip struct {
	Target Target
	Was    verdict.Level
	At     time.Time
}

// Schedule says when a URL is rechecked: at these ages after it was first
// seen (VERDICTBOT_RECHECK_AFTER). A nil schedule plans no rechecks.
type Schedule []time.Duration

func (s Schedule) next(t *Target) time.Time {
	if t.Rechecks >= len(s) {
		return time.Time{}
	}
	return t.FirstSeen.Add(s[t.Rechecks])
}

// PlanNext plans a target's next recheck after a check at `at`: the next
// age of the schedule still ahead of at, counting the ages already passed
// (a long outage) as done. Files are never rechecked. Both backends use it.
func (s Schedule) PlanNext(tg *Target, at time.Time) {
	tg.NextCheck = time.Time{}
	if tg.Kind != "url" {
		return
	}
	for next := s.next(tg); !next.IsZero(); next = s.next(tg) {
		if next.After(at) {
			tg.NextCheck = next
			return
		}
		tg.Rechecks++
	}
}

// Claim is the answer of ClaimAnalysis.
type Claim struct {
	// Analysis is the analysis in flight when Existed (TaskID "" for an
	// intent: a submission that may or may not have reached the service).
	Analysis Analysis
	// Existed is true when an analysis of the target was already in flight.
	Existed bool
	// Mine is true when this process now submits or resumes it; false when
	// a live replica does (wait for its verdict).
	Mine bool
}
