package sim

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"math"
	"strconv"
	"time"
)

// eicar is the EICAR anti-virus test string (https://www.eicar.org).
const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// contentFacts is what the simulator learns from an uploaded file's bytes.
// Markers are "SIM:<NAME>" or "SIM:<NAME>=<value>" anywhere in the file;
// the first occurrence of each wins.
type contentFacts struct {
	eicar          bool
	failAnalysis   bool // SIM:FAIL_ANALYSIS
	failProcessing bool // SIM:FAIL_PROCESSING
	failReporting  bool // SIM:FAIL_REPORTING

	malscore    float64 // SIM:MALSCORE=<f>, clamped to 0–10, one decimal
	hasMalscore bool
	family      string // SIM:FAMILY=<name>
	hasFamily   bool
	shots       int // SIM:SHOTS=<n>
	hasShots    bool
	duration    time.Duration // SIM:DURATION=<Go duration or seconds>
	hasDuration bool
	http500     int // SIM:HTTP500 (1) or SIM:HTTP500=<n>
}

// markerOverlap is how many bytes of one write the scanner keeps to find
// markers that straddle writes: more than the EICAR string and more than a
// marker name plus its longest value.
const (
	markerOverlap  = 192
	maxMarkerValue = 64
)

// contentScanner hashes and scans an upload as it streams, holding no
// more than one write plus markerOverlap bytes.
type contentScanner struct {
	md5, sha1, sha256, sha512 hash.Hash
	crc                       hash.Hash32
	size                      int64
	head                      []byte // the first 4 bytes, for the file type
	tail                      []byte // the last markerOverlap bytes seen
	window                    []byte // reused scan buffer
	facts                     contentFacts
}

func newContentScanner() *contentScanner {
	return &contentScanner{
		md5: md5.New(), sha1: sha1.New(), sha256: sha256.New(), sha512: sha512.New(),
		crc: crc32.NewIEEE(),
	}
}

// Write implements io.Writer.
func (c *contentScanner) Write(p []byte) (int, error) {
	for _, h := range []hash.Hash{c.md5, c.sha1, c.sha256, c.sha512, c.crc} {
		h.Write(p)
	}
	c.size += int64(len(p))
	if n := 4 - len(c.head); n > 0 {
		c.head = append(c.head, p[:min(n, len(p))]...)
	}
	c.window = append(append(c.window[:0], c.tail...), p...)
	c.scan(c.window, false)
	keep := c.window[max(0, len(c.window)-markerOverlap):]
	c.tail = append(c.tail[:0], keep...)
	return len(p), nil
}

// finish scans the final bytes, where a marker value may end the file.
func (c *contentScanner) finish() {
	c.scan(c.tail, true)
}

// scan records the markers of w. Without eof, a marker that reaches the
// end of w is left for the next window, which still holds it.
func (c *contentScanner) scan(w []byte, eof bool) {
	f := &c.facts
	if !f.eicar && bytes.Contains(w, []byte(eicar)) {
		f.eicar = true
	}
	for i := 0; ; {
		j := bytes.Index(w[i:], []byte("SIM:"))
		if j < 0 {
			return
		}
		start := i + j + len("SIM:")
		end := start
		for end < len(w) && isNameByte(w[end]) {
			end++
		}
		if end == len(w) && !eof {
			return
		}
		name := string(w[start:end])
		value, hasValue := "", false
		if end < len(w) && w[end] == '=' {
			vs := end + 1
			ve := vs
			for ve < len(w) && ve-vs < maxMarkerValue && isValueByte(w[ve]) {
				ve++
			}
			if ve == len(w) && !eof {
				return
			}
			value, hasValue, end = string(w[vs:ve]), true, ve
		}
		f.apply(name, value, hasValue)
		i = end
	}
}

func isNameByte(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' }

func isValueByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '+'
}

// apply records one marker unless an earlier one of the same name did.
func (f *contentFacts) apply(name, value string, hasValue bool) {
	switch name {
	case "FAIL_ANALYSIS":
		f.failAnalysis = true
	case "FAIL_PROCESSING":
		f.failProcessing = true
	case "FAIL_REPORTING":
		f.failReporting = true
	case "MALSCORE":
		if v, err := strconv.ParseFloat(value, 64); hasValue && err == nil && !f.hasMalscore && !math.IsNaN(v) {
			f.malscore, f.hasMalscore = math.Round(min(10, max(0, v))*10)/10, true
		}
	case "FAMILY":
		if hasValue && !f.hasFamily {
			f.family, f.hasFamily = value, true
		}
	case "SHOTS":
		if n, err := strconv.Atoi(value); hasValue && err == nil && n >= 0 && !f.hasShots {
			f.shots, f.hasShots = min(n, MaxShots), true
		}
	case "DURATION":
		if d, ok := parseMarkerDuration(value); hasValue && ok && !f.hasDuration {
			f.duration, f.hasDuration = d, true
		}
	case "HTTP500":
		if f.http500 == 0 {
			f.http500 = 1
			if n, err := strconv.Atoi(value); hasValue && err == nil && n > 0 {
				f.http500 = n
			}
		}
	}
}

// parseMarkerDuration reads "90" (seconds) or a Go duration ("1m30s"),
// non-negative and at most a day.
func parseMarkerDuration(v string) (time.Duration, bool) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false
		}
		d = time.Duration(n) * time.Second
	}
	return d, d >= 0 && d <= 24*time.Hour
}

// fileType is the libmagic-like file_type chosen from the first bytes
// (the simulator's sandbox model).
func fileType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("MZ")):
		return "PE32 executable (GUI) Intel 80386, for MS Windows"
	case bytes.HasPrefix(head, []byte("%PDF")):
		return "PDF document, version 1.7"
	}
	return "data"
}

// sample is one unique uploaded file, keyed by SHA-256.
type sample struct {
	md5, sha1, sha256, sha512 string
	crc32                     string // 8 uppercase hex digits, as CAPE writes it
	size                      int64
	fileType                  string
	firstTask                 int
	facts                     contentFacts
}

// sample returns the sample record of the scanned bytes.
func (c *contentScanner) sample() *sample {
	return &sample{
		md5:      hex.EncodeToString(c.md5.Sum(nil)),
		sha1:     hex.EncodeToString(c.sha1.Sum(nil)),
		sha256:   hex.EncodeToString(c.sha256.Sum(nil)),
		sha512:   hex.EncodeToString(c.sha512.Sum(nil)),
		crc32:    fmt.Sprintf("%08X", c.crc.Sum32()),
		size:     c.size,
		fileType: fileType(c.head),
		facts:    c.facts,
	}
}
