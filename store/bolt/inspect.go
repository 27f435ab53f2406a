package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrInUse is Inspect's error for a store file another process holds
// open: a running verdictbot (bbolt locks the file while it is open).
var ErrInUse = errors.New("in use by another process")

// FileInfo is what Inspect reads of the store file.
type FileInfo struct {
	Path string
	// Exists is false when there is no file yet (the first start
	// creates it).
	Exists bool
	Size   int64
	// Version is the file's schema version (0: none recorded). It may be
	// above SchemaVersion: a newer verdictbot wrote it.
	Version int
}

// Inspect reads the schema version of the store file in dir without
// changing it: it opens the file read-only, waiting at most wait for the
// lock. A file another process holds (a running verdictbot) is ErrInUse
// (wrapped), and is left alone; a missing file is Exists false and no
// error.
func Inspect(dir string, wait time.Duration) (FileInfo, error) {
	info := FileInfo{Path: filepath.Join(dir, FileName)}
	fi, err := os.Stat(info.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return info, nil
	case err != nil:
		return info, fmt.Errorf("store %s: %w", info.Path, err)
	}
	info.Exists, info.Size = true, fi.Size()
	db, err := bbolt.Open(info.Path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: wait})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return info, fmt.Errorf("store %s: %w", info.Path, ErrInUse)
	case err != nil:
		return info, fmt.Errorf("store %s cannot be read: %w", info.Path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bMeta))
		if b == nil {
			return nil
		}
		v := b.Get([]byte("schema"))
		if v == nil {
			return nil
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("schema version %q is not a number", v)
		}
		info.Version = n
		return nil
	})
	if err != nil {
		return info, fmt.Errorf("store %s: %w", info.Path, err)
	}
	return info, nil
}
