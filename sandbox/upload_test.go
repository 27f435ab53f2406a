package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// generator is a deterministic, endless, allocation-free byte source.
type generator struct{ state uint64 }

func (g *generator) Read(p []byte) (int, error) {
	for i := range p {
		g.state = g.state*6364136223846793005 + 1442695040888963407
		p[i] = byte(g.state >> 56)
	}
	return len(p), nil
}

// received is what the fake service read from one upload.
type received struct {
	form, filename string
	n              int64
	sha            string
	contentLength  int64
	chunked        bool
}

// uploadHandler reads the multipart body as a stream (never parsing it into
// memory) and records what it saw.
func uploadHandler(t testing.TB, got chan<- received, answer string) func(w http.ResponseWriter, r *http.Request, p string) {
	return func(w http.ResponseWriter, r *http.Request, p string) {
		if r.Method != http.MethodPost || p != "tasks/create/file/" {
			t.Errorf("%s %s", r.Method, p)
		}
		rec := received{contentLength: r.ContentLength, chunked: len(r.TransferEncoding) > 0}
		mr, err := r.MultipartReader()
		if err != nil {
			t.Errorf("multipart: %v", err)
			writeJSON(w, 200, `{"error": true, "error_value": "No file was submitted"}`)
			return
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("next part: %v", err)
				return
			}
			h := sha256.New()
			n, err := io.Copy(h, part)
			if err != nil {
				t.Errorf("reading part: %v", err)
				return
			}
			rec.form, rec.filename, rec.n, rec.sha = part.FormName(), part.FileName(), n, hex.EncodeToString(h.Sum(nil))
		}
		got <- rec
		writeJSON(w, 200, answer)
	}
}

const specCreated = `{"error": false, "data": "Task ID 1042 has been submitted", "task_ids": ["1042"], "url": ["http://sandbox.test/submit/status/1042/"]}`

