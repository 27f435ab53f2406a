package qrscan

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the PNG sources of the WebP fixtures under testdata/")

const phishURL = "https://login.example.com/verify?u=8d2f"

// testLimits are the default limits but for a timeout long enough that a
// loaded machine or -race never turns a find into ErrTimeout.
var testLimits = Limits{Timeout: time.Minute}

func decodeBytes(t *testing.T, data []byte, lim Limits) ([]Code, error) {
	t.Helper()
	return Decode(t.Context(), bytes.NewReader(data), lim)
}

// mustFind fails unless Decode finds exactly the texts want (in any order).
func mustFind(t *testing.T, data []byte, want ...string) {
	t.Helper()
	codes, err := decodeBytes(t, data, testLimits)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got := texts(codes)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Decode found %q, want %q", got, want)
	}
}

// waitIdle waits until no decoding goroutine holds a slot, so that
// allocation figures and slot tests are not disturbed by an earlier
// test's timed-out decode.
func waitIdle(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(slots) > 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("%d decoding slots still held after 30s", len(slots))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDecodeSizes(t *testing.T) {
	t.Parallel()
	// 80 px gives 2 pixels a module (version 3, 29 modules + quiet zone);
	// 3000 px is searched at half scale first.
	for _, size := range []int{80, 300, 1200, 3000} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			t.Parallel()
			mustFind(t, encodePNG(t, qrImage(t, phishURL, size)), phishURL)
		})
	}
}

func TestDecodePoster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		w, h, size int
		deg        float64
	}{
		{"small photo, straight", 1200, 900, 300, 0},
		{"small photo, tilted 8°", 1200, 900, 300, 8},
		{"phone photo, tilted 20°", 2600, 1900, 600, 20},
		{"phone photo, small code", 2600, 1900, 250, 5},
		// 2–3 pixels a module: lost at half scale, so these are found by
		// the full-scale pass, and there by the single-code reader after
		// the multi-code reader missed them.
		{"large photo, tiny code", 3000, 2000, 130, 0},
		{"large photo, tiny tilted code", 3000, 2000, 90, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img := photo(tc.w, tc.h, 7)
			place(img, qrImage(t, phishURL, tc.size), float64(tc.w)*0.6, float64(tc.h)*0.4, tc.deg)
			mustFind(t, encodeJPEG(t, img, 85), phishURL)
		})
	}
}

func TestDecodeTwoCodes(t *testing.T) {
	t.Parallel()
	const other = "https://pay.example.net/parking?lot=7"
	img := photo(1600, 900, 3)
	place(img, qrImage(t, phishURL, 400), 400, 450, 0)
	place(img, qrImage(t, other, 400), 1200, 450, 4)
	mustFind(t, encodePNG(t, img), phishURL, other)
}

func TestDecodeFormats(t *testing.T) {
	t.Parallel()
	code := qrImage(t, phishURL, 330)

	rgba := image.NewRGBA(code.Bounds())
	draw.Draw(rgba, rgba.Bounds(), code, image.Point{}, draw.Src)
	// Black modules on a transparent background: read as on white paper.
	transparent := image.NewNRGBA(code.Bounds())
	for i, v := range code.Pix {
		if v < 128 {
			transparent.Pix[4*i+3] = 0xff
		}
	}
	premul := image.NewRGBA(code.Bounds())
	draw.Draw(premul, premul.Bounds(), transparent, image.Point{}, draw.Src)
	gray16 := image.NewGray16(code.Bounds())
	draw.Draw(gray16, gray16.Bounds(), code, image.Point{}, draw.Src)
	cmyk := image.NewCMYK(code.Bounds())
	draw.Draw(cmyk, cmyk.Bounds(), code, image.Point{}, draw.Src)

	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"PNG gray", encodePNG(t, code)},
		{"PNG RGBA", encodePNG(t, rgba)},
		{"PNG transparent NRGBA", encodePNG(t, transparent)},
		{"PNG transparent RGBA", encodePNG(t, premul)},
		{"PNG gray16", encodePNG(t, gray16)},
		{"PNG paletted", encodeGIFAsPalettedPNG(t, code)},
		{"JPEG CMYK-sourced", encodeJPEG(t, cmyk, 90)},
		{"JPEG quality 30", encodeJPEG(t, rgba, 30)},
		{"GIF", encodeGIF(t, rgba)},
		{"WebP lossy", readFixture(t, "qr-lossy.webp")},
		{"WebP lossless", readFixture(t, "qr-lossless.webp")},
		{"WebP lossy with alpha", readFixture(t, "qr-alpha.webp")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mustFind(t, tc.data, phishURL)
		})
	}
}

