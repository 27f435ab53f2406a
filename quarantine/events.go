package quarantine

import (
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/store"
)

// removedFinding is the finding of a removal: the original is kept until
// its removal plus Retention. It rides in the card's write (showEmit), as
// do a release's and a failed removal's.
func (q *Quarantine) removedFinding(rec store.Quarantined, c card.Card) events.Finding {
	return finding(events.KindQuarantine, c, &events.Quarantine{Removed: true, Level: rec.Level, Until: rec.RemovedAt.Add(q.Retention)})
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
