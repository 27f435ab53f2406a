package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// backend is the ordered key-value layer the store's logic runs on: bbolt
// on disk, or maps in memory for unit tests. Every write happens in one
// update transaction.
type backend interface {
	update(fn func(t txn) error) error
	// batch is update for the writes every link makes (claim, submission,
	// verdict, card index): concurrent calls may share one transaction and
	// its fsync (bbolt's DB.Batch), and each returns once its write is
	// durable, as update does. fn may run more than once (when another
	// write of the batch fails), so it must change nothing outside t but
	// variables it sets on every run.
	batch(fn func(t txn) error) error
	// batchFirst is batch for a write an ack waits for: it commits what
	// is gathered at once instead of waiting for more company.
	batchFirst(fn func(t txn) error) error
	// sharing is how many batch calls are under way.
	sharing() int
	view(fn func(t txn) error) error
	close() error
	size() int64
}

// txn is one transaction. Keys are ordered bytewise within a bucket.
type txn interface {
	get(bucket, key string) []byte
	put(bucket, key string, val []byte) error
	del(bucket, key string) error
	// scan calls fn for the keys in [from, to) in order (to "" = the end)
	// until fn returns false.
	scan(bucket, from, to string, fn func(k string, v []byte) bool)
	count(bucket string) int
}

var buckets = []string{bMeta, bEvents, bEventTimes, bJobs, bCards, bCardTS, bAnalyses, bTargets, bDue, bReports, bChannels, bAllow}

const (
	bMeta       = "meta"
	bEvents     = "events"      // event id → time seen
	bEventTimes = "event_times" // time + event id → nil (for pruning)
	bJobs       = "jobs"        // sequence → Job
	bCards      = "cards"       // channel/source ts → CardRecord
	bCardTS     = "card_ts"     // channel/card ts → channel/source ts
	bAnalyses   = "analyses"    // service \x00 target → Analysis
	bTargets    = "targets"     // target id → Target and its history (encode3.go)
	bDue        = "due"         // next check time + target id → nil
	bHistory    = "history"     // schema 2 only: target \x00 time \x00 seq → Verdict
	bReports    = "reports"     // target \x00 time \x00 seq → Report
	bChannels   = "channels"    // channel → mode
	bAllow      = "allow"       // domain → AllowEntry
	bEventQueue = "event_queue" // sequence → outgoing event (eventqueue.go); created by its first write
	bEventDead  = "event_dead"  // sequence → dead letter (eventqueue.go); created by its first write
)

// ---- bbolt ----

type boltBackend struct {
	db   *bbolt.DB
	path string
	// shared counts the callers of batch under way.
	shared atomic.Int32
	// company is when (Unix ns) a call of batch last found another under
	// way, or an urgent write (batchFirst) came.
	company atomic.Int64
	// group gathers the batched writes into shared commits.
	group *groupCommit
}

// companyWindow: a lone batched write waits for company (MaxBatchDelay)
// when another batched write overlapped one within this long, as they do
// all the time under a steady load of links; otherwise (a quiet
// workspace, one sequential writer) it commits at once.
const companyWindow = 100 * time.Millisecond

// batchDelay is how long a batched write waits for company under load.
// Each commit costs two fdatasyncs and the pages it rewrites, most of the
// store's CPU: at 2 ms (as until 2026-11-28) a link made about 3 commits
// in the throughput benchmark, at 8 ms about 1.2, for ~17 % less CPU a
// link (docs/PERFORMANCE.md). Acks do not wait for it: the journal's
// write commits what is gathered within urgentBatchDelay (batchFirst).
const batchDelay = 8 * time.Millisecond

// urgentBatchDelay is how long a batched write an ack waits for (the
// journal) waits for company at most: the batch delay of before.
const urgentBatchDelay = 2 * time.Millisecond

