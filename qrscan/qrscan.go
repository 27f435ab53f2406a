package qrscan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime"
	"path"
	"runtime"
	"strings"
	"time"

	"golang.org/x/image/webp"
)

// Defaults for the zero fields of Limits.
const (
	// DefaultMaxBytes is the largest image read: issue 26 scans images
	// "up to 10 MB".
	DefaultMaxBytes int64 = 10 << 20
	// DefaultMaxPixels lets through the photographs phones take (12 to 24
	// megapixels, 8000×5000 at most) and stops decompression bombs; its
	// memory cost is in the package documentation.
	DefaultMaxPixels = 40_000_000
	// DefaultTimeout bounds the decoding of one image once it holds a
	// slot; a 4000×4000 photograph takes well under a second (bench_test.go).
	DefaultTimeout = 5 * time.Second
)

// Limits bound the work Decode does for one image. A zero or negative
// field takes its default.
type Limits struct {
	// MaxBytes is the largest encoded image read (default DefaultMaxBytes).
	MaxBytes int64
	// MaxPixels is the largest width×height decoded, checked on the
	// image's header before its pixels are decoded (default
	// DefaultMaxPixels).
	MaxPixels int
	// Timeout is how long Decode waits for the decoding once it holds a
	// slot (default DefaultTimeout).
	Timeout time.Duration
}

// DefaultLimits returns the limits the zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{}.withDefaults()
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Code is one QR code found in an image.
type Code struct {
	// Text is the code's payload as the decoder read it (a URL, "URL:…",
	// a MeCard, a Wi-Fi configuration, plain text, …).
	Text string
}

// Errors Decode returns, wrapped; test with errors.Is. They are for logs:
// the caller stays silent in the channel.
var (
	// ErrTooLarge: the image has more than Limits.MaxBytes bytes.
	ErrTooLarge = errors.New("qrscan: image too large")
	// ErrTooManyPixels: the image's header declares more than
	// Limits.MaxPixels pixels; nothing was decoded.
	ErrTooManyPixels = errors.New("qrscan: image has too many pixels")
	// ErrUnsupported: the bytes are not a PNG, JPEG, GIF or WebP image.
	ErrUnsupported = errors.New("qrscan: unsupported image format")
	// ErrMalformed: the format's decoder rejected the image (truncated,
	// corrupt); the decoder's error is wrapped too.
	ErrMalformed = errors.New("qrscan: malformed image")
	// ErrDecoderPanic: a decoder panicked; the panic was recovered.
	ErrDecoderPanic = errors.New("qrscan: decoder panicked")
	// ErrTimeout: the decoding took longer than Limits.Timeout. The error
	// also matches context.DeadlineExceeded.
	ErrTimeout = errors.New("qrscan: decoding timed out")
)

// slots is the semaphore behind Concurrency: a decoding goroutine holds
// one from before it decodes the pixels until it returns.
var slots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// Concurrency returns how many decodes run at once in this process: half
// the Go processors at start-up, at least one. See the package
// documentation.
func Concurrency() int { return cap(slots) }

// Decode reads one image from r and returns the QR codes found in it, in
// the order the decoder found them, each text once. No code found is
// (nil, nil). Errors are for the caller's logs (see the package
// documentation): ErrTooLarge, ErrTooManyPixels, ErrUnsupported,
// ErrMalformed, ErrDecoderPanic, ErrTimeout, or ctx's error (wrapped)
// when ctx ends first.
//
// r is read to its end or to lim.MaxBytes+1 bytes, before any slot is
// taken; the caller bounds how many images it holds at once.
func Decode(ctx context.Context, r io.Reader, lim Limits) ([]Code, error) {
	return decode(ctx, r, lim, search)
}

// searcher finds the codes in a luminance plane; search is the only one
// outside tests, which pass one that panics or blocks.
type searcher func(context.Context, luma) ([]Code, error)

