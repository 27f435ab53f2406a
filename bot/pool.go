package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrQueueFull is returned by Pool.Submit when the queue is full.
var ErrQueueFull = errors.New("job queue is full")

// ErrPoolClosed is returned by Pool.Submit after Close.
var ErrPoolClosed = errors.New("job pool is closed")

// Job is one unit of work. It gets the pool's context, which is cancelled
// when the pool is closed without draining.
type Job struct {
	Name string
	Run  func(ctx context.Context)
}

// Pool runs jobs on a fixed number of workers fed by a bounded queue. Submit
// never blocks: the Socket Mode reader must keep draining its channel.
type Pool struct {
	queue   chan Job
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.RWMutex
	closed  bool
	running atomic.Int64
	// OnPanic, if set, is told about a job that panicked (after logging).
	OnPanic func(name string, v any)
}

// NewPool starts workers workers with a queue of size queue.
func NewPool(workers, queue int, log *slog.Logger) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{queue: make(chan Job, queue), log: log, ctx: ctx, cancel: cancel}
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	defer p.wg.Done()
	for job := range p.queue {
		p.running.Add(1)
		p.runJob(job)
		p.running.Add(-1)
	}
}

func (p *Pool) runJob(job Job) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("job panicked", "job", job.Name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if p.OnPanic != nil {
				p.OnPanic(job.Name, v)
			}
		}
	}()
	job.Run(p.ctx)
}

// Submit queues job, or returns ErrQueueFull / ErrPoolClosed at once.
func (p *Pool) Submit(job Job) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrPoolClosed
	}
	select {
	case p.queue <- job:
		return nil
	default:
		return ErrQueueFull
	}
}

// Depth returns how many jobs wait in the queue.
func (p *Pool) Depth() int { return len(p.queue) }

// Running returns how many jobs are being run.
func (p *Pool) Running() int { return int(p.running.Load()) }

// Close stops intake and waits for queued and running jobs until ctx ends;
// then it cancels the jobs' context and waits for them to return.
func (p *Pool) Close(ctx context.Context) {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.cancel()
		<-done
	}
	p.cancel()
}
