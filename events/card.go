package events

import (
	"github.com/verdictbot/verdictbot/card"
)

// LineFinding is the finding of one line of a card: the target, its
// verdict and the message it was found in. The card's notes and the
// message's text are not taken.
func LineFinding(kind Kind, c *card.Card, l card.Line) Finding {
	f := Finding{
		Kind: kind, Channel: c.Channel, MessageTS: c.SourceTS, ThreadTS: c.ThreadTS, CardTS: c.CardTS,
		Poster: c.Poster, TargetKind: string(l.Kind), Target: l.Target,
		Level: l.Level, Category: l.Category, Scores: l.Scores, Service: l.Service, TaskID: l.TaskID,
		Cached: l.Cached, Problem: l.Problem,
	}
	if c.Poster == "" {
		f.Poster = c.RequestedBy
	}
	f.Backfill = c.FromHistory
	f.Signals = l.Signals
	if l.File != nil {
		f.FileSHA256, f.FileMD5, f.FileSize = l.File.SHA256, l.File.MD5, l.File.Size
		if f.Target == "" {
			f.Target = l.File.Name
		}
	}
	return f
}
