package sandbox

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsnet/compress/bzip2"
)

// heapBudget is the most heap one archive may cost while it is read.
const heapBudget = 32 << 20

// peakHeap runs fn and returns the highest heap in use it caused: the
// runtime's "/memory/classes/heap/objects:bytes" (live objects plus dead
// ones not yet swept, so it over-counts rather than under-counts), sampled
// every 20µs by another goroutine, minus its value before fn, with GOGC=10
// so that garbage is collected soon after it is made. A peak shorter than
// the sampling period could be missed; the large allocations here (members
// of up to 10 MiB, archive/zip's per-entry records) live much longer.
func peakHeap(t *testing.T, fn func()) uint64 {
	t.Helper()
	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func(s []metrics.Sample) uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	base := read(sample)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: sample[0].Name}}
		for {
			if v := read(s); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Microsecond):
			}
		}
	}()
	fn()
	if v := read(sample); v > peak.Load() {
		peak.Store(v)
	}
	close(stop)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// writeArchiveFile writes an archive to the file at path with gen: the
// archive is read back as a stream, as the service's answer would be, so it
// is not in the heap being measured.
func writeArchiveFile(path string, gen func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := gen(bw); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeArchiveFiles writes every archive with its gen into dir at once
// (writing them costs more than reading them, race detector on: bzip2 and
// gzip at their best compression) and returns their paths, in order. It
// returns when all are written, so that none is being written while a heap
// is measured.
func writeArchiveFiles(t *testing.T, dir string, names []string, gens []func(w io.Writer) error) []string {
	t.Helper()
	paths := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		paths[i] = filepath.Join(dir, name)
		wg.Go(func() { errs[i] = writeArchiveFile(paths[i], gens[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return paths
}

// directoryOnlyZip writes a zip whose central directory lists entries
// empty stored members named shots/NNNNNN.jpg (all pointing at one local
// header: archive/zip does not read local headers while it parses the
// directory). With zip64, the end records are zip64 ones (needed above
// 65535 entries). lie, if not nil, rewrites the plain end record's entry
// count and directory size (an end record that understates the directory).
func directoryOnlyZip(entries int, zip64 bool, lie func(records uint16, dirSize uint32) (uint16, uint32)) func(w io.Writer) error {
	return func(w io.Writer) error {
		le := binary.LittleEndian
		local := make([]byte, 30+4)
		le.PutUint32(local, 0x04034b50)
		le.PutUint16(local[4:], 10)
		le.PutUint16(local[26:], 4)
		copy(local[30:], "a.jp")
		if _, err := w.Write(local); err != nil {
			return err
		}
		dirOffset := int64(len(local))
		hdr := make([]byte, 46+16)
		le.PutUint32(hdr, 0x02014b50)
		le.PutUint16(hdr[4:], 20)
		le.PutUint16(hdr[6:], 10)
		le.PutUint16(hdr[28:], 16)
		copy(hdr[46:], "shots/000000.jpg")
		digits := hdr[46+6 : 46+12]
		for range entries {
			if _, err := w.Write(hdr); err != nil {
				return err
			}
			// The next name: digits counts up (from 999999 back to 000000).
			for d := len(digits) - 1; d >= 0; d-- {
				if digits[d] < '9' {
					digits[d]++
					break
				}
				digits[d] = '0'
			}
		}
		dirSize := int64(entries) * int64(len(hdr))
		end := make([]byte, 22)
		le.PutUint32(end, 0x06054b50)
		records, size32, off32 := uint16(min(entries, 0xffff)), uint32(dirSize), uint32(dirOffset)
		if zip64 {
			z := make([]byte, 56+20)
			le.PutUint32(z, 0x06064b50)
			le.PutUint64(z[4:], 44)
			le.PutUint16(z[12:], 45)
			le.PutUint16(z[14:], 45)
			le.PutUint64(z[24:], uint64(entries))
			le.PutUint64(z[32:], uint64(entries))
			le.PutUint64(z[40:], uint64(dirSize))
			le.PutUint64(z[48:], uint64(dirOffset))
			le.PutUint32(z[56:], 0x07064b50)
			le.PutUint64(z[64:], uint64(dirOffset+dirSize))
			le.PutUint32(z[72:], 1)
			if _, err := w.Write(z); err != nil {
				return err
			}
			records, size32, off32 = 0xffff, 0xffffffff, 0xffffffff
		}
		if lie != nil {
			records, size32 = lie(records, size32)
		}
		le.PutUint16(end[8:], records)
		le.PutUint16(end[10:], records)
		le.PutUint32(end[12:], size32)
		le.PutUint32(end[16:], off32)
		if _, err := w.Write(end); err != nil {
			return err
		}
		_, err := w.Write([]byte("trailing garbage after the end record"))
		return err
	}
}

// fakeJPEG is size bytes that pass for a JPEG (magic bytes, then zeros):
// what a bomb dresses its members as.
func fakeJPEG(size int) []byte {
	b := make([]byte, size)
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0})
	return b
}

// gzipMember returns b as one gzip member; members concatenate (gzip.Reader
// reads a multistream), so a huge stream is built from a few.
func gzipMember(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func tarHeader(name string, size int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg})
	tw.Flush()
	return buf.Bytes()
}

// TestArchiveHeapStaysBounded reads worst-case archives as a stream and
// measures the heap each costs: every one stays under 32 MiB. Before the
// zip directory was checked, the 700k-entry zip cost about 200 MB.
//
// It does not call t.Parallel: the heap it measures is the process's, so
// it runs before the parallel tests start. The archives are all written
// first, at once, and then read one at a time.
func TestArchiveHeapStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 130 MB of archives")
	}
	zeros1M := make([]byte, 1<<20)
	gzZeros := gzipMember(zeros1M)
	const member = MaxImageBytes - 16 // just under the per-image cap
	gzMember := sync.OnceValue(func() []byte { return gzipMember(fakeJPEG(member)) })
	// A tar is refused at its member cap, the members past it unread: one
	// more than the cap is as many as any tar needs to reach it.
	const pastCap = maxArchiveMembers + 1
	bombTar := func(n int, size int64, data func() []byte) func(w io.Writer) error {
		return func(w io.Writer) error {
			for i := range n {
				if _, err := w.Write(gzipMember(tarHeader(fmt.Sprintf("%04d.jpg", i+1), size))); err != nil {
					return err
				}
				if _, err := w.Write(data()); err != nil {
					return err
				}
				if pad := (512 - size%512) % 512; pad > 0 {
					w.Write(gzipMember(make([]byte, pad)))
				}
			}
			_, err := w.Write(gzipMember(make([]byte, 1024)))
			return err
		}
	}
	cases := []struct {
		name    string
		file    string
		gen     func(w io.Writer) error
		wantErr string // "" when the archive is read without error
	}{
		{"zip, 700k entries, zip64 end record", "700k.zip", directoryOnlyZip(700_000, true, nil), "members"},
		{"zip, 700k entries, end record claims 5", "lying.zip", directoryOnlyZip(700_000, false, func(uint16, uint32) (uint16, uint32) {
			return 700_000 % 65536, 62 * 5
		}), "not where"},
		{"zip, 655365 entries, end record claims 5 (count matches mod 65536)", "lying5.zip", directoryOnlyZip(655_365, false, func(uint16, uint32) (uint16, uint32) {
			return 5, 62 * 5
		}), "not where"},
		{"zip, 20k entries, honest", "20k.zip", directoryOnlyZip(20_000, false, nil), "members"},
		{"zip bomb, 40 members of 10 MiB that pass for JPEGs (0.4 MB)", "bomb.zip", func(w io.Writer) error {
			var raw bytes.Buffer
			fw, _ := flate.NewWriter(&raw, flate.BestCompression)
			data := fakeJPEG(member)
			fw.Write(data)
			fw.Close()
			crc := crc32.ChecksumIEEE(data)
			zw := zip.NewWriter(w)
			for i := range 40 {
				mw, err := zw.CreateRaw(&zip.FileHeader{Name: fmt.Sprintf("shots/%04d.jpg", i+1), Method: zip.Deflate,
					CRC32: crc, CompressedSize64: uint64(raw.Len()), UncompressedSize64: uint64(len(data))})
				if err != nil {
					return err
				}
				mw.Write(raw.Bytes())
			}
			return zw.Close()
		}, ""},
		{"tar.gz bomb, one member of 1 GiB zeros", "bomb.tar.gz", func(w io.Writer) error {
			w.Write(gzipMember(tarHeader("0001.jpg", 1<<30)))
			w.Write(gzipMember(fakeJPEG(1 << 20)))
			for range 1023 {
				if _, err := w.Write(gzZeros); err != nil {
					return err
				}
			}
			return nil
		}, "expands"},
		{"tar.gz bomb, 30 members of 10 MiB that pass for JPEGs", "shots.tar.gz", bombTar(30, member, gzMember), "expands"},
		{"tar.gz, 20 members of 10 MiB that pass for JPEGs", "twenty.tar.gz", bombTar(20, member, gzMember), ""},
		{"tar.gz, 40 members of 1 MiB that pass for JPEGs", "forty.tar.gz", bombTar(40, 1<<20, sync.OnceValue(func() []byte { return gzipMember(fakeJPEG(1 << 20)) })), ""},
		{fmt.Sprintf("tar.gz, %d empty members", pastCap), "many.tar.gz", func(w io.Writer) error {
			zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
			tw := tar.NewWriter(zw)
			for i := range pastCap {
				tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%06d.jpg", i), Mode: 0o644, Typeflag: tar.TypeReg})
			}
			tw.Close()
			return zw.Close()
		}, "members"},
		{fmt.Sprintf("tar.bz2, %d empty members", pastCap), "many.tar.bz2", func(w io.Writer) error {
			bw, _ := bzip2.NewWriter(w, &bzip2.WriterConfig{Level: 9})
			tw := tar.NewWriter(bw)
			for i := range pastCap {
				tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%06d.jpg", i), Mode: 0o644, Typeflag: tar.TypeReg})
			}
			tw.Close()
			return bw.Close()
		}, "members"},
		{"tar.bz2, 3 members of 10 MiB that pass for JPEGs", "big.tar.bz2", func(w io.Writer) error {
			bw, _ := bzip2.NewWriter(w, &bzip2.WriterConfig{Level: 9})
			tw := tar.NewWriter(bw)
			data := fakeJPEG(member)
			for i := range 3 {
				tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%04d.jpg", i+1), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
				tw.Write(data)
			}
			tw.Close()
			return bw.Close()
		}, ""},
	}
	var names []string
	var gens []func(w io.Writer) error
	for _, tc := range cases {
		names, gens = append(names, tc.file), append(gens, tc.gen)
	}
	paths := writeArchiveFiles(t, t.TempDir(), names, gens)
	worst, worstName := uint64(0), ""
	for i, tc := range cases {
		p := paths[i]
		st, _ := os.Stat(p)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var images []Image
		var rerr error
		start := time.Now()
		peak := peakHeap(t, func() {
			images, rerr = readArchive(f, DefaultMaxScreenshots, defaultArchiveLimits)
		})
		f.Close()
		os.Remove(p)
		kept := 0
		for _, im := range images {
			kept += len(im.Data)
		}
		t.Logf("%-70s %6.1f MB on the wire: peak heap %5.1f MiB, %d images (%.1f MiB) in %v, err: %v",
			tc.name, float64(st.Size())/1e6, float64(peak)/(1<<20), len(images), float64(kept)/(1<<20), time.Since(start).Round(time.Millisecond), rerr)
		switch {
		case tc.wantErr == "" && rerr != nil:
			t.Errorf("%s: %v", tc.name, rerr)
		case tc.wantErr != "" && (!errors.Is(rerr, ErrArchiveUnusable) || !strings.Contains(rerr.Error(), tc.wantErr)):
			t.Errorf("%s: err = %v, want ErrArchiveUnusable about %q", tc.name, rerr, tc.wantErr)
		}
		if kept > MaxScreenshotBytes {
			t.Errorf("%s: kept %d bytes of images, over MaxScreenshotBytes", tc.name, kept)
		}
		if peak >= heapBudget {
			t.Errorf("%s: peak heap %.1f MiB, want under %d MiB", tc.name, float64(peak)/(1<<20), heapBudget>>20)
		}
		if peak > worst {
			worst, worstName = peak, tc.name
		}
	}
	t.Logf("worst archive: %s, peak heap %.1f MiB (budget %d MiB)", worstName, float64(worst)/(1<<20), heapBudget>>20)
}
