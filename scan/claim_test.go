package scan

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/verdict"
)

// sharedState is what replicas share in the database, as far as the URL
// pipeline's memory sees it: analyses in flight with their owner, and
// recorded verdicts.
type sharedState struct {
	mu       sync.Mutex
	rows     map[string]*sharedRow
	verdicts map[string]URLVerdict
	dead     map[string]bool
	finished int // verdicts recorded
}

type sharedRow struct{ task, owner string }

// replicaMemory is one replica's view (a Claimer, as scanstore.URLMemory over
// PostgreSQL).
type replicaMemory struct {
	s  *sharedState
	me string
}

func (m replicaMemory) Claim(key string) (string, bool, bool) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	r, ok := m.s.rows[key]
	if !ok {
		m.s.rows[key] = &sharedRow{owner: m.me}
		return "", false, true
	}
	if r.owner == m.me || m.s.dead[r.owner] {
		r.owner = m.me
		return r.task, true, true
	}
	return r.task, true, false
}
func (m replicaMemory) Release(key string) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if r, ok := m.s.rows[key]; ok && r.owner == m.me && r.task == "" {
		delete(m.s.rows, key)
	}
}
func (m replicaMemory) Recall(key string, ttl time.Duration) (URLVerdict, bool) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	v, ok := m.s.verdicts[key]
	return v, ok && time.Since(v.CheckedAt) < ttl
}
func (m replicaMemory) InFlight(key string) (string, bool) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	r, ok := m.s.rows[key]
	if !ok {
		return "", false
	}
	return r.task, true
}
func (m replicaMemory) Submitting(string) { panic("a Claimer is claimed, not told of submissions") }
func (m replicaMemory) Submitted(key, task string) {
	m.s.mu.Lock()
	m.s.rows[key] = &sharedRow{task: task, owner: m.me}
	m.s.mu.Unlock()
}
func (m replicaMemory) LastTask(string) string { return "" }
func (m replicaMemory) Finished(v URLVerdict, _ string) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if v.Err == nil {
		m.s.verdicts[v.URL] = v
		m.s.finished++
	}
	delete(m.s.rows, v.URL)
}

func newShared() *sharedState {
	return &sharedState{rows: map[string]*sharedRow{}, verdicts: map[string]URLVerdict{}, dead: map[string]bool{}}
}