// decode is Decode with the search step as a parameter.
func decode(ctx context.Context, r io.Reader, lim Limits, find searcher) ([]Code, error) {
	lim = lim.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("qrscan: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("qrscan: read image: %w", err)
	}
	if int64(len(data)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.MaxBytes)
	}
	f, ok := sniff(data)
	if !ok {
		return nil, ErrUnsupported
	}
	if err := checkPixels(f, data, lim.MaxPixels); err != nil {
		return nil, err
	}

	// Take a slot: the caller's ctx bounds the wait.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("qrscan: %w", err)
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("qrscan: wait for a decoding slot: %w", ctx.Err())
	}
	dctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout, ErrTimeout)
	defer cancel()

	type result struct {
		codes []Code
		err   error
	}
	done := make(chan result, 1) // buffered: the goroutine never blocks on it
	// The goroutine belongs to this call; after a timeout it may outlive
	// it by the rest of one step (the pixel decoding or one detection
	// attempt), and gives its slot back when it ends.
	go func() {
		defer func() { <-slots }()
		defer func() {
			if v := recover(); v != nil {
				done <- result{err: fmt.Errorf("%w: %s: %v", ErrDecoderPanic, f.name, v)}
			}
		}()
		codes, err := decodeImage(dctx, f, data, lim.MaxPixels, find)
		done <- result{codes, err}
	}()
	select {
	case res := <-done:
		return res.codes, res.err
	case <-dctx.Done():
		return nil, ctxError(dctx)
	}
}

// ctxError describes why ctx, a decoding context, ended: ErrTimeout (and
// context.DeadlineExceeded) when Limits.Timeout ran out, else the
// caller's context error.
func ctxError(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("%w: %w", ErrTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("qrscan: %w", ctx.Err())
}

// format is one image format Decode reads.
type format struct {
	name   string
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var (
	formatPNG  = format{"png", png.DecodeConfig, png.Decode}
	formatJPEG = format{"jpeg", jpeg.DecodeConfig, jpeg.Decode}
	// gif.Decode returns the first frame only.
	formatGIF  = format{"gif", gif.DecodeConfig, gif.Decode}
	formatWebP = format{"webp", webp.DecodeConfig, webp.Decode}
)

// sniff tells the format from the magic bytes each format's specification
// starts files with (PNG: RFC 2083 §3.1; JPEG: SOI marker FF D8 FF;
// GIF: "GIF87a"/"GIF89a"; WebP: RIFF container with form type "WEBP").
// The name and mimetype Slack reports are not trusted for this.
func sniff(data []byte) (format, bool) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG, true
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return formatJPEG, true
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return formatGIF, true
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return formatWebP, true
	}
	return format{}, false
}

// checkPixels reads the image's header and returns ErrTooManyPixels if it
// declares more than maxPixels pixels, ErrMalformed if it declares none.
func checkPixels(f format, data []byte, maxPixels int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %s header: %v", ErrDecoderPanic, f.name, v)
		}
	}()
	cfg, err := f.config(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %s header: %w", ErrMalformed, f.name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("%w: %s of %d×%d", ErrMalformed, f.name, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > int64(maxPixels) {
		return fmt.Errorf("%w: %s of %d×%d, limit %d pixels", ErrTooManyPixels, f.name, cfg.Width, cfg.Height, maxPixels)
	}
	return nil
}

// decodeImage decodes the pixels, turns them into luminance, drops the
// image and searches the luminance for codes.
func decodeImage(ctx context.Context, f format, data []byte, maxPixels int, find searcher) ([]Code, error) {
	img, err := f.decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, f.name, err)
	}
	// The decoders hold frames to their header's size; this keeps the
	// search bounded should one not.
	if b := img.Bounds(); int64(b.Dx())*int64(b.Dy()) > int64(maxPixels) {
		return nil, fmt.Errorf("%w: decoded %s of %d×%d, limit %d pixels", ErrTooManyPixels, f.name, b.Dx(), b.Dy(), maxPixels)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx)
	}
	// img is not used past this line, so the collector may take the
	// decoded pixels while the luminance is searched.
	return find(ctx, toLuma(img))
}

// Supported reports whether Decode reads the kind of file described by
// mimetype and filename, so that the caller downloads only those. mimetype
// is Slack's file "mimetype" (image/png, image/jpeg, image/gif,
// image/webp; parameters and case ignored) or its "filetype" (png, jpg,
// jpeg, gif, webp); filename's extension (.png, .jpg, .jpeg, .jpe, .jfif,
// .gif, .webp, any case) is enough when mimetype does not say. Either
// one naming a supported format suffices: Decode trusts neither and
// sniffs the bytes.
func Supported(mimetype, filename string) bool {
	t := strings.ToLower(strings.TrimSpace(mimetype))
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		t = mt
	}
	switch t {
	case "image/png", "image/jpeg", "image/jpg", "image/pjpeg", "image/gif", "image/webp",
		"png", "jpg", "jpeg", "gif", "webp":
		return true
	}
	switch strings.ToLower(path.Ext(filename)) {
	case ".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".gif", ".webp":
		return true
	}
	return false
}
