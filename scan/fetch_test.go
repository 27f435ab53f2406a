package scan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

// testFetcher is the Fetcher of the pipeline tests: LocalFiles over files
// written in a temporary directory, counting fetches, with failures to
// inject.
type testFetcher struct {
	LocalFiles
	dir     string
	fetches atomic.Int32

	mu     sync.Mutex
	seq    int
	refs   map[string]FileRef
	faults []error // returned by the next fetches, in order
}

func newTestFetcher(t *testing.T) *testFetcher {
	return &testFetcher{dir: t.TempDir(), refs: map[string]FileRef{}}
}

// add writes content to a new file and returns ref completed as a source
// would describe it: an id, the filetype and mimetype from the name, the
// size and the path.
func (s *testFetcher) add(t *testing.T, ref FileRef, content []byte) FileRef {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ref.ID = cmp.Or(ref.ID, fmt.Sprintf("F%04d", s.seq))
	ext := strings.TrimPrefix(filepath.Ext(ref.Name), ".")
	ref.Filetype = cmp.Or(ref.Filetype, ext, "binary")
	ref.Mimetype = cmp.Or(ref.Mimetype, mime.TypeByExtension("."+ext), "application/octet-stream")
	ref.Size = int64(len(content))
	ref.Source = filepath.Join(s.dir, ref.ID)
	if err := os.WriteFile(ref.Source, content, 0o600); err != nil {
		t.Fatal(err)
	}
	s.refs[ref.ID] = ref
	return ref
}

// fail makes the next fetches fail with errs, in order.
func (s *testFetcher) fail(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, errs...)
}

func (s *testFetcher) Fetch(ctx context.Context, ref FileRef, max int64, dst io.Writer) (int64, error) {
	s.fetches.Add(1)
	s.mu.Lock()
	var fault error
	if len(s.faults) > 0 {
		fault, s.faults = s.faults[0], s.faults[1:]
	}
	s.mu.Unlock()
	if fault != nil {
		_, _ = io.WriteString(dst, "half a file") // emptied before the retry
		return 11, fault
	}
	return s.LocalFiles.Fetch(ctx, ref, max, dst)
}

// fetchFailure is a FetchError.
type fetchFailure struct {
	retry   bool
	wait    time.Duration
	problem string
}

func (e *fetchFailure) Error() string            { return "fetch failed: " + e.problem }
func (e *fetchFailure) Retryable() bool          { return e.retry }
func (e *fetchFailure) RetryWait() time.Duration { return e.wait }
func (e *fetchFailure) Problem() string          { return e.problem }

// A transient failure is tried again (the partial file discarded: the
// hashes are those of the file); a lasting one is not, and its Problem is
// the verdict's sentence.
func TestFetchRetriedAfterTransientFailure(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ flaky SIM:MALSCORE=1")
	ref := e.share("flaky.exe", content)
	e.src.fail(&fetchFailure{retry: true, problem: "blip"}, &fetchFailure{retry: true, wait: 5 * time.Millisecond, problem: "blip"})
	v := e.files.Check(t.Context(), ref, FileCheckOptions{})
	md, _, sha := sums(content)
	if v.Level != verdict.Clean || e.downloads() != 3 || v.SHA256 != sha || v.MD5 != md || v.Size != int64(len(content)) {
		t.Fatalf("verdict %+v after %d fetches", v, e.downloads())
	}
	gone := e.share("gone.exe", []byte("MZ gone"))
	e.src.fail(&fetchFailure{problem: "the file is gone"})
	v = e.files.Check(t.Context(), gone, FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "the file is gone" || e.downloads() != 4 {
		t.Fatalf("gone: %+v after %d fetches", v, e.downloads())
	}
	// Retries are bounded by DownloadRetries.
	e.restart(func(o *FileOptions) { o.DownloadRetries = 1 })
	flaky := e.share("flaky2.exe", []byte("MZ flaky 2"))
	e.src.fail(&fetchFailure{retry: true, problem: "blip 1"}, &fetchFailure{retry: true, problem: "blip 2"})
	v = e.files.Check(t.Context(), flaky, FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem != "blip 2" || e.downloads() != 6 {
		t.Fatalf("bounded: %+v after %d fetches", v, e.downloads())
	}
	// An error that is not a FetchError is not retried and gets a generic
	// sentence.
	plain := e.share("plain.exe", []byte("MZ plain"))
	e.src.fail(errors.New("opaque"))
	v = e.files.Check(t.Context(), plain, FileCheckOptions{})
	if v.Level != verdict.Unknown || v.Problem == "" || strings.Contains(v.Problem, "opaque") || e.downloads() != 7 || e.uploads() != 1 {
		t.Fatalf("plain: %+v after %d fetches, %d uploads", v, e.downloads(), e.uploads())
	}
}

// LocalFiles reads a file on disk, stops at the limit, and says why it
// cannot read what is not one.
func TestLocalFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lf LocalFiles
	var b strings.Builder
	n, err := lf.Fetch(t.Context(), FileRef{Source: p}, 10, &b)
	if err != nil || n != 10 || b.String() != "0123456789" {
		t.Fatalf("Fetch = %d, %v, %q", n, err, b.String())
	}
	b.Reset()
	n, err = lf.Fetch(t.Context(), FileRef{Source: p}, 9, &b)
	if !errors.Is(err, ErrTooLarge) || n != 0 || b.Len() != 0 {
		t.Fatalf("over the limit: %d, %v, %d bytes written", n, err, b.Len())
	}
	var fe FetchError
	_, err = lf.Fetch(t.Context(), FileRef{Source: filepath.Join(dir, "missing")}, 10, io.Discard)
	if !errors.As(err, &fe) || fe.Retryable() || fe.Problem() != "the file could not be read" || strings.Contains(err.Error(), dir) {
		t.Fatalf("missing: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := lf.Fetch(ctx, FileRef{Source: p}, 10, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if lf.Unfetchable(FileRef{Source: p}) != "" || lf.Unfetchable(FileRef{}) == "" || lf.Unfetchable(FileRef{Source: p, External: true}) == "" {
		t.Fatal("Unfetchable")
	}
}

// A Fetcher that writes past the limit does not get its file checked.
func TestFetcherOverTheLimitIsSkipped(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, func(o *FileOptions) { o.MaxBytes = 5 })
	f := NewFiles(e.sb, greedyFetcher{}, e.opt)
	defer f.Close()
	v := f.Check(t.Context(), FileRef{ID: "F1", Name: "x", Source: "x"}, FileCheckOptions{})
	if v.Level != verdict.Skipped || v.Problem != "it is larger than the 5 bytes limit" || e.uploads() != 0 {
		t.Fatalf("verdict %+v", v)
	}
}

// greedyFetcher ignores the limit.
type greedyFetcher struct{ LocalFiles }

func (greedyFetcher) Fetch(_ context.Context, _ FileRef, max int64, dst io.Writer) (int64, error) {
	n, err := io.WriteString(dst, strings.Repeat("A", int(max)+10))
	return int64(n), err
}
