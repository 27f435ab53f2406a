// Package bolt is the embedded backend of the state layer (store.State):
// one bbolt file, verdictbot.db under VERDICTBOT_DATA_DIR, opened by one
// process at a time. It is the default: pure Go (the binary stays static),
// ACID transactions with fsync, one file to back up, and well kept (it is
// etcd's).
//
// Besides the State methods it owns what belongs to the file: its schema
// and the migrations of older files (migrate.go, migrate3.go), the compact
// encodings of targets and cards (encode3.go), the write gate that lets
// the journal's writes go first and the shared commits of the writes every
// link makes (gate.go, kv.go), its indexes, and the offline compaction of
// `verdictbot compact` (Compact). Memory gives the same store on maps, for
// unit tests only.
package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// SchemaVersion is the layout this code reads and writes. Keep in sync with
// migrations.
const SchemaVersion = 4

// FileName is the store's file inside the data directory.
const FileName = "verdictbot.db"

// migrations[i] moves a store from schema i+1 to i+2. A migration runs in
// one transaction, after the file was copied to <file>.schema<N>.bak.
var migrations = []func(t txn) error{
	migrateCardsV2,       // 1→2: cards as the card model (package card), snake_case keys
	migrateCompactV3,     // 2→3: targets by numeric id, history inside them, deflated cards
	migrateTargetCardsV4, // 3→4: a target's cards in target_cards, not in its record
}

// DB is the state in the embedded file. It implements store.State.
type DB struct {
	be  backend
	now func() time.Time
	mu  sync.Mutex // serialises sequence numbers
	seq uint64
	// gate orders write transactions: the journal's first.
	gate writeGate
	// lastRecord is when (Unix ns) the journal's last write started
	// (recordFirst).
	lastRecord atomic.Int64
	// allow holds TakeAllowance's counts (allowance.go).
	allow allowances
	// reports holds ClaimReport's claims (reportclaims.go).
	reports reportClaims
	// proc identifies this process's claims (ClaimRemoval): the file is
	// opened by one process at a time, so another's were a stopped one's.
	proc string
	// pruneBatch is how many keys one Prune transaction looks at
	// (Options.PruneBatch).
	pruneBatch int
}

var _ store.State = (*DB)(nil)

// Options tune Open.
type Options struct {
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// NoSync is for bulk loading in tests and benchmarks only: skips fsync
	// after each commit (bbolt's DB.NoSync), so a crash can lose or corrupt
	// the store. Never set it in the bot.
	NoSync bool
	// WriteFault is for tests: when it returns an error, an update
	// transaction fails with it at its end and bbolt rolls it back, as when
	// the commit's write fails (a broken or full disk).
	WriteFault func() error
	// PruneBatch is how many keys one Prune transaction looks at (default
	// 2000); tests make it small to cross batch boundaries.
	PruneBatch int
}

// Open opens (or creates) the store in dir. A file that cannot be read is
// reported, never reset.
func Open(dir string, opt Options) (*DB, error) {
	path := filepath.Join(dir, FileName)
	be, err := openBolt(path, opt.NoSync)
	if err != nil {
		return nil, err
	}
	var wrapped backend = be
	if opt.WriteFault != nil {
		wrapped = faultBackend{be, opt.WriteFault}
	}
	db := &DB{be: wrapped, now: opt.Now, proc: store.NewBatchID(), pruneBatch: opt.PruneBatch}
	if err := db.init(path); err != nil {
		be.close()
		return nil, err
	}
	// One process opens the file: the checks it finds claimed were a dead
	// process's (see bClaims).
	if _, err := db.releaseStaleClaims(); err != nil {
		be.close()
		return nil, fmt.Errorf("store %s: giving back the checks a stopped process had claimed: %w", path, err)
	}
	return db, nil
}

