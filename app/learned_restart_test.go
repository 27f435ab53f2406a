package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
)

// Issue 23 item 4: the durations the URL polling plan learned are kept in
// the store, so a restart keeps the plan: the next process plans from
// them from its first analysis, not from the prior. The restart comes
// while analyses are still running (mid-stream); the bot that follows
// finishes them and learns on from the kept durations.
func TestAPollingPlanSurvivesARestart(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "a restart mid-stream of analyses (about 10 s)")
	dir := t.TempDir()
	env := withEnv(fastBudgets, map[string]string{"VERDICTBOT_DATA_DIR": dir, "VERDICTBOT_CHANNEL_MODE": "quiet"})
	const series = `verdictbot_poll_learned_durations{service="reputation"}`
	const learned = `verdictbot_poll_plan_learned{service="reputation"}`

	// The production polling (the learned schedule), not the package's
	// quick one.
	h := startBotOptions(t, env, sim.Config{}, apptest.Options())
	if got := h.Metric(learned); got != "0" {
		t.Fatalf("a new bot's plan: %s = %q, want 0 (the prior)", learned, got)
	}
	var tss []string
	for i := range 10 {
		tss = append(tss, h.Post(fmt.Sprintf("see <https://evil.test/learn/%d>", i)).TS)
	}
	for _, ts := range tss {
		h.WaitCard(ts, func(b string) bool { return strings.Contains(b, "Malicious") })
	}
	if got := h.Metric(learned); got != "1" {
		t.Fatalf("after 10 analyses: %s = %q, want 1", learned, got)
	}
	before := h.Metric(series)
	// Mid-stream: links still being analysed when the bot stops.
	for i := range 3 {
		h.Post(fmt.Sprintf("see <https://evil.test/inflight/%d>", i))
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}

	h2 := startBotOptions(t, env, sim.Config{}, apptest.Options())
	if got := h2.Metric(learned); got != "1" {
		t.Fatalf("after the restart, before any analysis: %s = %q, want 1 (the plan kept)", learned, got)
	}
	if got := h2.Metric(series); got != before || got == "0" {
		t.Fatalf("after the restart: %s = %q, want the %s kept", series, got, before)
	}
	d := h2.Post("see <https://evil.test/after-restart>")
	h2.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
}
