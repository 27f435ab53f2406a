// Package qrscan finds QR codes in images shared in Slack ("quishing":
// a phishing link hidden in a QR code), locally and within fixed bounds.
//
// Decode reads one PNG, JPEG, GIF (first frame) or WebP image and returns
// the QR codes in it; URLs picks the http(s) addresses out of their texts
// for the caller to check like any other link (links.Policy). Supported
// says from a Slack file's mimetype, filetype or name whether Decode may
// read it, so that the caller downloads only what can be decoded. The image
// never leaves the process: decoding is pure Go, with no cgo, no external
// program and no network.
//
// # Contract for callers
//
// A failed decode is silent: every error Decode returns is for the
// caller's logs only (ErrTooLarge, ErrTooManyPixels, ErrUnsupported,
// ErrMalformed, ErrDecoderPanic, ErrTimeout or the caller's context
// error), never for the channel. An image in which no QR code is found
// gives (nil, nil).
//
// # Bounds
//
// Every image is bounded before it costs anything large:
//
//   - Bytes: at most Limits.MaxBytes+1 bytes are read; more is
//     ErrTooLarge. The default, 10 MiB, is the size issue 26 sets for
//     shared images.
//   - Pixels: the format is sniffed from its magic bytes (the global
//     image.RegisterFormat table is not used, so a format another package
//     registers is not decoded here) and its header read with the format's
//     DecodeConfig; width×height above Limits.MaxPixels is
//     ErrTooManyPixels and the pixels are never decoded. This stops
//     decompression bombs (a few kilobytes of PNG or GIF that declare
//     billions of pixels). The standard decoders and x/image/webp refuse
//     frame data larger than the header they were checked against, and
//     Decode checks the decoded bounds again.
//   - Memory: about one decoded image (4 bytes a pixel for PNG and
//     lossless WebP, 1.5 for baseline JPEG, about 8 for progressive JPEG,
//     whose coefficients image/jpeg keeps until the last scan) plus one
//     byte a pixel of luminance; the decoded image is dropped once the
//     luminance is made. Measured by TestPeakRSS (growth of the peak RSS
//     for one decode): 46 MiB for a 4000×4000 photograph in JPEG; at the
//     default 40 million pixels, 100 MiB for a baseline JPEG, 194 MiB for
//     an RGBA PNG and 329 MiB for a progressive JPEG, the worst case. A
//     caller holds at most MaxBytes per image before that.
//   - Time: the decoding runs in a goroutine that Decode waits for at most
//     Limits.Timeout (default 5 s). Go cannot stop a goroutine that is
//     busy computing, so the work itself is bounded too: a fixed list of at
//     most four detection attempts (see Attempts below), each of which
//     looks at the context before it starts. A decode that timed out
//     finishes its current step, then stops. On the 2-core development
//     machine a 4000×4000 JPEG takes about 0.27 s with a code and 0.47 s
//     without (every attempt runs; bench_test.go); a noisy 40-megapixel
//     JPEG without a code, about 2 s.
//   - CPU: a package-wide semaphore lets at most Concurrency() decodes run
//     at once, whatever the number of callers: half the Go processors at
//     start-up, at least one (one on the bot's 2-core machine), so that a
//     flood of images cannot take every core. A goroutine whose Decode
//     timed out keeps its slot until it has stopped. The wait for a slot is
//     bounded by the caller's ctx alone; Limits.Timeout starts once the
//     slot is held.
//   - Panics in the third-party decoder are recovered and returned as
//     ErrDecoderPanic.
//
// # Attempts
//
// The luminance of the image (ZXing's (R+2G+B)/4, over white where the
// image is transparent; the Y plane as it is for JPEG) is binarised with
// ZXing's HybridBinarizer and searched:
//
//  1. If a side is longer than 2048 pixels, first at a reduced scale
//     (box-averaged by the smallest whole factor that brings both sides to
//     2048 or less), with TRY_HARDER (every third row scanned for finder
//     patterns): the multi-code reader, then the single-code reader if the
//     former found nothing.
//  2. Then, if nothing was found, at full scale: the same two readers,
//     with TRY_HARDER only when the image needed no reduction (on a noisy
//     4000×4000 image, TRY_HARDER made the multi-code reader's search take
//     0.59 s instead of 6 ms).
//
// The first scale that yields any code ends the search, so a second, much
// smaller code in an image whose first code is found at reduced scale may
// be missed. Light-on-dark (inverted) codes are not searched for.
//
// # Decoder library
//
// The QR decoder is github.com/makiuchi-d/gozxing v0.1.1 (MIT), a port to
// pure Go of ZXing, the reference open-source barcode library: no cgo
// (unlike the zbar and OpenCV bindings), so the bot stays a static binary
// and the image is decoded in-process. It has ZXing's QRCodeMultiReader,
// which finds several codes in one image, a hybrid (local-threshold)
// binariser that copes with photographs, and detection of rotated codes. The Go module proxy serves v0.1.1 (October 2021,
// the latest tag, which this package's tests exercise on generated
// photographs, rotations, two codes in one image, JPEG, GIF and WebP); the
// maintainer still answered issues in 2024. Its encoder draws the test
// images. The other pure-Go QR decoders looked at,
// github.com/liyue201/goqr and github.com/tuotoo/qrcode, are not served by
// the module proxy this project builds from.
package qrscan
