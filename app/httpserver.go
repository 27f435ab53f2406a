package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/verdictbot/verdictbot/metrics"
)

// opsServer serves /healthz, /readyz and /metrics on VERDICTBOT_HTTP_ADDR.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
}

// opsLimits bound what a client of the ops server can hold: it serves
// three tiny GET endpoints, so every limit is small and fixed.
type opsLimits struct {
	// ReadHeader is the time to send the request line and headers (cuts
	// slowloris clients); Read the whole request; Write the response.
	ReadHeader, Read, Write time.Duration
	// Idle closes a keep-alive connection with no request for this long.
	Idle time.Duration
	// MaxHeaderBytes caps the request line and headers (net/http adds
	// 4 KiB of slack; larger headers get 431).
	MaxHeaderBytes int
}

// defaultOpsLimits are the ops server's limits (docs/operations.md, "Limits").
var defaultOpsLimits = opsLimits{
	ReadHeader:     5 * time.Second,
	Read:           10 * time.Second,
	Write:          30 * time.Second,
	Idle:           60 * time.Second,
	MaxHeaderBytes: 8 << 10,
}

// startOps listens on addr and serves until Shutdown. ready reports whether
// Socket Mode is connected and the store is open.
func startOps(addr string, m *metrics.Metrics, ready func() (bool, string), log *slog.Logger) (*opsServer, error) {
	return startOpsWith(addr, m, ready, log, defaultOpsLimits)
}

// startOpsWith is startOps with the given limits (tests shorten them).
func startOpsWith(addr string, m *metrics.Metrics, ready func() (bool, string), log *slog.Logger, lim opsLimits) (*opsServer, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, why := ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", why)
			return
		}
		io.WriteString(w, "ready\n")
		if why != "" {
			fmt.Fprintf(w, "%s\n", why) // a detail that does not stop the traffic (quarantine's admin token)
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("VERDICTBOT_HTTP_ADDR=%s: %w", addr, err)
	}
	s := &opsServer{ln: ln, srv: &http.Server{Handler: mux,
		ReadHeaderTimeout: lim.ReadHeader, ReadTimeout: lim.Read, WriteTimeout: lim.Write,
		IdleTimeout: lim.Idle, MaxHeaderBytes: lim.MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health and metrics server stopped", "error", err)
		}
	}()
	log.Info("serving health and metrics", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address actually listened on.
func (s *opsServer) Addr() string { return s.ln.Addr().String() }

func (s *opsServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
