package sandbox

import (
	"testing"
	"time"
)

// A first 20 s analysis (no history: the prior, 5–300 s) is seen within 2 s
// of its end, in at most 15 calls (issue 14): the prompt window's checks
// every 3 s from 12 s see its report being written (15.6–20 s in the
// simulator's proportions, sim.RealisticProfile), then the near-the-end
// checks see it reported. Simulated with the schedule's jitter, each status
// call taking o (seen at its start, the report read after it).
func TestLearnedScheduleSeesAFirst20sAnalysisPromptly(t *testing.T) {
	t.Parallel()
	d := 20.0
	status := func(e float64) string {
		switch {
		case e < d*10/271:
			return "pending"
		case e < d*210/271:
			return "running"
		case e < d*211/271:
			return "completed"
		case e < d:
			return "reporting"
		}
		return "reported"
	}
	const trials = 2000
	l := NewLearnedSchedule() // nothing observed: every wait plans from the prior
	for _, o := range []float64{0, 0.05} {
		var late, most int
		for range trials {
			var e, since float64
			last, n := "", 0
			for last != "reported" {
				e += l.NextStatus(last, time.Duration((e-since)*1e9), n, time.Duration(e*1e9)).Seconds()
				st := status(e)
				e += o
				n++
				if st != last {
					last, since = st, e
				}
			}
			if e+o-d > 2 {
				late++
			}
			most = max(most, n)
		}
		t.Logf("%.2f s a request: %d of %d seen over 2 s late, at most %d calls", o, late, trials, most)
		if late > trials/200 || most > 15 {
			t.Errorf("%.2f s a request: %d of %d seen over 2 s late (want ≤ 0.5 %%), at most %d calls (want ≤ 15)", o, late, trials, most)
		}
	}
}