// encodeGIFAsPalettedPNG returns img as a PNG with a palette, by way of
// the GIF encoder's quantiser.
func encodeGIFAsPalettedPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	m, err := gif.Decode(bytes.NewReader(encodeGIF(t, img)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*image.Paletted); !ok {
		t.Fatalf("GIF decoded to %T", m)
	}
	return encodePNG(t, m)
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestWebPSources checks that the committed PNG sources of the WebP
// fixtures are what qrImage draws today; -update rewrites them (then
// rebuild the WebP files as testdata/README.md says).
func TestWebPSources(t *testing.T) {
	t.Parallel()
	code := qrImage(t, phishURL, 330)
	transparent := image.NewNRGBA(code.Bounds())
	for i, v := range code.Pix {
		if v < 128 {
			transparent.Pix[4*i+3] = 0xff
		}
	}
	for name, img := range map[string]image.Image{"qr-source.png": code, "qr-source-alpha.png": transparent} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, encodePNG(t, img), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustFind(t, readFixture(t, name), phishURL)
	}
}

func TestDecodeGIFFirstFrameOnly(t *testing.T) {
	t.Parallel()
	const second = "https://second-frame.example/"
	frame := func(text string) *image.Paletted {
		code := qrImage(t, text, 200)
		p := image.NewPaletted(code.Bounds(), color.Palette{color.White, color.Black})
		draw.Draw(p, p.Bounds(), code, image.Point{}, draw.Src)
		return p
	}
	var b bytes.Buffer
	err := gif.EncodeAll(&b, &gif.GIF{
		Image: []*image.Paletted{frame(phishURL), frame(second)},
		Delay: []int{100, 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	mustFind(t, b.Bytes(), phishURL)
}

func TestDecodeNoCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{"photo", func(t *testing.T) []byte { return encodeJPEG(t, photo(1200, 900, 11), 85) }},
		{"large photo", func(t *testing.T) []byte { return encodeJPEG(t, photo(2600, 1900, 12), 85) }},
		{"white", func(t *testing.T) []byte {
			img := image.NewGray(image.Rect(0, 0, 500, 500))
			draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
			return encodePNG(t, img)
		}},
		{"1×1", func(t *testing.T) []byte { return encodePNG(t, image.NewGray(image.Rect(0, 0, 1, 1))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			codes, err := decodeBytes(t, tc.data(t), testLimits)
			if codes != nil || err != nil {
				t.Fatalf("Decode = %q, %v; want nil, nil", texts(codes), err)
			}
		})
	}
}

func TestDecodeTextOnlyCode(t *testing.T) {
	t.Parallel()
	const text = "Guest Wi-Fi password: hunter2 (ask at the desk)"
	codes, err := decodeBytes(t, encodePNG(t, qrImage(t, text, 300)), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(codes); !slices.Equal(got, []string{text}) {
		t.Fatalf("Decode found %q, want %q", got, text)
	}
	if u := URLs(codes); u != nil {
		t.Fatalf("URLs = %q, want none", u)
	}
}

func TestDecodeMeCardBookmark(t *testing.T) {
	t.Parallel()
	const text = `MEBKM:TITLE:Pay here;URL:http\://pay.example/x?a=1;;`
	codes, err := decodeBytes(t, encodePNG(t, qrImage(t, text, 300)), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := URLs(codes), []string{"http://pay.example/x?a=1"}; !slices.Equal(got, want) {
		t.Fatalf("URLs = %q, want %q", got, want)
	}
}

// pngHeader returns a PNG that declares a w×h 8-bit gray image and carries
// an IDAT with the first 1 MiB of its (zero) pixel rows: the start of a
// decompression bomb, whose whole IDAT would be a few megabytes of zlib
// inflating to w×h bytes.
func pngHeader(t testing.TB, w, h uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		b.Write(n[:])
		b.WriteString(typ)
		b.Write(data)
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		b.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8] = 8 // bit depth; colour type 0 (gray), no interlace
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return b.Bytes()
}

// gifHeader returns a GIF whose logical screen is w×h, with one w×h frame
// of LZW data cut short.
func gifHeader(w, h uint16) []byte {
	var b bytes.Buffer
	b.WriteString("GIF89a")
	binary.Write(&b, binary.LittleEndian, [2]uint16{w, h})
	b.Write([]byte{0x80, 0, 0}) // global colour table of 2 entries
	b.Write([]byte{0, 0, 0, 0xff, 0xff, 0xff})
	b.WriteByte(',')
	binary.Write(&b, binary.LittleEndian, [4]uint16{0, 0, w, h})
	b.Write([]byte{0, 2, 2, 0x4c, 0x01}) // LZW min code size 2, one sub-block
	return b.Bytes()
}

// jpegHeader returns the start of a baseline JPEG declaring w×h pixels:
// SOI, SOF0 with three components and the header of an SOS segment, where
// image/jpeg's DecodeConfig stops reading.
func jpegHeader(w, h uint16) []byte {
	return []byte{
		0xff, 0xd8,
		0xff, 0xc0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
		0xff, 0xda, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0,
	}
}

// webpHeader returns a WebP VP8X header declaring a w×h canvas.
func webpHeader(w, h uint32) []byte {
	vp8x := []byte{0, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(4+8+len(vp8x)))
	b.WriteString("WEBPVP8X")
	binary.Write(&b, binary.LittleEndian, uint32(len(vp8x)))
	b.Write(vp8x)
	return b.Bytes()
}

// TestDecodeBomb runs alone (not parallel) so that the allocation figure
// is this decode's.
func TestDecodeBomb(t *testing.T) {
	waitIdle(t)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"PNG 50000×50000", pngHeader(t, 50000, 50000)},
		{"GIF 65535×65535", gifHeader(65535, 65535)},
		{"JPEG 65500×65500", jpegHeader(65500, 65500)},
		{"WebP 16384×16384", webpHeader(16384, 16384)},
		{"PNG 40000001×1", pngHeader(t, 40_000_001, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			codes, err := Decode(t.Context(), bytes.NewReader(tc.data), Limits{})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooManyPixels) || codes != nil {
				t.Fatalf("Decode = %q, %v; want ErrTooManyPixels", texts(codes), err)
			}
			// Reading the input (a few kilobytes, grown by io.ReadAll) and
			// the header is all the work.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("rejecting the bomb allocated %d bytes, want < 1 MiB", alloc)
			}
			if took > time.Second {
				t.Errorf("rejecting the bomb took %v", took)
			}
		})
	}
}