func openBolt(path string, noSync bool) (*boltBackend, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: cannot create %s: %w", filepath.Dir(path), err)
	}
	// The freelist is not written at each commit (NoFreelistSync): bbolt
	// rebuilds it when the file is opened, a scan of a file that retention
	// keeps small, and each commit writes a page less (about 4 % of the
	// CPU per link, docs/PERFORMANCE.md). Files of either kind open both
	// ways (TestStoreFileOfAnEarlierVersionOpensAndBack).
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second, NoSync: noSync,
		NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("store %s is locked by another process (is another verdictbot running with the same VERDICTBOT_DATA_DIR?)", path)
		case errors.Is(err, os.ErrPermission):
			return nil, fmt.Errorf("store %s cannot be opened: %w", path, err)
		}
		return nil, fmt.Errorf("store %s is unreadable (%v); it was left untouched: restore it from a backup, or move it away to start with an empty store", path, err)
	}
	return &boltBackend{db: db, path: path, group: &groupCommit{db: db, delay: batchDelay, urgentDelay: urgentBatchDelay, maxSize: 1000}}, nil
}

func (b *boltBackend) update(fn func(t txn) error) error {
	return b.db.Update(func(tx *bbolt.Tx) error { return fn(boltTxn{tx}) })
}

// batch shares a commit with the other writes under way (bbolt's Batch:
// fn may run more than once). A write with no company commits at once on
// a quiet store: Batch would make it wait MaxBatchDelay for others, which
// costs a lone link a few milliseconds per write and a sequential writer
// (a load, a migration) that much per record. When batched writes
// overlapped within companyWindow (links arriving steadily: at 100 a
// second each of their half-dozen writes came alone most of the time, 5.4
// commits a link), a lone write waits for company too, and the next
// link's writes join its commit (3.3 commits a link in the throughput
// benchmark): at most MaxBatchDelay more per write under load.
func (b *boltBackend) batch(fn func(t txn) error) error { return b.share(fn, false) }

// batchFirst is batch for a write an ack waits for (the journal): it
// joins the writes gathered so far and commits them within
// urgentBatchDelay, without waiting out batchDelay.
func (b *boltBackend) batchFirst(fn func(t txn) error) error { return b.share(fn, true) }

func (b *boltBackend) share(fn func(t txn) error, urgent bool) error {
	n := b.shared.Add(1)
	defer b.shared.Add(-1)
	now := time.Now().UnixNano()
	if urgent {
		// The journal shares only when writes are under way or envelopes
		// arrive steadily (DB.recordFirst): the writes of their work are
		// about to overlap.
		b.company.Store(now)
	}
	if n == 1 && now-b.company.Load() > int64(companyWindow) {
		return b.update(fn)
	}
	err := b.group.run(func(tx *bbolt.Tx) error { return fn(boltTxn{tx}) }, urgent)
	if n > 1 {
		b.company.Store(time.Now().UnixNano())
	}
	return err
}

func (b *boltBackend) sharing() int { return int(b.shared.Load()) }

func (b *boltBackend) view(fn func(t txn) error) error {
	return b.db.View(func(tx *bbolt.Tx) error { return fn(boltTxn{tx}) })
}

func (b *boltBackend) close() error { return b.db.Close() }

func (b *boltBackend) size() int64 {
	fi, err := os.Stat(b.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

type boltTxn struct{ tx *bbolt.Tx }

// fillPercent is how full bbolt fills a page before splitting it, for the
// buckets whose keys mostly arrive in order (bbolt's default, 0.5, leaves
// the pages of such buckets half empty): targets (ids from a sequence),
// jobs (a sequence), cards (channel / Slack ts: in order within each
// channel) and target_cards (target id first: a target's first cards come
// soon after its id). Measured on the 100,000-URL store (bench_test.go):
// targets 84 → 37.5 MB, cards 39.2 → 24.5 MB, target_cards 12.7 → 6.5 MB;
// card_ts, with small records, grew (3.6 → 4.5 MB) and keeps the default.
var fillPercent = map[string]float64{bTargets: 0.95, bCards: 0.95, bJobs: 0.95, bTargetCards: 0.95}

func (t boltTxn) bucket(name string) *bbolt.Bucket {
	if t.tx.Writable() {
		b, err := t.tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return nil
		}
		if fill, ok := fillPercent[name]; ok {
			b.FillPercent = fill
		}
		return b
	}
	return t.tx.Bucket([]byte(name))
}

func (t boltTxn) get(bucket, key string) []byte {
	b := t.bucket(bucket)
	if b == nil {
		return nil
	}
	v := b.Get([]byte(key))
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

func (t boltTxn) put(bucket, key string, val []byte) error {
	b := t.bucket(bucket)
	if b == nil {
		return fmt.Errorf("store: bucket %s", bucket)
	}
	if val == nil {
		val = []byte{}
	}
	return b.Put([]byte(key), val)
}

func (t boltTxn) del(bucket, key string) error {
	b := t.bucket(bucket)
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key))
}