// replicaURLs is one replica's URL pipeline against the common simulator.
func replicaURLs(t *testing.T, base string, mem Memory[URLVerdict]) *URLs {
	t.Helper()
	rep, err := reputation.New(base, simKey, reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(2, time.Millisecond, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Each status poll waits 20 ms: the analysis stays in flight long
	// enough for the other replica to find it.
	u := NewURLs(rep, URLOptions{Memory: mem, TTL: time.Hour, Wait: reputation.WaitOptions{
		Backoff: reputation.Backoff{Initial: 20 * time.Millisecond, Factor: 1, Max: 20 * time.Millisecond}, Deadline: 10 * time.Second}})
	t.Cleanup(u.Close)
	return u
}

func withFollowPoll(t *testing.T, d time.Duration) {
	old := followPoll
	followPoll = d
	t.Cleanup(func() { followPoll = old })
}

// waitTask waits until some replica has a task in flight for key.
func (s *sharedState) waitTask(t *testing.T, key string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		r, ok := s.rows[key]
		s.mu.Unlock()
		if ok && r.task != "" {
			return r.task
		}
	}
	t.Fatal("no task in flight")
	return ""
}

// TestTwoReplicasSubmitAURLOnce: the replica that finds another's
// analysis of the URL in flight waits for its verdict; nothing is
// submitted twice, and the verdict is recorded once.
func TestTwoReplicasSubmitAURLOnce(t *testing.T) {
	withFollowPoll(t, 10*time.Millisecond)
	srv, base := simtest.Start(t, sim.Config{})
	s := newShared()
	a := replicaURLs(t, base, replicaMemory{s, "a"})
	b := replicaURLs(t, base, replicaMemory{s, "b"})
	const url = "https://login.phish.test/twice"
	var va, vb URLVerdict
	done := make(chan struct{})
	go func() { va = a.Check(t.Context(), url, CheckOptions{}); close(done) }()
	s.waitTask(t, url)
	var mu sync.Mutex
	var statuses []string
	vb = b.Check(t.Context(), url, CheckOptions{OnStatus: func(st string) { mu.Lock(); statuses = append(statuses, st); mu.Unlock() }})
	<-done
	mu.Lock()
	defer mu.Unlock()
	if n := len(srv.URLTasks(url)); n != 1 {
		t.Fatalf("%d submissions of the URL by two replicas, want 1", n)
	}
	if va.Level != verdict.Malicious || vb.Level != verdict.Malicious || va.TaskID != vb.TaskID {
		t.Fatalf("verdicts a %+v, b %+v", va, vb)
	}
	if va.Cached || !vb.Cached {
		t.Fatalf("cached: a %v, b %v; want b to reuse a's analysis", va.Cached, vb.Cached)
	}
	if s.finished != 1 {
		t.Fatalf("the verdict was recorded %d times, want once", s.finished)
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != "submitted" {
		t.Fatalf("the waiting replica showed %q, want it to end on submitted", statuses)
	}
}

// TestAnalysisOfADeadReplicaIsResumedNotResubmitted: a replica stops with
// its analysis in flight; when it counts as dead, the waiting replica
// takes the task over and polls it.
func TestAnalysisOfADeadReplicaIsResumedNotResubmitted(t *testing.T) {
	withFollowPoll(t, 10*time.Millisecond)
	srv, base := simtest.Start(t, sim.Config{})
	s := newShared()
	a := replicaURLs(t, base, replicaMemory{s, "a"})
	b := replicaURLs(t, base, replicaMemory{s, "b"})
	const url = "https://example.com/orphan"
	go a.Check(context.Background(), url, CheckOptions{})
	task := s.waitTask(t, url)
	a.Close() // stops with the analysis in flight (it stays claimed by a)
	got := make(chan URLVerdict, 1)
	go func() { got <- b.Check(t.Context(), url, CheckOptions{}) }()
	select {
	case v := <-got:
		t.Fatalf("b did not wait for a's analysis: %+v", v)
	case <-time.After(100 * time.Millisecond):
	}
	s.mu.Lock()
	s.dead["a"] = true
	s.mu.Unlock()
	v := <-got
	if v.Level != verdict.Clean || v.TaskID != task || v.Cached {
		t.Fatalf("verdict %+v, want a's task %s resumed", v, task)
	}
	if n := len(srv.URLTasks(url)); n != 1 {
		t.Fatalf("%d submissions, want 1 (resumed, not resubmitted)", n)
	}
}

// staleFirstRecall is a replica's memory whose first Recall misses: the
// replica looked for a verdict just before another replica recorded it.
type staleFirstRecall struct {
	replicaMemory
	looked *bool
}

func (m staleFirstRecall) Recall(key string, ttl time.Duration) (URLVerdict, bool) {
	if !*m.looked {
		*m.looked = true
		return URLVerdict{}, false
	}
	return m.replicaMemory.Recall(key, ttl)
}

// TestVerdictRecordedBetweenLookAndClaimIsNotSubmittedAgain: replica b
// looks for a verdict and finds none; replica a then records its verdict
// and drops its claim; b's claim is fresh, and must not submit the URL a
// second time: it takes a's verdict and leaves no claim behind.
func TestVerdictRecordedBetweenLookAndClaimIsNotSubmittedAgain(t *testing.T) {
	srv, base := simtest.Start(t, sim.Config{})
	s := newShared()
	a := replicaURLs(t, base, replicaMemory{s, "a"})
	const url = "https://login.phish.test/raced"
	va := a.Check(t.Context(), url, CheckOptions{})
	if va.Level != verdict.Malicious || len(srv.URLTasks(url)) != 1 {
		t.Fatalf("a's verdict %+v, tasks %v", va, srv.URLTasks(url))
	}
	looked := false
	b := replicaURLs(t, base, staleFirstRecall{replicaMemory{s, "b"}, &looked})
	vb := b.Check(t.Context(), url, CheckOptions{})
	if !looked {
		t.Fatal("b never looked for a verdict")
	}
	if n := len(srv.URLTasks(url)); n != 1 {
		t.Fatalf("%d submissions of the URL, want 1: b submitted a verdict a had recorded", n)
	}
	if vb.TaskID != va.TaskID || !vb.Cached || vb.Level != verdict.Malicious {
		t.Fatalf("b's verdict %+v, want a's (task %s) reused", vb, va.TaskID)
	}
	s.mu.Lock()
	_, left := s.rows[url]
	s.mu.Unlock()
	if left {
		t.Fatal("b's claim was left behind: other replicas would wait for an analysis nobody runs")
	}
	// A recheck wants a new analysis all the same.
	if v := b.Check(t.Context(), url, CheckOptions{Recheck: true}); v.Cached || len(srv.URLTasks(url)) != 2 {
		t.Fatalf("recheck %+v, tasks %d: want a new analysis", v, len(srv.URLTasks(url)))
	}
}
