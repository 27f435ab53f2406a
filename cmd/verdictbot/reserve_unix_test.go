//go:build unix

package main

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// reservedPort is a loopback TCP port bound but not listening: it is this
// process's, so no other test's listener takes it, and a connection to it
// is refused (ECONNREFUSED) until listen turns it into a listener.
type reservedPort struct {
	fd   int
	addr string
}

// reservePort binds a socket to a port the system picks on 127.0.0.1.
func reservePort(t *testing.T) *reservedPort {
	t.Helper()
	// Not inherited by the processes the tests start (as net does it).
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	p := &reservedPort{fd: fd, addr: (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()}
	t.Cleanup(func() {
		if p.fd >= 0 {
			syscall.Close(p.fd)
		}
	})
	return p
}

// listen makes the reserved port a listener (once).
func (p *reservedPort) listen(t *testing.T) net.Listener {
	t.Helper()
	if err := syscall.Listen(p.fd, 128); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(p.fd), "reserved-port")
	p.fd = -1
	ln, err := net.FileListener(f) // a duplicate of the descriptor
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
