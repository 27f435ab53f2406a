package scan

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// DueTargets is what the recheck job needs of the state layer. The card
// lifecycle's URL memory implements it over the store, with the recheck
// schedule (VERDICTBOT_RECHECK_AFTER).
type DueTargets interface {
	// Due returns up to limit URLs whose recheck is due at now, the oldest
	// due first.
	Due(now time.Time, limit int) ([]DueURL, error)
	// RecheckFailed advances the URL's recheck schedule after a recheck
	// that could not complete, without touching its verdict.
	RecheckFailed(url string) error
}

// RecheckClaimer is implemented by DueTargets whose targets several
// processes may recheck (replicas on one database): each due URL is
// claimed before its recheck starts, so a URL is rechecked by one run.
type RecheckClaimer interface {
	// ClaimRecheck makes this run the one that rechecks url (due at dueAt)
	// now, under the run's term of the lead (token; 0: unfenced): not ok
	// when url is not due by dueBy any more (another run took it). release
	// gives the claim back when the recheck does not happen (shutdown): url
	// is due at dueAt again. An error (the term is over, the store failed)
	// ends the run; the rest stays due.
	ClaimRecheck(url string, dueAt, dueBy time.Time, token uint64) (release func(), ok bool, err error)
}

// DeferredTargets is implemented by DueTargets that keep the checks of
// URLs deferred because their requesters had used their Allowance
// (scanstore.URLMemory over the store): the recheck makes them, apart from the
// schedule's rechecks, and every outcome is announced (OnChange).
type DeferredTargets interface {
	// DueDeferred returns up to limit URLs whose deferred check is due at
	// now, the oldest due first (DueURL.Deferred set).
	DueDeferred(now time.Time, limit int) ([]DueURL, error)
	// ClaimDeferred makes this run the one that makes url's deferred check
	// (due at dueAt) now, under the run's term of the lead (token; 0:
	// unfenced), as RecheckClaimer.ClaimRecheck does for a recheck: not ok
	// when it is not due by dueBy any more (another run took it). release
	// gives the claim back when the check does not happen (shutdown): due
	// at dueAt again. done ends it once its outcome was announced: no
	// longer pending, unless the URL was deferred again meanwhile (for a
	// card the check may have missed). cards are the cards that show url,
	// read after the claim: a card deferred between DueDeferred and the
	// claim is among them (one deferred after the claim makes the check
	// due again). An error ends the run.
	ClaimDeferred(url string, dueAt, dueBy time.Time, token uint64) (cards []card.Ref, release, done func(), ok bool, err error)
}

// FlipJournal is implemented by DueTargets that keep a recheck's flip
// until it is announced (scanstore.URLMemory over the store: the flip is
// recorded in the write of the verdict that makes it). A run that died
// after the verdict and before its announcement leaves the flip pending,
// and the next run announces it with its own changes.
type FlipJournal interface {
	// PendingFlips returns up to limit flips not announced, as changes
	// (Target.Level and Was the level before, Now the verdict recorded).
	PendingFlips(limit int) ([]Change, error)
	// FlipAnnounced says url's flip to level is announced.
	FlipAnnounced(url string, level verdict.Level) error
}

// Lease is a term of this process's lead of the recheck (the state
// layer's, adapted by the wiring).
type Lease interface {
	// Token is the term's fencing token.
	Token() uint64
	// Done is closed when the term ends.
	Done() <-chan struct{}
	Release()
}

// DueURL is a URL whose recheck is due, as it was before the recheck.
type DueURL struct {
	// Target is the normalised URL.
	Target string
	// Level is its last recorded verdict.
	Level verdict.Level
	// Cards are the cards that show it (for OnChange; scan does not read
	// them).
	Cards []card.Ref
	// DueAt is when its recheck fell due (zero if unknown).
	DueAt time.Time
	// Deferred marks a deferred check (DeferredTargets) rather than a
	// recheck of the schedule: Level is Unknown for a URL never checked.
	Deferred bool
}

