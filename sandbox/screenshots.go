package sandbox

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/verdictbot/verdictbot/internal/apiclient"
)

// Screenshot limits. CAPE's shots are small JPEGs (one per changed screen,
// one per second at most, CAPEv2's screenshot views); the caps bound memory against a
// misbehaving service.
const (
	// MaxImageBytes caps one screenshot.
	MaxImageBytes = 10 << 20
	// MaxScreenshotBytes caps the images one Screenshots call returns (and
	// holds: an archive is read within 32 MiB of heap).
	MaxScreenshotBytes = 16 << 20
	// MaxArchiveBytes caps the archive read by Screenshots (compressed).
	MaxArchiveBytes = 64 << 20
	// DefaultMaxScreenshots is the count Screenshots returns when asked for
	// max <= 0.
	DefaultMaxScreenshots = 20
	// maxExpandedBytes caps the bytes an archive may expand to while it is
	// walked (a tar reads through skipped members); maxArchiveMembers caps
	// its members.
	maxExpandedBytes  = 256 << 20
	maxArchiveMembers = 10000
	// maxScreenshotNumber is CAPE's route limit, \d{1,4} (CAPEv2's URL routes).
	maxScreenshotNumber = 9999
	// maxShotMisses is how many unusable answers in a row end
	// ScreenshotsByNumber: a service whose every answer is broken costs a
	// few requests, not ten thousand.
	maxShotMisses = 3
)

// Screenshot errors, matched with errors.Is.
var (
	// ErrNotImage: the bytes served as a screenshot are neither JPEG nor PNG
	// (checked by magic bytes, not by Content-Type).
	ErrNotImage = errors.New("screenshot is not a JPEG or PNG image")
	// ErrImageTooLarge: a screenshot is larger than MaxImageBytes.
	ErrImageTooLarge = errors.New("screenshot larger than the client's limit")
	// ErrScreenshotsUnusable: ScreenshotsByNumber gave up after
	// maxShotMisses unusable answers in a row without finding an image.
	ErrScreenshotsUnusable = errors.New("no usable screenshot in the service's answers")
	// ErrArchiveUnusable: the screenshot archive is not a tar.bz2, tar.gz,
	// tar or zip the client can read (or is larger than MaxArchiveBytes,
	// or encrypted). Screenshots then falls back to ScreenshotsByNumber.
	ErrArchiveUnusable = errors.New("screenshot archive unusable")
)

// Image is one screenshot.
type Image struct {
	// Name is the file name the service gave it ("0001.jpg"), without
	// directories.
	Name string
	// ContentType is "image/jpeg" or "image/png", from the image's bytes.
	ContentType string
	Data        []byte
}

// Media types accepted for a single shot and for the archive; the bytes
// decide in the end (magic bytes), since CAPE labels its archive
// "application/octet-stream;" (CAPEv2's screenshot views).
var (
	imageTypes   = []string{"image/jpeg", "image/jpg", "image/pjpeg", "image/png", "application/octet-stream", "binary/octet-stream"}
	archiveTypes = []string{"application/octet-stream", "binary/octet-stream", "application/x-bzip2", "application/x-bzip",
		"application/x-tar", "application/x-gtar", "application/gzip", "application/x-gzip", "application/x-compressed-tar",
		"application/zip", "application/x-zip-compressed", "application/x-zip"}
)

