// Package simtest starts the simulator (package sim) for a test. It is kept
// apart from sim, which `verdictbot sim` and `verdictbot shell` link, so the
// production binary does not link testing or net/http/httptest.
package simtest

import (
	"net/http/httptest"
	"testing"

	"github.com/verdictbot/verdictbot/sim"
)

// Start serves a new sim.Server for cfg on a local httptest server that is
// closed when tb's test ends. baseURL ("http://127.0.0.1:port", no trailing
// slash) is the base of both services: the URL service lives under
// baseURL+"/api/<key>/" and the sandbox under baseURL+"/apineo/<key>/".
func Start(tb testing.TB, cfg sim.Config) (srv *sim.Server, baseURL string) {
	tb.Helper()
	srv = sim.New(cfg)
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return srv, ts.URL
}