// TestCreateFileStreamsWithoutBuffering uploads 30 MB from a generator
// (no size, no Seek) and checks that the service got every byte while the
// process allocated far less than the file's size.
func TestCreateFileStreamsWithoutBuffering(t *testing.T) {
	// Not parallel: the allocation count covers the whole process.
	const size = 30 << 20
	got := make(chan received, 1)
	f := newFake(t, uploadHandler(t, got, specCreated))
	c := f.client()

	want := sha256.New()
	io.Copy(want, io.LimitReader(&generator{state: 7}, size))
	wantSum := hex.EncodeToString(want.Sum(nil))

	// Warm up connections and lazily allocated state.
	if _, err := c.CreateFile(t.Context(), "warm.bin", strings.NewReader("MZ")); err != nil {
		t.Fatal(err)
	}
	<-got

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sub, err := c.CreateFile(t.Context(), "big.bin", io.LimitReader(&generator{state: 7}, size))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	rec := <-got
	if rec.form != "file" || rec.filename != "big.bin" || rec.n != size || rec.sha != wantSum {
		t.Fatalf("service received %+v, want %d bytes with sha256 %s", rec, size, wantSum)
	}
	if !rec.chunked {
		t.Errorf("a reader of unknown size should go out chunked: %+v", rec)
	}
	if !reflect.DeepEqual(sub.TaskIDs, []string{"1042"}) || sub.Message != "Task ID 1042 has been submitted" {
		t.Errorf("submission %+v", sub)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB for a %d MiB upload (client and test server)", alloc>>10, size>>20)
	if alloc > 8<<20 {
		t.Fatalf("allocated %d MiB for a %d MiB upload: the body is being buffered", alloc>>20, size>>20)
	}
}

func TestCreateFileSendsContentLengthForSeekers(t *testing.T) {
	t.Parallel()
	got := make(chan received, 1)
	f := newFake(t, uploadHandler(t, got, specCreated))
	data := bytes.Repeat([]byte("MZ-sample-"), 10000)
	r := bytes.NewReader(data)
	r.Seek(2, io.SeekStart) // the upload starts at the reader's position
	if _, err := f.client().CreateFile(t.Context(), `C:\Users\x\..\evil"na`+"\r\n"+`me.exe`, r); err != nil {
		t.Fatal(err)
	}
	rec := <-got
	sum := sha256.Sum256(data[2:])
	if rec.chunked || rec.contentLength <= int64(len(data)-2) || rec.n != int64(len(data)-2) || rec.sha != hex.EncodeToString(sum[:]) {
		t.Fatalf("received %+v", rec)
	}
	if rec.filename != `evil"na__me.exe` {
		t.Errorf("file name = %q", rec.filename)
	}
}

// readAfterReturn fails the test if the reader is read after CreateFile
// returned.
type readAfterReturn struct {
	t        testing.TB
	r        io.Reader
	returned atomic.Bool
	reads    atomic.Int32
}

func (r *readAfterReturn) Read(p []byte) (int, error) {
	if r.returned.Load() {
		r.t.Errorf("reader used after CreateFile returned")
	}
	r.reads.Add(1)
	return r.r.Read(p)
}

type readSeekAfterReturn struct {
	*readAfterReturn
	s io.Seeker
}

func (r *readSeekAfterReturn) Seek(off int64, whence int) (int64, error) {
	return r.s.Seek(off, whence)
}

// TestCreateFileRetry429RewindsSeekers: a 429 before the body is read is
// retried with the whole file again; a reader that cannot rewind is not
// sent twice, and no reader is used after CreateFile returns.
func TestCreateFileRetry429RewindsSeekers(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, bigger than socket buffers
	sum := sha256.Sum256(data)
	newServer := func() (*fake, *atomic.Int32, chan received) {
		var n atomic.Int32
		got := make(chan received, 4)
		ok := uploadHandler(t, got, specCreated)
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", "0.01")
				w.Header().Set("Connection", "close")
				writeJSON(w, 429, `{"error": true, "error_value": "Rate limit exceeded for this API"}`)
				return
			}
			ok(w, r, p)
		})
		return f, &n, got
	}

	t.Run("seeker", func(t *testing.T) {
		t.Parallel()
		f, n, got := newServer()
		src := &readSeekAfterReturn{readAfterReturn: &readAfterReturn{t: t}}
		br := bytes.NewReader(data)
		src.r, src.s = br, br
		sub, err := f.client().CreateFile(t.Context(), "a.exe", src)
		src.returned.Store(true)
		if err != nil {
			t.Fatal(err)
		}
		rec := <-got
		if n.Load() != 2 || rec.n != int64(len(data)) || rec.sha != hex.EncodeToString(sum[:]) || sub.TaskIDs[0] != "1042" {
			t.Fatalf("requests %d, received %+v", n.Load(), rec)
		}
		time.Sleep(20 * time.Millisecond)
	})
	t.Run("not seekable", func(t *testing.T) {
		t.Parallel()
		f, n, _ := newServer()
		src := &readAfterReturn{t: t, r: bytes.NewReader(data)}
		_, err := f.client().CreateFile(t.Context(), "a.exe", src)
		src.returned.Store(true)
		var rl *RateLimitError
		if !errors.As(err, &rl) || n.Load() != 1 {
			t.Fatalf("err = %v after %d requests; want the 429, sent once", err, n.Load())
		}
		assertNoSecret(t, err)
		time.Sleep(20 * time.Millisecond)
	})
}

// TestCreateFileNeverSentTwiceOnceReceived: a failure after the service
// read the upload is not retried, even for a seekable file.
func TestCreateFileNeverSentTwiceOnceReceived(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"html 500", "hang up", "garbage 200"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
				n.Add(1)
				io.Copy(io.Discard, r.Body)
				switch mode {
				case "html 500":
					writeHTML(w, 500)
				case "hang up":
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
				case "garbage 200":
					io.WriteString(w, "<html>maintenance</html>")
				}
			})
			_, err := f.client().CreateFile(t.Context(), "a.exe", bytes.NewReader([]byte("MZ payload")))
			if err == nil || n.Load() != 1 {
				t.Fatalf("err = %v after %d submissions", err, n.Load())
			}
			assertNoSecret(t, err)
		})
	}
}

