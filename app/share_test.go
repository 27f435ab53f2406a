package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

func TestShareBudgetsReachesEveryPart(t *testing.T) {
	t.Parallel()
	cfg := config.Config{ReputationURL: "http://127.0.0.1:1", ReputationAPIKey: "k", ReputationRunRate: 2, ReputationReportRate: 10,
		SandboxURL: "http://127.0.0.1:1", SandboxAPIKey: "k", SandboxRunRate: 1, SandboxReportRate: 0}
	log := slog.New(slog.DiscardHandler)
	rep, err := NewReputation(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := NewSandbox(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	poster := notify.NewPoster(nil, notify.PosterOptions{})
	t.Cleanup(func() { _ = poster.Close(context.Background()) })
	var noSandbox *sandbox.Client

	shareBudgets(2, rep, sb, shareFunc(poster.Share), noSandbox, nil)
	if run, report := rep.Budgets(); run != (reputation.Limit{Rate: 1, Burst: 1}) || report != (reputation.Limit{Rate: 5, Burst: 10}) {
		t.Errorf("reputation shared by 2: run %+v, report %+v", run, report)
	}
	if run, report := sb.Budgets(); run != (sandbox.Limit{Rate: 0.5, Burst: 1}) || report != (sandbox.Limit{}) {
		t.Errorf("sandbox shared by 2: run %+v, report %+v (unlimited must stay unlimited)", run, report)
	}
	if got := poster.Pacing(); got.Replicas != 2 || got.PostInterval != 2*time.Second || got.UpdatesPerMinute != 25 {
		t.Errorf("poster shared by 2: %+v", got)
	}

	shareBudgets(0, rep, sb, shareFunc(poster.Share))
	if run, report := rep.Budgets(); run != (reputation.Limit{Rate: 2, Burst: 2}) || report != (reputation.Limit{Rate: 10, Burst: 20}) {
		t.Errorf("reputation back to one replica: run %+v, report %+v", run, report)
	}
	if got := poster.Pacing(); got.Replicas != 1 || got.PostInterval != time.Second {
		t.Errorf("poster back to one replica: %+v", got)
	}

	var rates []string
	for _, b := range budgetsInForce(rep, noSandbox, poster)() {
		rates = append(rates, fmt.Sprintf("%s/%s=%g", b.Service, b.Budget, b.Rate))
	}
	want := []string{"reputation/run=2", "reputation/report=10", "slack/chat.update=0.8333333333333334", "slack/chat.postMessage=1"}
	if !slices.Equal(rates, want) {
		t.Errorf("budgets in force %q, want %q", rates, want)
	}
}
