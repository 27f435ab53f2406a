package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/store"
)

// Journal records jobs durably before they are acked (*store.DB
// implements it).
type Journal interface {
	RecordJobs(jobs []*store.Job) ([]bool, error)
	FinishJob(id uint64) error
	PendingJobs() ([]store.Job, error)
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

// runJournal records envelopes' jobs in batches (one transaction, one
// fsync, per batch), then acks each envelope and queues its job. A
// redelivered event (its id already recorded) is acked and dropped. If the
// store fails, the envelope is acked anyway and handled in memory: Slack's
// retries would otherwise pile up behind a broken disk, and the user's
// message would still get its card.
func (b *Bot) runJournal(ctx context.Context, in <-chan pendingAck, done chan<- struct{}) {
	defer close(done)
	batch := make([]pendingAck, 0, maxBatch)
	for {
		batch = batch[:0]
		first, ok := <-in
		if !ok {
			return
		}
		batch = append(batch, first)
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
		jobs := make([]*store.Job, len(batch))
		for i := range batch {
			jobs[i] = batch[i].job
		}
		fresh, err := b.journal.RecordJobs(jobs)
		if err != nil {
			b.log.Error("could not record jobs durably; handling them in memory", "error", err, "jobs", len(jobs))
			fresh = make([]bool, len(jobs))
			for i, j := range jobs {
				fresh[i] = j.EventID == "" || b.dedupeFn(j.EventID)
				j.ID = 0
			}
		}
		for i, p := range batch {
			aerr := b.ack(p.evt)
			b.observe(p.kind, p.start, aerr)
			if !fresh[i] {
				b.log.Debug("duplicate delivery ignored", "event_id", p.job.EventID, "retry_attempt", p.evt.Request.RetryAttempt)
				if b.opt.Observer != nil {
					b.opt.Observer.Dropped(p.kind, "duplicate")
				}
				continue
			}
			p.run(p.job)
		}
	}
}

// finish deletes a job from the journal once its work is done.
func (b *Bot) finish(id uint64) {
	if id == 0 || b.journal == nil {
		return
	}
	if err := b.journal.FinishJob(id); err != nil {
		b.log.Warn("could not mark a job finished; it will run again after a restart", "job", id, "error", err)
	}
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
	if len(jobs) > 0 {
		log.Info("resumed unfinished work from before the restart", "jobs", len(jobs))
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
