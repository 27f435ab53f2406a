package testutil

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"
)

// ConnectProxy is a real HTTP proxy that serves CONNECT only, as a corporate
// egress proxy does for HTTPS: it tunnels the bytes between the client and
// the host it names, and records each CONNECT's authority (host:port).
// Names are resolved through Hosts (host → IP), never the system resolver,
// so a test can use names such as slack.test that a client would not send
// to a loopback address directly (Go's proxy rules never proxy loopback).
type ConnectProxy struct {
	// Hosts maps each host name the proxy may reach to the address it
	// dials (the port is the CONNECT's own). Others get 502.
	Hosts map[string]string

	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	seen    []string
	conns   map[net.Conn]struct{}
	refused []string
	closed  bool
}

// StartConnectProxy listens on 127.0.0.1 and serves until Close.
func StartConnectProxy(hosts map[string]string) (*ConnectProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ConnectProxy{Hosts: hosts, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c) {
				c.Close()
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer p.untrack(c)
				p.serve(c)
			}()
		}
	}()
	return p, nil
}

// URL is the proxy's address as HTTPS_PROXY wants it.
func (p *ConnectProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Connects returns every CONNECT authority received, in order.
func (p *ConnectProxy) Connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// Refused returns the request lines the proxy refused (not CONNECT, or a
// host not in Hosts): a client that sends one is misconfigured.
func (p *ConnectProxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// Close stops accepting, closes every tunnel and waits for its goroutines.
func (p *ConnectProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *ConnectProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *ConnectProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *ConnectProxy) serve(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host, port, err := net.SplitHostPort(req.Host)
	addr, known := p.Hosts[host]
	if req.Method != http.MethodConnect || err != nil || !known {
		p.mu.Lock()
		p.refused = append(p.refused, req.Method+" "+req.RequestURI)
		p.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", net.JoinHostPort(addr, port), 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	p.mu.Lock()
	p.seen = append(p.seen, req.Host)
	p.mu.Unlock()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br) // what the client sent, buffered bytes first
		up.Close()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// SelfSignedTLS makes a certificate for the given host names, valid for an
// hour, and returns a server configuration with it and the certificate in
// PEM (for SSL_CERT_FILE or a client's root pool).
func SelfSignedTLS(hosts ...string) (*tls.Config, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: hosts[0]},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
