package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strings"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// upload streams one multipart/form-data body with a single "file" part from
// a reader, through an io.Pipe, so that the file is never held in memory.
// Each attempt of the request opens it once; the writing goroutine of an
// attempt ends before the next attempt rewinds the reader and before
// CreateFile returns.
type upload struct {
	name     string
	r        io.Reader
	seeker   io.Seeker // nil when r cannot be rewound
	start    int64     // r's offset at the call
	boundary string
	// length is the whole body's size, or 0 when r's size is unknown (the
	// body then goes out chunked).
	length int64
	size   int64 // r's size, -1 when unknown

	opened int
	pr     *io.PipeReader
	done   chan struct{}
}

// errAttemptOver closes the pipe of an attempt the core has finished with.
var errAttemptOver = errors.New("upload attempt over")

func newUpload(name string, r io.Reader) (*upload, error) {
	u := &upload{name: name, r: r, size: -1}
	if s, ok := r.(io.Seeker); ok {
		if cur, err := s.Seek(0, io.SeekCurrent); err == nil {
			if end, err := s.Seek(0, io.SeekEnd); err == nil {
				if _, err := s.Seek(cur, io.SeekStart); err != nil {
					return nil, fmt.Errorf("%s %s: rewinding the file: %w", ServiceName, OpCreateFile, err)
				}
				u.seeker, u.start, u.size = s, cur, max(end-cur, 0)
			}
		}
	}
	if u.size < 0 {
		if l, ok := r.(interface{ Len() int }); ok {
			u.size = int64(l.Len())
		}
	}
	// One boundary for every attempt: the Content-Type is set once.
	u.boundary = multipart.NewWriter(io.Discard).Boundary()
	if u.size >= 0 {
		var framing bytes.Buffer
		mw := multipart.NewWriter(&framing)
		if err := mw.SetBoundary(u.boundary); err != nil {
			return nil, err
		}
		if _, err := mw.CreateFormFile("file", u.name); err != nil {
			return nil, err
		}
		if err := mw.Close(); err != nil {
			return nil, err
		}
		u.length = int64(framing.Len()) + u.size
	}
	return u, nil
}

func (u *upload) contentType() string { return "multipart/form-data; boundary=" + u.boundary }

// open is the apiclient.Request Body: it starts writing the body for one
// attempt. A second call rewinds a seekable reader or returns
// apiclient.ErrNotReplayable.
func (u *upload) open() (io.Reader, error) {
	if u.opened > 0 {
		if u.seeker == nil {
			return nil, apiclient.ErrNotReplayable
		}
		u.stop()
		if _, err := u.seeker.Seek(u.start, io.SeekStart); err != nil {
			return nil, fmt.Errorf("rewinding the file: %w", err)
		}
	}
	u.opened++
	pr, pw := io.Pipe()
	done := make(chan struct{})
	u.pr, u.done = pr, done
	go func() {
		defer close(done)
		pw.CloseWithError(u.write(pw))
	}()
	// *io.PipeReader is an io.ReadCloser, so the transport closes it when it
	// is done with the request, which unblocks the writer.
	return pr, nil
}

// write writes the whole multipart body to w.
func (u *upload) write(w io.Writer) error {
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(u.boundary); err != nil {
		return err
	}
	part, err := mw.CreateFormFile("file", u.name)
	if err != nil {
		return err
	}
	src := u.r
	if u.size >= 0 {
		// Content-Length promises exactly size bytes.
		src = io.LimitReader(u.r, u.size)
	}
	n, err := io.Copy(part, src)
	if err != nil {
		return err
	}
	if u.size >= 0 && n != u.size {
		return fmt.Errorf("file shrank while being sent: %d of %d bytes", n, u.size)
	}
	return mw.Close()
}

// stop ends the current attempt's writer and waits for it.
func (u *upload) stop() {
	if u.pr == nil {
		return
	}
	u.pr.CloseWithError(errAttemptOver)
	<-u.done
	u.pr, u.done = nil, nil
}

// finish ends the writer before CreateFile returns. It waits until the
// writer has stopped using r, or until ctx ends (a Read of r that blocks
// then finishes on its own; the writer exits right after).
func (u *upload) finish(ctx context.Context) {
	if u.pr == nil {
		return
	}
	u.pr.CloseWithError(errAttemptOver)
	select {
	case <-u.done:
	case <-ctx.Done():
	}
}

// uploadName keeps the last path element of name, replaces control
// characters (which would break the part's header) and falls back to
// "sample".
func uploadName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return "sample"
	}
	return name
}
