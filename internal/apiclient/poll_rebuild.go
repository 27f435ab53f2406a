package apiclient

import "time"

// Building a plan (kernel sums of up to Memory samples over the grid)
// costs a few hundred µs, a tenth of a link's CPU in the throughput
// benchmark when done at every completion, while one more sample among
// 64 barely moves it. Once a plan exists, Observe rebuilds it when
// rebuildEvery durations have come in since, or when the plan is older
// than rebuildAfter: a busy service (tens of completions a second) pays a
// rebuild every rebuildEvery completions and plans from samples at most
// rebuildEvery−1 completions old; a quiet one still rebuilds at each
// completion.
const (
	rebuildEvery = 8
	rebuildAfter = 10 * time.Second
)

// rebuildDue counts an observed duration and reports whether the plan is
// to be built now: always while there is none, and when first is set (the
// first plan learned from the samples replaces the prior at once). s.mu is
// held.
func (s *LearnedSchedule) rebuildDue(first bool) bool {
	s.pending++
	now := time.Now()
	if !first && s.plan.Load() != nil && s.pending < rebuildEvery && now.Sub(s.built) < rebuildAfter {
		return false
	}
	s.pending, s.built = 0, now
	return true
}
