// Package bytesize writes byte counts for people. It is the one formatter
// of sizes: file sizes on cards (notify) and size limits in skip reasons
// (scan) read alike.
package bytesize

import (
	"strconv"
	"strings"
)

// Format writes a size in decimal units as people read file sizes:
// "30 MB", "1.5 kB", "512 bytes".
func Format(n int64) string {
	trim := func(f float64) string {
		s := strconv.FormatFloat(f, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0")
	}
	switch {
	case n >= 1_000_000_000:
		return trim(float64(n)/1e9) + " GB"
	case n >= 1_000_000:
		return trim(float64(n)/1e6) + " MB"
	case n >= 1_000:
		return trim(float64(n)/1e3) + " kB"
	case n == 1:
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
