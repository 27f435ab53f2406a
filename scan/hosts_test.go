package scan

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

// tableResolver answers LookupNetIP from a table; other names fail.
type tableResolver map[string]string

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// recordingMemory counts what the pipeline records.
type recordingMemory struct {
	mu                   sync.Mutex
	submitting, finished []string
}

func (m *recordingMemory) Recall(string, time.Duration) (URLVerdict, bool) {
	return URLVerdict{}, false
}
func (m *recordingMemory) InFlight(string) (string, bool) { return "", false }
func (m *recordingMemory) Submitting(url string) {
	m.mu.Lock()
	m.submitting = append(m.submitting, url)
	m.mu.Unlock()
}
func (m *recordingMemory) Submitted(string, string) {}
func (m *recordingMemory) LastTask(string) string   { return "" }
func (m *recordingMemory) Finished(v URLVerdict, _ string) {
	m.mu.Lock()
	m.finished = append(m.finished, v.URL)
	m.mu.Unlock()
}

func TestHostThatResolvesPrivateIsNeverSubmitted(t *testing.T) {
	t.Parallel()
	mem := &recordingMemory{}
	var done []URLVerdict
	var mu sync.Mutex
	hosts := links.NewHostResolver(tableResolver{
		"login.phish.test": "10.1.2.3", // would be malicious if sent
		"example.com":      "93.184.215.14",
	}, links.ResolveOptions{})
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.Hosts = hosts
		o.Memory = mem
		o.OnDone = func(v URLVerdict) { mu.Lock(); done = append(done, v); mu.Unlock() }
	})
	const internal = "https://login.phish.test/verify"
	for range 2 { // twice: the first answer is not cached as a verdict
		v := u.Check(t.Context(), internal, CheckOptions{})
		if v.Level != verdict.Skipped || v.Problem != "resolves to a private address" || v.TaskID != "" || v.Err != nil || v.Cached {
			t.Fatalf("internal host: %+v", v)
		}
	}
	if n := srv.Count(sim.ServiceReputation, ""); n != 0 {
		t.Fatalf("%d requests to the URL service for a host that resolves to 10.1.2.3", n)
	}
	// A public host, and one whose lookup fails, are scanned (fail open).
	if v := u.Check(t.Context(), "https://example.com/", CheckOptions{}); v.Level != verdict.Clean {
		t.Fatalf("public host: %+v", v)
	}
	if v := u.Check(t.Context(), "https://evil.test/x", CheckOptions{}); v.Level != verdict.Malicious {
		t.Fatalf("host whose lookup failed: %+v", v)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Fatalf("%d submissions, want 2", n)
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	for _, l := range [][]string{mem.submitting, mem.finished} {
		for _, url := range l {
			if url == internal {
				t.Fatalf("the withheld URL was recorded in the memory: %v / %v", mem.submitting, mem.finished)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range done {
		if v.URL == internal {
			t.Fatal("OnDone got the withheld URL as a verdict")
		}
	}
}

// The sentence shown for a URL whose host resolves only inside the network
// is the links package's reason text, wherever it is decided.
func TestInternalHostProblemIsTheLinksReason(t *testing.T) {
	if InternalHostProblem != links.ReasonResolvesPrivate.Text() {
		t.Errorf("scan.InternalHostProblem = %q, links.ReasonResolvesPrivate.Text() = %q", InternalHostProblem, links.ReasonResolvesPrivate.Text())
	}
}
