package app

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/metrics"
)

func startTestOps(t *testing.T, lim opsLimits) *opsServer {
	t.Helper()
	m := metrics.New(func() int { return 0 }, func() int { return 0 }, func() bool { return true })
	s, err := startOpsWith("127.0.0.1:0", m, func() (bool, string) { return true, "" }, slog.New(slog.DiscardHandler), lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.shutdown)
	return s
}

// closedWithin reports whether the server closes c within d (reads until
// EOF or a reset; a read deadline means it was still open).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestOpsServerHasEveryLimit(t *testing.T) {
	t.Parallel()
	l := defaultOpsLimits
	if l.ReadHeader <= 0 || l.Read <= 0 || l.Write <= 0 || l.Idle <= 0 || l.MaxHeaderBytes <= 0 || l.MaxHeaderBytes > 64<<10 {
		t.Fatalf("ops server limits %+v: every one must be set", l)
	}
	s := startTestOps(t, defaultOpsLimits)
	if s.srv.IdleTimeout != l.Idle || s.srv.ReadTimeout != l.Read || s.srv.WriteTimeout != l.Write ||
		s.srv.ReadHeaderTimeout != l.ReadHeader || s.srv.MaxHeaderBytes != l.MaxHeaderBytes {
		t.Fatalf("server not configured with the limits: %+v", s.srv)
	}
}

// TestOpsServerClosesIdleKeepAliveConnections holds keep-alive connections
// open after a request: the server closes them after the idle timeout.
func TestOpsServerClosesIdleKeepAliveConnections(t *testing.T) {
	t.Parallel()
	s := startTestOps(t, opsLimits{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second,
		Idle: 300 * time.Millisecond, MaxHeaderBytes: 8 << 10})
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: ops\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("healthz: %d, close %v", resp.StatusCode, resp.Close)
		}
		conns = append(conns, c)
	}
	start := time.Now()
	for i, c := range conns {
		if !closedWithin(c, 3*time.Second) {
			t.Fatalf("idle keep-alive connection %d still open after 3s", i)
		}
	}
	t.Logf("5 idle keep-alive connections closed within %v (idle timeout 300ms)", time.Since(start).Round(10*time.Millisecond))
}

// TestOpsServerCutsSlowAndHugeHeaders: a client that trickles its headers
// (slowloris) is cut at the header timeout; oversized headers get 431.
func TestOpsServerCutsSlowAndHugeHeaders(t *testing.T) {
	t.Parallel()
	s := startTestOps(t, opsLimits{ReadHeader: 400 * time.Millisecond, Read: time.Second, Write: time.Second,
		Idle: time.Minute, MaxHeaderBytes: 8 << 10})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: ops\r\n")
	cut := make(chan time.Duration, 1)
	go func() {
		closedWithin(c, 5*time.Second)
		cut <- time.Since(start)
	}()
	// One header line every 50 ms, never ending the headers.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var took time.Duration
loop:
	for i := 0; ; i++ {
		select {
		case took = <-cut:
			break loop
		case <-tick.C:
			if _, err := io.WriteString(c, "X-Slow: "+strings.Repeat("a", i%10)+"\r\n"); err != nil {
				took = <-cut
				break loop
			}
		}
	}
	if took > 3*time.Second {
		t.Fatalf("slowloris connection held %v", took)
	}
	t.Logf("slowloris connection cut after %v (header timeout 400ms)", took.Round(10*time.Millisecond))

	c2, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET /healthz HTTP/1.1\r\nHost: ops\r\nX-Big: "+strings.Repeat("b", 64<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB header: HTTP %d, want 431", resp.StatusCode)
	}
}
