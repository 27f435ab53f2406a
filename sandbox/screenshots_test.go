package sandbox

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// shots returns n JPEG members named by prefix+"%04d.jpg", 1-based.
func shots(t testing.TB, prefix string, n int) []member {
	ms := make([]member, n)
	for i := range ms {
		ms[i] = member{fmt.Sprintf("%s%04d.jpg", prefix, i+1), testJPEG(t, i+1)}
	}
	return ms
}

func names(images []Image) []string {
	out := make([]string, len(images))
	for i, im := range images {
		out[i] = im.Name
	}
	return out
}

func serveArchive(ctype string, body []byte) func(w http.ResponseWriter, r *http.Request, p string) {
	return func(w http.ResponseWriter, r *http.Request, p string) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", "attachment; filename=12_screenshots.tar.bz2")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}
}

func TestScreenshotsArchives(t *testing.T) {
	t.Parallel()
	jpegs := shots(t, "", 5)
	prefixed := shots(t, "shots/", 5)
	junk := []member{
		{"shots/", nil}, // directory
		{"shots/0006.jpg", []byte("not an image")},   // claims to be a JPEG
		{"shots/readme.txt", []byte("hello")},        // not an image
		{"shots/0007.png", nil},                      // empty
		{"shots/cover.png", testPNG(t)},              // real image without a number: after the numbered ones
		{"../../etc/0000.jpg", testJPEG(t, 9)},       // odd path: name kept without directories
		{"shots/0001.jpg", []byte{0xFF, 0xD8, 0xFF}}, // duplicate name: the first one wins
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	writeTar(t, zw, shuffled(jpegs))
	zw.Close()
	var plain bytes.Buffer
	writeTar(t, &plain, shuffled(jpegs))

	cases := []struct {
		name  string
		ctype string
		body  []byte
		max   int
		want  []string
	}{
		{"tar.bz2 shuffled, CAPE 2021 content type", "application/octet-stream;", tarBz2(t, shuffled(jpegs)), 0,
			[]string{"0001.jpg", "0002.jpg", "0003.jpg", "0004.jpg", "0005.jpg"}},
		{"tar.bz2 capped", "application/octet-stream", tarBz2(t, shuffled(jpegs)), 2, []string{"0001.jpg", "0002.jpg"}},
		{"tar.bz2 with junk", "application/x-bzip2", tarBz2(t, shuffled(append(append([]member{}, prefixed...), junk[:5]...))), 0,
			[]string{"0001.jpg", "0002.jpg", "0003.jpg", "0004.jpg", "0005.jpg", "cover.png"}},
		{"zip shots/ prefix with junk", "application/zip", zipArchive(t, append(shuffled(append(append([]member{}, prefixed...), junk[:6]...)), junk[6]), false), 4,
			[]string{"0000.jpg", "0001.jpg", "0002.jpg", "0003.jpg"}},
		{"tar.gz", "application/gzip", gz.Bytes(), 3, []string{"0001.jpg", "0002.jpg", "0003.jpg"}},
		{"plain tar", "application/x-tar", plain.Bytes(), 1, []string{"0001.jpg"}},
		{"empty zip", "application/zip", zipArchive(t, nil, false), 0, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
				if p != "tasks/get/screenshot/12/" {
					t.Errorf("path %q", p)
				}
				serveArchive(tc.ctype, tc.body)(w, r, p)
			})
			images, err := f.client().Screenshots(t.Context(), "12", tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(images); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("images %v, want %v", got, tc.want)
			}
			for _, im := range images {
				if im.ContentType != "image/jpeg" && im.ContentType != "image/png" {
					t.Errorf("%s: content type %q", im.Name, im.ContentType)
				}
				if ct, _ := sniffImage(im.Data); ct != im.ContentType {
					t.Errorf("%s: bytes are %q", im.Name, ct)
				}
			}
			// The images are the right ones, in order (colour encodes the number).
			for i, im := range images {
				if n := shotNumber(im.Name); n >= 1 && n <= 5 && !bytes.Equal(im.Data, testJPEG(t, n)) {
					t.Errorf("image %d (%s) has the wrong content", i, im.Name)
				}
			}
			if len(f.Hits()) != 1 {
				t.Errorf("requests %v, want the archive only", f.Hits())
			}
		})
	}
}

