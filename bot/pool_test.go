package bot

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolBoundsAndNeverBlocks(t *testing.T) {
	t.Parallel()
	p := NewPool(2, 3, slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	var ran atomic.Int32
	block := Job{Name: "block", Run: func(ctx context.Context) { <-release; ran.Add(1) }}
	submit := func(n int) {
		for i := range n {
			if err := p.Submit(block); err != nil {
				t.Fatalf("submit %d: %v", i, err)
			}
		}
	}
	submit(2) // both workers busy…
	deadline := time.Now().Add(time.Second)
	for p.Running() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	submit(3) // …and the queue full
	start := time.Now()
	if err := p.Submit(block); err != ErrQueueFull {
		t.Fatalf("6th submit = %v, want ErrQueueFull", err)
	}
	if time.Since(start) > 50*time.Millisecond {
		t.Fatal("Submit blocked")
	}
	if p.Depth() != 3 || p.Running() != 2 {
		t.Fatalf("depth %d running %d", p.Depth(), p.Running())
	}
	close(release)
	p.Close(t.Context())
	if ran.Load() != 5 {
		t.Fatalf("ran %d jobs, want 5 (queued jobs drained on Close)", ran.Load())
	}
	if err := p.Submit(block); err != ErrPoolClosed {
		t.Fatalf("submit after close = %v", err)
	}
}

func TestPoolSurvivesPanicsAndCancelsOnDeadline(t *testing.T) {
	t.Parallel()
	p := NewPool(1, 10, slog.New(slog.DiscardHandler))
	var panics atomic.Int32
	p.OnPanic = func(string, any) { panics.Add(1) }
	p.Submit(Job{Name: "boom", Run: func(context.Context) { panic("boom") }})
	var cancelled atomic.Bool
	p.Submit(Job{Name: "slow", Run: func(ctx context.Context) {
		select {
		case <-ctx.Done():
			cancelled.Store(true)
		case <-time.After(10 * time.Second):
		}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	p.Close(ctx)
	if time.Since(start) > 2*time.Second || !cancelled.Load() || panics.Load() != 1 {
		t.Fatalf("close took %s, cancelled %v, panics %d", time.Since(start), cancelled.Load(), panics.Load())
	}
}
