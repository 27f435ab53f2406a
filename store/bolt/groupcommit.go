package bolt

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// groupCommit is bbolt's DB.Batch with one addition: a write an ack waits
// for (urgent) commits the writes gathered so far at once instead of
// waiting out the delay with them (within urgentDelay). Ordinary writes (card changes,
// verdicts, finished jobs) can then wait longer for company, and share
// fewer commits between more writes, without the acks paying for it.
//
// As with DB.Batch, every write gathered runs in one transaction; when one
// fails, it is taken out and run alone (its caller gets its own error) and
// the others run again together, so fn may run more than once. The shape
// follows bbolt's batch.go (MIT licence).
type groupCommit struct {
	db *bbolt.DB
	// delay is how long the first ordinary write of a round waits for
	// company; maxSize commits a round at once when it holds that many.
	delay   time.Duration
	maxSize int
	// urgentDelay is how long a round waits at most once an urgent write
	// is in it: short, so that the ack is not held, but not nothing, so
	// that the journal writes of envelopes arriving together share a
	// commit (at 500 envelopes a second, committing each at once doubled
	// the fsyncs).
	urgentDelay time.Duration

	mu    sync.Mutex
	round *commitRound
}

type commitRound struct {
	g     *groupCommit
	timer *time.Timer
	due   time.Time
	start sync.Once
	calls []groupCall
}

type groupCall struct {
	fn  func(*bbolt.Tx) error
	err chan<- error
}

// errSolo tells a caller its write failed inside a round: run it alone.
var errSolo = errors.New("store: run this write alone")

// run adds fn to the round being gathered (starting one if none is) and
// returns once the round has committed. An urgent write brings the
// round's commit forward to urgentDelay from now.
func (g *groupCommit) run(fn func(*bbolt.Tx) error, urgent bool) error {
	errc := make(chan error, 1)
	wait := g.delay
	if urgent {
		wait = g.urgentDelay
	}
	now := time.Now()
	g.mu.Lock()
	if g.round == nil || len(g.round.calls) >= g.maxSize {
		r := &commitRound{g: g, due: now.Add(wait)}
		r.timer = time.AfterFunc(wait, r.trigger)
		g.round = r
	} else if r := g.round; now.Add(wait).Before(r.due) {
		r.timer.Stop()
		r.due = now.Add(wait)
		r.timer = time.AfterFunc(wait, r.trigger)
	}
	r := g.round
	r.calls = append(r.calls, groupCall{fn: fn, err: errc})
	full := len(r.calls) >= g.maxSize
	g.mu.Unlock()
	if full {
		go r.trigger()
	}
	err := <-errc
	if err == errSolo {
		err = g.db.Update(fn)
	}
	return err
}

func (r *commitRound) trigger() { r.start.Do(r.commit) }

// commit runs the round's writes in one transaction (see groupCommit).
func (r *commitRound) commit() {
	r.g.mu.Lock()
	r.timer.Stop()
	if r.g.round == r {
		r.g.round = nil
	}
	r.g.mu.Unlock()
	for len(r.calls) > 0 {
		failed := -1
		err := r.g.db.Update(func(tx *bbolt.Tx) error {
			for i, c := range r.calls {
				if err := callSafely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			c := r.calls[failed]
			r.calls[failed], r.calls = r.calls[len(r.calls)-1], r.calls[:len(r.calls)-1]
			c.err <- errSolo
			continue
		}
		for _, c := range r.calls {
			c.err <- err
		}
		return
	}
}

// callSafely runs fn, turning a panic into an error so that one write's
// panic fails only that write (it is then run alone, and panics in its
// own caller's goroutine as it would without sharing).
func callSafely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
