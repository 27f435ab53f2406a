package scan

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

// memMemory is a minimal Memory holding submissions in flight.
type memMemory struct {
	mu       sync.Mutex
	inFlight map[string]string
}

func (m *memMemory) Recall(string, time.Duration) (URLVerdict, bool) { return URLVerdict{}, false }
func (m *memMemory) InFlight(url string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.inFlight[url]
	return id, ok
}
func (m *memMemory) Submitting(string)        {}
func (m *memMemory) Submitted(url, id string) { m.mu.Lock(); m.inFlight[url] = id; m.mu.Unlock() }
func (m *memMemory) LastTask(string) string   { return "" }
func (m *memMemory) Finished(v URLVerdict, _ string) {
	m.mu.Lock()
	delete(m.inFlight, v.URL)
	m.mu.Unlock()
}

func TestResumedBacklogDoesNotHoldNewSubmissions(t *testing.T) {
	t.Parallel()
	mem := &memMemory{inFlight: map[string]string{}}
	u, srv := newURLs(t, sim.Config{}, func(o *URLOptions) {
		o.MaxConcurrent = 4
		o.Memory = mem
		o.Wait.Deadline = 30 * time.Second
	})
	// Twenty analyses left in flight by a previous process, none finishing.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 20 {
		url := "https://pending.test/" + string(rune('a'+i))
		sub, err := u.rep.Scan(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		mem.Submitted(url, sub.TaskID)
		go u.Check(ctx, url, CheckOptions{})
	}
	time.Sleep(50 * time.Millisecond) // the resumed ones take their slots
	start := time.Now()
	v := u.Check(t.Context(), "https://example.com/new", CheckOptions{})
	if v.Level != verdict.Clean || time.Since(start) > 5*time.Second {
		t.Fatalf("a new link waited behind the resumed backlog: %+v after %s", v, time.Since(start))
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 21 {
		t.Fatalf("%d submissions, want the 20 old ones and the new one", n)
	}
}
