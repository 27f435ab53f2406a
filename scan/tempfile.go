package scan

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"
)

// errTempFile wraps failures to create or write the temporary file.
var errTempFile = errors.New("temporary file")

// tempFile is one downloaded file on disk with its hashes, computed while it
// is written. It is created 0600 and, on Unix, unlinked at once, so that
// nothing is left behind even if the process is killed; the open descriptor
// is the io.ReadSeeker the upload reads (and rewinds on a retry). remove
// closes it (and unlinks it where that could not be done at once).
type tempFile struct {
	f     *os.File
	path  string
	named bool // still has a name on disk

	hMD5, hSHA1, hSHA256 hash.Hash
	w                    io.Writer

	size              int64
	md5, sha1, sha256 string
	once              sync.Once
}

func newTempFile(dir string) (*tempFile, error) {
	f, err := os.CreateTemp(dir, "verdictbot-file-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTempFile, err)
	}
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("%w: %v", errTempFile, err)
	}
	t := &tempFile{f: f, path: f.Name(), named: true, hMD5: md5.New(), hSHA1: sha1.New(), hSHA256: sha256.New()}
	if runtime.GOOS != "windows" && os.Remove(t.path) == nil {
		t.named = false
	}
	t.w = io.MultiWriter(t.hMD5, t.hSHA1, t.hSHA256)
	return t, nil
}

// Write writes p to the file and hashes what was written.
func (t *tempFile) Write(p []byte) (int, error) {
	n, err := t.f.Write(p)
	t.w.Write(p[:n]) // hashes never fail
	if err != nil {
		return n, fmt.Errorf("%w: %v", errTempFile, err)
	}
	return n, nil
}

// reset empties the file and the hashes for another download attempt.
func (t *tempFile) reset() error {
	if err := t.f.Truncate(0); err != nil {
		return fmt.Errorf("%w: %v", errTempFile, err)
	}
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %v", errTempFile, err)
	}
	t.hMD5.Reset()
	t.hSHA1.Reset()
	t.hSHA256.Reset()
	return nil
}

// finish records the size and the hashes of a complete download.
func (t *tempFile) finish(n int64) {
	t.size = n
	t.md5 = hex.EncodeToString(t.hMD5.Sum(nil))
	t.sha1 = hex.EncodeToString(t.hSHA1.Sum(nil))
	t.sha256 = hex.EncodeToString(t.hSHA256.Sum(nil))
}

// rewind puts the read position at the start, for the upload.
func (t *tempFile) rewind() error {
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %v", errTempFile, err)
	}
	return nil
}

// remove closes and deletes the file; it may be called more than once.
func (t *tempFile) remove() {
	t.once.Do(func() {
		t.f.Close()
		if t.named {
			os.Remove(t.path)
		}
	})
}