// TestScreenshotsNone: "No screenshots created" and a bare 500 mean none.
func TestScreenshotsNone(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]func(w http.ResponseWriter){
		"no screenshots text": func(w http.ResponseWriter) {
			writeJSON(w, 200, `{"error": true, "error_value": "No screenshots created for task 12"}`)
		},
		"html 500": func(w http.ResponseWriter) { writeHTML(w, 500) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) { h(w) })
			images, err := f.client().Screenshots(t.Context(), "12", 0)
			if err != nil || images == nil || len(images) != 0 {
				t.Fatalf("%v, %v; want an empty slice", images, err)
			}
			byNumber, err := f.client().ScreenshotsByNumber(t.Context(), "12", 0)
			if err != nil || byNumber == nil || len(byNumber) != 0 {
				t.Fatalf("by number: %v, %v; want an empty slice", byNumber, err)
			}
		})
	}
}

func TestScreenshotsErrorsPassThrough(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]error{
		"Task is still being analyzed": ErrStillAnalyzing,
		"Task does not exist":          ErrTaskDoesNotExist,
		"Task failed":                  ErrTaskFailed,
	} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
			writeJSON(w, 200, `{"error": true, "error_value": "`+text+`"}`)
		})
		_, err := f.client().Screenshots(t.Context(), "12", 0)
		if !errors.Is(err, want) || len(f.Hits()) != 1 {
			t.Errorf("%s: %v after %d requests", text, err, len(f.Hits()))
		}
		assertNoSecret(t, err)
	}
}

// numberedShots serves tasks/get/screenshot/12/<n>/ for 1..count (n may be
// zero-padded), "Screenshot does not exist" beyond, and archive for the
// archive endpoint.
func numberedShots(t testing.TB, count int, archive func(w http.ResponseWriter)) func(w http.ResponseWriter, r *http.Request, p string) {
	return func(w http.ResponseWriter, r *http.Request, p string) {
		rest, ok := strings.CutPrefix(p, "tasks/get/screenshot/12/")
		if !ok {
			t.Errorf("path %q", p)
			return
		}
		if rest == "" {
			archive(w)
			return
		}
		n, err := strconv.Atoi(strings.TrimSuffix(rest, "/"))
		if err != nil || n < 1 || n > count {
			writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
			return
		}
		w.Header().Set("Content-Type", "image/jpeg")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%04d.jpg", n))
		w.Write(testJPEG(t, n))
	}
}

// TestScreenshotsFallback: an unusable archive makes Screenshots fetch the
// shots one by one.
func TestScreenshotsFallback(t *testing.T) {
	t.Parallel()
	for name, archive := range map[string]func(w http.ResponseWriter){
		"unknown format": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte("this is not an archive at all"))
		},
		"corrupt bzip2": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte("BZh91AY&SY corrupt"))
		},
		"encrypted zip": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/zip")
			w.Write(zipArchive(t, shots(t, "shots/", 3), true))
		},
		"empty body": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/octet-stream")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, numberedShots(t, 3, archive))
			images, err := f.client().Screenshots(t.Context(), "12", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(images), ","); got != "0001.jpg,0002.jpg,0003.jpg" {
				t.Fatalf("images %s", got)
			}
			if len(f.Hits()) != 1+5 {
				t.Errorf("requests = %d, want the archive, number 0, 3 shots and the miss", len(f.Hits()))
			}
		})
	}
}

func TestScreenshotsByNumber(t *testing.T) {
	t.Parallel()
	f := newFake(t, numberedShots(t, 6, nil))
	images, err := f.client().ScreenshotsByNumber(t.Context(), "12", 4)
	if err != nil || strings.Join(names(images), ",") != "0001.jpg,0002.jpg,0003.jpg,0004.jpg" || len(f.Hits()) != 5 {
		t.Fatalf("%v, %v after %d requests", names(images), err, len(f.Hits()))
	}
	// Renumbered from 0000 (CAPE deduplication) with a single shot.
	g := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		if p == "tasks/get/screenshot/12/0/" {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(testJPEG(t, 0))
			return
		}
		writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
	})
	images, err = g.client().ScreenshotsByNumber(t.Context(), "12", 0)
	if err != nil || strings.Join(names(images), ",") != "0000.jpg" {
		t.Fatalf("zero-based: %v, %v", names(images), err)
	}
	// Renumbered from 0000 with several shots: 0000 is not lost.
	z := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		rest := strings.TrimSuffix(strings.TrimPrefix(p, "tasks/get/screenshot/12/"), "/")
		if n, err := strconv.Atoi(rest); err == nil && n <= 2 {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(testJPEG(t, n))
			return
		}
		writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
	})
	images, err = z.client().ScreenshotsByNumber(t.Context(), "12", 0)
	if err != nil || strings.Join(names(images), ",") != "0000.jpg,0001.jpg,0002.jpg" || len(z.Hits()) != 4 {
		t.Fatalf("zero-based, 3 shots: %v, %v after %d requests", names(images), err, len(z.Hits()))
	}
	// Other errors are returned.
	h := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		writeJSON(w, 200, `{"error": true, "error_value": "Task is still being analyzed"}`)
	})
	if _, err := h.client().ScreenshotsByNumber(t.Context(), "12", 0); !errors.Is(err, ErrStillAnalyzing) {
		t.Fatalf("err = %v", err)
	}
}

