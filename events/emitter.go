package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// DefaultMaxQueued is VERDICTBOT_EVENTS_MAX_QUEUED's default: about a day
// of a busy workspace's verdicts, a few hundred MB at most (an event is
// 1-2 KB).
const DefaultMaxQueued = 100000

// Emitter is the Sink the bot uses: each finding becomes an OCSF event,
// queued durably for the Sender (when Queue is set: VERDICTBOT_EVENTS_URL)
// and written as a JSON line to File (VERDICTBOT_EVENTS_FILE) once the
// queue has it. Emit returns once both are done; a failure is logged
// (the finding itself is already in the state layer and on its card).
type Emitter struct {
	// Queue, if set, keeps the events for the Sender.
	Queue store.EventQueue
	// MaxQueued bounds the queue (default DefaultMaxQueued): beyond it
	// the oldest events are dropped, counted and logged.
	MaxQueued int
	// File, if set, gets each event as one JSON line.
	File *File
	// Product names verdictbot in the events.
	Product Product
	Log     *slog.Logger
	// OnDropped, if set, counts events dropped (reason "queue_full").
	OnDropped func(reason string, n int)
	// OnQueued, if set, is told of each queued event (wakes the Sender).
	OnQueued func()
	// Workspace, if set, names the workspace and organisation of a
	// finding from its team (Finding.TeamID, "" when its maker did not
	// know) and channel.
	Workspace func(team, channel string) Workspace

	mu sync.Mutex // orders the file's lines as the queue's
	// The file's lines in sequence order (see line): the next sequence
	// expected, lines that came before it, and the timer that stops
	// waiting for it.
	next uint64
	held map[uint64][]byte
	wait *time.Timer
}

// fileHold is how long a line waits in the file for the lines of lower
// sequence: writes that commit at once report in any order, and another
// replica's sequences are never seen here.
const fileHold = 250 * time.Millisecond

var _ Sink = (*Emitter)(nil)

// where fills f.Workspace (Workspace).
func (e *Emitter) where(f Finding) Finding {
	if f.Workspace == nil && e.Workspace != nil {
		w := e.Workspace(f.TeamID, f.Channel)
		f.Workspace = &w
	}
	return f
}

// Emit implements Sink. A nil *Emitter does nothing.
func (e *Emitter) Emit(_ context.Context, f Finding) {
	if e == nil || (e.Queue == nil && e.File == nil) {
		return
	}
	ev := Build(e.where(f), e.Product, NewUID())
	e.mu.Lock()
	defer e.mu.Unlock()
	var body []byte
	var seq uint64 // 0: not queued
	if e.Queue != nil {
		max := e.MaxQueued
		if max <= 0 {
			max = DefaultMaxQueued
		}
		s, dropped, err := e.Queue.EnqueueEvent(func(seq uint64) ([]byte, error) {
			ev.Metadata.Sequence = seq
			b, err := json.Marshal(ev)
			body = b
			return b, err
		}, max)
		if err != nil {
			e.log().Warn("could not queue an event for VERDICTBOT_EVENTS_URL; it is lost", "kind", f.Kind, "error", err)
			body = nil
		} else {
			seq = s
		}
		if dropped > 0 {
			e.log().Warn("the event queue is full (VERDICTBOT_EVENTS_MAX_QUEUED): the oldest events were dropped", "dropped", dropped, "max", max)
			if e.OnDropped != nil {
				e.OnDropped("queue_full", dropped)
			}
		}
		if err == nil && e.OnQueued != nil {
			e.OnQueued()
		}
	}
	if e.File == nil {
		return
	}
	if body == nil {
		b, err := json.Marshal(ev)
		if err != nil {
			e.log().Warn("could not encode an event", "kind", f.Kind, "error", err)
			return
		}
		body = b
	}
	e.line(seq, body)
}

// line writes an event's line to File in sequence order: a line whose
// sequence comes after the next expected is held until the lines before
// it are written, or fileHold has passed (they are another replica's, or
// lost). seq 0 (no queue) is written at once; so is the first line when
// StartAt did not say which comes first. e.mu is held.
func (e *Emitter) line(seq uint64, body []byte) {
	if e.File == nil {
		return
	}
	if seq == 0 || e.next == 0 || seq <= e.next {
		e.write(body)
		if seq >= e.next && seq > 0 {
			e.next = seq + 1
		}
		e.release()
		return
	}
	if e.held == nil {
		e.held = map[uint64][]byte{}
	}
	e.held[seq] = body
	if e.wait == nil {
		e.wait = time.AfterFunc(fileHold, func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.wait = nil
			e.flushHeld()
		})
	}
}

// release writes the held lines that follow the last written. e.mu is held.
func (e *Emitter) release() {
	for {
		body, ok := e.held[e.next]
		if !ok {
			break
		}
		delete(e.held, e.next)
		e.write(body)
		e.next++
	}
	if len(e.held) == 0 && e.wait != nil {
		e.wait.Stop()
		e.wait = nil
	}
}