// Screenshot returns screenshot number n of a reported task (spec §4 #7b,
// GET tasks/get/screenshot/<task_id>/<n>/). Numbering starts at 1 in CAPE
// (shots/0001.jpg; 0 after its optional deduplication, CAPEv2's screenshot views); n must
// be 0–9999. Only JPEG or PNG bytes up to MaxImageBytes are accepted
// (ErrNotImage, ErrImageTooLarge). Service errors: ErrScreenshotNotFound,
// ErrTaskDoesNotExist, ErrStillAnalyzing, ErrTaskFailed.
func (c *Client) Screenshot(ctx context.Context, taskID string, n int) (*Image, error) {
	if err := checkTaskID(OpScreenshot, taskID); err != nil {
		return nil, err
	}
	if n < 0 || n > maxScreenshotNumber {
		return nil, &InputError{Op: OpScreenshot, Value: strconv.Itoa(n), Kind: ErrInvalidScreenshotNumber}
	}
	st, err := c.stream(ctx, apiclient.Request{Op: OpScreenshot, Method: http.MethodGet,
		Path: []string{"tasks", "get", "screenshot", taskID, strconv.Itoa(n)}, Accept: imageTypes})
	if err != nil {
		return nil, err
	}
	defer st.Body.Close()
	if st.ContentLength > MaxImageBytes {
		return nil, fmt.Errorf("%s %s: %w (%d bytes)", ServiceName, OpScreenshot, ErrImageTooLarge, st.ContentLength)
	}
	src := &sourceReader{r: st.Body}
	data, err := io.ReadAll(io.LimitReader(src, MaxImageBytes+1))
	if err != nil {
		return nil, c.readError(OpScreenshot, err)
	}
	if len(data) > MaxImageBytes {
		return nil, fmt.Errorf("%s %s: %w", ServiceName, OpScreenshot, ErrImageTooLarge)
	}
	ctype, ext := sniffImage(data)
	if ctype == "" {
		return nil, fmt.Errorf("%s %s: %w (%s, %d bytes)", ServiceName, OpScreenshot, ErrNotImage, st.ContentType, len(data))
	}
	name := baseName(st.Disposition)
	if name == "" {
		name = fmt.Sprintf("%04d%s", n, ext)
	}
	return &Image{Name: name, ContentType: ctype, Data: data}, nil
}

