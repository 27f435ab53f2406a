package main

import (
	"context"
	"net/http"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// wireEvents sets up the findings for the SOC's tools: the durable queue
// and its sender when VERDICTBOT_EVENTS_URL is set, the JSON-lines file
// when VERDICTBOT_EVENTS_FILE is. a.events stays nil when neither is.
func (a *app) wireEvents() error {
	cfg := a.cfg
	if cfg.EventsURL == "" && cfg.EventsFile == "" {
		return nil
	}
	log := a.log.With("component", "events")
	em := &events.Emitter{MaxQueued: cfg.EventsMaxQueued, Log: log,
		Product: events.Product{Name: "verdictbot", VendorName: "verdictbot", Version: version}}
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
			UserAgent: "verdictbot/" + version, Log: log,
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
func (a *app) sink() events.Sink {
	if a.events == nil {
		return nil
	}
	return a.events
}

// runEvents runs the sender until ctx ends (nothing when there is none).
func (a *app) runEvents(ctx context.Context) {
	if a.eventSender != nil {
		_ = a.eventSender.Run(ctx)
	}
}

// quarantineFinding is the event of a quarantine or a release: the card's
// worst line (the one whose level reached the channel's quarantine level)
// with what quarantine did.
func quarantineFinding(kind events.Kind, c card.Card, q *events.Quarantine) events.Finding {
	var worst card.Line
	for i, l := range c.Lines {
		if i == 0 || l.Level > worst.Level {
			worst = l
		}
	}
	f := events.LineFinding(kind, &c, worst)
	f.Quarantine = q
	if kind == events.KindRelease {
		f.Actor = q.ReleasedBy
	}
	return f
}

// wireQuarantineEvents makes every removal, release and removal that could
// not be done an event.
func (a *app) wireQuarantineEvents() {
	q, retention := a.quarantine, a.cfg.QuarantineRetention
	q.OnQuarantine = func(ctx context.Context, rec store.Quarantined, c card.Card) {
		events.Emit(ctx, a.sink(), quarantineFinding(events.KindQuarantine, c,
			&events.Quarantine{Removed: true, Level: rec.Level, Until: rec.RemovedAt.Add(retention)}))
	}
	q.OnRelease = func(ctx context.Context, rec store.Quarantined, c card.Card) {
		events.Emit(ctx, a.sink(), quarantineFinding(events.KindRelease, c,
			&events.Quarantine{Removed: true, Level: rec.Level, ReleasedBy: rec.ReleasedBy, ReleasedTS: rec.ReleasedTS}))
	}
	q.OnNotRemoved = func(ctx context.Context, c card.Card, level verdict.Level, reason string) {
		events.Emit(ctx, a.sink(), quarantineFinding(events.KindQuarantine, c,
			&events.Quarantine{Removed: false, Reason: reason, Level: level.Key()}))
	}
}
