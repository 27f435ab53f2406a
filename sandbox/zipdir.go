package sandbox

import (
	"bufio"
	"encoding/binary"
	"io"
)

// A zip's central directory is read before archive/zip sees it: NewReader
// parses every directory entry it finds (about 200 bytes of heap each,
// whatever the end record claims) before the caller can count them, so a
// 55 MB zip of 700k empty members costs about 200 MB. zipView reads the end
// record (zip64 too; a comment or trailing garbage is tolerated), refuses
// a directory that lists more than the member cap or is larger than
// maxZipDirectoryBytes, counts the entries itself in one bounded pass, and
// hands archive/zip a view of the file that ends with the directory plus a
// plain end record of its own: archive/zip then cannot read past the
// directory that was checked.

// maxZipDirectoryBytes caps a zip's central directory. An entry is 46 bytes
// plus its name, extra field and comment; CAPE's "shots/0001.jpg" entries
// are about 100 bytes, so 1 MiB holds ten thousand of them.
const maxZipDirectoryBytes = 1 << 20

// Zip record signatures and fixed lengths (APPNOTE.TXT §4.3).
const (
	zipEndSig         = 0x06054b50
	zipEndLen         = 22
	zip64LocatorSig   = 0x07064b50
	zip64LocatorLen   = 20
	zip64EndSig       = 0x06064b50
	zip64EndLen       = 56
	zipDirHeaderSig   = 0x02014b50
	zipDirHeaderLen   = 46
	zipMaxCommentLen  = 0xffff
	zipSearchTailSize = zipEndLen + zipMaxCommentLen
)

// zipDirectory is what the end record says of the central directory, in
// absolute file offsets.
type zipDirectory struct {
	records    uint64
	start, end int64 // the directory's bytes: [start, end)
	offset     int64 // its offset as recorded (must be start)
}

// findZipDirectory reads the end of central directory record (and the zip64
// one when there is a locator), from the end of r.
func findZipDirectory(r io.ReaderAt, size int64) (zipDirectory, error) {
	n := min(size, zipSearchTailSize)
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, size-n); err != nil && err != io.EOF {
		return zipDirectory{}, unusable("zip: %v", err)
	}
	// The last signature whose comment fits in what follows it, as
	// archive/zip looks for it; anything after the comment is ignored.
	at := -1
	for i := len(tail) - zipEndLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == zipEndSig {
			if c := int(binary.LittleEndian.Uint16(tail[i+20:])); i+zipEndLen+c <= len(tail) {
				at = i
				break
			}
		}
	}
	if at < 0 {
		return zipDirectory{}, unusable("zip: no end of central directory record")
	}
	end := tail[at:]
	endPos := size - n + int64(at)
	d := zipDirectory{
		records: uint64(binary.LittleEndian.Uint16(end[10:])),
		end:     endPos,
		offset:  int64(binary.LittleEndian.Uint32(end[16:])),
	}
	dirSize := int64(binary.LittleEndian.Uint32(end[12:]))
	if endPos >= zip64LocatorLen {
		loc := make([]byte, zip64LocatorLen)
		if _, err := r.ReadAt(loc, endPos-zip64LocatorLen); err != nil {
			return zipDirectory{}, unusable("zip: %v", err)
		}
		if binary.LittleEndian.Uint32(loc) == zip64LocatorSig {
			pos := binary.LittleEndian.Uint64(loc[8:])
			if pos > uint64(endPos-zip64LocatorLen) || uint64(endPos-zip64LocatorLen)-pos < zip64EndLen {
				return zipDirectory{}, unusable("zip: zip64 end record out of place")
			}
			rec := make([]byte, zip64EndLen)
			if _, err := r.ReadAt(rec, int64(pos)); err != nil {
				return zipDirectory{}, unusable("zip: %v", err)
			}
			if binary.LittleEndian.Uint32(rec) != zip64EndSig {
				return zipDirectory{}, unusable("zip: bad zip64 end record")
			}
			d.records = binary.LittleEndian.Uint64(rec[32:])
			size64, off64 := binary.LittleEndian.Uint64(rec[40:]), binary.LittleEndian.Uint64(rec[48:])
			if size64 > uint64(size) || off64 > uint64(size) {
				return zipDirectory{}, unusable("zip: zip64 directory out of range")
			}
			dirSize, d.offset, d.end = int64(size64), int64(off64), int64(pos)
		}
	}
	d.start = d.end - dirSize
	if d.start < 0 || d.offset != d.start {
		// Data before the zip (a self-extractor; CAPE makes none), or an
		// end record that understates the directory: archive/zip would
		// then read from the recorded offset, past what was checked.
		return zipDirectory{}, unusable("zip: central directory not where its end record says (%d bytes at %d, ends at %d)", dirSize, d.offset, d.end)
	}
	return d, nil
}

// zipView checks the central directory of the zip in r against lim and
// returns a view archive/zip can parse without reading any more of it.
func zipView(r io.ReaderAt, size int64, lim archiveLimits) (*zipSection, error) {
	d, err := findZipDirectory(r, size)
	if err != nil {
		return nil, err
	}
	if d.records > uint64(lim.members) {
		return nil, unusable("zip lists %d members, more than %d", d.records, lim.members)
	}
	if d.end-d.start > maxZipDirectoryBytes {
		return nil, unusable("zip central directory of %d bytes, larger than %d", d.end-d.start, maxZipDirectoryBytes)
	}
	// Count the entries that are really there (archive/zip reads headers
	// until the signature stops matching and compares the count only
	// modulo 65536).
	br := bufio.NewReaderSize(io.NewSectionReader(r, d.start, d.end-d.start), 4096)
	hdr := make([]byte, zipDirHeaderLen)
	entries := 0
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			break
		}
		if binary.LittleEndian.Uint32(hdr) != zipDirHeaderSig {
			break
		}
		entries++
		if entries > lim.members {
			return nil, unusable("zip has more than %d members", lim.members)
		}
		skip := int64(binary.LittleEndian.Uint16(hdr[28:])) + int64(binary.LittleEndian.Uint16(hdr[30:])) + int64(binary.LittleEndian.Uint16(hdr[32:]))
		if _, err := br.Discard(int(skip)); err != nil {
			break
		}
	}
	// A plain end record for exactly the directory checked (values fit:
	// the archive is at most MaxArchiveBytes, the members are capped).
	end := make([]byte, zipEndLen)
	binary.LittleEndian.PutUint32(end, zipEndSig)
	binary.LittleEndian.PutUint16(end[8:], uint16(d.records))
	binary.LittleEndian.PutUint16(end[10:], uint16(d.records))
	binary.LittleEndian.PutUint32(end[12:], uint32(d.end-d.start))
	binary.LittleEndian.PutUint32(end[16:], uint32(d.offset))
	return &zipSection{r: r, n: d.end, tail: end}, nil
}

// zipSection is the first n bytes of r followed by tail.
type zipSection struct {
	r    io.ReaderAt
	n    int64
	tail []byte
}

func (z *zipSection) Size() int64 { return z.n + int64(len(z.tail)) }

func (z *zipSection) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	done := 0
	if off < z.n {
		want := p
		if int64(len(want)) > z.n-off {
			want = want[:z.n-off]
		}
		m, err := z.r.ReadAt(want, off)
		done += m
		if m < len(want) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		off += int64(m)
	}
	if done < len(p) {
		t := off - z.n
		if t >= int64(len(z.tail)) {
			return done, io.EOF
		}
		m := copy(p[done:], z.tail[t:])
		done += m
		if done < len(p) {
			return done, io.EOF
		}
	}
	return done, nil
}
