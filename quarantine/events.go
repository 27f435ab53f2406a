package quarantine

import (
	"context"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// removedEvent sends the finding of a removal: the original is kept until
// its removal plus Retention.
func (q *Quarantine) removedEvent(ctx context.Context, rec store.Quarantined, c card.Card) {
	events.Emit(ctx, q.Events, finding(events.KindQuarantine, c,
		&events.Quarantine{Removed: true, Level: rec.Level, Until: rec.RemovedAt.Add(q.Retention)}))
}

// releasedEvent sends the finding of a release.
func (q *Quarantine) releasedEvent(ctx context.Context, rec store.Quarantined, c card.Card) {
	events.Emit(ctx, q.Events, finding(events.KindRelease, c,
		&events.Quarantine{Removed: true, Level: rec.Level, ReleasedBy: rec.ReleasedBy, ReleasedTS: rec.ReleasedTS}))
}

// notRemovedEvent sends the finding of a message that could not be
// removed, with the reason (a Reason* constant).
func (q *Quarantine) notRemovedEvent(ctx context.Context, c card.Card, level verdict.Level, reason string) {
	events.Emit(ctx, q.Events, finding(events.KindQuarantine, c,
		&events.Quarantine{Removed: false, Reason: reason, Level: level.Key()}))
}

// finding is the event of a quarantine or a release: the card's worst line
// (the one whose level reached the channel's quarantine level) with what
// quarantine did.
func finding(kind events.Kind, c card.Card, q *events.Quarantine) events.Finding {
	var worst card.Line
	for i, l := range c.Lines {
		if i == 0 || l.Level > worst.Level {
			worst = l
		}
	}
	f := events.LineFinding(kind, &c, worst)
	f.Quarantine = q
	if kind == events.KindRelease {
		f.Actor = q.ReleasedBy
	}
	return f
}
