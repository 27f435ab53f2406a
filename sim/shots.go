package sim

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dsnet/compress/bzip2"
)

// Screenshot image size. Small, but a real baseline JPEG.
const (
	ShotWidth  = 64
	ShotHeight = 48
)

// ShotName is the file name of screenshot n (1-based), as CAPE's analyzer
// saves it: shots/%04d.jpg (CAPEv2's screenshot views).
func ShotName(n int) string { return fmt.Sprintf("%04d.jpg", n) }

// ShotColor is the solid colour of screenshot n (1-based): hues step by the
// golden angle, so neighbours differ clearly and tests can check order.
func ShotColor(n int) color.RGBA {
	h := math.Mod(float64(n-1)*137.508, 360)
	s, v := 0.85, 0.9
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	u8 := func(f float64) uint8 { return uint8(math.Round((f + m) * 255)) }
	return color.RGBA{u8(r), u8(g), u8(b), 255}
}

// shotCache holds the encoded JPEG of each screenshot number; the images
// are the same for every task.
var shotCache sync.Map // int → []byte

// shotJPEG returns the JPEG bytes of screenshot n.
func shotJPEG(n int) []byte {
	if b, ok := shotCache.Load(n); ok {
		return b.([]byte)
	}
	img := image.NewRGBA(image.Rect(0, 0, ShotWidth, ShotHeight))
	c := ShotColor(n)
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(fmt.Sprintf("sim: encode screenshot: %v", err)) // cannot fail on a bytes.Buffer
	}
	b, _ := shotCache.LoadOrStore(n, buf.Bytes())
	return b.([]byte)
}

// shotOrder returns the screenshot numbers 1..n in archive order: sorted,
// or with shuffle a permutation seeded by the task id that is never sorted
// when n ≥ 2.
func shotOrder(n, taskID int, shuffle bool) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i + 1
	}
	if !shuffle || n < 2 {
		return order
	}
	rng := rand.New(rand.NewPCG(uint64(taskID), 0x5eed))
	rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	sorted := true
	for i, v := range order {
		sorted = sorted && v == i+1
	}
	if sorted {
		order[0], order[1] = order[1], order[0]
	}
	return order
}

// tarBz2 returns a bzip2-compressed tar of the screenshots in order, with
// bare member names (0001.jpg), as CAPE 2021 builds it.
func tarBz2(order []int, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := bzip2.NewWriter(&buf, &bzip2.WriterConfig{Level: bzip2.BestSpeed})
	if err != nil {
		return nil, fmt.Errorf("bzip2 writer: %w", err)
	}
	tw := tar.NewWriter(zw)
	for _, n := range order {
		b := shotJPEG(n)
		hdr := &tar.Header{Name: ShotName(n), Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header: %w", err)
		}
		if _, err := tw.Write(b); err != nil {
			return nil, fmt.Errorf("tar write: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar close: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("bzip2 close: %w", err)
	}
	return buf.Bytes(), nil
}

// zipShots returns a zip of the screenshots in order with members
// shots/0001.jpg…, as CAPE serves it after commit 58f36f6a (CAPEv2's screenshot views).
func zipShots(order []int, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range order {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "shots/" + ShotName(n), Method: zip.Deflate, Modified: mtime})
		if err != nil {
			return nil, fmt.Errorf("zip header: %w", err)
		}
		if _, err := w.Write(shotJPEG(n)); err != nil {
			return nil, fmt.Errorf("zip write: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip close: %w", err)
	}
	return buf.Bytes(), nil
}
