package main

import (
	"cmp"
	"net"
	"time"

	"github.com/verdictbot/verdictbot/links"
)

// Options are what a caller may change in the wiring besides the
// settings: the hooks tests use. The zero value is production (Main
// passes it); each field says what its zero value means. Options replace
// the package variables tests used to set, so that tests with different
// hooks run side by side.
type Options struct {
	// StoreWriteFault, when set, makes the embedded store's writes fail
	// (bolt.Options.WriteFault).
	StoreWriteFault func() error
	// Resolver answers VERDICTBOT_RESOLVE_HOSTS's lookups; nil: the
	// system's (net.DefaultResolver: /etc/resolv.conf, /etc/hosts,
	// nsswitch).
	Resolver links.Resolver
	// FirstPruneDelay is how long after start the first retention prune
	// runs; 0: defaultFirstPruneDelay.
	FirstPruneDelay time.Duration
	// EventsMinBackoff and EventsMaxBackoff bound the event sender's wait
	// between failed attempts; 0: defaultEventsMinBackoff,
	// defaultEventsMaxBackoff.
	EventsMinBackoff, EventsMaxBackoff time.Duration
	// ShellStarted, when set, is told about `verdictbot shell`'s shell
	// before it reads its first line.
	ShellStarted func(*shell)
}

// resolver is o.Resolver, or the system's.
func (o Options) resolver() links.Resolver {
	if o.Resolver == nil {
		return net.DefaultResolver
	}
	return o.Resolver
}

// firstPruneDelay is o.FirstPruneDelay, or its default.
func (o Options) firstPruneDelay() time.Duration {
	return cmp.Or(o.FirstPruneDelay, defaultFirstPruneDelay)
}

// eventsBackoff is the event sender's bounds: o's, or the defaults.
func (o Options) eventsBackoff() (lo, hi time.Duration) {
	return cmp.Or(o.EventsMinBackoff, defaultEventsMinBackoff), cmp.Or(o.EventsMaxBackoff, defaultEventsMaxBackoff)
}