// Change is a verdict that a recheck changed, or the outcome of a
// deferred check (Target.Deferred): whatever it is, even the level the
// URL had, or a failure (Now.Err set), since the cards that show the URL
// as not checked yet are waiting for it.
type Change struct {
	Target DueURL // as it was before the recheck
	Was    verdict.Level
	Now    URLVerdict
}

// flipShowFor bounds how long a flip not shown on every card (OnChange's
// unshown) is announced again by the runs after it: a card Slack keeps
// refusing for a day is not tried again for ever.
const flipShowFor = 24 * time.Hour

// Recheck checks recent URLs again at the ages of a schedule and reports
// the ones whose level changed. It also makes the checks deferred because
// their requesters had used their Allowance (when Store is a
// DeferredTargets): for nobody in particular (never counted against an
// allowance), behind new links for the service's budgets, reusing a
// verdict within the TTL. Runs never overlap; a run cut short by shutdown
// leaves the rest due, so the next run picks them up.
type Recheck struct {
	Store DueTargets
	URLs  *URLs
	// Max bounds the URLs checked per run (VERDICTBOT_RECHECK_MAX),
	// rechecks and deferred checks together: when both have more than half
	// of Max due, each gets half; otherwise one takes what the other
	// leaves, the oldest due first. So neither starves the other, however
	// many of one kind a flood of links makes due.
	Max int
	// Parallel bounds rechecks in flight at once (default 4), so live
	// scans keep most of the "run" budget.
	Parallel int
	// OnChange is told about every changed verdict (cards, replies, alert).
	// It returns the URLs whose flip is not shown everywhere yet (a card
	// Slack refused for a passing reason, or the store did not take): with
	// a FlipJournal their flips stay pending, and the next run announces
	// them again.
	OnChange func(ctx context.Context, changes []Change) (unshown []string)
	// OnRun, if set, is told the outcome of every run (for metrics).
	OnRun func(RunStats)
	// Lead, if set, is asked before each run whether this process leads
	// the recheck (several replicas on one database: one of them runs each
	// tick); the term is released after the run. A run whose term ends
	// starts no more rechecks (those under way finish: their URLs are
	// claimed); with a RecheckClaimer, each URL is claimed under the term.
	// Unset: always leads.
	Lead func(ctx context.Context) (lease Lease, ok bool, err error)
	Now  func() time.Time
	Log  *slog.Logger

	running atomic.Bool
}

// RunStats sums up one run.
type RunStats struct {
	// Due is what the run took (rechecks and deferred checks); Checked,
	// Changed and Failed count the rechecks of the schedule.
	Due, Checked, Changed, Failed int
	// Deferred counts the deferred checks made, DeferredFailed those of
	// them that ended without a verdict.
	Deferred, DeferredFailed int
	// Lag is how late the oldest due recheck was when the run began (0
	// with nothing due): runs that cannot keep up let it grow.
	Lag      time.Duration
	Skipped  bool // another run was still going
	Follower bool // another replica leads the recheck
	// Taken counts the due URLs another run claimed first; LeadLost is
	// true when the term ended before every due URL was started.
	Taken    int
	LeadLost bool
	Took     time.Duration
}

// ErrRunning is returned by Run when the previous run has not finished.
var ErrRunning = errors.New("recheck: the previous run is still going")

// Run rechecks up to Max due URLs, oldest due first, with the deferred
// checks due (see Max).
func (r *Recheck) Run(ctx context.Context) (RunStats, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return r.run(ctx, now)
}

// RunDueBy is Run taking the URLs whose recheck is due by at rather than
// by now: their next recheck is brought forward, the rest of the run is
// the cron's (the same checks, changes announced, schedule advanced from
// the real time of the check). `verdictbot shell`'s recheck command uses
// it so that a link scanned a minute ago can be rechecked on demand.
func (r *Recheck) RunDueBy(ctx context.Context, at time.Time) (RunStats, error) {
	return r.run(ctx, func() time.Time { return at })
}

