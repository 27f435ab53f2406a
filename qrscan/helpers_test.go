package qrscan

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/math/f64"
)

// qrImage returns a QR code for text, black on white with the standard
// 4-module quiet zone, about size pixels square (the encoder rounds to
// whole pixels a module and centres the code).
func qrImage(tb testing.TB, text string, size int) *image.Gray {
	tb.Helper()
	m, err := qrcode.NewQRCodeWriter().Encode(text, gozxing.BarcodeFormat_QR_CODE, size, size, nil)
	if err != nil {
		tb.Fatalf("encode QR %q: %v", text, err)
	}
	g := image.NewGray(m.Bounds())
	draw.Draw(g, g.Bounds(), m, image.Point{}, draw.Src)
	return g
}

// photo returns a w×h opaque RGB image that looks like a photograph to a
// binariser: smooth lighting gradients, a few hundred coloured shapes with
// hard edges, and per-pixel sensor noise. seed fixes it.
func photo(w, h int, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			i := img.PixOffset(x, y)
			img.Pix[i+0] = uint8(90 + 80*fx)
			img.Pix[i+1] = uint8(110 + 60*fy)
			img.Pix[i+2] = uint8(140 - 50*fx*fy)
			img.Pix[i+3] = 0xff
		}
	}
	for range 300 {
		c := color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 0xff}
		x, y := r.IntN(w), r.IntN(h)
		rw, rh := 10+r.IntN(w/6+1), 10+r.IntN(h/6+1)
		if r.IntN(2) == 0 {
			draw.Draw(img, image.Rect(x, y, x+rw, y+rh), image.NewUniform(c), image.Point{}, draw.Src)
			continue
		}
		rad := min(rw, rh) / 2
		for dy := -rad; dy <= rad; dy++ {
			for dx := -rad; dx <= rad; dx++ {
				if dx*dx+dy*dy <= rad*rad && image.Pt(x+dx, y+dy).In(img.Rect) {
					img.SetRGBA(x+dx, y+dy, c)
				}
			}
		}
	}
	// Noise from an inline xorshift: a call to r per pixel is slow under
	// -race.
	x := seed | 1
	for i := 0; i < len(img.Pix); i += 4 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		n := int(x%25) - 12
		for c := range 3 {
			img.Pix[i+c] = uint8(max(0, min(255, int(img.Pix[i+c])+n)))
		}
	}
	return img
}

// place draws code onto dst with its centre at (cx, cy), rotated by deg
// degrees, with bilinear interpolation (as a camera would blur edges).
func place(dst draw.Image, code image.Image, cx, cy, deg float64) {
	b := code.Bounds()
	sx, sy := float64(b.Min.X+b.Max.X)/2, float64(b.Min.Y+b.Max.Y)/2
	sin, cos := math.Sincos(deg * math.Pi / 180)
	m := f64.Aff3{
		cos, -sin, cx - (cos*sx - sin*sy),
		sin, cos, cy - (sin*sx + cos*sy),
	}
	xdraw.BiLinear.Transform(dst, m, code, b, xdraw.Over, nil)
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatalf("encode PNG: %v", err)
	}
	return b.Bytes()
}

func encodeJPEG(tb testing.TB, img image.Image, quality int) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: quality}); err != nil {
		tb.Fatalf("encode JPEG: %v", err)
	}
	return b.Bytes()
}

func encodeGIF(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		tb.Fatalf("encode GIF: %v", err)
	}
	return b.Bytes()
}

// texts returns the codes' texts.
func texts(codes []Code) []string {
	var out []string
	for _, c := range codes {
		out = append(out, c.Text)
	}
	return out
}