func TestScreenshotSingle(t *testing.T) {
	t.Parallel()
	png := testPNG(t)
	big := append([]byte{0xFF, 0xD8, 0xFF}, bytes.Repeat([]byte{0}, MaxImageBytes)...)
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		n.Add(1)
		switch p {
		case "tasks/get/screenshot/12/1/":
			w.Header().Set("Content-Type", "image/jpeg")
			w.Header().Set("Content-Disposition", "attachment; filename=12_0001.jpg")
			w.Write(testJPEG(t, 1))
		case "tasks/get/screenshot/12/2/":
			w.Header().Set("Content-Type", "image/png")
			w.Write(png)
		case "tasks/get/screenshot/12/3/":
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write([]byte("<html>not really</html>"))
		case "tasks/get/screenshot/12/4/":
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(big)
		case "tasks/get/screenshot/12/5/":
			w.Header().Set("Content-Type", "image/jpeg")
			w.Header().Set("Content-Disposition", `attachment; filename="../../x/evil.jpg"`)
			w.Write(testJPEG(t, 5))
		default:
			writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
		}
	})
	c := f.client()
	ctx := t.Context()
	im, err := c.Screenshot(ctx, "12", 1)
	if err != nil || im.Name != "12_0001.jpg" || im.ContentType != "image/jpeg" || !bytes.Equal(im.Data, testJPEG(t, 1)) {
		t.Fatalf("shot 1: %+v, %v", im, err)
	}
	im, err = c.Screenshot(ctx, "12", 2)
	if err != nil || im.Name != "0002.png" || im.ContentType != "image/png" {
		t.Fatalf("shot 2: %+v, %v", im, err)
	}
	if _, err := c.Screenshot(ctx, "12", 3); !errors.Is(err, ErrNotImage) {
		t.Fatalf("shot 3: %v", err)
	}
	if _, err := c.Screenshot(ctx, "12", 4); !errors.Is(err, ErrImageTooLarge) {
		t.Fatalf("shot 4: %v", err)
	}
	if im, err := c.Screenshot(ctx, "12", 5); err != nil || im.Name != "evil.jpg" {
		t.Fatalf("shot 5: %+v, %v", im, err)
	}
	_, err = c.Screenshot(ctx, "12", 99)
	var ae *APIError
	if !errors.Is(err, ErrScreenshotNotFound) || !errors.As(err, &ae) {
		t.Fatalf("shot 99: %v", err)
	}
	assertNoSecret(t, err)
}

func TestReadArchiveRejects(t *testing.T) {
	t.Parallel()
	for name, body := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("hello"),
		"truncated": tarBz2(t, shots(t, "", 3))[:60],
		"zip junk":  []byte("PK\x03\x04 junk"),
		"gzip junk": {0x1f, 0x8b, 0, 0},
	} {
		if _, err := readArchive(bytes.NewReader(body), 10, defaultArchiveLimits); !errors.Is(err, ErrArchiveUnusable) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// Bombs: members that expand beyond the caps, skipped or not. Each is
	// just past the cap it tests (compressing more costs seconds under the
	// race detector and tests nothing more).
	small := archiveLimits{image: 1 << 20, total: 2 << 20, archive: 1 << 20, expanded: 4 << 20, members: 5}
	zeros := make([]byte, small.expanded+1)
	for name, body := range map[string][]byte{
		"tar.bz2 expands":    tarBz2(t, []member{{"0001.jpg", zeros}}),
		"zip expands":        zipArchive(t, []member{{"a.jpg", zeros[:900<<10]}, {"b.jpg", zeros[:900<<10]}, {"c.jpg", zeros[:900<<10]}, {"d.jpg", zeros[:900<<10]}, {"e.jpg", zeros[:900<<10]}}, false),
		"tar many members":   tarBz2(t, shots(t, "", 6)),
		"zip larger than 1M": storedZip(t, "r.bin", randomBytes(int(small.archive)+1)),
	} {
		if _, err := readArchive(bytes.NewReader(body), 10, small); !errors.Is(err, ErrArchiveUnusable) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// Within the caps, an oversized member is skipped, not fatal.
	images, err := readArchive(bytes.NewReader(tarBz2(t, append([]member{{"0000.jpg", zeros[:2<<20]}}, shots(t, "", 2)...))), 10, small)
	if err != nil || strings.Join(names(images), ",") != "0001.jpg,0002.jpg" {
		t.Errorf("oversized member: %v, %v", names(images), err)
	}
}

// storedZip returns a zip of one member stored uncompressed: its size on
// the wire is its member's.
func storedZip(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	(&generator{state: 3}).Read(b)
	return b
}

func TestShotNumber(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]int{"0001.jpg": 1, "0000.jpg": 0, "12.png": 12, "9999.jpeg": 9999, "a.jpg": -1, "+1.jpg": -1, "-1.jpg": -1, ".jpg": -1, "1234567890.jpg": -1, "0002": 2} {
		if got := shotNumber(name); got != want {
			t.Errorf("shotNumber(%q) = %d, want %d", name, got, want)
		}
	}
}

