package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// DefaultMaxFileBytes is the largest file the pipeline fetches and
// uploads (VERDICTBOT_MAX_FILE_BYTES): CAPE's max_sample_size, which the
// sandbox enforces with "File size exceeds API limit"
// (CAPEv2's tasks/create/file).
const DefaultMaxFileBytes int64 = 30_000_000

// Fetcher reads the content of the files the pipeline checks: the chat's
// file downloader (a package of its own), or LocalFiles for `verdictbot
// check`.
// The pipeline owns the destination: a private temporary file that hashes
// what is written to it, emptied before another attempt. A Fetcher must be
// safe for concurrent use.
type Fetcher interface {
	// Fetch copies the content of ref into dst and returns the bytes
	// written. It writes at most max+1 bytes (max > 0): a file larger than
	// max is an error matching ErrTooLarge. A failure whose error is a
	// FetchError saying Retryable may be tried again, dst emptied first.
	Fetch(ctx context.Context, ref FileRef, max int64, dst io.Writer) (int64, error)
	// Unfetchable words, for the user, why ref cannot be fetched at all:
	// ref.External is set, or ref.Source is empty. It sends nothing.
	Unfetchable(ref FileRef) string
}

// FetchError is what the pipeline reads of a failed Fetch, when the error
// (or one it wraps) implements it. Other errors are not retried, and are
// shown with a generic sentence.
type FetchError interface {
	error
	// Retryable reports whether another attempt may succeed.
	Retryable() bool
	// RetryWait is how long the source asked to wait before another
	// attempt (0: it did not say).
	RetryWait() time.Duration
	// Problem is a sentence safe to show users ("" for a generic one).
	Problem() string
}

// ErrTooLarge: the file is larger than the limit; the fetch stopped at the
// limit.
var ErrTooLarge = errors.New("file larger than the limit")

// LocalFiles is a Fetcher of files on this machine: FileRef.Source is a
// path. `verdictbot check` uses it; the bot does not.
type LocalFiles struct{}

var _ Fetcher = LocalFiles{}

// localError is a failed read of a local file.
type localError struct{ err error }

func (e *localError) Error() string            { return "local file: " + e.err.Error() }
func (e *localError) Unwrap() error            { return e.err }
func (e *localError) Retryable() bool          { return false }
func (e *localError) RetryWait() time.Duration { return 0 }
func (e *localError) Problem() string {
	switch {
	case errors.Is(e.err, ErrTooLarge):
		return ""
	case errors.Is(e.err, errTempFile):
		return "the bot could not store the file to check it"
	}
	return "the file could not be read"
}

// Fetch copies the file at ref.Source into dst, stopping after max+1 bytes.
func (LocalFiles) Fetch(ctx context.Context, ref FileRef, max int64, dst io.Writer) (int64, error) {
	if max <= 0 {
		max = DefaultMaxFileBytes
	}
	f, err := os.Open(ref.Source)
	if err != nil {
		return 0, &localError{errors.Unwrap(err)}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return 0, &localError{fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, st.Size(), max)}
	}
	buf := make([]byte, 32<<10)
	var n int64
	src := io.LimitReader(f, max+1)
	for {
		if err := ctx.Err(); err != nil {
			return n, &localError{err}
		}
		r, rerr := src.Read(buf)
		if r > 0 {
			w, werr := dst.Write(buf[:r])
			n += int64(w)
			if werr == nil && w != r {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return n, &localError{werr}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, &localError{rerr}
		}
	}
	if n > max {
		return n, &localError{fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max)}
	}
	return n, nil
}

// Unfetchable says why a local file cannot be read without trying.
func (LocalFiles) Unfetchable(ref FileRef) string {
	if ref.External || strings.TrimSpace(ref.Source) == "" {
		return "it is not a file on this machine"
	}
	return ""
}