// Screenshots returns up to max screenshots of a reported task (max <= 0:
// DefaultMaxScreenshots), lowest numbers first (spec §4 #7a, GET
// tasks/get/screenshot/<task_id>/).
//
// It lists the archive rather than guessing names (CAPEv2's screenshot views; CAPE may deduplicate and renumber them): the
// format is recognised by its magic bytes (tar.bz2 as the spec and CAPE 2021
// serve it, zip as newer CAPE does, also tar.gz and plain tar), members may
// be bare ("0001.jpg") or in a directory ("shots/0001.jpg") and in any order;
// they are sorted by the number in their name, and only real JPEG/PNG images
// are kept, within MaxImageBytes each and MaxScreenshotBytes in all.
//
// A task without screenshots gives an empty slice and a nil error, whether
// the service says "No screenshots created for task <id>" or crashes with
// HTTP 500 (CAPE 2021 does when the shots directory is missing, CAPEv2's screenshot views;
// the core retries the 500 first). Other service errors are returned:
// ErrTaskDoesNotExist, ErrStillAnalyzing, ErrTaskFailed.
//
// Fallback: when the archive answer is unusable (ErrArchiveUnusable: an
// unknown or corrupt format, an encrypted zip, too large, or a 2xx answer that
// is not binary), Screenshots fetches the shots one by one with
// ScreenshotsByNumber, at the cost of one request per shot.
func (c *Client) Screenshots(ctx context.Context, taskID string, max int) ([]Image, error) {
	if err := checkTaskID(OpScreenshotArchive, taskID); err != nil {
		return nil, err
	}
	if max <= 0 {
		max = DefaultMaxScreenshots
	}
	st, err := c.stream(ctx, apiclient.Request{Op: OpScreenshotArchive, Method: http.MethodGet,
		Path: []string{"tasks", "get", "screenshot", taskID}, Accept: archiveTypes})
	var he *HTTPError
	switch {
	case err == nil:
	case errors.Is(err, ErrNoScreenshots):
		return []Image{}, nil
	case errors.As(err, &he) && he.StatusCode == http.StatusInternalServerError:
		return []Image{}, nil
	case errors.As(err, &he) && he.StatusCode/100 == 2:
		// A 2xx answer that is neither the archive nor JSON.
		return c.fallback(ctx, taskID, max, err)
	default:
		return nil, err
	}
	src := &sourceReader{r: st.Body}
	images, aerr := readArchive(src, max, defaultArchiveLimits)
	st.Body.Close()
	switch {
	case aerr == nil:
		return images, nil
	case src.err != nil:
		// The download broke: a transport problem, not a format one.
		return nil, c.readError(OpScreenshotArchive, src.err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s %s: %w", ServiceName, OpScreenshotArchive, ctx.Err())
	}
	return c.fallback(ctx, taskID, max, aerr)
}

func (c *Client) fallback(ctx context.Context, taskID string, max int, cause error) ([]Image, error) {
	c.log.LogAttrs(ctx, slog.LevelWarn, "screenshot archive unusable, fetching shots one by one",
		slog.String("service", ServiceName), slog.String("task", taskID), slog.String("error", cause.Error()))
	images, err := c.ScreenshotsByNumber(ctx, taskID, max)
	if err != nil {
		return nil, fmt.Errorf("%w (after: %v)", err, cause)
	}
	return images, nil
}

// ScreenshotsByNumber fetches screenshots one by one with Screenshot, from
// number 0 upward (CAPE numbers from 0001, or from 0000 after its
// deduplication, CAPEv2's screenshot views; so number 0 is asked first, and its absence is
// normal), until the service answers "Screenshot does not exist" after
// number 0 (CAPE's numbering has no gaps), max images (max <= 0:
// DefaultMaxScreenshots), MaxScreenshotBytes, or maxShotMisses answers in a
// row that are not usable images (not an image, too large, or a missing
// number 0): ErrScreenshotsUnusable if none was found. A task without
// screenshots (ErrNoScreenshots, or HTTP 500 on the first number) gives an
// empty slice. It costs one request per shot
// plus one or two; Screenshots uses it only when the archive is unusable.
func (c *Client) ScreenshotsByNumber(ctx context.Context, taskID string, max int) ([]Image, error) {
	if err := checkTaskID(OpScreenshot, taskID); err != nil {
		return nil, err
	}
	if max <= 0 {
		max = DefaultMaxScreenshots
	}
	images := []Image{}
	total, misses := 0, 0
	for n := 0; n <= maxScreenshotNumber && len(images) < max; n++ {
		if misses >= maxShotMisses {
			if len(images) == 0 {
				return nil, fmt.Errorf("%s %s: %w (%d unusable answers in a row)", ServiceName, OpScreenshot, ErrScreenshotsUnusable, misses)
			}
			return images, nil
		}
		img, err := c.Screenshot(ctx, taskID, n)
		var he *HTTPError
		switch {
		case err == nil:
			if total+len(img.Data) > MaxScreenshotBytes {
				return images, nil
			}
			total += len(img.Data)
			images = append(images, *img)
			misses = 0
		case errors.Is(err, ErrScreenshotNotFound):
			if n > 0 {
				return images, nil
			}
			misses++
		case errors.Is(err, ErrNotImage), errors.Is(err, ErrImageTooLarge):
			misses++
		case errors.Is(err, ErrNoScreenshots):
			return images, nil
		case n <= 1 && len(images) == 0 && errors.As(err, &he) && he.StatusCode == http.StatusInternalServerError:
			return images, nil
		default:
			return nil, err
		}
	}
	return images, nil
}

// sourceReader remembers the first read error of the response body, so that
// a broken download is told apart from a bad archive.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// readError wraps a failure to read a response body. Its text is redacted;
// the cause is kept only as its kind (timeout, cancellation).
func (c *Client) readError(op string, err error) error {
	return &bodyError{op: op, msg: c.api.Redact(err.Error()), kind: bodyErrorKind(err)}
}

type bodyError struct {
	op, msg string
	kind    error
}

func (e *bodyError) Error() string {
	return fmt.Sprintf("%s %s: reading the answer: %s", ServiceName, e.op, e.msg)
}
func (e *bodyError) Unwrap() error { return e.kind }
func (e *bodyError) Reason() Reason {
	switch {
	case errors.Is(e.kind, context.Canceled):
		return ReasonCanceled
	case errors.Is(e.kind, context.DeadlineExceeded):
		return ReasonTimeout
	}
	return ReasonTransport
}

func bodyErrorKind(err error) error {
	var t interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &t) && t.Timeout():
		return context.DeadlineExceeded
	}
	return nil
}

// sniffImage returns the media type and extension of JPEG or PNG bytes, or
// "" for anything else.
func sniffImage(b []byte) (ctype, ext string) {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg", ".jpg"
	case len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "image/png", ".png"
	}
	return "", ""
}

// baseName returns the last element of a member or download name, or "".
func baseName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = strings.TrimRight(name, "/")
	if name == "" {
		return ""
	}
	b := path.Base(name)
	if b == "." || b == "/" || b == ".." {
		return ""
	}
	return b
}