func TestDecodeMaxPixelsBoundary(t *testing.T) {
	t.Parallel()
	data := encodePNG(t, qrImage(t, phishURL, 100)) // 100×100 (encoder keeps the size asked for)
	if _, err := decodeBytes(t, data, Limits{MaxPixels: 100 * 100, Timeout: time.Minute}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := decodeBytes(t, data, Limits{MaxPixels: 100*100 - 1}); !errors.Is(err, ErrTooManyPixels) {
		t.Fatalf("over the limit: err = %v, want ErrTooManyPixels", err)
	}
}

// countingReader is an endless reader of zeros that counts what it gave.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	clear(p)
	r.n += int64(len(p))
	return len(p), nil
}

func TestDecodeTooLarge(t *testing.T) {
	t.Parallel()
	data := encodePNG(t, qrImage(t, phishURL, 200))
	if _, err := decodeBytes(t, data, Limits{MaxBytes: int64(len(data)), Timeout: time.Minute}); err != nil {
		t.Fatalf("exactly MaxBytes: %v", err)
	}
	if _, err := decodeBytes(t, data, Limits{MaxBytes: int64(len(data) - 1)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte over: err = %v, want ErrTooLarge", err)
	}
	var r countingReader
	if _, err := Decode(t.Context(), &r, Limits{MaxBytes: 1000}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless reader: err = %v, want ErrTooLarge", err)
	}
	if r.n > 1001+512 { // io.ReadAll reads in chunks of at least 512 bytes
		t.Errorf("read %d bytes of an endless reader with MaxBytes 1000", r.n)
	}
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	pngData := encodePNG(t, qrImage(t, phishURL, 300))
	jpegData := encodeJPEG(t, qrImage(t, phishURL, 300), 80)
	gifData := encodeGIF(t, qrImage(t, phishURL, 300))
	webpData := readFixture(t, "qr-lossy.webp")
	webpLossless := readFixture(t, "qr-lossless.webp")
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i/13)
	}
	flip := func(b []byte, at int) []byte {
		b = slices.Clone(b)
		for i := at; i < len(b) && i < at+64; i++ {
			b[i] ^= 0x5a
		}
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrUnsupported},
		{"garbage", garbage, ErrUnsupported},
		{"text", []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), ErrUnsupported},
		{"BMP", append([]byte("BM"), garbage...), ErrUnsupported},
		{"PNG magic only", pngData[:8], ErrMalformed},
		{"PNG magic then garbage", append(slices.Clone(pngData[:8]), garbage...), ErrMalformed},
		{"PNG truncated", pngData[:len(pngData)/2], ErrMalformed},
		{"PNG corrupted IDAT", flip(pngData, len(pngData)/2), ErrMalformed},
		{"JPEG truncated header", jpegData[:20], ErrMalformed},
		{"JPEG truncated", jpegData[:len(jpegData)/2], ErrMalformed},
		{"GIF truncated", gifData[:len(gifData)/2], ErrMalformed},
		{"GIF frame larger than screen", gifFrameTooLarge(), ErrMalformed},
		{"WebP truncated", webpData[:len(webpData)/2], ErrMalformed},
		{"WebP lossless truncated", webpLossless[:len(webpLossless)/2], ErrMalformed},
		{"RIFF header only", []byte("RIFF\x04\x00\x00\x00WEBP"), ErrMalformed},
		{"JPEG empty image", jpegHeader(0, 0), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			codes, err := decodeBytes(t, tc.data, testLimits)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %q, %v; want %v", texts(codes), err, tc.want)
			}
			if tc.name == "GIF frame larger than screen" && !strings.Contains(err.Error(), "frame bounds larger than image bounds") {
				t.Errorf("err = %v, want image/gif's frame bounds check", err)
			}
		})
	}
}