// flushHeld writes every held line, in sequence order. e.mu is held.
func (e *Emitter) flushHeld() {
	seqs := make([]uint64, 0, len(e.held))
	for s := range e.held {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs {
		e.write(e.held[s])
		delete(e.held, s)
		e.next = s + 1
	}
}

// StartAt says that the events this process queues follow last, the
// queue's last sequence number when it starts (store.EventQueue's
// LastEventSeq): its first line waits for last+1's, which a write that
// committed just before it may report after it. Call it before any event.
func (e *Emitter) StartAt(last uint64) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.next = last + 1
}

// Flush writes the lines still held (at shutdown, before File closes).
func (e *Emitter) Flush() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wait != nil {
		e.wait.Stop()
		e.wait = nil
	}
	e.flushHeld()
}

func (e *Emitter) write(body []byte) {
	if err := e.File.Write(body); err != nil {
		e.log().Warn("could not write an event to VERDICTBOT_EVENTS_FILE", "error", err)
	}
}

// Prepare implements Sink: with a queue, f's event for the outbox of the
// card write that reports it; nil without one (Emit writes the file after
// the write, as before).
func (e *Emitter) Prepare(f Finding) *store.Outgoing {
	if e == nil || e.Queue == nil {
		return nil
	}
	ev := Build(e.where(f), e.Product, NewUID())
	max := e.MaxQueued
	if max <= 0 {
		max = DefaultMaxQueued
	}
	return &store.Outgoing{Max: max, Build: func(seq uint64) ([]byte, error) {
		ev.Metadata.Sequence = seq
		return json.Marshal(ev)
	}}
}

// Committed implements Sink: the events a committed write queued wake
// the Sender, go to File (in sequence order: see line) and count what the
// queue's bound dropped.
func (e *Emitter) Committed(outs []*store.Outgoing) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	queued := false
	for _, o := range outs {
		if o == nil || o.Seq == 0 {
			continue
		}
		queued = true
		if o.Dropped > 0 {
			e.log().Warn("the event queue is full (VERDICTBOT_EVENTS_MAX_QUEUED): the oldest events were dropped", "dropped", o.Dropped, "max", o.Max)
			if e.OnDropped != nil {
				e.OnDropped("queue_full", o.Dropped)
			}
		}
		e.line(o.Seq, o.Body)
	}
	if queued && e.OnQueued != nil {
		e.OnQueued()
	}
}

func (e *Emitter) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// File is the JSON-lines sink (VERDICTBOT_EVENTS_FILE): one event per
// line, appended; "-" is standard output. Each line is written in one
// write(2) when Write is called, so a crash of the process loses no line
// written; a file is fsynced within fileSyncEvery of a write (one fsync
// for the lines of that window, not one each: at a hundred events a
// second the fsyncs were 5 % of the bot's CPU), and at Close. A crash of
// the machine may lose the lines of the last fileSyncEvery; with
// VERDICTBOT_EVENTS_URL the webhook queue, written in the same
// transaction as each change, still has them.
type File struct {
	mu   sync.Mutex
	w    io.Writer
	sync func() error
	c    io.Closer

	// dirty: lines written since the last fsync, one pending (timer);
	// syncErr is the last fsync's failure, returned by the next Write.
	dirty   bool
	timer   *time.Timer
	syncErr error
	syncMu  sync.Mutex // one fsync at a time (the timer's, Close's)
	closing bool
}

// fileSyncEvery bounds how long a written line waits for its fsync.
const fileSyncEvery = 100 * time.Millisecond

// OpenFile opens path for appending (creating it, mode 0600), or standard
// output for "-".
func OpenFile(path string) (*File, error) {
	if path == "-" {
		return &File{w: os.Stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("VERDICTBOT_EVENTS_FILE: %w", err)
	}
	return &File{w: f, sync: f.Sync, c: f}, nil
}

// NewFile writes lines to w (tests).
func NewFile(w io.Writer) *File { return &File{w: w} }

// Write appends body and a newline; the fsync follows within
// fileSyncEvery. It returns the write's error, or the failure of an
// earlier line's fsync.
func (f *File) Write(body []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := make([]byte, 0, len(body)+1)
	line = append(append(line, body...), '\n')
	if _, err := f.w.Write(line); err != nil {
		return err
	}
	if f.sync != nil && !f.dirty && !f.closing {
		f.dirty = true
		f.timer = time.AfterFunc(fileSyncEvery, func() { _ = f.flush() })
	}
	err := f.syncErr
	f.syncErr = nil
	return err
}

// flush fsyncs the lines written since the last fsync.
func (f *File) flush() error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	f.mu.Lock()
	dirty := f.dirty
	f.dirty, f.timer = false, nil
	f.mu.Unlock()
	if !dirty {
		return nil
	}
	// The fsync runs outside f.mu: writes go on meanwhile (the next fsync
	// covers them).
	err := f.sync()
	if err != nil {
		f.mu.Lock()
		f.syncErr = err
		f.mu.Unlock()
	}
	return err
}

// Close fsyncs what is written and closes the file (not standard output).
func (f *File) Close() error {
	if f == nil || f.c == nil {
		return nil
	}
	f.mu.Lock()
	f.closing = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
	err := f.flush()
	if cerr := f.c.Close(); err == nil {
		err = cerr
	}
	return err
}
