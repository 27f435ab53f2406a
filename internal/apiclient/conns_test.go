package apiclient

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentCallsReuseConnections: rounds of concurrent calls to the
// service reuse the connections the first round opened, instead of
// keeping two and dialling the rest again each round.
func TestConcurrentCallsReuseConnections(t *testing.T) {
	t.Parallel()
	const concurrent, rounds = 32, 5
	var conns atomic.Int32
	var inside sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Done()
		inside.Wait() // every call of the round holds its connection at once
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := New(Config{Service: "reputation", BaseURL: srv.URL + "/gw/v1", Prefix: "api", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		inside.Add(concurrent)
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				if err := c.DoJSON(t.Context(), Request{Op: "status", Budget: Report, Method: "GET", Path: []string{"status"}}, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n > concurrent+2 {
		t.Errorf("%d connections for %d rounds of %d concurrent calls, want about %d", n, rounds, concurrent, concurrent)
	}
}