// gifFrameTooLarge returns a GIF whose 10×10 screen holds a 20×20 frame.
func gifFrameTooLarge() []byte {
	b := gifHeader(10, 10)
	// Rewrite the image descriptor's width and height.
	binary.LittleEndian.PutUint16(b[6+7+6+1+4:], 20)
	binary.LittleEndian.PutUint16(b[6+7+6+1+6:], 20)
	return b
}

func TestDecodeDecoderPanic(t *testing.T) {
	t.Parallel()
	data := encodePNG(t, qrImage(t, phishURL, 100))
	boom := func(context.Context, luma) ([]Code, error) { panic("index out of range [7] with length 7") }
	codes, err := decode(t.Context(), bytes.NewReader(data), Limits{}, boom)
	if !errors.Is(err, ErrDecoderPanic) || codes != nil {
		t.Fatalf("decode = %q, %v; want ErrDecoderPanic", texts(codes), err)
	}
	if !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("error %q lacks the panic's value", err)
	}
}

func TestDecodeCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Decode(ctx, bytes.NewReader(encodePNG(t, qrImage(t, phishURL, 100))), Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestDecodeTimeout: Decode returns at Limits.Timeout although the search
// (here one that ignores its context, as a CPU-bound attempt does) goes
// on; the search keeps its slot until it returns.
func TestDecodeTimeout(t *testing.T) {
	waitIdle(t)
	data := encodePNG(t, qrImage(t, phishURL, 100))
	release := make(chan struct{})
	var ended atomic.Bool
	stuck := func(context.Context, luma) ([]Code, error) {
		<-release
		ended.Store(true)
		return []Code{{Text: "late"}}, nil
	}
	start := time.Now()
	codes, err := decode(t.Context(), bytes.NewReader(data), Limits{Timeout: 50 * time.Millisecond}, stuck)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Decode returned after %v, want about 50ms", took)
	}
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || codes != nil {
		t.Fatalf("decode = %q, %v; want ErrTimeout and context.DeadlineExceeded", texts(codes), err)
	}
	if len(slots) != 1 || ended.Load() {
		t.Fatalf("after the timeout: %d slots held (want 1), search ended %v", len(slots), ended.Load())
	}
	close(release)
	waitIdle(t)

	// A real decode with a timeout far shorter than its work.
	_, err = decodeBytes(t, encodePNG(t, qrImage(t, phishURL, 1500)), Limits{Timeout: time.Nanosecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("real decode with 1ns timeout: err = %v, want ErrTimeout", err)
	}
	waitIdle(t)
}

// TestDecodeConcurrency: no more than Concurrency() searches run at once,
// and a caller waits for a slot no longer than its ctx allows.
func TestDecodeConcurrency(t *testing.T) {
	waitIdle(t)
	data := encodePNG(t, qrImage(t, phishURL, 60))

	var active, peak atomic.Int32
	slow := func(context.Context, luma) ([]Code, error) {
		n := active.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		active.Add(-1)
		return nil, nil
	}
	var wg sync.WaitGroup
	for range 4 * Concurrency() {
		wg.Go(func() {
			if _, err := decode(t.Context(), bytes.NewReader(data), Limits{}, slow); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := int(peak.Load()); p != Concurrency() {
		t.Errorf("peak concurrent searches = %d, want Concurrency() = %d", p, Concurrency())
	}

	// Every slot taken: the caller's deadline ends the wait.
	for range Concurrency() {
		slots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Decode(ctx, bytes.NewReader(data), Limits{})
	for range Concurrency() {
		<-slots
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("waiting for a slot: err = %v, want the caller's context.DeadlineExceeded", err)
	}
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	want := Limits{MaxBytes: 10 << 20, MaxPixels: 40_000_000, Timeout: 5 * time.Second}
	if got := DefaultLimits(); got != want {
		t.Errorf("DefaultLimits() = %+v, want %+v", got, want)
	}
	if got := (Limits{MaxBytes: -1, MaxPixels: -1, Timeout: -1}).withDefaults(); got != want {
		t.Errorf("negative limits = %+v, want the defaults %+v", got, want)
	}
	custom := Limits{MaxBytes: 1, MaxPixels: 2, Timeout: 3}
	if got := custom.withDefaults(); got != custom {
		t.Errorf("custom limits = %+v, want unchanged %+v", got, custom)
	}
}

func TestSupported(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mimetype, filename string
		want               bool
	}{
		{"image/png", "", true},
		{"image/jpeg", "", true},
		{"image/jpg", "", true},
		{"image/pjpeg", "", true},
		{"image/gif", "", true},
		{"image/webp", "", true},
		{"IMAGE/PNG", "", true},
		{"image/png; charset=binary", "", true},
		{"png", "", true}, // Slack's filetype
		{"jpg", "", true},
		{"jpeg", "", true},
		{"gif", "", true},
		{"webp", "", true},
		{"", "poster.PNG", true},
		{"", "scan.jpeg", true},
		{"", "scan.jpe", true},
		{"", "scan.jfif", true},
		{"", "anim.gif", true},
		{"", "x.webp", true},
		{"application/octet-stream", "qr.png", true},
		{"image/png", "notes.txt", true},
		{"image/svg+xml", "qr.svg", false},
		{"image/heic", "IMG_0001.HEIC", false},
		{"image/tiff", "scan.tiff", false},
		{"image/bmp", "scan.bmp", false},
		{"application/pdf", "invoice.pdf", false},
		{"text/plain", "png", false},
		{"", "", false},
		{"", "png", false},
		{"image/", "", false},
	} {
		if got := Supported(tc.mimetype, tc.filename); got != tc.want {
			t.Errorf("Supported(%q, %q) = %v, want %v", tc.mimetype, tc.filename, got, tc.want)
		}
	}
}

func TestShrink(t *testing.T) {
	t.Parallel()
	l := luma{w: 5, h: 3, pix: []byte{
		0, 255, 10, 20, 99,
		255, 0, 30, 40, 99,
		99, 99, 99, 99, 99,
	}}
	got := l.shrink(2)
	want := luma{w: 2, h: 1, pix: []byte{128, 25}}
	if got.w != want.w || got.h != want.h || !bytes.Equal(got.pix, want.pix) {
		t.Fatalf("shrink(2) = %+v, want %+v", got, want)
	}
	for _, tc := range []struct{ w, h, f int }{
		{1, 1, 1}, {2048, 2048, 1}, {2049, 10, 2}, {4000, 4000, 2}, {4097, 100, 3}, {6325, 6325, 4},
	} {
		if f := shrinkFactor(tc.w, tc.h); f != tc.f {
			t.Errorf("shrinkFactor(%d, %d) = %d, want %d", tc.w, tc.h, f, tc.f)
		}
	}
}

func TestToLumaOverWhite(t *testing.T) {
	t.Parallel()
	nrgba := image.NewNRGBA(image.Rect(0, 0, 3, 1))
	nrgba.SetNRGBA(0, 0, color.NRGBA{0, 0, 0, 0})       // transparent: white
	nrgba.SetNRGBA(1, 0, color.NRGBA{0, 0, 0, 255})     // black
	nrgba.SetNRGBA(2, 0, color.NRGBA{200, 100, 0, 128}) // half over white
	rgba := image.NewRGBA(nrgba.Bounds())
	draw.Draw(rgba, rgba.Bounds(), nrgba, image.Point{}, draw.Src)
	gen := image.NewNRGBA64(nrgba.Bounds()) // read through RGBA64At
	draw.Draw(gen, gen.Bounds(), nrgba, image.Point{}, draw.Src)
	for name, img := range map[string]image.Image{"NRGBA": nrgba, "RGBA": rgba, "NRGBA64": gen} {
		got := toLuma(img).pix
		// (200+2*100+0)/4 = 100, over white at 128/255: 100*128/255 + 127 ≈ 177.
		want := []byte{255, 0, 177}
		for i := range want {
			if d := int(got[i]) - int(want[i]); d < -1 || d > 1 {
				t.Errorf("%s: toLuma = %v, want %v (±1)", name, got, want)
				break
			}
		}
	}
	// A sub-image keeps its own origin.
	g := image.NewGray(image.Rect(0, 0, 4, 4))
	g.SetGray(2, 3, color.Gray{7})
	sub := g.SubImage(image.Rect(2, 2, 4, 4))
	if l := toLuma(sub); l.w != 2 || l.h != 2 || l.pix[2] != 7 {
		t.Errorf("toLuma(sub-image) = %+v, want 2×2 with pix[2] = 7", l)
	}
}
