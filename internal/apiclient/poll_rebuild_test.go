package apiclient

import (
	"testing"
	"time"
)

// TestLearnedScheduleRebuildsItsPlanLazily: the plan is built as soon as
// MinSamples durations are known, then again once rebuildEvery more have
// come in, or at the next one once the plan is rebuildAfter old; the
// samples in between are kept and count in the next plan.
func TestLearnedScheduleRebuildsItsPlanLazily(t *testing.T) {
	t.Parallel()
	cfg := DefaultLearnedConfig()
	s := NewLearnedSchedule(cfg)
	for range cfg.MinSamples {
		s.Observe(10 * time.Second)
	}
	first := s.plan.Load()
	if first == nil {
		t.Fatal("no plan after MinSamples")
	}
	for i := range rebuildEvery - 1 {
		s.Observe(100 * time.Second)
		if s.plan.Load() != first {
			t.Fatalf("rebuilt after %d more durations, want after %d", i+1, rebuildEvery)
		}
	}
	s.Observe(100 * time.Second)
	second := s.plan.Load()
	if second == first {
		t.Fatalf("not rebuilt after %d more durations", rebuildEvery)
	}
	// The plan is the one built from every sample so far.
	want := buildPlan(s.cfg, s.samples, nil, false)
	for _, e := range []float64{0, 5, 9, 10, 30, 90, 100, 150} {
		if got, w := second.gap(e), want.gap(e); got != w {
			t.Errorf("gap at %g s: %s, want %s (from all the samples)", e, got, w)
		}
	}
	// A quiet service: the plan is old, the next duration rebuilds it.
	s.Observe(100 * time.Second)
	if s.plan.Load() != second {
		t.Fatal("rebuilt one duration after the last build")
	}
	s.mu.Lock()
	s.built = s.built.Add(-rebuildAfter)
	s.mu.Unlock()
	s.Observe(100 * time.Second)
	if s.plan.Load() == second {
		t.Fatalf("not rebuilt once the plan was %s old", rebuildAfter)
	}
}
