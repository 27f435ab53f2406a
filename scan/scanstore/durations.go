package scanstore

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DurationStore is the part of the state layer that keeps analysis
// durations (store.State.RecordDuration, Durations).
type DurationStore interface {
	RecordDurations(service string, ds []time.Duration, keep int) error
	Durations(service string, keep int) ([]time.Duration, error)
}

// Learner is a learned polling schedule (reputation.LearnedSchedule,
// sandbox.LearnedSchedule): Seed replaces what it remembers.
type Learner interface {
	Seed(ds []time.Duration) bool
}

// DefaultKeep is how many durations Durations keeps per service: the
// learned schedules' memory (apiclient's default 64).
const DefaultKeep = 64

// maxQueued bounds the durations waiting for their write (a store that is
// down for long loses the oldest, which only costs the plan freshness).
const maxQueued = 256

// flushEvery is how often the queued durations are written: one write per
// service a second, not one per analysis (a busy bot completes dozens a
// second, and each write is a commit).
const flushEvery = time.Second

// Durations keeps what the learned polling schedules learn in the state
// layer, so that a restart plans from the durations learned before it
// rather than from the prior, and replicas sharing PostgreSQL plan from
// one another's. A duration is queued by the hook Observed returns (it
// never blocks the verdict it follows) and written by Run, a second's
// worth in one write per service, which also seeds the schedules with the
// list kept, now and then: on PostgreSQL that list holds every replica's
// latest durations. Make one with NewDurations.
type Durations struct {
	db   DurationStore
	keep int
	log  *slog.Logger

	mu       sync.Mutex
	queue    []observed
	dropped  int
	learners map[string]Learner
}

type observed struct {
	service string
	d       time.Duration
}

// NewDurations returns a keeper writing to db, keep durations per service
// (0: DefaultKeep). A nil log discards.
func NewDurations(db DurationStore, keep int, log *slog.Logger) *Durations {
	if keep <= 0 {
		keep = DefaultKeep
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Durations{db: db, keep: keep, log: log, learners: map[string]Learner{}}
}

// Learn seeds l with the durations kept for service and keeps seeding it
// (Run). An error (the store unreadable) leaves l as it was: it learns on
// its own meanwhile.
func (k *Durations) Learn(service string, l Learner) error {
	k.mu.Lock()
	k.learners[service] = l
	k.mu.Unlock()
	return k.seed(service, l)
}

func (k *Durations) seed(service string, l Learner) error {
	ds, err := k.db.Durations(service, k.keep)
	if err != nil {
		return err
	}
	if len(ds) > 0 && l.Seed(ds) {
		k.log.Debug("polling plan seeded with the durations kept", "service", service, "durations", len(ds))
	}
	return nil
}

// Observed returns the hook that records a duration of service
// (scan.URLOptions.OnLearned, scan.FileOptions.OnLearned): it queues the
// duration for Run and returns at once.
func (k *Durations) Observed(service string) func(time.Duration) {
	return func(d time.Duration) {
		if d <= 0 {
			return
		}
		k.mu.Lock()
		if len(k.queue) >= maxQueued {
			k.queue = k.queue[1:]
			k.dropped++
		}
		k.queue = append(k.queue, observed{service, d})
		k.mu.Unlock()
	}
}

// Run writes the queued durations every second (or every `every`, if
// shorter) and, every `every`, seeds the learners with the lists kept,
// until ctx ends; it then writes what is still queued (one try) and
// returns.
func (k *Durations) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	f := time.NewTicker(min(every, flushEvery))
	defer f.Stop()
	for {
		select {
		case <-ctx.Done():
			k.flush()
			return
		case <-f.C:
			k.flush()
		case <-t.C:
			k.flush()
			k.mu.Lock()
			learners := make(map[string]Learner, len(k.learners))
			for s, l := range k.learners {
				learners[s] = l
			}
			k.mu.Unlock()
			for s, l := range learners {
				if err := k.seed(s, l); err != nil {
					k.log.Debug("could not read the durations kept; the plan learns on its own meanwhile", "service", s, "error", err)
				}
			}
		}
	}
}

// flush writes the queued durations, one write per service, oldest
// first; what a failed write held stays queued for the next try.
func (k *Durations) flush() {
	k.mu.Lock()
	queue, dropped := k.queue, k.dropped
	k.queue, k.dropped = nil, 0
	k.mu.Unlock()
	if dropped > 0 {
		k.log.Warn("analysis durations not kept: the store took none for a while", "dropped", dropped)
	}
	var services []string
	by := map[string][]time.Duration{}
	for _, o := range queue {
		if _, ok := by[o.service]; !ok {
			services = append(services, o.service)
		}
		by[o.service] = append(by[o.service], o.d)
	}
	var failed []observed
	for _, s := range services {
		if err := k.db.RecordDurations(s, by[s], k.keep); err != nil {
			k.log.Debug("could not keep analysis durations; retried later", "service", s, "error", err)
			for _, d := range by[s] {
				failed = append(failed, observed{s, d})
			}
		}
	}
	if len(failed) == 0 {
		return
	}
	k.mu.Lock()
	k.queue = append(failed, k.queue...)
	if n := len(k.queue) - maxQueued; n > 0 {
		k.queue, k.dropped = k.queue[n:], k.dropped+n
	}
	k.mu.Unlock()
}
