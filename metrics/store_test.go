package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPruneCountsAreExported(t *testing.T) {
	m := New(func() int { return 0 }, func() int { return 0 }, func() bool { return true })
	pruned := m.WatchPrune()
	pruned("cards", 3)
	pruned("cards", 2)
	pruned("verdicts", 7)
	pruned("jobs", 0)
	want := `# HELP verdictbot_store_pruned_total Records removed from the store by retention (VERDICTBOT_RETENTION), by kind.
# TYPE verdictbot_store_pruned_total counter
verdictbot_store_pruned_total{kind="cards"} 5
verdictbot_store_pruned_total{kind="events"} 0
verdictbot_store_pruned_total{kind="jobs"} 0
verdictbot_store_pruned_total{kind="reports"} 0
verdictbot_store_pruned_total{kind="targets"} 0
verdictbot_store_pruned_total{kind="verdicts"} 7
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "verdictbot_store_pruned_total"); err != nil {
		t.Fatal(err)
	}
}

func TestWatchReplicas(t *testing.T) {
	m := New(func() int { return 0 }, func() int { return 0 }, func() bool { return true })
	live := 3
	took := m.WatchReplicas(func() int { return live })
	took(4)
	took(2)
	want := `# HELP verdictbot_jobs_taken_over_total Unfinished jobs taken over from replicas that stopped (VERDICTBOT_LEASE).
# TYPE verdictbot_jobs_taken_over_total counter
verdictbot_jobs_taken_over_total 6
# HELP verdictbot_replicas Replicas sharing the database that this one sees alive, itself included (1 on the embedded file).
# TYPE verdictbot_replicas gauge
verdictbot_replicas 3
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "verdictbot_replicas", "verdictbot_jobs_taken_over_total"); err != nil {
		t.Fatal(err)
	}
}
