package main

import (
	"log/slog"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/scan"

	"github.com/verdictbot/verdictbot/config"
)

// newHostResolver returns the host check done right before a URL is
// submitted, asking resolver (Options.resolver: the system's, or a test's),
// or nil when VERDICTBOT_RESOLVE_HOSTS=false.
func newHostResolver(cfg config.Config, resolver links.Resolver, log *slog.Logger) *links.HostResolver {
	if !cfg.ResolveHosts {
		return nil
	}
	return links.NewHostResolver(resolver, links.ResolveOptions{Logger: log.With("component", "resolve")})
}

// hostGate is h as the pipeline's HostGate: nil (no check) when h is nil.
func hostGate(h *links.HostResolver) scan.HostGate {
	if h == nil {
		return nil
	}
	return h
}
