package qrscan

import (
	"context"

	"github.com/makiuchi-d/gozxing"
	multiqr "github.com/makiuchi-d/gozxing/multi/qrcode"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// search looks for QR codes in l along the attempt list of the package
// documentation, and stops at the first scale that yields any, or when
// ctx ends (between attempts: one attempt cannot be interrupted).
func search(ctx context.Context, l luma) ([]Code, error) {
	type scale struct {
		l         luma
		tryHarder bool
	}
	var scales []scale
	if f := shrinkFactor(l.w, l.h); f > 1 {
		scales = append(scales, scale{l.shrink(f), true}, scale{l, false})
	} else {
		scales = append(scales, scale{l, true})
	}
	for _, s := range scales {
		if ctx.Err() != nil {
			return nil, ctxError(ctx)
		}
		if codes := scanScale(ctx, s.l, s.tryHarder); len(codes) > 0 {
			return codes, nil
		}
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	return nil, nil
}

// scanScale binarises l once and runs the multi-code reader on it, then
// the single-code reader if the former found nothing and ctx allows. The
// decoder's errors all mean "no readable code here" (not found, format,
// checksum) and are dropped: a failed decode is silent.
func scanScale(ctx context.Context, l luma, tryHarder bool) []Code {
	if l.w == 0 || l.h == 0 {
		return nil
	}
	src, err := gozxing.NewPlanarYUVLuminanceSource(l.pix, l.w, l.h, 0, 0, l.w, l.h, false)
	if err != nil {
		return nil
	}
	bmp, err := gozxing.NewBinaryBitmap(gozxing.NewHybridBinarizer(src))
	if err != nil {
		return nil
	}
	var hints map[gozxing.DecodeHintType]any
	if tryHarder {
		hints = map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true}
	}
	// The bitmap caches its binarisation, so the second reader does not
	// binarise again.
	results, _ := multiqr.NewQRCodeMultiReader().DecodeMultiple(bmp, hints)
	if len(results) == 0 && ctx.Err() == nil {
		if r, err := qrcode.NewQRCodeReader().Decode(bmp, hints); err == nil {
			results = append(results, r)
		}
	}
	var codes []Code
	seen := make(map[string]bool)
	for _, r := range results {
		if r == nil || r.GetText() == "" || seen[r.GetText()] {
			continue
		}
		seen[r.GetText()] = true
		codes = append(codes, Code{Text: r.GetText()})
	}
	return codes
}
