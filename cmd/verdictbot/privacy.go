package main

import (
	"log/slog"
	"net"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/scan"

	"github.com/verdictbot/verdictbot/config"
)

// systemResolver is the resolver VERDICTBOT_RESOLVE_HOSTS uses: the
// system's (net.DefaultResolver: /etc/resolv.conf, /etc/hosts, nsswitch).
// Tests replace it before starting the bot.
var systemResolver links.Resolver = net.DefaultResolver

// newHostResolver returns the host check done right before a URL is
// submitted, or nil when VERDICTBOT_RESOLVE_HOSTS=false.
func newHostResolver(cfg config.Config, log *slog.Logger) *links.HostResolver {
	if !cfg.ResolveHosts {
		return nil
	}
	return links.NewHostResolver(systemResolver, links.ResolveOptions{Logger: log.With("component", "resolve")})
}

// hostGate is h as the pipeline's HostGate: nil (no check) when h is nil.
func hostGate(h *links.HostResolver) scan.HostGate {
	if h == nil {
		return nil
	}
	return h
}