func unusable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrArchiveUnusable, fmt.Sprintf(format, args...))
}

// archiveLimits bound the work and memory of readArchive.
type archiveLimits struct {
	image    int64 // one image
	total    int64 // the images kept
	archive  int64 // a zip, which is spooled to a temporary file
	expanded int64 // decompressed bytes walked
	members  int
}

var defaultArchiveLimits = archiveLimits{image: MaxImageBytes, total: MaxScreenshotBytes, archive: MaxArchiveBytes,
	expanded: maxExpandedBytes, members: maxArchiveMembers}

// readArchive lists a screenshot archive (tar.bz2, tar.gz, tar or zip,
// recognised by magic bytes) and returns up to max images, sorted by the
// number in their names. Errors wrap ErrArchiveUnusable.
func readArchive(r io.Reader, max int, lim archiveLimits) ([]Image, error) {
	br := bufio.NewReaderSize(r, 512)
	head, err := br.Peek(512)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return nil, unusable("%v", err)
		}
		return nil, unusable("empty answer")
	}
	col := &collector{max: max, lim: lim, names: map[string]bool{}}
	switch {
	case len(head) >= 4 && string(head[:3]) == "BZh" && '1' <= head[3] && head[3] <= '9':
		err = col.readTar(bzip2.NewReader(br))
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		gz, gerr := gzip.NewReader(br)
		if gerr != nil {
			return nil, unusable("gzip: %v", gerr)
		}
		err = col.readTar(gz)
	case len(head) >= 4 && (string(head[:4]) == "PK\x03\x04" || string(head[:4]) == "PK\x05\x06"):
		err = col.readZip(br)
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		err = col.readTar(br)
	default:
		return nil, unusable("unknown format")
	}
	if err != nil {
		return nil, err
	}
	return col.result(), nil
}

// collector keeps the max lowest-numbered images seen so far, within
// MaxScreenshotBytes.
type collector struct {
	max      int
	lim      archiveLimits
	images   []shot
	total    int64
	names    map[string]bool
	expanded int64
}

type shot struct {
	num  int // -1 when the name has no number
	name string
	img  Image
}

// shotNumber returns the number in a member name such as "0001.jpg", or -1.
func shotNumber(name string) int {
	stem := strings.TrimSuffix(name, path.Ext(name))
	if stem == "" || len(stem) > 9 {
		return -1
	}
	n, err := strconv.Atoi(stem)
	if err != nil || n < 0 || strings.ContainsAny(stem, "+-") {
		return -1
	}
	return n
}

func less(a, b shot) bool {
	switch {
	case a.num >= 0 && b.num >= 0 && a.num != b.num:
		return a.num < b.num
	case (a.num >= 0) != (b.num >= 0):
		return a.num >= 0
	}
	return a.name < b.name
}

// wants reports whether a member named name of size bytes could make it
// into the result, so that members that cannot are skipped without being
// read: it must rank among the max lowest, and fit in lim.total beside the
// images that rank before it.
func (c *collector) wants(name string, size int64) bool {
	if c.names[name] || size > c.lim.total {
		return false
	}
	s := shot{num: shotNumber(name), name: name}
	if len(c.images) >= c.max && !less(s, c.images[len(c.images)-1]) {
		return false
	}
	ahead := int64(0)
	for _, k := range c.images {
		if !less(k, s) {
			break
		}
		ahead += int64(len(k.img.Data))
	}
	return ahead+size <= c.lim.total
}

// makeRoom drops the kept images that rank after a member named name of
// size bytes and would no longer fit beside it, before the member is read:
// the heap then never holds more than lim.total of images. (If the member
// turns out not to be an image, what was dropped is lost; real shots are
// images.)
func (c *collector) makeRoom(name string, size int64) {
	s := shot{num: shotNumber(name), name: name}
	for len(c.images) > 0 && c.total+size > c.lim.total {
		last := len(c.images) - 1
		if less(c.images[last], s) {
			return
		}
		c.total -= int64(len(c.images[last].img.Data))
		c.images[last] = shot{}
		c.images = c.images[:last]
	}
}

