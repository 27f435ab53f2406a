package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds the graceful shutdown of a server started by
// Serve or StartLocal: requests still running after it are cut off.
const ShutdownTimeout = 5 * time.Second

// readHeaderTimeout bounds how long a client may take to send a request's
// headers (a slow client cannot hold a connection open).
const readHeaderTimeout = 10 * time.Second

// Serve serves a simulator for cfg on ln until ctx is done, then shuts it
// down, waiting up to ShutdownTimeout for requests in flight (requests see
// ctx as their base context). It returns nil after a clean shutdown, and
// "serve: …" or "shutdown: …" otherwise. Serve closes ln.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	srv := &http.Server{
		Handler:           New(cfg),
		ReadHeaderTimeout: readHeaderTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
		<-serveErr
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// StartLocal serves a simulator for cfg on a free loopback port, for a
// process that needs the services without running them (`verdictbot
// shell`, `verdictbot check --sim`). base ("http://127.0.0.1:port", no
// trailing slash) is the base URL of both services; stop shuts the server
// down, waiting up to ShutdownTimeout, and returns once it has stopped.
// The server's own error log is discarded.
func StartLocal(cfg Config) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: New(cfg), ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog: stdlog.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}
