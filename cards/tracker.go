package cards

import (
	"context"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/events"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// pending is one line of a card waiting for its analysis (V is the
// pipeline's verdict: scan.URLVerdict or scan.FileVerdict).
type pending[V any] struct {
	// line is the line's index on the card.
	line int
	// check runs the analysis; onStatus reports its progress.
	check func(ctx context.Context, onStatus func(status string)) V
}

// lineKind is what differs between URL lines and file lines; the tracker
// does the rest once for both.
type lineKind[V any] struct {
	// err returns the analysis's error (nil when it has a verdict).
	err func(v V) error
	// fill writes a verdict into its card line.
	fill func(l card.Line, v V) card.Line
	// target, if set, returns the target that must remember the card
	// showing verdict v ("" for none): URLs, for their rechecks; files,
	// for /scan's scope. It is linked in the write that shows v
	// (CardSettler).
	target func(v V) string
	// after, if set, starts work that follows a verdict without holding
	// the card back (files: screenshots). Given the card as it stands with
	// the verdict, it returns nil for nothing to do, or a fetch that runs
	// on its own goroutine; the apply that fetch returns runs on the
	// tracker's goroutine and returns the card to show (ok false: it did
	// not change).
	after func(ctx context.Context, c card.Card, line int, v V) (fetch func() (apply func() (card.Card, bool)))
}

// track runs the analyses of one card's lines, shows progress on verbose
// cards (and on cards already posted), and shows the final card as the
// channel's mode asks as soon as every verdict is in; work that follows a
// verdict (screenshots) is awaited after that, and applied only once the
// card is final and shown (quarantine has acted on it by then). It reports whether the
// job's work is over: the card reached its final state, or a newer scan of
// the message took it over (an edit: that scan's job finishes it); false
// on shutdown or when the store could not be written (the job then
// resumes after the restart).
//
// A non-zero hold is the end of the card's grace period (see
// Messages.PostGrace): until then nothing is shown, so a card whose
// verdicts are all in by then is shown once, final; otherwise the card as
// it stands is shown at hold and updated from then on.
//
// The states before the final one are shown on a goroutine of their own,
// one at a time (showSoon), never on the tracker's: a card's first post
// waits its turn behind the channel's queue of cards (Slack takes about
// one a second per channel), and a verdict that comes in meanwhile goes to
// quarantine at once (finish acts before it shows): a removal never waits
// for a post. The final card is shown after the show under way, on the
// message that show posted (see finish).
func track[V any](ctx context.Context, m *Messages, k lineKind[V], channel, src string, gen int, mode string, hold time.Time, lines []pending[V]) bool {
	type result struct {
		line int
		v    V
	}
	// Buffered for every sender, so a tracker that gives up early leaves
	// no goroutine blocked.
	results := make(chan result, len(lines))
	defer m.forget(channel, src, gen)
	follow := make(chan func() (card.Card, bool), len(lines))
	changed := make(chan struct{}, 1)
	for _, p := range lines {
		go func() {
			v := p.check(ctx, func(s string) {
				if mode != ModeVerbose {
					return // progress is only shown on verbose cards
				}
				if _, ok := m.Cards.Change(channel, src, gen, func(rec *store.CardRecord) {
					if p.line < len(rec.Card.Lines) && rec.Card.Lines[p.line].Level == verdict.Pending {
						rec.Card.Lines[p.line].Status = s
					}
				}); ok {
					select {
					case changed <- struct{}{}:
					default:
					}
				}
			})
			results <- result{p.line, v}
		}()
	}
	// grace fires at hold; nil once the card may be shown.
	var grace <-chan time.Time
	if !hold.IsZero() {
		t := time.NewTimer(time.Until(hold))
		defer t.Stop()
		grace = t.C
	}
	var snap card.Card
	following := 0
	// showing is closed when the show under way returns (nil: none);
	// next is the newest state asked for meanwhile, shown after it (the
	// states in between are skipped, as the poster skips them).
	var (
		showing chan struct{}
		next    *card.Card
	)
	showSoon := func(c card.Card) {
		if showing != nil {
			next = &c
			return
		}
		done := make(chan struct{})
		showing = done
		go func() {
			defer close(done)
			m.show(ctx, &c)
		}()
	}
	// shown reports whether a show was under way, once it has returned;
	// what was asked for after it is dropped (the final card, shown next,
	// replaces it).
	shown := func() bool {
		if showing == nil {
			return false
		}
		<-showing
		showing, next = nil, nil
		return true
	}
	// No show outlives the tracker (Messages.Wait waits for the trackers).
	defer shown()
	// held are follow-ups that came back before the card was final: they
	// wait for it, and for quarantine's decision, which finish makes
	// (screenshots of a message about to be removed are never posted).
	var held []func() (card.Card, bool)
	applyFollow := func(apply func() (card.Card, bool)) {
		// A card not posted yet shows the change when it is (finish
		// reads the stored card).
		if c, ok := apply(); ok && c.CardTS != "" {
			m.show(ctx, &c)
		}
	}
	for left := len(lines); left > 0 || following > 0; {
		select {
		case r := <-results:
			left--
			if k.err(r.v) != nil && ctx.Err() != nil {
				return false // shutting down: the job resumes after the restart
			}
			// The card's write links the verdict's target to the card
			// (CardSettler), for its rechecks.
			target := ""
			if k.target != nil {
				target = k.target(r.v)
			}
			// The verdict's event rides in the same write (the outbox):
			// a process killed after it loses no event.
			var ok, emit bool
			var outs []*store.Outgoing
			snap, ok = m.Cards.settle(ctx, channel, src, gen, target, func(rec *store.CardRecord) {
				if r.line < len(rec.Card.Lines) {
					rec.Card.Lines[r.line] = k.fill(rec.Card.Lines[r.line], r.v)
				}
				rec.Card.Final = left == 0
				outs, emit = nil, false
				if m.Events != nil && r.line < len(rec.Card.Lines) {
					if l := rec.Card.Lines[r.line]; l.Level != verdict.Pending && !m.emitted(channel, src, gen, l) {
						emit = true
						if o := events.Prepare(m.Events, events.LineFinding(events.KindVerdict, &rec.Card, l)); o != nil {
							rec.Outbox = append(rec.Outbox, o)
							outs = rec.Outbox
						}
					}
				}
			})
			if !ok {
				// An edit started a newer scan of this message: that scan's
				// job finishes the card, and this one's work is over (true:
				// its job is done; left in the journal it was never taken
				// out, and a restart would resume the edit's stale first
				// version). Otherwise (the store stayed unwritable, the
				// card is gone, shutdown) the job stays and resumes.
				return ctx.Err() == nil && m.Cards.newerGen(channel, src, gen)
			}
			switch {
			case len(outs) > 0:
				events.Committed(m.Events, outs)
			case emit:
				m.Events.Emit(ctx, events.LineFinding(events.KindVerdict, &snap, snap.Lines[r.line]))
			}
			if k.after != nil {
				if fetch := k.after(ctx, snap, r.line, r.v); fetch != nil {
					following++
					go func() { follow <- fetch() }()
				}
			}
			if left > 0 {
				if grace == nil && (mode == ModeVerbose || snap.CardTS != "") {
					showSoon(snap.Clone())
				}
				continue
			}
			grace = nil
			// Every verdict is in: the card is shown now, before any
			// follow-up work is done. snap is the card as the store has
			// it: Settle read and wrote it in one transaction, of this
			// generation (a newer one fails it), so it is not read again.
			// A show that is over already is taken first: only one still
			// under way while quarantine acts makes finish show the card
			// again after it.
			select {
			case <-showing:
				showing, next = nil, nil
			default:
			}
			m.finish(ctx, &snap, mode, shown)
			shown() // follow-ups are shown after it
			for _, apply := range held {
				applyFollow(apply)
			}
			held = nil
		case apply := <-follow:
			following--
			if left > 0 {
				held = append(held, apply)
				continue
			}
			applyFollow(apply)
		case <-showing:
			showing = nil
			if c := next; c != nil {
				next = nil
				showSoon(*c)
			}
		case <-grace:
			grace = nil
			if rec, ok := m.Cards.Get(channel, src); ok && !rec.Card.Final && rec.Gen == gen {
				showSoon(rec.Card.Clone())
			}
		case <-changed:
			if grace != nil {
				continue // the grace period's end shows the latest state
			}
			if rec, ok := m.Cards.Get(channel, src); ok && !rec.Card.Final && rec.Gen == gen {
				showSoon(rec.Card.Clone())
			}
		}
	}
	return true
}

// start hands a card just begun (snap, as Begin returned it) to its own
// goroutine: it is shown when the channel is verbose or it was posted
// before — final at once, otherwise when its grace period (PostGrace)
// ends unless it is final by then —, tracked until final, and done (if
// set) is called. track gets the end of the grace period (zero: none). A
// quiet channel's card that is final at once (nothing to analyse) goes
// through finish, which shows it only if it must (notCleared: files a
// quarantine channel could not check).
func (m *Messages) start(ctx context.Context, snap card.Card, mode string, track func(hold time.Time) bool, done func()) {
	begun := time.Now()
	_ = m.launch(ctx, func() {
		var hold time.Time
		switch {
		case mode == ModeVerbose || snap.CardTS != "":
			if snap.Final || m.PostGrace <= 0 {
				m.show(ctx, &snap)
			} else {
				hold = begun.Add(m.PostGrace)
			}
		case snap.Final:
			m.finish(ctx, &snap, mode, nil)
		}
		if (snap.Final || track(hold)) && done != nil {
			done()
		}
	})
}

// launch runs the rest of a card's life on its own goroutine: posting is
// paced per channel (Slack allows about one message a second), and a
// worker must not wait on one busy channel while other channels' messages
// queue. At most MaxTracked cards run at once; beyond that launch waits,
// and returns ctx's error if ctx ends first (the job then stays in the
// journal and resumes after the restart).
func (m *Messages) launch(ctx context.Context, run func()) error {
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.wg.Add(1)
	go func() {
		defer func() { <-m.sem; m.wg.Done() }()
		run()
	}()
	return nil
}
