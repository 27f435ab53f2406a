package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Schema 1 stored a card as the renderer's model (notify.Card) with Go's
// default JSON keys (the field names: "ThreadTS", "Lines", …). Schema 2
// stores the chat-neutral card model (package card) with its own snake_case
// keys ("thread_ts", "lines", …). The v1 types below are that old format,
// frozen: they only decode records written by schema 1.

type v1CardRecord struct {
	Card        v1Card    `json:"card"`
	Mode        string    `json:"mode"`
	Gen         int       `json:"gen"`
	PostStarted bool      `json:"post_started,omitempty"`
	Deleted     bool      `json:"deleted,omitempty"`
	Updated     time.Time `json:"updated"`
}

type v1Card struct {
	Channel, ThreadTS, SourceTS, CardTS string
	Poster, RequestedBy                 string
	Final                               bool
	Lines                               []v1Line
	Skipped                             []v1Skip
	LeftOut, MaxLinks                   int
	Notes                               []string
}

type v1Line struct {
	Kind                    string
	Target                  string
	Level                   verdict.Level
	Category                verdict.Category
	Scores                  verdict.Scores
	Service, TaskID         string
	Status, Problem, Detail string
	QueryNotSent, Cached    bool
	CheckedAt               time.Time
	File                    *v1FileInfo
	Reports                 []v1Report
	Actions                 bool
}

type v1FileInfo struct {
	Name, Type                 string
	Size                       int64
	MD5, SHA1, SHA256          string
	MalScore                   float64
	Family                     string
	AddedOn, StartedOn, DoneOn string
	Screenshots                int
	ScreenshotsFailed          bool
}

type v1Skip struct{ Kind, Target, Reason string }

type v1Report struct {
	User, Option string
	Category     verdict.Category
	At           time.Time
	Outcome      string
}

func (r v1CardRecord) v2() store.CardRecord {
	c := r.Card
	out := card.Card{Channel: c.Channel, ThreadTS: c.ThreadTS, SourceTS: c.SourceTS, CardTS: c.CardTS,
		Poster: c.Poster, RequestedBy: c.RequestedBy, Final: c.Final, LeftOut: c.LeftOut, MaxLinks: c.MaxLinks, Notes: c.Notes}
	if c.Lines != nil {
		out.Lines = make([]card.Line, len(c.Lines))
	}
	for i, l := range c.Lines {
		nl := card.Line{Kind: card.Kind(l.Kind), Target: l.Target, Level: l.Level, Category: l.Category, Scores: l.Scores,
			Service: l.Service, TaskID: l.TaskID, Status: l.Status, Problem: l.Problem, Detail: l.Detail,
			QueryNotSent: l.QueryNotSent, Cached: l.Cached, CheckedAt: l.CheckedAt, Actions: l.Actions}
		if l.File != nil {
			f := l.File
			nl.File = &card.FileInfo{Name: f.Name, Type: f.Type, Size: f.Size, MD5: f.MD5, SHA1: f.SHA1, SHA256: f.SHA256,
				MalScore: f.MalScore, Family: f.Family, AddedOn: f.AddedOn, StartedOn: f.StartedOn, DoneOn: f.DoneOn,
				Screenshots: f.Screenshots, ScreenshotsFailed: f.ScreenshotsFailed}
		}
		if l.Reports != nil {
			nl.Reports = make([]card.Report, len(l.Reports))
		}
		for j, rep := range l.Reports {
			nl.Reports[j] = card.Report{User: rep.User, Option: rep.Option, Category: rep.Category, At: rep.At, Outcome: rep.Outcome}
		}
		out.Lines[i] = nl
	}
	if c.Skipped != nil {
		out.Skipped = make([]card.Skip, len(c.Skipped))
	}
	for i, s := range c.Skipped {
		out.Skipped[i] = card.Skip{Kind: card.Kind(s.Kind), Target: s.Target, Reason: s.Reason}
	}
	return store.CardRecord{Card: out, Mode: r.Mode, Gen: r.Gen, PostStarted: r.PostStarted, Deleted: r.Deleted, Updated: r.Updated}
}

// migrateCardsV2 re-encodes every card record from schema 1 to schema 2.
// Nothing else changed between the two: the other records were already
// domain records with their own keys.
func migrateCardsV2(t txn) error {
	type kv struct {
		k string
		v []byte
	}
	var all []kv
	t.scan(bCards, "", "", func(k string, v []byte) bool {
		all = append(all, kv{k, append([]byte(nil), v...)})
		return true
	})
	for _, e := range all {
		var old v1CardRecord
		if err := dec(e.v, &old); err != nil {
			return err
		}
		rec := old.v2()
		if err := t.put(bCards, e.k, enc(&rec)); err != nil {
			return err
		}
	}
	return nil
}
