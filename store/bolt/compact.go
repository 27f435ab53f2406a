package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// CompactStats says what Compact did.
type CompactStats struct {
	Path   string // the store file
	Backup string // the file as it was, kept beside it
	Before int64  // bytes
	After  int64  // bytes
	Took   time.Duration
}

// compactTxSize bounds each copy transaction of Compact (bbolt.Compact's
// txMaxSize), so memory stays small whatever the store's size.
const compactTxSize = 64 << 20

// Compact rewrites the store file in dir with only its live records,
// packed (offline: the bot must not be running). bbolt reuses the pages
// that Prune frees, so the file stops growing, but never shrinks it;
// Compact gives the space back.
//
// It holds the file's lock throughout, so it refuses to run while a bot
// has the file open (and a bot started meanwhile refuses to start). The
// records are copied into <file>.compact, which is synced; the original is
// kept as <file>.precompact (a hard link, or a copy where links are not
// supported), and the new file replaces it with one rename.
func Compact(dir string) (CompactStats, error) {
	path := filepath.Join(dir, FileName)
	st := CompactStats{Path: path, Backup: path + ".precompact"}
	start := time.Now()
	fi, err := os.Stat(path)
	if err != nil {
		return st, fmt.Errorf("store %s: %w", path, err)
	}
	st.Before = fi.Size()
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return st, fmt.Errorf("store %s is locked by another process: stop verdictbot before compacting", path)
		}
		return st, fmt.Errorf("store %s cannot be opened: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: 2 * time.Second, NoSync: true})
	if err != nil {
		return st, fmt.Errorf("compact: create %s: %w", tmp, err)
	}
	if err := bbolt.Compact(dst, src, compactTxSize); err != nil {
		dst.Close()
		os.Remove(tmp)
		return st, fmt.Errorf("compact: copy into %s: %w", tmp, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return st, fmt.Errorf("compact: sync %s: %w", tmp, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return st, err
	}
	if err := os.Remove(st.Backup); err != nil && !errors.Is(err, os.ErrNotExist) {
		os.Remove(tmp)
		return st, err
	}
	if err := os.Link(path, st.Backup); err != nil {
		if err := copyFile(path, st.Backup); err != nil {
			os.Remove(tmp)
			return st, fmt.Errorf("compact: keep the original as %s: %w", st.Backup, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return st, fmt.Errorf("compact: replace %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the renames reach the disk
		d.Close()
	}
	if fi, err := os.Stat(path); err == nil {
		st.After = fi.Size()
	}
	st.Took = time.Since(start)
	return st, nil
}
