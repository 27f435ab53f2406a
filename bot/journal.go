package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/store"
)

// Journal records jobs durably before they are acked (store.State
// implements it). When it is shared by several replicas (the PostgreSQL
// state), it also hands over the unfinished jobs of replicas that stopped
// (Orphans).
type Journal interface {
	RecordJobs(jobs []*store.Job) ([]bool, error)
	FinishJob(id uint64) error
	PendingJobs() ([]store.Job, error)
	Orphans
}

// pendingAck is an envelope waiting for its job to be recorded.
type pendingAck struct {
	evt   socketmode.Event
	job   *store.Job
	start time.Time
	kind  string
	run   func(job *store.Job) // submits the job once recorded
}

// maxBatch bounds one group commit.
const maxBatch = 256

// The spool holds envelopes acked while the journal could not be written.
// It is bounded: past these, envelopes are not acked (see runJournal).
const (
	maxSpoolJobs  = 10_000
	maxSpoolBytes = 64 << 20
)

// Backoff between attempts to write the spool to the journal.
const (
	spoolRetryMin = 50 * time.Millisecond
	spoolRetryMax = 5 * time.Second
)

// runJournal records envelopes' jobs in batches (one transaction, one
// fsync, per batch), then acks each envelope and queues its job. A
// redelivered event (its id already recorded) is acked and dropped.
//
// When the journal cannot be written (disk full, I/O error), nothing acked
// is lost: the envelopes are acked and held, in order, in a bounded
// in-memory spool that is written to the journal as soon as the disk
// takes it again (retried with backoff); only then do their jobs run (they
// need the store anyway, and the journal is what resumes them after a
// restart). While the spool holds anything, /readyz says so and
// verdictbot_journal_spooled counts it. Not acking instead would let
// Slack's retries (three, over about five minutes, for events only; never
// for slash commands or clicks) carry the envelopes, and lose every one of
// them in a longer outage. When the spool is full, new envelopes are not
// acked: events are redelivered by Slack, commands and clicks fail
// visibly for the user, and nothing the bot acked is dropped. The spool
// dies with the process: an envelope acked during an outage and not yet
// written is lost only if the process stops before the disk recovers,
// which the shutdown logs as an error with the count.
func (b *Bot) runJournal(ctx context.Context, in <-chan pendingAck, done chan<- struct{}) {
	defer close(done)
	batch := make([]pendingAck, 0, maxBatch)
	sp := &spool{ids: map[string]bool{}}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := spoolRetryMin
	for {
		batch = batch[:0]
		retried := false // this round is the retry timer's, not an arrival's
		if len(sp.jobs) == 0 {
			first, ok := <-in
			if !ok {
				return
			}
			batch = append(batch, first)
		} else {
			select {
			case p, ok := <-in:
				if !ok {
					b.flushSpool(sp)
					if n := len(sp.jobs); n > 0 {
						b.log.Error("shutting down with acked envelopes the journal could not take: they are lost", "envelopes", n)
					}
					return
				}
				batch = append(batch, p)
			case <-retry.C:
				retried = true
			}
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case p, ok := <-in:
				if !ok {
					break fill
				}
				batch = append(batch, p)
			default:
				break fill
			}
		}
		if len(sp.jobs) > 0 {
			// Behind the spool, in order.
			b.spoolAdd(sp, batch)
			if b.flushSpool(sp) {
				backoff = spoolRetryMin
				retry.Stop()
			} else if retried {
				// The backoff grows with the retries, not with the
				// envelopes arriving meanwhile: each of those tries the
				// disk too, but a burst of them must not push the next
				// retry to spoolRetryMax, or a disk that is back at once
				// would wait 5 s for it.
				retry.Reset(backoff)
				backoff = min(2*backoff, spoolRetryMax)
			}
			continue
		}
		if len(batch) == 0 {
			continue
		}
		jobs := make([]*store.Job, len(batch))
		for i := range batch {
			jobs[i] = batch[i].job
		}
		fresh, err := b.journal.RecordJobs(jobs)
		if err != nil {
			b.log.Error("the journal cannot be written: acked envelopes are held in memory until it can", "error", err, "jobs", len(jobs))
			b.spoolAdd(sp, batch)
			retry.Reset(backoff)
			continue
		}
		for i, p := range batch {
			aerr := b.ack(p.evt)
			b.observe(p.kind, p.start, aerr)
			if !fresh[i] {
				b.duplicate(p)
				continue
			}
			p.run(p.job)
		}
	}
}

// spool is the envelopes acked but not yet in the journal, oldest first.
type spool struct {
	jobs  []pendingAck
	bytes int
	ids   map[string]bool // their event ids
}

