// Package settings holds what each channel is set to: its mode, whether
// its shared files are scanned, its quarantine level (each its own setting,
// made with /scan channel or the Home, else the configured default), and
// the runtime allowlist (/scan allow). Channels reads them from the store;
// the card lifecycle, the commands, the Home and quarantine ask it, so a
// channel with no setting of its own gets the same default everywhere.
package settings

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/store"
)

// Store is where channel settings and the runtime allowlist are kept
// (store.State). Each read returns "" for a channel with no setting of its
// own.
type Store interface {
	ChannelMode(channel string) (string, error)
	ChannelFiles(channel string) (string, error)
	ChannelQuarantine(channel string) (string, error)
	AllowList() ([]store.AllowEntry, error)
}

// Defaults are the configured settings of a channel that has none of its
// own.
type Defaults struct {
	// Mode is VERDICTBOT_CHANNEL_MODE: "quiet", "verbose" or "off".
	Mode string
	// Files is VERDICTBOT_SCAN_FILES: whether shared files are scanned.
	Files bool
	// Quarantine is VERDICTBOT_QUARANTINE: "off" ("" too), "malicious" or
	// "suspicious".
	Quarantine string
}

// Values of a channel's file switch.
const (
	FilesOn  = "on"
	FilesOff = "off"
)

// QuarantineOff is the quarantine level that removes nothing.
const QuarantineOff = "off"

// Channels answers what a channel is set to. Store and Defaults are set
// before use; Log may be nil.
type Channels struct {
	Store    Store
	Defaults Defaults
	Log      *slog.Logger
	// OnAllowlist, if set, is called with the runtime allowlist's domains
	// each time it is loaded (the app protects them from lookalikes, as
	// it does VERDICTBOT_ALLOW_DOMAINS').
	OnAllowlist func(domains []string)

	allow atomic.Pointer[[]string] // the runtime allowlist, as last loaded
}

func (c *Channels) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// ModeOf returns the channel's mode and whether it is the default (the
// channel has no mode of its own). When the store cannot be read it
// returns the default and the error.
func (c *Channels) ModeOf(channel string) (mode string, isDefault bool, err error) {
	m, err := c.Store.ChannelMode(channel)
	if err != nil || m == "" {
		return c.Defaults.Mode, true, err
	}
	return m, false, nil
}

// Mode is the channel's mode: its own, else the default (also when the
// store cannot be read).
func (c *Channels) Mode(channel string) string {
	m, _, _ := c.ModeOf(channel)
	return m
}

// FilesOf returns whether the channel's shared files are scanned and
// whether that is the default (the channel has no switch of its own, "on"
// or "off"). When the store cannot be read it returns the default and the
// error.
func (c *Channels) FilesOf(channel string) (on, isDefault bool, err error) {
	v, err := c.Store.ChannelFiles(channel)
	if err != nil {
		return c.Defaults.Files, true, err
	}
	switch v {
	case FilesOn:
		return true, false, nil
	case FilesOff:
		return false, false, nil
	}
	return c.Defaults.Files, true, nil
}

// Files reports whether files shared in the channel are scanned: its own
// switch, else the default. When the store cannot be read, files are not
// scanned (nothing leaves by mistake), and that is logged.
func (c *Channels) Files(channel string) bool {
	on, _, err := c.FilesOf(channel)
	if err != nil {
		c.log().Warn("could not read the channel's file switch; its files are not scanned", "channel", channel, "error", err)
		return false
	}
	return on
}

// QuarantineOf returns the channel's quarantine level ("off", "malicious"
// or "suspicious") and whether it is the default (the channel has no level
// of its own). When the store cannot be read it returns the default and
// the error.
func (c *Channels) QuarantineOf(channel string) (level string, isDefault bool, err error) {
	v, err := c.Store.ChannelQuarantine(channel)
	if err != nil || v == "" {
		return c.DefaultQuarantine(), true, err
	}
	return v, false, nil
}

// Quarantine is the channel's quarantine level: its own, else the default
// (also when the store cannot be read).
func (c *Channels) Quarantine(channel string) string {
	v, _, _ := c.QuarantineOf(channel)
	return v
}

// DefaultQuarantine is the configured quarantine level, "off" when none.
func (c *Channels) DefaultQuarantine() string {
	if c.Defaults.Quarantine == "" {
		return QuarantineOff
	}
	return c.Defaults.Quarantine
}

// LoadAllowlist reads the runtime allowlist (/scan allow) from the store;
// call it at start and after every change. When the store cannot be read,
// the list loaded before stays (and that is logged).
func (c *Channels) LoadAllowlist() {
	if err := c.loadAllowlist(); err != nil {
		c.log().Warn("could not read the runtime allowlist", "error", err)
	}
}

// loadAllowlist is LoadAllowlist, returning the store's error instead of
// logging it; the list last loaded stays in force when it fails.
func (c *Channels) loadAllowlist() error {
	list, err := c.Store.AllowList()
	if err != nil {
		return err
	}
	domains := make([]string, 0, len(list))
	for _, e := range list {
		domains = append(domains, e.Domain)
	}
	c.allow.Store(&domains)
	if c.OnAllowlist != nil {
		c.OnAllowlist(domains)
	}
	return nil
}

// RefreshAllowlist loads the runtime allowlist every period until ctx
// ends. Replicas sharing PostgreSQL run it: a domain allowed or removed
// through one replica's `/scan allow` is then followed by the others
// within period, where before they kept the list they started with (a
// domain taken off the list stayed unscanned there until a restart).
// While the store cannot be read (a database outage) the list last loaded
// stays in force; that is logged once when it starts, with the time it
// lasted when it ends, not at every period.
func (c *Channels) RefreshAllowlist(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.loadAllowlist()
		switch {
		case err != nil && failingSince.IsZero():
			failingSince = time.Now()
			c.log().Warn("could not read the runtime allowlist; keeping the list last read until the store answers", "error", err)
		case err == nil && !failingSince.IsZero():
			c.log().Info("the runtime allowlist can be read again", "after", time.Since(failingSince).Round(time.Second).String())
			failingSince = time.Time{}
		}
	}
}

// Allowed reports whether host (normalised, links.Target.Host) is on the
// runtime allowlist as last loaded: a listed domain or a subdomain of it.
func (c *Channels) Allowed(host string) bool {
	p := c.allow.Load()
	if p == nil {
		return false
	}
	for _, d := range *p {
		if links.MatchDomain(host, d) {
			return true
		}
	}
	return false
}
