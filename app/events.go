package app

import (
	"context"
	"net/http"
	"time"

	"github.com/verdictbot/verdictbot/events"
)

// wireEvents sets up the findings for the SOC's tools: the durable queue
// and its sender when VERDICTBOT_EVENTS_URL is set, the JSON-lines file
// when VERDICTBOT_EVENTS_FILE is. a.events stays nil when neither is.
func (a *App) wireEvents() error {
	cfg := a.cfg
	if cfg.EventsURL == "" && cfg.EventsFile == "" {
		return nil
	}
	log := a.log.With("component", "events")
	em := &events.Emitter{MaxQueued: cfg.EventsMaxQueued, Log: log,
		Product: events.Product{Name: "verdictbot", VendorName: "verdictbot", Version: a.opts.version()}, Workspace: a.workspace}
	if cfg.EventsFile != "" {
		f, err := events.OpenFile(cfg.EventsFile)
		if err != nil {
			return err
		}
		em.File = f
	}
	if cfg.EventsURL != "" {
		hooks := a.metrics.WatchEvents(func() int {
			n, _ := a.db.EventsQueued()
			return n
		}, func() int {
			n, _ := a.db.DeadEventsCount()
			return n
		})
		wake := make(chan struct{}, 1)
		minBackoff, maxBackoff := a.opts.eventsBackoff()
		em.Queue = a.db
		// The file's lines follow the queue's order from this process's
		// first (events.Emitter.StartAt).
		if last, err := a.db.LastEventSeq(); err == nil {
			em.StartAt(last)
		} else {
			log.Warn("the event queue's last sequence could not be read: the events file's first lines may come out of order", "error", err)
		}
		em.OnDropped = hooks.Dropped
		em.OnQueued = func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		a.eventSender = &events.Sender{Queue: a.db, URL: cfg.EventsURL, Secret: []byte(cfg.EventsSecret.Reveal()),
			Client: &http.Client{Timeout: 30 * time.Second}, Lead: a.db.Lead, Wake: wake,
			MinBackoff: minBackoff, MaxBackoff: maxBackoff,
			UserAgent: "verdictbot/" + a.opts.version(), Log: log,
			OnSent: hooks.Sent, OnFailed: hooks.Failed, OnDeadLettered: hooks.DeadLettered, OnRedirect: hooks.Redirect}
		if cfg.EventsSecret == "" {
			// Validate allows it for a loopback URL only (a forwarder on
			// this machine).
			log.Warn("VERDICTBOT_EVENTS_SECRET is not set: events are sent unsigned to the loopback forwarder")
		}
	}
	a.events = em
	return nil
}

// defaultEventsMinBackoff and defaultEventsMaxBackoff bound the sender's
// wait between failed attempts (1 s doubling to 1 min); tests shorten
// them (Options.EventsMinBackoff, EventsMaxBackoff).
const (
	defaultEventsMinBackoff = time.Second
	defaultEventsMaxBackoff = time.Minute
)

// sink is the app's events.Sink (nil when events are off).
func (a *App) sink() events.Sink {
	if a.events == nil {
		return nil
	}
	return a.events
}

// runEvents runs the sender until ctx ends (nothing when there is none).
func (a *App) runEvents(ctx context.Context) {
	if a.eventSender != nil {
		_ = a.eventSender.Run(ctx)
	}
}