func (t boltTxn) scan(bucket, from, to string, fn func(k string, v []byte) bool) {
	b := t.bucket(bucket)
	if b == nil {
		return
	}
	c := b.Cursor()
	var k, v []byte
	if from == "" {
		k, v = c.First()
	} else {
		k, v = c.Seek([]byte(from))
	}
	for ; k != nil; k, v = c.Next() {
		if to != "" && string(k) >= to {
			return
		}
		if !fn(string(k), v) {
			return
		}
	}
}

func (t boltTxn) count(bucket string) int {
	b := t.bucket(bucket)
	if b == nil {
		return 0
	}
	return b.Stats().KeyN
}

// ---- memory (unit tests only) ----

type memBackend struct {
	mu   sync.RWMutex
	data map[string]map[string][]byte
}

func newMemBackend() *memBackend { return &memBackend{data: map[string]map[string][]byte{}} }

func (m *memBackend) batch(fn func(t txn) error) error { return m.update(fn) }

func (m *memBackend) batchFirst(fn func(t txn) error) error { return m.update(fn) }

func (m *memBackend) sharing() int { return 0 }

func (m *memBackend) update(fn func(t txn) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Copy-on-write per bucket so a failed transaction changes nothing.
	staged := &memTxn{m: m, write: true, changes: map[string]map[string][]byte{}}
	if err := fn(staged); err != nil {
		return err
	}
	for b, kv := range staged.changes {
		if m.data[b] == nil {
			m.data[b] = map[string][]byte{}
		}
		for k, v := range kv {
			if v == nil {
				delete(m.data[b], k)
			} else {
				m.data[b][k] = v
			}
		}
	}
	return nil
}

func (m *memBackend) view(fn func(t txn) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fn(&memTxn{m: m})
}

func (m *memBackend) close() error { return nil }
func (m *memBackend) size() int64  { return 0 }

type memTxn struct {
	m       *memBackend
	write   bool
	changes map[string]map[string][]byte // nil value = deleted
}

func (t *memTxn) get(bucket, key string) []byte {
	if c, ok := t.changes[bucket][key]; ok {
		return c
	}
	if v, ok := t.m.data[bucket][key]; ok {
		return append([]byte(nil), v...)
	}
	return nil
}

func (t *memTxn) put(bucket, key string, val []byte) error {
	if !t.write {
		return errors.New("store: write in a read transaction")
	}
	if t.changes[bucket] == nil {
		t.changes[bucket] = map[string][]byte{}
	}
	if val == nil {
		val = []byte{}
	}
	t.changes[bucket][key] = append([]byte{}, val...) // never nil: nil marks a deletion
	return nil
}

func (t *memTxn) del(bucket, key string) error {
	if t.changes[bucket] == nil {
		t.changes[bucket] = map[string][]byte{}
	}
	t.changes[bucket][key] = nil
	return nil
}

func (t *memTxn) keys(bucket string) []string {
	seen := map[string]bool{}
	var ks []string
	for k := range t.m.data[bucket] {
		seen[k] = true
	}
	for k, v := range t.changes[bucket] {
		seen[k] = v != nil
	}
	for k, live := range seen {
		if live {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

func (t *memTxn) scan(bucket, from, to string, fn func(k string, v []byte) bool) {
	for _, k := range t.keys(bucket) {
		if k < from || (to != "" && k >= to) {
			continue
		}
		if !fn(k, t.get(bucket, k)) {
			return
		}
	}
}

func (t *memTxn) count(bucket string) int { return len(t.keys(bucket)) }

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
