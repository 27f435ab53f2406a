package links

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a table; unknown names are NXDOMAIN. It counts
// lookups per host and can hold every lookup until release is closed.
type fakeResolver struct {
	addrs   map[string][]string
	err     map[string]error
	release chan struct{} // nil: answer at once
	mu      sync.Mutex
	calls   map[string]int
	total   atomic.Int32
}

func (f *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.total.Add(1)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[host]++
	f.mu.Unlock()
	if network != "ip" {
		return nil, errors.New("unexpected network " + network)
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := f.err[host]; err != nil {
		return nil, err
	}
	list, ok := f.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func (f *fakeResolver) count(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[host]
}

func TestHostResolverJudgesEveryAddress(t *testing.T) {
	t.Parallel()
	f := &fakeResolver{
		addrs: map[string][]string{
			"localtest.me":          {"127.0.0.1"},
			"127.0.0.1.nip.io":      {"127.0.0.1"},
			"jira.corp.example.com": {"10.20.30.40", "fd00::5"},
			"mapped.example":        {"::ffff:192.168.1.1"},
			"split.example":         {"10.0.0.1", "93.184.215.14"}, // one public address: scanned
			"public.example":        {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
			"empty.example":         {},
			"meta.example":          {"169.254.169.254"},
		},
		err: map[string]error{"broken.example": errors.New("server misbehaving")},
	}
	h := NewHostResolver(f, ResolveOptions{})
	tests := []struct {
		host     string
		internal bool
		detail   string
	}{
		{"localtest.me", true, "127.0.0.0/8 is loopback (RFC 1122 §3.2.1.3)"},
		{"127.0.0.1.nip.io", true, "127.0.0.0/8 is loopback (RFC 1122 §3.2.1.3)"},
		{"jira.corp.example.com", true, "10.0.0.0/8 is a private network (RFC 1918)"},
		{"JIRA.corp.example.com.", true, "10.0.0.0/8 is a private network (RFC 1918)"},
		{"mapped.example", true, "IPv4-mapped 192.168.1.1: 192.168.0.0/16 is a private network (RFC 1918)"},
		{"meta.example", true, "169.254.0.0/16 is link-local (RFC 3927)"},
		{"split.example", false, ""},
		{"public.example", false, ""},
		{"empty.example", false, ""},
		{"nxdomain.example", false, ""}, // NXDOMAIN: fail open
		{"broken.example", false, ""},   // resolver error: fail open
		{"10.0.0.1", false, ""},         // IP literals are not resolved
		{"[fd00::1]", false, ""},
	}
	for _, tc := range tests {
		detail, internal := h.Internal(t.Context(), tc.host)
		if internal != tc.internal || detail != tc.detail {
			t.Errorf("Internal(%q) = %q, %v; want %q, %v", tc.host, detail, internal, tc.detail, tc.internal)
		}
	}
	if n := f.count("10.0.0.1") + f.count("fd00::1") + f.count("[fd00::1]"); n != 0 {
		t.Errorf("an IP literal was looked up %d times", n)
	}
	if ReasonResolvesPrivate.Text() != "resolves to a private address" {
		t.Errorf("Text() = %q", ReasonResolvesPrivate.Text())
	}
}

func TestHostResolverCheckURL(t *testing.T) {
	t.Parallel()
	f := &fakeResolver{addrs: map[string][]string{"localtest.me": {"127.0.0.1"}}}
	h := NewHostResolver(f, ResolveOptions{})
	for url, want := range map[string]bool{
		"http://localtest.me/":               true,
		"https://localtest.me:8443/a?b=c":    true,
		"https://example.com/":               false,
		"http://[::1]/":                      false, // literal: the Policy's job
		"https://user@localtest.me/#x":       true,
		"::not a url":                        false,
		"https://xn--bcher-kva.example/path": false,
	} {
		if _, got := h.CheckURL(t.Context(), url); got != want {
			t.Errorf("CheckURL(%q) = %v, want %v", url, got, want)
		}
	}
	var nilH *HostResolver
	if _, got := nilH.CheckURL(t.Context(), "http://localtest.me/"); got {
		t.Error("a nil HostResolver (resolution off) reported a host internal")
	}
}

func TestHostResolverCachesAndJoins(t *testing.T) {
	t.Parallel()
	f := &fakeResolver{addrs: map[string][]string{"localtest.me": {"127.0.0.1"}}, release: make(chan struct{})}
	h := NewHostResolver(f, ResolveOptions{})
	var wg sync.WaitGroup
	var internal atomic.Int32
	for range 20 {
		wg.Go(func() {
			if _, ok := h.Internal(context.Background(), "localtest.me"); ok {
				internal.Add(1)
			}
		})
	}
	// Every caller is waiting on the one lookup.
	deadline := time.Now().Add(5 * time.Second)
	for f.count("localtest.me") == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(f.release)
	wg.Wait()
	if internal.Load() != 20 {
		t.Fatalf("%d of 20 callers got internal", internal.Load())
	}
	if n := f.count("localtest.me"); n != 1 {
		t.Fatalf("%d lookups for 20 concurrent callers, want 1", n)
	}
	// Cached: no new lookup.
	h.Internal(t.Context(), "localtest.me")
	if n := f.count("localtest.me"); n != 1 {
		t.Fatalf("%d lookups after a cached answer, want 1", n)
	}
}

func TestHostResolverTimesOutAndFailsOpen(t *testing.T) {
	t.Parallel()
	f := &fakeResolver{addrs: map[string][]string{"slow.example": {"10.0.0.1"}}, release: make(chan struct{})} // never released
	h := NewHostResolver(f, ResolveOptions{Timeout: 50 * time.Millisecond})
	start := time.Now()
	if _, internal := h.Internal(t.Context(), "slow.example"); internal {
		t.Fatal("a lookup that timed out made the host internal")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s with a 50ms timeout", d)
	}
	// A caller that gives up is not held by the lookup.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, internal := h.Internal(ctx, "other.example"); internal {
		t.Fatal("cancelled caller got internal")
	}
}

func TestHostResolverCacheIsBounded(t *testing.T) {
	t.Parallel()
	f := &fakeResolver{addrs: map[string][]string{}}
	for _, h := range []string{"a.example", "b.example", "c.example", "d.example"} {
		f.addrs[h] = []string{"10.0.0.1"}
	}
	h := NewHostResolver(f, ResolveOptions{MaxEntries: 2})
	for _, host := range []string{"a.example", "b.example", "c.example", "d.example"} {
		if _, ok := h.Internal(t.Context(), host); !ok {
			t.Fatalf("%s not internal", host)
		}
	}
	if n := h.CachedHosts(); n != 2 {
		t.Fatalf("%d cached hosts, want the bound 2", n)
	}
	// An uncached host is still judged right, by a new lookup.
	if _, ok := h.Internal(t.Context(), "d.example"); !ok || f.count("d.example") != 2 {
		t.Fatalf("d.example: lookups %d", f.count("d.example"))
	}
}

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"8.8.8.8": true, "10.1.1.1": false, "::1": false, "2606:4700::1111": true,
		"fe80::1%eth0": false, "::ffff:8.8.8.8": true} {
		if _, ok := PublicAddr(netip.MustParseAddr(s)); ok != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", s, ok, want)
		}
	}
	if _, ok := PublicAddr(netip.Addr{}); ok {
		t.Error("the zero Addr is public")
	}
}