// spoolAdd acks the envelopes that fit in the spool and keeps them; the
// others are not acked (Slack redelivers events).
func (b *Bot) spoolAdd(sp *spool, batch []pendingAck) {
	for _, p := range batch {
		if id := p.job.EventID; id != "" && sp.ids[id] {
			aerr := b.ack(p.evt)
			b.observe(p.kind, p.start, aerr)
			b.duplicate(p)
			continue
		}
		if len(sp.jobs) >= maxSpoolJobs || sp.bytes+len(p.job.Payload) > maxSpoolBytes {
			if p.evt.Request != nil {
				b.ackPayloads.Delete(p.evt.Request.EnvelopeID)
			}
			b.log.Error("the journal cannot be written and the spool is full: envelope not acked (Slack redelivers events; commands and clicks fail for the user)",
				"kind", p.kind, "event_id", p.job.EventID, "spooled", len(sp.jobs))
			if b.opt.Observer != nil {
				b.opt.Observer.Dropped(p.kind, "spool_full")
			}
			continue
		}
		aerr := b.ack(p.evt)
		b.observe(p.kind, p.start, aerr)
		p.job.ID = 0
		sp.jobs = append(sp.jobs, p)
		sp.bytes += len(p.job.Payload)
		if p.job.EventID != "" {
			sp.ids[p.job.EventID] = true
		}
	}
	b.spooled.Store(int64(len(sp.jobs)))
}

// flushSpool writes the spool to the journal and runs its jobs; it
// reports whether the spool is now empty.
func (b *Bot) flushSpool(sp *spool) bool {
	if len(sp.jobs) == 0 {
		return true
	}
	jobs := make([]*store.Job, len(sp.jobs))
	for i := range sp.jobs {
		sp.jobs[i].job.ID = 0
		jobs[i] = sp.jobs[i].job
	}
	fresh, err := b.journal.RecordJobs(jobs)
	if err != nil {
		b.log.Warn("the journal still cannot be written", "error", err, "spooled", len(jobs))
		return false
	}
	b.log.Info("the journal can be written again: held envelopes recorded", "envelopes", len(jobs))
	held := sp.jobs
	sp.jobs, sp.bytes, sp.ids = nil, 0, map[string]bool{}
	b.spooled.Store(0)
	for i, p := range held {
		if !fresh[i] {
			b.duplicate(p)
			continue
		}
		p.run(p.job)
	}
	return true
}

func (b *Bot) duplicate(p pendingAck) {
	b.log.Debug("duplicate delivery ignored", "event_id", p.job.EventID, "retry_attempt", p.evt.Request.RetryAttempt)
	if b.opt.Observer != nil {
		b.opt.Observer.Dropped(p.kind, "duplicate")
	}
}

// Spooled returns how many acked envelopes wait in memory for the journal
// to be writable again (0 when the disk is fine).
func (b *Bot) Spooled() int { return int(b.spooled.Load()) }

// Backoff between attempts to mark finished the jobs whose finish the
// store refused (a database restart, a disk error).
const (
	finishRetryMin = time.Second
	finishRetryMax = 10 * time.Second
)

// finisher holds the jobs done whose removal from the journal the store
// refused, and retries them until it takes them: a job left in a shared
// journal stays this replica's, unfinished, until the replica stops, and
// then runs once more (its card is updated in place, but the cluster
// never settles meanwhile). The soak of 2026-11-28 (seed
// 1795884708991664473) had two PostgreSQL stops 13 s apart outlast the
// minute a finish was retried for: six jobs left in the journal.
type finisher struct {
	mu       sync.Mutex
	ids      map[uint64]bool
	kick     chan struct{} // a first job to retry
	min, max time.Duration
}

func newFinisher() *finisher {
	return &finisher{ids: map[uint64]bool{}, kick: make(chan struct{}, 1), min: finishRetryMin, max: finishRetryMax}
}

// unfinished returns how many jobs done wait for the store to take their
// finish (0 when the store is fine).
func (b *Bot) unfinished() int {
	b.fin.mu.Lock()
	defer b.fin.mu.Unlock()
	return len(b.fin.ids)
}

// finish deletes a job from the journal once its work is done; if the
// store refuses, the finisher retries it.
func (b *Bot) finish(id uint64) {
	if id == 0 || b.journal == nil {
		return
	}
	err := b.journal.FinishJob(id)
	if err == nil {
		return
	}
	f := b.fin
	f.mu.Lock()
	first := len(f.ids) == 0
	f.ids[id] = true
	f.mu.Unlock()
	if first {
		b.log.Warn("could not mark a job finished; retrying until the store takes it (if this replica stops first, the job runs again after a restart, and its card is updated in place)", "job", id, "error", err)
		select {
		case f.kick <- struct{}{}:
		default:
		}
	} else {
		b.log.Debug("could not mark a job finished; retrying with the others", "job", id, "error", err)
	}
}

// runFinisher retries the finishes the store refused, with backoff, until
// ctx ends; then it tries them once more and says how many are left.
func (b *Bot) runFinisher(ctx context.Context) {
	f := b.fin
	wait := f.min
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			if left := b.retryFinishes(); left > 0 {
				b.log.Error("stopping with jobs done that the store did not mark finished: they run again after a restart, and their cards are updated in place", "jobs", left)
			}
			return
		case <-f.kick:
			wait = f.min
			timer.Reset(wait)
			continue
		case <-timer.C:
		}
		if b.retryFinishes() > 0 {
			wait = min(2*wait, f.max)
			timer.Reset(wait)
		}
	}
}

