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
