package links

import (
	"context"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"
)

// ReasonResolvesPrivate means the host is a name, public-looking, but every
// address it resolves to is private, loopback, link-local or otherwise not
// public unicast (localtest.me → 127.0.0.1, jira.corp.example.com →
// 10.x): it only leads inside a network, so it is not sent. Policy.Extract
// never returns it; HostResolver decides it, right before submission.
const ReasonResolvesPrivate Reason = "resolves_private"

// resolvesPrivateText is ReasonResolvesPrivate.Text().
const resolvesPrivateText = "resolves to a private address"

// PublicAddr reports whether a is a public unicast address (ok), or why not,
// from the special-purpose address tables in hosts.go. IPv4-mapped,
// IPv4-compatible, NAT64 and 6to4 addresses are judged by the IPv4 address
// they carry.
func PublicAddr(a netip.Addr) (reason string, ok bool) {
	if !a.IsValid() {
		return "not an IP address", false
	}
	what, bad := nonPublicAddr(a.WithZone(""))
	return what, !bad
}

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it (net.DefaultResolver is the system resolver); tests inject their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Defaults of ResolveOptions.
const (
	DefaultResolveTimeout = 2 * time.Second
	DefaultResolveTTL     = 5 * time.Minute
	// DefaultResolveFailTTL keeps a failed lookup (NXDOMAIN, timeout) for
	// a short while, so a burst of links to a dead name waits once.
	DefaultResolveFailTTL = 30 * time.Second
	DefaultResolveEntries = 10_000
)

// ResolveOptions tune a HostResolver; zero values take the defaults.
type ResolveOptions struct {
	// Timeout bounds one lookup (default 2 s). A lookup that times out
	// does not block the scan.
	Timeout time.Duration
	// TTL is how long an answer is reused (default 5 min); FailTTL how
	// long a failed lookup is (default 30 s).
	TTL, FailTTL time.Duration
	// MaxEntries bounds the cache (default 10,000 hosts); when it is full,
	// expired entries are dropped, and new answers are not kept until
	// there is room.
	MaxEntries int
	Logger     *slog.Logger
}

// HostResolver decides whether a host name leads only inside the network:
// it resolves the name and reports it internal when every address is not
// public unicast. It caches answers, makes one lookup per host however many
// callers ask at once, and fails open: NXDOMAIN, a resolver error or a
// timeout never make a host internal. Safe for concurrent use. A nil
// *HostResolver never reports a host internal (resolution turned off).
//
// It does network I/O: call it in the scan pipeline, never while acking a
// Slack envelope.
type HostResolver struct {
	r     Resolver
	opt   ResolveOptions
	cache *gocache.Cache

	mu       sync.Mutex
	inflight map[string]*lookup
}

type lookup struct {
	done chan struct{}
	res  resolved
}

// resolved is one answer, as cached.
type resolved struct {
	internal bool
	detail   string
}

// NewHostResolver returns a HostResolver over r.
func NewHostResolver(r Resolver, opt ResolveOptions) *HostResolver {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultResolveTimeout
	}
	if opt.TTL <= 0 {
		opt.TTL = DefaultResolveTTL
	}
	if opt.FailTTL <= 0 {
		opt.FailTTL = DefaultResolveFailTTL
	}
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = DefaultResolveEntries
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &HostResolver{r: r, opt: opt, cache: gocache.New(opt.TTL, opt.TTL), inflight: map[string]*lookup{}}
}

// CheckURL is Internal for the host of a normalised URL (see Normalize). A
// URL without a parseable host is not internal here (the Policy judges it).
func (h *HostResolver) CheckURL(ctx context.Context, normalised string) (detail string, internal bool) {
	if h == nil {
		return "", false
	}
	u, err := url.Parse(normalised)
	if err != nil {
		return "", false
	}
	return h.Internal(ctx, u.Hostname())
}

// Internal reports whether every address host resolves to is private,
// loopback, link-local or otherwise special; detail then names the rule
// matched (e.g. "127.0.0.0/8 is loopback (RFC 1122 §3.2.1.3)"), never the
// host. IP literals are not resolved (the Policy already judged them) and
// give false.
func (h *HostResolver) Internal(ctx context.Context, host string) (detail string, internal bool) {
	if h == nil || host == "" {
		return "", false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return "", false
	}
	if v, ok := h.cache.Get(host); ok {
		r := v.(resolved)
		return r.detail, r.internal
	}
	h.mu.Lock()
	// Look again under the lock: a lookup that finished between the first
	// look and here has stored its answer before leaving h.inflight.
	if v, ok := h.cache.Get(host); ok {
		h.mu.Unlock()
		r := v.(resolved)
		return r.detail, r.internal
	}
	l, joined := h.inflight[host]
	if !joined {
		l = &lookup{done: make(chan struct{})}
		h.inflight[host] = l
		go h.resolve(ctx, host, l)
	}
	h.mu.Unlock()
	select {
	case <-l.done:
		return l.res.detail, l.res.internal
	case <-ctx.Done():
		return "", false // the caller gave up; fail open
	}
}

// resolve makes the one lookup for host, on a context detached from the
// caller that started it (others may be waiting), bounded by the timeout.
func (h *HostResolver) resolve(parent context.Context, host string, l *lookup) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), h.opt.Timeout)
	defer cancel()
	addrs, err := h.r.LookupNetIP(ctx, "ip", host)
	var res resolved
	ttl := h.opt.TTL
	switch {
	case err != nil:
		h.opt.Logger.Debug("host lookup failed; scanning it anyway", "error", err)
		ttl = h.opt.FailTTL
	case len(addrs) == 0:
		h.opt.Logger.Debug("host lookup returned no address; scanning it anyway")
		ttl = h.opt.FailTTL
	default:
		res = judge(addrs)
	}
	h.store(host, res, ttl)
	h.mu.Lock()
	delete(h.inflight, host)
	l.res = res
	close(l.done)
	h.mu.Unlock()
}

// judge is internal when no address is public; the detail is the first
// address's rule.
func judge(addrs []netip.Addr) resolved {
	first := ""
	for _, a := range addrs {
		why, public := PublicAddr(a)
		if public {
			return resolved{}
		}
		if first == "" {
			first = why
		}
	}
	return resolved{internal: true, detail: first}
}

// store caches an answer while the cache has room.
func (h *HostResolver) store(host string, r resolved, ttl time.Duration) {
	if h.cache.ItemCount() >= h.opt.MaxEntries {
		h.cache.DeleteExpired()
		if h.cache.ItemCount() >= h.opt.MaxEntries {
			return
		}
	}
	h.cache.Set(host, r, ttl)
}

// CachedHosts returns how many hosts have a cached answer (for tests and
// metrics).
func (h *HostResolver) CachedHosts() int {
	if h == nil {
		return 0
	}
	return h.cache.ItemCount()
}
