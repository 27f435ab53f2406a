package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// runHealthcheck is `verdictbot healthcheck`: for container health checks
// (distroless images have no shell or curl). It exits 0 when /healthz
// answers 200 on VERDICTBOT_HTTP_ADDR.
func runHealthcheck(ctx context.Context, env environment, args []string, stdout io.Writer) error {
	addr := strings.TrimSpace(env.get("VERDICTBOT_HTTP_ADDR")) // empty: the default
	if addr == "" {
		addr = defaultHTTPAddr
	}
	switch {
	case len(args) > 1:
		return fmt.Errorf("%w: healthcheck takes at most one address, got %q", errUsage, args)
	case len(args) == 1:
		addr = args[0]
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("VERDICTBOT_HTTP_ADDR=%q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: HTTP %d", resp.StatusCode)
	}
	fmt.Fprintln(stdout, "healthy")
	return nil
}

const defaultHTTPAddr = "127.0.0.1:8080"