// retryFinishes tries the refused finishes once, oldest job first, and
// returns how many the store still refuses. It stops at the first refusal:
// the store is still down.
func (b *Bot) retryFinishes() int {
	f := b.fin
	f.mu.Lock()
	ids := make([]uint64, 0, len(f.ids))
	for id := range f.ids {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	if len(ids) == 0 {
		return 0
	}
	slices.Sort(ids)
	done := 0
	var err error
	for _, id := range ids {
		if err = b.journal.FinishJob(id); err != nil {
			break
		}
		done++
		f.mu.Lock()
		delete(f.ids, id)
		f.mu.Unlock()
	}
	f.mu.Lock()
	left := len(f.ids)
	f.mu.Unlock()
	switch {
	case left == 0:
		b.log.Info("jobs marked finished now that the store takes writes again", "jobs", done)
	case err != nil:
		b.log.Debug("the store still refuses to mark jobs finished", "jobs", left, "error", err)
	}
	return left
}

// jobPayload is what a job keeps of its envelope.
type jobPayload struct {
	Type         string          `json:"type"`
	Payload      json.RawMessage `json:"payload"`
	RetryAttempt int             `json:"retry_attempt,omitempty"`
}

// replay resubmits the jobs a previous process acked but did not finish.
func (b *Bot) replay(log *slog.Logger) {
	jobs, err := b.journal.PendingJobs()
	if err != nil {
		log.Error("could not read unfinished jobs", "error", err)
		return
	}
	b.resume(jobs, log)
	if len(jobs) > 0 {
		log.Info("resumed unfinished work from before the restart", "jobs", len(jobs))
	}
}

// resume routes recorded jobs as if their envelopes had just arrived.
func (b *Bot) resume(jobs []store.Job, log *slog.Logger) {
	for _, j := range jobs {
		var p jobPayload
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			log.Warn("dropping an unreadable recorded job", "job", j.ID, "error", err)
			b.finish(j.ID)
			continue
		}
		evt, err := parseEnvelope(p)
		if err != nil {
			log.Warn("dropping a recorded job that no longer parses", "job", j.ID, "kind", j.Kind, "error", err)
			b.finish(j.ID)
			continue
		}
		b.route(evt, &j)
	}
}

// Orphans is the part of a journal shared by several replicas (the
// PostgreSQL state): OrphanJobs claims the unfinished jobs of replicas that
// stopped, to be called every SweepEvery. A SweepEvery of 0 (a journal of
// one process: the embedded file) means there is nothing to sweep.
type Orphans interface {
	OrphanJobs() ([]store.Job, error)
	SweepEvery() time.Duration
}

// sweep takes over, every o.SweepEvery(), the work that replicas which
// stopped left unfinished, until ctx ends.
func (b *Bot) sweep(ctx context.Context, o Orphans) {
	t := time.NewTicker(o.SweepEvery())
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		jobs, err := o.OrphanJobs()
		if err != nil {
			if !failing {
				b.log.Warn("could not look for the work of stopped replicas; trying again", "error", err)
			}
			failing = true
			continue
		}
		failing = false
		if len(jobs) == 0 || ctx.Err() != nil {
			continue
		}
		from := map[string]int{}
		for _, j := range jobs {
			from[j.Owner]++
		}
		for owner, n := range from {
			b.log.Info("took over unfinished work of a stopped replica", "replica", owner, "jobs", n)
		}
		if b.opt.OnTakeOver != nil {
			b.opt.OnTakeOver(len(jobs))
		}
		b.resume(jobs, b.log)
	}
}

// parseEnvelope rebuilds an event from a recorded job, as slack-go's
// socketmode parses a frame.
func parseEnvelope(p jobPayload) (socketmode.Event, error) {
	req := &socketmode.Request{Type: p.Type, Payload: p.Payload, RetryAttempt: p.RetryAttempt}
	switch p.Type {
	case socketmode.RequestTypeEventsAPI:
		ev, err := slackevents.ParseEvent(p.Payload, slackevents.OptionNoVerifyToken())
		if err != nil {
			return socketmode.Event{}, err
		}
		return socketmode.Event{Type: socketmode.EventTypeEventsAPI, Data: ev, Request: req}, nil
	case socketmode.RequestTypeSlashCommands:
		var cmd slack.SlashCommand
		if err := json.Unmarshal(p.Payload, &cmd); err != nil {
			return socketmode.Event{}, err
		}
		return socketmode.Event{Type: socketmode.EventTypeSlashCommand, Data: cmd, Request: req}, nil
	case socketmode.RequestTypeInteractive:
		var cb slack.InteractionCallback
		if err := json.Unmarshal(p.Payload, &cb); err != nil {
			return socketmode.Event{}, err
		}
		return socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb, Request: req}, nil
	}
	return socketmode.Event{}, fmt.Errorf("unknown envelope type %q", p.Type)
}
