package qrscan

// Figures on the 2-core development machine, shared with other work
// (go test -bench, no -race; 2026-11-28, Go 1.26.8):
//
//	BenchmarkDecode4000         260–280 ms/op  52.7 MB/op   402 allocs/op
//	BenchmarkDecode4000NoCode   465–480 ms/op  56.8 MB/op  1235 allocs/op
//	BenchmarkBomb               3.3–4.0 µs/op   3.6 kB/op    15 allocs/op
//
// About half of a 4000×4000 decode is image/jpeg. TestPeakRSS gives the
// resident memory (see the package documentation).

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

var (
	poster4000Once sync.Once
	poster4000Data []byte
	photo4000Data  []byte
)

// poster4000 returns a 4000×4000 JPEG (quality 85) of a photograph-like
// scene with a 600-pixel QR code tilted 5°, and the same scene without
// the code.
func poster4000(tb testing.TB) (withCode, without []byte) {
	poster4000Once.Do(func() {
		img := photo(4000, 4000, 42)
		photo4000Data = encodeJPEG(tb, img, 85)
		place(img, qrImage(tb, phishURL, 600), 2600, 1500, 5)
		poster4000Data = encodeJPEG(tb, img, 85)
	})
	return poster4000Data, photo4000Data
}

func benchDecode(b *testing.B, data []byte, want int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		codes, err := Decode(b.Context(), bytes.NewReader(data), Limits{})
		if err != nil || len(codes) != want {
			b.Fatalf("Decode = %q, %v; want %d codes", texts(codes), err, want)
		}
	}
}

// BenchmarkDecode4000 decodes a 4000×4000 JPEG photograph with one QR
// code, found at half scale.
func BenchmarkDecode4000(b *testing.B) {
	data, _ := poster4000(b)
	benchDecode(b, data, 1)
}

// BenchmarkDecode4000NoCode is the common case: a 4000×4000 photograph
// without a code, which runs every attempt.
func BenchmarkDecode4000NoCode(b *testing.B) {
	_, data := poster4000(b)
	benchDecode(b, data, 0)
}

// BenchmarkBomb rejects a PNG that declares 50,000×50,000 pixels.
func BenchmarkBomb(b *testing.B) {
	data := pngHeader(b, 50000, 50000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(b.Context(), bytes.NewReader(data), Limits{}); !errors.Is(err, ErrTooManyPixels) {
			b.Fatalf("err = %v, want ErrTooManyPixels", err)
		}
	}
}

var rssChild = flag.String("qrscan.rss-child", "", "internal to TestPeakRSS: decode this file and print the peak RSS")

// TestPeakRSS measures the resident memory one Decode takes, in a child
// process (the test binary run again) so that nothing else in it counts:
// the child resets its peak RSS (Linux's /proc/self/clear_refs "5"),
// decodes, and prints VmHWM from /proc/self/status with the bytes the Go
// heap allocated. The bounds asserted are the package documentation's
// estimate with room for the collector's slack (GOGC=100).
func TestPeakRSS(t *testing.T) {
	if *rssChild != "" {
		rssChildMain(t, *rssChild)
		return
	}
	switch {
	case testing.Short():
		t.Skip("-short: builds 40-megapixel images")
	case raceEnabled:
		t.Skip("-race: the detector's shadow memory hides the decode's")
	case runtime.GOOS != "linux":
		t.Skip("reads /proc/self")
	}
	waitIdle(t)
	dir := t.TempDir()

	poster, _ := poster4000(t)
	// At the pixel limit (6324×6324 < 40,000,000 pixels): a flat
	// background compresses to almost nothing, so these pass MaxBytes and
	// are the costliest images Decode accepts.
	const side = 6324
	flat := image.NewNRGBA(image.Rect(0, 0, side, side))
	draw.Draw(flat, flat.Bounds(), image.NewUniform(color.NRGBA{200, 210, 220, 0xff}), image.Point{}, draw.Src)
	place(flat, qrImage(t, phishURL, 1200), 3000, 3000, 0)
	flat.Pix[3] = 0xfe // one translucent pixel: decoded as NRGBA, 4 bytes a pixel
	for _, tc := range []struct {
		name   string
		data   []byte
		codes  int
		maxMiB int
	}{
		{"4000×4000 JPEG", poster, 1, 128},
		{"40 MP NRGBA PNG", encodePNG(t, flat), 1, 400},
		{"40 MP JPEG", encodeJPEG(t, flat, 90), 1, 256},
		// image/jpeg keeps every block's coefficients of a progressive
		// JPEG until the last scan: the costliest format.
		{"40 MP progressive JPEG", readFixture(t, "progressive-40mp.jpg"), 1, 600},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPeakRSS$", "-qrscan.rss-child="+path)
		cmd.Env = testutil.ChildEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: child: %v\n%s", tc.name, err, out)
		}
		var peak, base, alloc, codes int64
		var took string
		i := bytes.Index(out, []byte("qrscan-rss "))
		if i < 0 {
			t.Fatalf("%s: no figures in the child's output:\n%s", tc.name, out)
		}
		if _, err := fmt.Sscanf(string(out[i:]), "qrscan-rss peak=%d base=%d alloc=%d codes=%d took=%s",
			&peak, &base, &alloc, &codes, &took); err != nil {
			t.Fatalf("%s: %v in %q", tc.name, err, out[i:])
		}
		t.Logf("%s (%d KiB): %v, peak RSS %d MiB (%d MiB over the %d MiB before), Go heap allocated %d MiB",
			tc.name, len(tc.data)>>10, took, peak>>20, (peak-base)>>20, base>>20, alloc>>20)
		if codes != int64(tc.codes) {
			t.Errorf("%s: %d codes, want %d", tc.name, codes, tc.codes)
		}
		if grown := (peak - base) >> 20; grown > int64(tc.maxMiB) {
			t.Errorf("%s: decoding grew the RSS by %d MiB, want at most %d", tc.name, grown, tc.maxMiB)
		}
	}
}

// rssChildMain is TestPeakRSS in the child process.
func rssChildMain(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	base := procStatus(t, "VmRSS")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	codes, err := Decode(t.Context(), bytes.NewReader(data), Limits{})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("qrscan-rss peak=%d base=%d alloc=%d codes=%d took=%s\n",
		procStatus(t, "VmHWM"), base, after.TotalAlloc-before.TotalAlloc, len(codes), took.Round(time.Millisecond))
}

// procStatus returns a "kB" field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