// Memory returns an empty store held in memory. For unit tests only: it
// keeps nothing across a restart.
func Memory(opt Options) *DB {
	db := &DB{be: newMemBackend(), now: opt.Now, proc: store.NewBatchID(), pruneBatch: opt.PruneBatch}
	if err := db.init(""); err != nil {
		panic(err)
	}
	return db
}

func (db *DB) init(path string) error {
	if db.now == nil {
		db.now = time.Now
	}
	if db.pruneBatch <= 0 {
		db.pruneBatch = defaultPruneBatch
	}
	var version int
	err := db.be.view(func(t txn) error {
		if v := t.get(bMeta, "schema"); v != nil {
			n, err := strconv.Atoi(string(v))
			if err != nil {
				return fmt.Errorf("store %s: schema version %q is not a number", path, v)
			}
			version = n
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case version == 0:
		return db.be.update(func(t txn) error {
			for _, b := range buckets {
				t.scan(b, "", "", func(string, []byte) bool { return false })
			}
			return t.put(bMeta, "schema", []byte(strconv.Itoa(SchemaVersion)))
		})
	case version > SchemaVersion:
		return fmt.Errorf("store %s has schema %d, newer than this verdictbot understands (%d): run the newer version, or restore a backup", path, version, SchemaVersion)
	case version < SchemaVersion:
		if path != "" {
			if err := copyFile(path, fmt.Sprintf("%s.schema%d.bak", path, version)); err != nil {
				return fmt.Errorf("store %s: backup before migration: %w", path, err)
			}
		}
		return db.be.update(func(t txn) error {
			for v := version; v < SchemaVersion; v++ {
				if err := migrations[v-1](t); err != nil {
					return fmt.Errorf("store migration %d→%d: %w", v, v+1, err)
				}
			}
			return t.put(bMeta, "schema", []byte(strconv.Itoa(SchemaVersion)))
		})
	}
	return nil
}

// Close closes the store.
func (db *DB) Close() error { return db.be.close() }

// Size returns the store file's size in bytes (0 in memory).
func (db *DB) Size() int64 { return db.be.size() }

// Ping is nil: the file is in this process (see store.State.Ping).
func (db *DB) Ping(context.Context) error { return nil }

// Counts returns the number of records per bucket, for metrics and tests.
func (db *DB) Counts() map[string]int {
	out := map[string]int{}
	_ = db.be.view(func(t txn) error {
		for _, b := range buckets {
			out[b] = t.count(b)
		}
		return nil
	})
	return out
}

// copyFile streams src to dst (the pre-migration backup; the store may be
// large) and syncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ---- encoding helpers ----

func enc(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encode %T: %v", v, err)) // our own types always encode
	}
	return b
}

func dec(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store: corrupt record (%T): %w", v, err)
	}
	return nil
}

// timeKey is a sortable encoding of t.
func timeKey(t time.Time) string {
	var b [8]byte
	n := t.UnixNano()
	if n < 0 {
		n = 0
	}
	binary.BigEndian.PutUint64(b[:], uint64(n))
	return string(b[:])
}

func seqKey(n uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return string(b[:])
}

func (db *DB) nextSeq() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := uint64(db.now().UnixNano())
	if n <= db.seq {
		n = db.seq + 1
	}
	db.seq = n
	return n
}

// faultBackend fails update transactions when fault says so (Options.WriteFault).
type faultBackend struct {
	backend
	fault func() error
}

func (f faultBackend) batch(fn func(t txn) error) error {
	return f.backend.batch(func(t txn) error {
		if err := fn(t); err != nil {
			return err
		}
		return f.fault()
	})
}

func (f faultBackend) batchFirst(fn func(t txn) error) error {
	return f.backend.batchFirst(func(t txn) error {
		if err := fn(t); err != nil {
			return err
		}
		return f.fault()
	})
}

func (f faultBackend) update(fn func(t txn) error) error {
	return f.backend.update(func(t txn) error {
		if err := fn(t); err != nil {
			return err
		}
		return f.fault()
	})
}
