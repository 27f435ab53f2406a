package qrscan

import (
	"image"
)

// luma is an 8-bit luminance plane, w×h pixels, row after row without
// padding: what the decoder's PlanarYUVLuminanceSource reads without a
// copy.
type luma struct {
	pix  []byte
	w, h int
}

// toLuma returns img's luminance: ZXing's (R+2G+B)/4 (its
// GoImageLuminanceSource's formula), composited over white where img is
// transparent (a QR code drawn on a transparent background reads as on
// paper); the Y plane as it is for JPEG. The common decoded types are
// read from their pixel slices; others through RGBA64At, which does not
// allocate per pixel as At does.
func toLuma(img image.Image) luma {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	l := luma{pix: make([]byte, w*h), w: w, h: h}
	switch m := img.(type) {
	case *image.Gray:
		for y := range h {
			i := m.PixOffset(b.Min.X, b.Min.Y+y)
			copy(l.pix[y*w:(y+1)*w], m.Pix[i:i+w])
		}
	case *image.YCbCr:
		for y := range h {
			i := m.YOffset(b.Min.X, b.Min.Y+y)
			copy(l.pix[y*w:(y+1)*w], m.Y[i:i+w])
		}
	case *image.NYCbCrA:
		for y := range h {
			for x := range w {
				yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
				ai := m.AOffset(b.Min.X+x, b.Min.Y+y)
				l.pix[y*w+x] = overWhite(uint32(m.Y[yi]), uint32(m.A[ai]))
			}
		}
	case *image.NRGBA:
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				p := row[4*x : 4*x+4 : 4*x+4]
				l.pix[y*w+x] = overWhite((uint32(p[0])+2*uint32(p[1])+uint32(p[2]))/4, uint32(p[3]))
			}
		}
	case *image.RGBA:
		// Premultiplied: the colour is already scaled by alpha.
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				p := row[4*x : 4*x+4 : 4*x+4]
				l.pix[y*w+x] = byte((uint32(p[0])+2*uint32(p[1])+uint32(p[2]))/4 + 255 - uint32(p[3]))
			}
		}
	case *image.Paletted:
		var table [256]byte
		for i, c := range m.Palette {
			if i == len(table) {
				break
			}
			table[i] = luma64(c.RGBA())
		}
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				l.pix[y*w+x] = table[row[x]]
			}
		}
	case image.RGBA64Image:
		for y := range h {
			for x := range w {
				c := m.RGBA64At(b.Min.X+x, b.Min.Y+y)
				l.pix[y*w+x] = luma64(uint32(c.R), uint32(c.G), uint32(c.B), uint32(c.A))
			}
		}
	default:
		for y := range h {
			for x := range w {
				l.pix[y*w+x] = luma64(img.At(b.Min.X+x, b.Min.Y+y).RGBA())
			}
		}
	}
	return l
}

// overWhite composites the 8-bit luminance v of a non-premultiplied pixel
// with alpha a over white.
func overWhite(v, a uint32) byte {
	return byte((v*a + 255*(255-a)) / 255)
}

// luma64 is the 8-bit luminance over white of a premultiplied 16-bit
// colour (color.Color.RGBA's values).
func luma64(r, g, b, a uint32) byte {
	return byte(((r+2*g+b)/4 + 0xffff - a) >> 8)
}

// shrink returns l reduced by the whole factor f, each pixel the mean of
// an f×f block (a box filter: it keeps a module's edges where nearest
// neighbour would alias them). The last w%f columns and h%f rows are
// dropped.
func (l luma) shrink(f int) luma {
	w, h := l.w/f, l.h/f
	out := luma{pix: make([]byte, w*h), w: w, h: h}
	sum := make([]uint32, w)
	n := uint32(f * f)
	for y := range h {
		clear(sum)
		for dy := range f {
			row := l.pix[(y*f+dy)*l.w:]
			for x := range w {
				s := uint32(0)
				for _, v := range row[x*f : x*f+f] {
					s += uint32(v)
				}
				sum[x] += s
			}
		}
		for x, s := range sum {
			out.pix[y*w+x] = byte((s + n/2) / n)
		}
	}
	return out
}

// maxSide is the longest side searched first: larger images are searched
// at a reduced scale before full scale. 2048 keeps the first pass under
// about 4 megapixels, where binarising and a TRY_HARDER search take tens
// of milliseconds, while a code of 4 pixels a module or more (a 150-pixel
// code of version 3 in a 3000-pixel photograph) is still read at half
// scale; smaller ones are left to the full-scale pass (TestDecodePoster).
const maxSide = 2048

// shrinkFactor is the smallest whole factor that brings both sides of a
// w×h image to maxSide or less; 1 when they already are.
func shrinkFactor(w, h int) int {
	side := max(w, h)
	return (side + maxSide - 1) / maxSide
}
