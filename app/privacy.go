package app

import (
	"log/slog"
	"net"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/scan"

	"github.com/verdictbot/verdictbot/config"
)

// NewHostResolver returns the host check done right before a URL is
// submitted, asking resolver (Options.Resolver: nil is the system's,
// net.DefaultResolver), or nil when VERDICTBOT_RESOLVE_HOSTS=false.
func NewHostResolver(cfg config.Config, resolver links.Resolver, log *slog.Logger) *links.HostResolver {
	if !cfg.ResolveHosts {
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return links.NewHostResolver(resolver, links.ResolveOptions{Logger: log.With("component", "resolve")})
}

// HostGate is h as the pipeline's HostGate: nil (no check) when h is nil.
func HostGate(h *links.HostResolver) scan.HostGate {
	if h == nil {
		return nil
	}
	return h
}