// add keeps data if it is an image that ranks among the max lowest.
func (c *collector) add(name string, data []byte) {
	ctype, _ := sniffImage(data)
	if ctype == "" || int64(len(data)) > c.lim.image {
		return
	}
	c.names[name] = true
	s := shot{num: shotNumber(name), name: name, img: Image{Name: name, ContentType: ctype, Data: data}}
	i, _ := slices.BinarySearchFunc(c.images, s, func(a, b shot) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	})
	c.images = slices.Insert(c.images, i, s)
	c.total += int64(len(data))
	for len(c.images) > c.max || (c.total > c.lim.total && len(c.images) > 0) {
		last := len(c.images) - 1
		c.total -= int64(len(c.images[last].img.Data))
		c.images[last] = shot{}
		c.images = c.images[:last]
	}
}

func (c *collector) result() []Image {
	out := make([]Image, len(c.images))
	for i, s := range c.images {
		out[i] = s.img
	}
	return out
}

// expansionLimit fails a tar stream that expands beyond lim bytes (skipped
// members included: tar reads through them).
type expansionLimit struct {
	r   io.Reader
	n   int64
	lim int64
}

func (l *expansionLimit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, unusable("expands beyond %d bytes", l.lim)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func (c *collector) readTar(r io.Reader) error {
	tr := tar.NewReader(&expansionLimit{r: r, n: c.lim.expanded, lim: c.lim.expanded})
	for members := 0; ; members++ {
		if members >= c.lim.members {
			return unusable("more than %d members", c.lim.members)
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return tarError(err)
		}
		if h.Typeflag != tar.TypeReg || h.Size <= 0 || h.Size > c.lim.image {
			continue
		}
		name := baseName(h.Name)
		if name == "" || !c.wants(name, h.Size) {
			continue
		}
		c.makeRoom(name, h.Size)
		data, err := readExact(tr, h.Size)
		if err != nil {
			return tarError(err)
		}
		c.add(name, data)
	}
}

func tarError(err error) error {
	if errors.Is(err, ErrArchiveUnusable) {
		return err
	}
	return unusable("tar: %v", err)
}

// readZip spools the zip to a temporary file (it is read from its end,
// and holding up to MaxArchiveBytes in memory would break the heap bound),
// checks its central directory (zipView) and reads the members it wants.
func (c *collector) readZip(r io.Reader) error {
	f, err := os.CreateTemp("", "verdictbot-screenshots-*.zip")
	if err != nil {
		return unusable("zip: spooling: %v", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	n, err := io.Copy(f, io.LimitReader(r, c.lim.archive+1))
	if err != nil {
		return unusable("zip: %v", err)
	}
	if n > c.lim.archive {
		return unusable("larger than %d bytes", c.lim.archive)
	}
	view, err := zipView(f, n, c.lim)
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(view, view.Size())
	if err != nil {
		return unusable("zip: %v", err)
	}
	if len(zr.File) > c.lim.members {
		return unusable("more than %d members", c.lim.members)
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || f.UncompressedSize64 == 0 || f.UncompressedSize64 > uint64(c.lim.image) {
			continue
		}
		if f.Flags&0x1 != 0 {
			// Newer CAPE password-protects the zip (commit 58f36f6a,
			// CAPEv2's screenshot views); archive/zip cannot decrypt it.
			return unusable("zip member %q is encrypted", baseName(f.Name))
		}
		name := baseName(f.Name)
		if name == "" || !c.wants(name, int64(f.UncompressedSize64)) {
			continue
		}
		if c.expanded+int64(f.UncompressedSize64) > c.lim.expanded {
			return unusable("expands beyond %d bytes", c.lim.expanded)
		}
		rc, err := f.Open()
		if err != nil {
			return unusable("zip: %v", err)
		}
		c.makeRoom(name, int64(f.UncompressedSize64))
		data, err := readExact(rc, int64(f.UncompressedSize64))
		rc.Close()
		c.expanded += int64(len(data))
		if err != nil {
			return unusable("zip: %v", err)
		}
		c.add(name, data)
	}
	return nil
}

// readExact reads a member of a declared size into a buffer of exactly
// that size (no growth: the heap holds the member once), and checks that
// the member ends there.
func readExact(r io.Reader, size int64) ([]byte, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	var one [1]byte
	if m, err := r.Read(one[:]); m > 0 || (err != nil && err != io.EOF) {
		if err == nil {
			err = errors.New("member longer than its declared size")
		}
		return nil, err
	}
	return data, nil
}
