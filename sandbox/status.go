package sandbox

import (
	"math"
	"strings"
)

// Status is a task status as the status operation returns it (spec §3, §4
// #5). The spec lists pending, reporting and reported as examples of an
// open-ended list; CAPE's complete list is below (CAPEv2's task statuses). Unknown
// values are kept as sent and count as in progress.
type Status string

// Known statuses. StatusPending, StatusReporting and StatusReported are the
// spec's (§3); the others are CAPE's (lib/cuckoo/core/data/task.py, notes
// §1.6). Keep in sync with IsSuccess and IsFailure.
const (
	StatusPending              Status = "pending"
	StatusRunning              Status = "running"
	StatusCompleted            Status = "completed"
	StatusReporting            Status = "reporting"
	StatusReported             Status = "reported"
	StatusRecovered            Status = "recovered"
	StatusDistributed          Status = "distributed"
	StatusDistributedCompleted Status = "distributed_completed"
	StatusBanned               Status = "banned"
	StatusFailedAnalysis       Status = "failed_analysis"
	StatusFailedProcessing     Status = "failed_processing"
	StatusFailedReporting      Status = "failed_reporting"
)

func (s Status) norm() string { return strings.ToLower(strings.TrimSpace(string(s))) }

// IsSuccess reports whether the task is finished and reported (the only
// success, spec §3).
func (s Status) IsSuccess() bool { return s.norm() == string(StatusReported) }

// IsFailure reports whether the task ended in failure: any failed_* status
// (and a bare "failed"), or banned (CAPEv2's task statuses).
func (s Status) IsFailure() bool {
	n := s.norm()
	return strings.HasPrefix(n, "failed_") || n == "failed" || n == string(StatusBanned)
}

// IsTerminal reports whether the status will not change any more.
func (s Status) IsTerminal() bool { return s.IsSuccess() || s.IsFailure() }

// InProgress reports whether the task may still change: everything that is
// neither success nor failure, unknown statuses included.
func (s Status) InProgress() bool { return !s.IsTerminal() }

// IsPending reports whether the task is waiting for a machine. CAPE can move
// a task back from running to pending (a dead VM, CAPEv2's task statuses).
func (s Status) IsPending() bool { return s.norm() == string(StatusPending) }

// Band is the threat band of a malscore (spec §2, Summary report).
type Band string

// Bands. Keep in sync with Level.
const (
	BandUnknown    Band = ""           // not a number
	BandClean      Band = "clean"      // 0–2: "clean or safe"
	BandSuspicious Band = "suspicious" // 2–6
	BandMalicious  Band = "malicious"  // 6–10: "dangerous or malicious"
)

// Level bands a malscore as the spec does (§2: 0–2 clean, 2–6 suspicious,
// 6–10 malicious). The spec's ranges share their ends; the boundaries follow
// CAPE's web UI, which the spec's bands come from (CAPEv2's malscore bands: ≤2.0 green,
// ≤6.0 yellow, otherwise red): score ≤ 2 is clean, ≤ 6 suspicious, above 6
// malicious. Scores outside 0–10 fall in the nearest band; NaN is
// BandUnknown.
func Level(score float64) Band {
	switch {
	case math.IsNaN(score):
		return BandUnknown
	case score <= 2:
		return BandClean
	case score <= 6:
		return BandSuspicious
	default:
		return BandMalicious
	}
}
