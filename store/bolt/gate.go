package bolt

import (
	"sync"
	"time"
)

// writeGate orders the store's write transactions, which bbolt runs one at
// a time. A write on the ack path (RecordJobs: envelopes are acked only
// once it commits) is urgent: it goes before the ordinary writes waiting
// for their turn (card changes, verdicts, finished jobs), which a burst of
// verdicts can queue by the dozen, each with its fsync. Urgent and
// ordinary writes alternate when both wait, so neither starves: an urgent
// write waits for at most the write in progress and one ordinary write.
// Ordinary writes go in arrival order.
type writeGate struct {
	mu   sync.Mutex
	cond sync.Cond
	held bool
	// urgentWaiting counts the urgent writes waiting; lastUrgent is
	// whether the last write let in was urgent.
	urgentWaiting int
	lastUrgent    bool
	// Ordinary writes take tickets: next is the next ticket to hand out,
	// serving the next to let in (next-serving are waiting).
	next, serving uint64
}

// lock waits for the gate; unlock must follow.
func (g *writeGate) lock(urgent bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond.L == nil {
		g.cond.L = &g.mu
	}
	if urgent {
		g.urgentWaiting++
		for g.held || (g.lastUrgent && g.next != g.serving) {
			g.cond.Wait()
		}
		g.urgentWaiting--
	} else {
		ticket := g.next
		g.next++
		for g.held || ticket != g.serving || (g.urgentWaiting > 0 && !g.lastUrgent) {
			g.cond.Wait()
		}
		g.serving++
	}
	g.lastUrgent = urgent
	g.held = true
}

func (g *writeGate) unlock() {
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// update runs fn in a write transaction, in its turn (see writeGate).
func (db *DB) update(fn func(t txn) error) error {
	db.gate.lock(false)
	defer db.gate.unlock()
	return db.be.update(fn)
}

// updateFirst is update for a write an ack waits for: it goes before the
// ordinary writes waiting.
func (db *DB) updateFirst(fn func(t txn) error) error {
	db.gate.lock(true)
	defer db.gate.unlock()
	return db.be.update(fn)
}

// recordFirst is updateFirst for the journal (RecordJobs): when shared
// writes (batch) are under way, as they are whenever links are being
// analysed, it joins them and saves a commit and its fsync a message (the
// shared commit starts at once, without waiting out the batch delay,
// and does not queue behind the ordinary writes at the gate either); when
// none are, it goes first at the gate as before. It shares too when the
// journal's last write came within companyWindow (envelopes arriving
// steadily), and makes the writes that follow share: without that, the
// first second of a burst of links committed each link's first writes one
// by one (four commits a link, a hundred links in the throughput
// benchmark) until two writes happened to overlap. fn may run more than
// once, as with batch.
func (db *DB) recordFirst(fn func(t txn) error) error {
	now := time.Now().UnixNano()
	steady := now-db.lastRecord.Swap(now) <= int64(companyWindow)
	if steady || db.be.sharing() > 0 {
		return db.be.batchFirst(fn)
	}
	return db.updateFirst(fn)
}