func (r *Recheck) run(ctx context.Context, dueBy func() time.Time) (RunStats, error) {
	if !r.running.CompareAndSwap(false, true) {
		st := RunStats{Skipped: true}
		r.report(st)
		return st, ErrRunning
	}
	defer r.running.Store(false)
	var token uint64
	var ended <-chan struct{} // the term's end: no more rechecks start
	if r.Lead != nil {
		lease, ok, err := r.Lead(ctx)
		if err != nil {
			return RunStats{}, err
		}
		if !ok {
			st := RunStats{Follower: true}
			r.report(st)
			return st, nil
		}
		defer lease.Release()
		token, ended = lease.Token(), lease.Done()
	}
	claimer, _ := r.Store.(RecheckClaimer)
	deferrer, _ := r.Store.(DeferredTargets)
	journal, _ := r.Store.(FlipJournal)
	// The flips a run that died did not announce (listed before this
	// run's checks: its own are announced below).
	var unannounced []Change
	if journal != nil {
		var err error
		if unannounced, err = journal.PendingFlips(200); err != nil && r.Log != nil {
			r.Log.Warn("recheck: the flips not announced could not be read; the next run tries again", "error", err)
		}
	}
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	max := r.Max
	if max <= 0 {
		max = 200
	}
	// Lag is measured from the time the run asked for (the cron's now;
	// the shell's brought-forward time).
	began := dueBy()
	due, err := r.Store.Due(began, max)
	if err != nil {
		return RunStats{}, err
	}
	if deferrer != nil {
		deferred, err := deferrer.DueDeferred(began, max)
		if err != nil {
			return RunStats{}, err
		}
		due = share(due, deferred, max)
	}
	st := RunStats{Due: len(due)}
	if len(due) > 0 && !due[0].DueAt.IsZero() {
		st.Lag = began.Sub(due[0].DueAt) // the oldest due comes first
	}
	par := r.Parallel
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var (
		mu      sync.Mutex
		changes []Change
		ends    []func() // of the deferred checks announced
		wg      sync.WaitGroup
	)
	stop := func() bool {
		select {
		case <-ended:
			mu.Lock()
			st.LeadLost = true
			mu.Unlock()
			return true
		default:
			return ctx.Err() != nil
		}
	}
	for _, tg := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		case <-ended:
		}
		if stop() {
			break
		}
		// Each URL is claimed before its check, so one run makes it.
		release, done := func() {}, func() {}
		ok, err := true, error(nil)
		switch {
		case tg.Deferred:
			var cards []card.Ref
			cards, release, done, ok, err = deferrer.ClaimDeferred(tg.Target, tg.DueAt, began, token)
			if ok {
				// The cards deferred up to the claim, not only those
				// DueDeferred saw.
				tg.Cards = cards
			}
		case claimer != nil:
			release, ok, err = claimer.ClaimRecheck(tg.Target, tg.DueAt, began, token)
		}
		if err != nil {
			<-sem
			log.Warn("recheck: a URL could not be claimed; this run stops and the rest stays due", "error", err)
			mu.Lock()
			st.LeadLost = true
			mu.Unlock()
			break
		}
		if !ok {
			<-sem
			mu.Lock()
			st.Taken++
			mu.Unlock()
			continue
		}
		opts := CheckOptions{Recheck: true}
		if tg.Deferred {
			opts = CheckOptions{Deferred: true}
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			v := r.URLs.Check(ctx, tg.Target, opts)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case v.Err != nil && ctx.Err() != nil:
				release() // shutdown: stays due
				return
			case tg.Deferred:
				// A verdict, a host found internal since, or a failure:
				// the cards that say "not checked yet" are told (the
				// failure as a live check's would be), and the deferral
				// ends once they are.
				st.Deferred++
				if v.Err != nil {
					st.DeferredFailed++
				}
				changes = append(changes, Change{Target: tg, Was: tg.Level, Now: v})
				ends = append(ends, done)
				return
			case v.Err != nil, v.Level == verdict.Skipped:
				// A failure, or a host that now resolves only inside the
				// network (not sent): no verdict; the next age stays due.
				st.Failed++
				if err := r.Store.RecheckFailed(tg.Target); err != nil {
					log.Warn("recheck: could not reschedule a URL", "error", err)
				}
				return
			}
			st.Checked++
			if v.Level != tg.Level {
				changes = append(changes, Change{Target: tg, Was: tg.Level, Now: v})
			}
		}()
	}
	wg.Wait()
	// A flip not announced by the run that made it, unless this run
	// rechecked the URL again (its change, if any, says where it stands).
	for _, ch := range unannounced {
		if !slices.ContainsFunc(changes, func(c Change) bool { return c.Target.Target == ch.Target.Target }) {
			changes = append(changes, ch)
		}
	}
	st.Changed = len(changes) - st.Deferred
	st.Took = time.Since(start)
	var unshown []string
	if len(changes) > 0 && r.OnChange != nil {
		unshown = r.OnChange(context.WithoutCancel(ctx), changes)
	}
	if len(unshown) > 0 {
		log.Warn("recheck: flips not shown on every card yet (Slack or the store refused); the next run shows them again", "urls", len(unshown))
	}
	if journal != nil {
		for _, ch := range changes {
			if ch.Target.Deferred || ch.Now.Err != nil {
				continue
			}
			if slices.Contains(unshown, ch.Target.Target) {
				if ch.Target.DueAt.IsZero() || began.Sub(ch.Target.DueAt) < flipShowFor {
					continue // pending: the next run shows it again
				}
				log.Error("recheck: a flip could not be shown on every card for a day; it is no longer tried", "since", ch.Target.DueAt, "now", ch.Now.Level.Key())
			}
			if err := journal.FlipAnnounced(ch.Target.Target, ch.Now.Level); err != nil {
				log.Warn("recheck: a flip announced could not be marked so; the next run announces it again", "error", err)
			}
		}
	}
	for _, end := range ends {
		end()
	}
	log.Info("recheck run", "due", st.Due, "lag", st.Lag, "checked", st.Checked, "changed", st.Changed, "failed", st.Failed,
		"deferred", st.Deferred, "deferred_failed", st.DeferredFailed, "taken", st.Taken, "lead_lost", st.LeadLost, "took", st.Took)
	r.report(st)
	return st, nil
}

// share takes up to max of the due rechecks and deferred checks (each list
// the oldest due first): each kind gets up to half of max, and the places
// one leaves go to the other, the oldest due first (so does an odd last
// place). The result is in due order, a recheck first at the same time.
func share(rechecks, deferred []DueURL, max int) []DueURL {
	nr, nd := min(len(rechecks), max/2), min(len(deferred), max/2)
	for nr+nd < max {
		moreR, moreD := nr < len(rechecks), nd < len(deferred)
		if moreR && (!moreD || !deferred[nd].DueAt.Before(rechecks[nr].DueAt)) {
			nr++
		} else if moreD {
			nd++
		} else {
			break
		}
	}
	out := make([]DueURL, 0, nr+nd)
	r, d := rechecks[:nr], deferred[:nd]
	for len(r) > 0 || len(d) > 0 {
		if len(d) == 0 || (len(r) > 0 && !d[0].DueAt.Before(r[0].DueAt)) {
			out, r = append(out, r[0]), r[1:]
		} else {
			out, d = append(out, d[0]), d[1:]
		}
	}
	return out
}

func (r *Recheck) report(st RunStats) {
	if r.OnRun != nil {
		r.OnRun(st)
	}
}
