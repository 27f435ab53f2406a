package app

import (
	"github.com/verdictbot/verdictbot/metrics"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

// budgetSharer is a part whose rate limits hold for all replicas together:
// reputation.Client and sandbox.Client (ShareBudgets), notify.Poster
// (shareFunc(poster.Share)).
type budgetSharer interface {
	// ShareBudgets makes the part use its configured limits divided by n
	// live replicas (n ≥ 1).
	ShareBudgets(n int)
}

// shareFunc adapts a func(n int), such as notify.Poster.Share, to
// budgetSharer.
type shareFunc func(n int)

// ShareBudgets calls f.
func (f shareFunc) ShareBudgets(n int) { f(n) }

// shareBudgets gives every part its share of the limits for n live replicas
// (n < 1 counts as 1: this replica). Nil parts are skipped. Call it again
// whenever n changes.
func shareBudgets(n int, parts ...budgetSharer) {
	n = max(n, 1)
	for _, p := range parts {
		if p != nil {
			p.ShareBudgets(n)
		}
	}
}

// budgetsInForce returns what metrics.WatchBudgets reads: the limits each
// part uses now (sb may be nil when no sandbox is configured).
func budgetsInForce(rep *reputation.Client, sb *sandbox.Client, poster *notify.Poster) func() []metrics.Budget {
	return func() []metrics.Budget {
		var out []metrics.Budget
		add := func(service string, run, report float64) {
			out = append(out, metrics.Budget{Service: service, Budget: "run", Rate: run},
				metrics.Budget{Service: service, Budget: "report", Rate: report})
		}
		if rep != nil {
			run, report := rep.Budgets()
			add(reputation.ServiceName, run.Rate, report.Rate)
		}
		if sb != nil {
			run, report := sb.Budgets()
			add(sandbox.ServiceName, run.Rate, report.Rate)
		}
		if poster != nil {
			p := poster.Pacing()
			out = append(out, metrics.Budget{Service: "slack", Budget: "chat.update", Rate: p.UpdatesPerMinute / 60},
				metrics.Budget{Service: "slack", Budget: "chat.postMessage", Rate: 1 / p.PostInterval.Seconds()})
		}
		return out
	}
}
