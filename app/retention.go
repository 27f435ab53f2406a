package app

import (
	"context"
	"time"
)

// defaultFirstPruneDelay is how long after start the first retention
// prune runs: late enough not to slow the start (resuming cards and
// analyses), early enough that a bot restarted often still prunes. Tests
// shorten it (Options.FirstPruneDelay).
const defaultFirstPruneDelay = 2 * time.Minute

// pruneRetention removes what is older than VERDICTBOT_RETENTION from the
// store: once first after the given delay, then every interval, until ctx
// ends. Each run logs what it removed and feeds
// verdictbot_store_pruned_total.
func (a *App) pruneRetention(ctx context.Context, first, every time.Duration) {
	count := a.metrics.WatchPrune()
	wait := first
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = every
		// One replica prunes at a time (the others would find the same
		// rows locked or gone).
		lease, lead, err := a.db.Lead(ctx, "retention")
		if err != nil || !lead {
			if err != nil {
				a.log.Warn("retention: could not take the lead; tried again at the next run", "error", err)
			}
			continue
		}
		start := time.Now()
		st, err := a.db.Prune(start.Add(-a.cfg.Retention))
		q, qerr := a.db.PruneQuarantined(start.Add(-a.cfg.QuarantineRetention))
		if qerr != nil {
			a.log.Warn("retention: pruning quarantined messages failed; tried again at the next run", "error", qerr)
		}
		count("quarantined", q)
		lease.Release()
		for _, k := range []struct {
			kind string
			n    int
		}{{"cards", st.Cards}, {"verdicts", st.Verdicts}, {"reports", st.Reports}, {"targets", st.Targets}, {"events", st.Events}, {"jobs", st.Jobs}, {"user_reports", st.UserReports}} {
			count(k.kind, k.n)
		}
		attrs := []any{"retention", a.cfg.Retention.String(), "cards", st.Cards, "verdicts", st.Verdicts, "reports", st.Reports,
			"targets", st.Targets, "events", st.Events, "jobs", st.Jobs, "user_reports", st.UserReports, "quarantined", q, "took", time.Since(start).Round(time.Millisecond).String(),
			"store_bytes", a.db.Size()}
		if err != nil {
			a.log.Warn("retention: pruning the store failed; it is tried again at the next run", append(attrs, "error", err)...)
			continue
		}
		a.log.Info("retention: pruned the store", attrs...)
	}
}
