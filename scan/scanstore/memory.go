// Package scanstore is the scan pipelines' memory over the state layer
// (package store): the submissions in flight, so that a restart resumes
// them instead of submitting again, and the claims that let one replica
// submit each target; the verdicts and their reuse; the recheck queue and
// the checks deferred for their requesters' allowance. URLMemory and
// FileMemory implement scan.Memory and the recheck's interfaces; a write
// the store refuses (a database restart, a full disk) is retried for a
// while rather than lost.
package scanstore

import (
	"errors"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Durable is the part of the state layer that the pipelines' memories use
// (store.State, both backends, implements it): targets and their verdict
// history, reports, analyses in flight, the recheck queue, the deferred
// checks and the flips not announced.
type Durable interface {
	Target(target string) (store.Target, error)
	History(target string) ([]store.Verdict, error)
	Reports(target string) ([]store.Report, error)
	Analysis(service, target string) (store.Analysis, error)
	PutAnalysis(a store.Analysis) error
	ClaimAnalysis(service, target string) (store.Claim, error)
	DeleteAnalysis(service, target string) error
	FinishAnalysis(service string, v store.Verdict, schedule store.Schedule, recheck bool) (store.Target, verdict.Level, error)
	Due(now time.Time, limit int) ([]store.Target, error)
	RecheckFailed(target string, schedule store.Schedule) error
	ClaimRecheck(target string, dueBy time.Time, hold time.Duration, f store.Fence) (time.Time, bool, error)
	ReleaseRecheck(target string, until, dueAt time.Time) error
	DeferCheck(target string, ref card.Ref, at time.Time) error
	DueDeferred(now time.Time, limit int) ([]store.Target, error)
	ClaimDeferred(target string, dueBy time.Time, hold time.Duration, f store.Fence) (time.Time, bool, error)
	EndDeferred(target string, until, next time.Time) error
	PendingFlips(limit int) ([]store.PendingFlip, error)
	FlipAnnounced(target string, level verdict.Level) error
}

var _ Durable = store.State(nil)

// logger is the part of *slog.Logger the memories use.
type logger interface{ Warn(string, ...any) }

// analyses is what the URL and file memories do alike: the submissions of
// one service (an intent, then a task) and the last verdict of a target.
type analyses struct {
	db      Durable
	service string
	log     logger
	// stop ends the write retries early (the process is stopping).
	stop <-chan struct{}
}

// storeRetry bounds how long a write of the pipelines' memory is retried
// when the store fails (a database restart of up to a minute, a disk
// freed): the verdict of an analysis in flight is recorded afterwards, not
// lost.
const storeRetry = store.RetryWindow

// retry runs write until it succeeds, with backoff, for up to storeRetry
// or until stop is closed (a stopping process gives up at once: what it did
// not record is resumed from the journal after the restart); ErrNotFound is
// an answer, not a failure.
func retry(stop <-chan struct{}, write func() error) error {
	return store.Retry(stop, storeRetry, write, nil)
}

func (a analyses) warn(msg string, err error) {
	if a.log != nil {
		a.log.Warn(msg, "service", a.service, "error", err)
	}
}

// inFlight returns the task of a submission whose verdict is not known.
func (a analyses) inFlight(target string) (string, bool) {
	an, err := a.db.Analysis(a.service, target)
	if err != nil {
		return "", false
	}
	return an.TaskID, true
}

// submitting records the intent to submit target (an analysis without a
// task), so that a restart looks the task up instead of submitting again.
func (a analyses) submitting(target string) {
	if err := a.db.PutAnalysis(store.Analysis{Service: a.service, Target: target}); err != nil {
		a.warn("could not record a submission intent", err)
	}
}

// claim makes this process the one that analyses target (scan.Claimer).
// A store that cannot answer is retried as a verdict's write is (a
// database restart, a killed session: the claim is what keeps another
// replica from submitting the same target meanwhile, and the verdict could
// not be recorded before the store is back anyway); one that stays down
// past that leaves the target to this process: a duplicate submission is
// better than a link left unchecked.
func (a analyses) claim(target string) (string, bool, bool) {
	var c store.Claim
	err := retry(a.stop, func() (err error) {
		c, err = a.db.ClaimAnalysis(a.service, target)
		return err
	})
	if err != nil {
		a.warn("could not claim an analysis; analysing it here", err)
		return "", false, true
	}
	return c.Analysis.TaskID, c.Existed, c.Mine
}

// submitted records a submission's task.
func (a analyses) submitted(target, taskID string) {
	if err := retry(a.stop, func() error {
		return a.db.PutAnalysis(store.Analysis{Service: a.service, Target: target, TaskID: taskID})
	}); err != nil {
		a.warn("could not record a submission; a restart would submit it again", err)
	}
}

// forget clears a submission that ended without a verdict to record.
func (a analyses) forget(target string) {
	if err := retry(a.stop, func() error { return a.db.DeleteAnalysis(a.service, target) }); err != nil {
		a.warn("could not clear a finished submission", err)
	}
}

// finish records v and forgets the submission in one transaction: both,
// or neither (a restart then resumes the task).
func (a analyses) finish(v store.Verdict, schedule store.Schedule, recheck bool) {
	if err := retry(a.stop, func() error {
		_, _, err := a.db.FinishAnalysis(a.service, v, schedule, recheck)
		return err
	}); err != nil {
		a.warn("could not record a verdict", err)
	}
}

// lastTask returns the task of target's last recorded verdict.
func (a analyses) lastTask(target string) string {
	tg, err := a.db.Target(target)
	if err != nil {
		return ""
	}
	return tg.TaskID
}

// recall returns target's last verdict if the target is of kind, was
// checked within ttl of now and has a verdict (not pending, skipped or
// unknown).
func (a analyses) recall(target, kind string, ttl time.Duration, now time.Time) (store.Verdict, bool) {
	tg, err := a.db.Target(target)
	if err != nil || tg.Kind != kind || now.Sub(tg.Checked) > ttl || tg.Level < verdict.Clean || tg.Level == verdict.Unknown {
		return store.Verdict{}, false
	}
	hist, err := a.db.History(target)
	if err != nil || len(hist) == 0 {
		return store.Verdict{}, false
	}
	return hist[len(hist)-1], true
}

func nowOr(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}

// URLMemory keeps the URL pipeline's submissions and verdicts in the store
// (it implements scan.Memory[scan.URLVerdict] and scan.DueTargets), and
// the checks deferred for their requesters' allowance (scan.DeferredTargets,
// Defer).
type URLMemory struct {
	DB Durable
	// Schedule plans rechecks (VERDICTBOT_RECHECK_AFTER).
	Schedule store.Schedule
	Now      func() time.Time
	Log      logger
	// Stop, once closed, ends the retries of failed store writes (the
	// process is stopping); nil retries for up to two minutes.
	Stop <-chan struct{}
	// RecheckHold is how long a URL claimed for its recheck is held off
	// other runs: the longest a recheck takes (default 15 min).
	RecheckHold time.Duration
}

// RecheckJob is the name of the recheck's lead (store.State.Lead), which
// fences the claims of URLs for their rechecks.
const RecheckJob = "recheck"

const serviceReputation = "reputation"

var (
	_ scan.Memory[scan.URLVerdict] = (*URLMemory)(nil)
	_ scan.DueTargets              = (*URLMemory)(nil)
	_ scan.RecheckClaimer          = (*URLMemory)(nil)
	_ scan.DeferredTargets         = (*URLMemory)(nil)
	_ scan.Claimer                 = (*URLMemory)(nil)
	_ scan.Claimer                 = (*FileMemory)(nil)
)

func (m *URLMemory) a() analyses {
	return analyses{db: m.DB, service: serviceReputation, log: m.Log, stop: m.Stop}
}

// Recall returns the last verdict recorded for url within ttl.
func (m *URLMemory) Recall(url string, ttl time.Duration) (scan.URLVerdict, bool) {
	last, ok := m.a().recall(url, "url", ttl, nowOr(m.Now))
	if !ok {
		return scan.URLVerdict{}, false
	}
	// A verdict an analyst reported on since (fp, fn, restore) may have
	// changed at the service: it is checked again, not reused.
	if reports, err := m.DB.Reports(url); err != nil {
		return scan.URLVerdict{}, false
	} else if n := len(reports); n > 0 && reports[n-1].Outcome == "" && !reports[n-1].At.Before(last.At) {
		return scan.URLVerdict{}, false
	}
	return scan.URLVerdict{URL: url, TaskID: last.TaskID, Level: last.Level, Category: last.Category,
		Scores: last.Scores, CheckedAt: last.At}, true
}

// InFlight returns the task of a submission whose verdict is not known.
func (m *URLMemory) InFlight(url string) (string, bool) { return m.a().inFlight(url) }

// Claim makes this replica the one that submits url (scan.Claimer).
func (m *URLMemory) Claim(url string) (string, bool, bool) { return m.a().claim(url) }

// Release drops a fresh claim on url that will not be submitted (scan.Claimer).
func (m *URLMemory) Release(url string) { m.a().forget(url) }

// Submitting records the intent to submit url.
func (m *URLMemory) Submitting(url string) { m.a().submitting(url) }

// Submitted records a submission.
func (m *URLMemory) Submitted(url, taskID string) { m.a().submitted(url, taskID) }

// LastTask returns the task of url's last recorded verdict.
func (m *URLMemory) LastTask(url string) string { return m.a().lastTask(url) }

// Finished records a verdict in the target's history (a failed analysis
// leaves the history alone) and forgets the submission.
func (m *URLMemory) Finished(v scan.URLVerdict, source string) {
	if v.Err != nil {
		m.a().forget(v.URL)
		return
	}
	m.a().finish(store.Verdict{Target: v.URL, Kind: "url", TaskID: v.TaskID, Level: v.Level,
		Category: v.Category, Scores: v.Scores, At: v.CheckedAt, Source: source}, m.Schedule, source == "recheck")
}

// Due returns the URLs whose recheck is due (scan.DueTargets).
func (m *URLMemory) Due(now time.Time, limit int) ([]scan.DueURL, error) {
	tgs, err := m.DB.Due(now, limit)
	if err != nil {
		return nil, err
	}
	return dueURLs(tgs, false), nil
}

// dueURLs turns due targets into the recheck's view of them.
func dueURLs(tgs []store.Target, deferred bool) []scan.DueURL {
	out := make([]scan.DueURL, len(tgs))
	for i, tg := range tgs {
		out[i] = scan.DueURL{Target: tg.Target, Level: tg.Level, DueAt: tg.NextCheck, Deferred: deferred}
		if deferred {
			out[i].DueAt = tg.Deferred
		}
		out[i].Cards = append(out[i].Cards, tg.Cards...)
	}
	return out
}

// Defer records that the check of url, refused because its requesters
// had used their allowance, is deferred to the recheck, for the card ref
// (linked to the URL): it is due at once (store.State.DeferCheck). A
// failing store is retried like the other writes of a verdict; an error
// means nothing was deferred.
func (m *URLMemory) Defer(url string, ref card.Ref) error {
	return retry(m.Stop, func() error { return m.DB.DeferCheck(url, ref, nowOr(m.Now)) })
}

// DueDeferred returns the URLs whose deferred check is due
// (scan.DeferredTargets).
func (m *URLMemory) DueDeferred(now time.Time, limit int) ([]scan.DueURL, error) {
	tgs, err := m.DB.DueDeferred(now, limit)
	if err != nil {
		return nil, err
	}
	return dueURLs(tgs, true), nil
}

// ClaimDeferred claims url's deferred check under the term token of the
// lead RecheckJob, for as long as a recheck's claim, and reads the cards
// that show url once it is claimed (scan.DeferredTargets).
func (m *URLMemory) ClaimDeferred(url string, dueAt, dueBy time.Time, token uint64) (cards []card.Ref, release, done func(), ok bool, err error) {
	var f store.Fence
	if token > 0 {
		f = store.Fence{Job: RecheckJob, Token: token}
	}
	until, ok, err := m.DB.ClaimDeferred(url, dueBy, m.recheckHold(), f)
	if err != nil || !ok {
		return nil, func() {}, func() {}, false, err
	}
	end := func(next time.Time, what string) {
		if err := retry(m.Stop, func() error { return m.DB.EndDeferred(url, until, next) }); err != nil && m.Log != nil {
			m.Log.Warn("recheck: could not "+what+" a deferred check; it is due again after the hold", "error", err)
		}
	}
	release, done = func() { end(dueAt, "give back") }, func() { end(time.Time{}, "end") }
	// Read after the claim: a card deferred since DueDeferred is linked by
	// now; one deferred from here on makes the check due again.
	var tg store.Target
	if err := retry(m.Stop, func() (err error) { tg, err = m.DB.Target(url); return err }); err != nil && !errors.Is(err, store.ErrNotFound) {
		release()
		return nil, func() {}, func() {}, false, err
	}
	return tg.Cards, release, done, true, nil
}

// PendingFlips returns the flips a recheck made and did not announce
// (scan.FlipJournal), each with the verdict recorded.
func (m *URLMemory) PendingFlips(limit int) ([]scan.Change, error) {
	fs, err := m.DB.PendingFlips(limit)
	if err != nil {
		return nil, err
	}
	out := make([]scan.Change, 0, len(fs))
	for _, f := range fs {
		tg := f.Target
		now := scan.URLVerdict{URL: tg.Target, TaskID: tg.TaskID, Level: tg.Level, Category: tg.Category, CheckedAt: tg.Checked}
		if h, err := m.DB.History(tg.Target); err == nil && len(h) > 0 {
			last := h[len(h)-1]
			now.TaskID, now.Level, now.Category, now.Scores, now.CheckedAt = last.TaskID, last.Level, last.Category, last.Scores, last.At
		}
		due := scan.DueURL{Target: tg.Target, Level: f.Was, DueAt: f.At}
		due.Cards = append(due.Cards, tg.Cards...)
		out = append(out, scan.Change{Target: due, Was: f.Was, Now: now})
	}
	return out, nil
}

// FlipAnnounced says url's flip to level is announced (scan.FlipJournal).
func (m *URLMemory) FlipAnnounced(url string, level verdict.Level) error {
	return retry(m.Stop, func() error { return m.DB.FlipAnnounced(url, level) })
}

// RecheckFailed advances url's recheck schedule (scan.DueTargets).
func (m *URLMemory) RecheckFailed(url string) error { return m.DB.RecheckFailed(url, m.Schedule) }

// ClaimRecheck claims url for a recheck under the term token of the lead
// RecheckJob (scan.RecheckClaimer).
func (m *URLMemory) ClaimRecheck(url string, dueAt, dueBy time.Time, token uint64) (func(), bool, error) {
	hold := m.recheckHold()
	var f store.Fence
	if token > 0 {
		f = store.Fence{Job: RecheckJob, Token: token}
	}
	until, ok, err := m.DB.ClaimRecheck(url, dueBy, hold, f)
	if err != nil || !ok {
		return func() {}, false, err
	}
	return func() {
		if err := m.DB.ReleaseRecheck(url, until, dueAt); err != nil && m.Log != nil {
			m.Log.Warn("recheck: a claim could not be given back; the URL is due again after the hold", "error", err)
		}
	}, true, nil
}

func (m *URLMemory) recheckHold() time.Duration {
	if m.RecheckHold <= 0 {
		return 15 * time.Minute
	}
	return m.RecheckHold
}

// FileMemory keeps the file pipeline's uploads and verdicts in the store
// (service "sandbox", target the sha256); it implements
// scan.Memory[scan.FileVerdict].
type FileMemory struct {
	DB  Durable
	Now func() time.Time
	Log logger
	// Stop is URLMemory.Stop.
	Stop <-chan struct{}
}

const serviceSandbox = "sandbox"

var _ scan.Memory[scan.FileVerdict] = (*FileMemory)(nil)

func (m *FileMemory) a() analyses {
	return analyses{db: m.DB, service: serviceSandbox, log: m.Log, stop: m.Stop}
}

// Recall returns the last verdict recorded for the file within ttl.
func (m *FileMemory) Recall(sha256 string, ttl time.Duration) (scan.FileVerdict, bool) {
	last, ok := m.a().recall(sha256, "file", ttl, nowOr(m.Now))
	if !ok {
		return scan.FileVerdict{}, false
	}
	return scan.FileVerdict{SHA256: sha256, TaskID: last.TaskID, Level: last.Level, MalScore: last.MalScore,
		Family: last.Family, CheckedAt: last.At}, true
}

// InFlight returns the task of an upload whose verdict is not known.
func (m *FileMemory) InFlight(sha256 string) (string, bool) { return m.a().inFlight(sha256) }

// Claim makes this replica the one that uploads the file (scan.Claimer).
func (m *FileMemory) Claim(sha256 string) (string, bool, bool) { return m.a().claim(sha256) }

// Release drops a fresh claim on a file that will not be uploaded (scan.Claimer).
func (m *FileMemory) Release(sha256 string) { m.a().forget(sha256) }

// Submitting records the intent to upload.
func (m *FileMemory) Submitting(sha256 string) { m.a().submitting(sha256) }

// Submitted records an upload's task.
func (m *FileMemory) Submitted(sha256, taskID string) { m.a().submitted(sha256, taskID) }

// LastTask returns the task of the file's last recorded verdict.
func (m *FileMemory) LastTask(sha256 string) string { return m.a().lastTask(sha256) }

// Finished records a file verdict and forgets the upload.
func (m *FileMemory) Finished(v scan.FileVerdict, source string) {
	if v.Err != nil || v.SHA256 == "" || v.Level == verdict.Skipped {
		m.a().forget(v.SHA256)
		return
	}
	m.a().finish(store.Verdict{Target: v.SHA256, Kind: "file", TaskID: v.TaskID, Level: v.Level,
		MalScore: v.MalScore, Family: v.Family, At: v.CheckedAt, Source: source}, nil, false)
}