// BenchmarkReadArchive lists archives of 60 shuffled 4 KiB-ish shots,
// keeping the first 20.
func BenchmarkReadArchive(b *testing.B) {
	ms := shuffled(append(shots(b, "", 60), member{"readme.txt", bytes.Repeat([]byte("x"), 4096)}))
	zipped := shots(b, "shots/", 60)
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"tar.bz2", tarBz2(b, ms)},
		{"zip", zipArchive(b, shuffled(zipped), false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				images, err := readArchive(bytes.NewReader(bc.body), 20, defaultArchiveLimits)
				if err != nil || len(images) != 20 || images[0].Name != "0001.jpg" {
					b.Fatalf("%d images, %v", len(images), err)
				}
			}
		})
	}
}

// TestBrokenScreenshotEndpointCostsFewRequests: when the archive is unusable
// and every numbered answer is unusable too (not an image, too large, a
// Django 404 page), the fallback gives up after a few requests instead of
// walking to shot 9999 (it used to send 10,001 requests for one task).
func TestBrokenScreenshotEndpointCostsFewRequests(t *testing.T) {
	t.Parallel()
	big := append([]byte{0xFF, 0xD8, 0xFF}, bytes.Repeat([]byte{0}, MaxImageBytes)...)
	for name, shot := range map[string]func(w http.ResponseWriter){
		"not an image": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write([]byte("this file was blocked by policy"))
		},
		"octet-stream garbage": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(bytes.Repeat([]byte{0}, 512))
		},
		"too large": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(big)
		},
		"html 404": func(w http.ResponseWriter) { writeHTML(w, 404) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
				if p == "tasks/get/screenshot/12/" {
					w.Header().Set("Content-Type", "application/octet-stream")
					w.Write([]byte("BZh91AY&SY corrupt archive"))
					return
				}
				shot(w)
			})
			images, err := f.client().Screenshots(t.Context(), "12", 3)
			if len(images) != 0 || err == nil {
				t.Fatalf("%d images, err %v from a broken endpoint; want none and an error", len(images), err)
			}
			assertNoSecret(t, err)
			if n := len(f.Hits()); n > 5 {
				t.Fatalf("%d requests for a broken screenshot endpoint (err %v), want at most 5", n, err)
			}
			t.Logf("%s: %d requests, err %v", name, len(f.Hits()), err)
		})
	}
	// Misses that are not in a row do not stop it: a shot in between
	// resets the count.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, p string) {
		rest := strings.TrimSuffix(strings.TrimPrefix(p, "tasks/get/screenshot/12/"), "/")
		switch n, _ := strconv.Atoi(rest); {
		case n == 1 || n == 4:
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write(testJPEG(t, n))
		case n <= 6:
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write([]byte("not a jpeg"))
		default:
			writeJSON(w, 200, `{"error": true, "error_value": "Screenshot does not exist"}`)
		}
	})
	images, err := f.client().ScreenshotsByNumber(t.Context(), "12", 0)
	if err != nil || strings.Join(names(images), ",") != "0001.jpg,0004.jpg" || len(f.Hits()) != 8 {
		t.Fatalf("%v, %v after %d requests", names(images), err, len(f.Hits()))
	}
}