// TestCreateFileRetriedWhenNeverSent: a refused connection is retried for a
// seekable file (rewound each time) and not for a plain reader.
func TestCreateFileRetriedWhenNeverSent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, seekable := range []bool{true, false} {
		var attempts atomic.Int32
		c, err := New("http://"+addr, testKey, WithRetries(2, time.Millisecond, time.Millisecond),
			WithRateLimits(Limit{}, Limit{}),
			WithObserver(func(e Event) {
				if !e.IsWait {
					attempts.Add(1)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = bytes.NewReader([]byte("MZ payload"))
		want := int32(3)
		if !seekable {
			r = io.MultiReader(r)
			want = 1
		}
		_, err = c.CreateFile(t.Context(), "a.exe", r)
		if ReasonOf(err) != ReasonTransport || attempts.Load() != want {
			t.Errorf("seekable %v: %v after %d attempts, want %d", seekable, err, attempts.Load(), want)
		}
		assertNoSecret(t, err)
	}
}

// TestDecodeSubmissionShapes covers the spec's and CAPE's create answers.
func TestDecodeSubmissionShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want Submission
	}{
		{specCreated, Submission{TaskIDs: []string{"1042"}, URLs: []string{"http://sandbox.test/submit/status/1042/"}, Message: "Task ID 1042 has been submitted"}},
		{`{"error": false, "data": {"task_ids": [1042, 1043], "message": "Task IDs 1042, 1043 have been submitted"}, "errors": [], "url": ["http://example.tld/submit/status/1042/"]}`,
			Submission{TaskIDs: []string{"1042", "1043"}, URLs: []string{"http://example.tld/submit/status/1042/"}, Message: "Task IDs 1042, 1043 have been submitted"}},
		{`{"error": [], "data": {"task_ids": [7]}}`, Submission{TaskIDs: []string{"7"}}},
		{`{"task_ids": "9", "url": "http://x/9/", "data": "ok"}`, Submission{TaskIDs: []string{"9"}, URLs: []string{"http://x/9/"}, Message: "ok"}},
		{`{"task_id": 5}`, Submission{TaskIDs: []string{"5"}}},
		{`{"task_ids": [1.0], "data": {"task_ids": [2], "message": "m"}}`, Submission{TaskIDs: []string{"1"}, Message: "m"}},
	} {
		got, err := decodeSubmission([]byte(tc.body))
		if err != nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.body, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{}`, `{"task_ids": []}`, `{"task_ids": [""]}`, `{"task_ids": [1.5]}`, `{"data": {"task_ids": {}}}`, `[1]`} {
		if got, err := decodeSubmission([]byte(bad)); err == nil {
			t.Errorf("%s: accepted as %+v", bad, got)
		}
	}
}

func TestUploadFraming(t *testing.T) {
	t.Parallel()
	u, err := newUpload("a.bin", bytes.NewReader([]byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(u.contentType())
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		t.Fatalf("content type %q", u.contentType())
	}
	for attempt := 0; attempt < 2; attempt++ {
		r, err := u.open()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r)
		if int64(len(body)) != u.length || !bytes.Contains(body, []byte("hello")) || !bytes.Contains(body, []byte(params["boundary"])) {
			t.Fatalf("attempt %d: %d bytes, want %d: %q", attempt, len(body), u.length, body)
		}
	}
	u.finish(t.Context())
	for name, want := range map[string]string{"": "sample", "..": "sample", "dir/a.exe": "a.exe", `a\b\c.doc`: "c.doc", "x\ty": "x_y", " /": "sample"} {
		if got := uploadName(name); got != want {
			t.Errorf("uploadName(%q) = %q, want %q", name, got, want)
		}
	}
}
