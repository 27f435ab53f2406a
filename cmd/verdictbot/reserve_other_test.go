//go:build !unix

package main

import (
	"net"
	"testing"
)

// reservedPort, where a socket cannot be bound without listening: the
// port is picked and freed, and listen takes it again (another listener
// may have taken it meanwhile).
type reservedPort struct{ addr string }

func reservePort(t *testing.T) *reservedPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return &reservedPort{addr: ln.Addr().String()}
}

func (p *reservedPort) listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
