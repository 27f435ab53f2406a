package sandbox

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsnet/compress/bzip2"
)

// testKey has characters that need escaping, to catch every form the key
// can take in a URL.
const testKey = "sbx-S3CRET_key+odd chars"

// keyForms are the forms of testKey that must never appear in an error.
var keyForms = []string{testKey, url.PathEscape(testKey), url.QueryEscape(testKey), "S3CRET"}

// assertNoSecret fails if the key appears in err's text, in the text of any
// error it wraps, or in its %+v / %#v formatting.
func assertNoSecret(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	texts := []string{fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	var walk func(error)
	walk = func(e error) {
		for ; e != nil; e = errors.Unwrap(e) {
			texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					walk(x)
				}
			}
		}
	}
	walk(err)
	for _, s := range texts {
		for _, f := range keyForms {
			if strings.Contains(s, f) {
				t.Fatalf("API key leaked (%q) in error text %q", f, s)
			}
		}
	}
}

// hit is one request the fake service saw, with the key checked and
// stripped: Path is what follows /apineo/<key>/, escaped.
type hit struct {
	Method string
	Path   string
}

// fake is an httptest server that speaks the sandbox's wire formats. route
// gets the escaped path after the key ("tasks/status/12/").
type fake struct {
	t    testing.TB
	srv  *httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newFake(t testing.TB, route func(w http.ResponseWriter, r *http.Request, path string)) *fake {
	t.Helper()
	f := &fake{t: t}
	prefix := "/base/apineo/" + url.PathEscape(testKey) + "/"
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if !strings.HasPrefix(p, prefix) {
			t.Errorf("request path %q lacks the prefix with the key", p)
			http.NotFound(w, r)
			return
		}
		rest := strings.TrimPrefix(p, prefix)
		if !strings.HasSuffix(rest, "/") {
			t.Errorf("request path %q lacks the trailing slash", rest)
		}
		f.mu.Lock()
		f.hits = append(f.hits, hit{r.Method, rest})
		f.mu.Unlock()
		route(w, r, rest)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) Hits() []hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hit(nil), f.hits...)
}

// client returns a client for f with fast retries and no budgets.
func (f *fake) client(opts ...Option) *Client {
	f.t.Helper()
	base := []Option{
		WithRetries(2, time.Millisecond, 5*time.Millisecond),
		WithRateLimits(Limit{}, Limit{}),
	}
	c, err := New(f.srv.URL+"/base", testKey, append(base, opts...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func writeHTML(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!DOCTYPE html><html><body><h1>Error %d</h1></body></html>", status)
}

// --- screenshot fixtures -----------------------------------------------

// testJPEG returns a small valid JPEG whose colour encodes i.
func testJPEG(t testing.TB, i int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 12))
	c := color.RGBA{uint8(i * 40), uint8(255 - i*30), uint8(i * 7), 255}
	for y := 0; y < 12; y++ {
		for x := 0; x < 16; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testPNG(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type member struct {
	name string
	data []byte
}

// shuffled returns members in a deterministic shuffled order.
func shuffled(ms []member) []member {
	out := append([]member(nil), ms...)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// tarBz2 builds a bzip2-compressed tar as CAPE 2021 serves it.
func tarBz2(t testing.TB, ms []member) []byte {
	t.Helper()
	var b bytes.Buffer
	bw, err := bzip2.NewWriter(&b, &bzip2.WriterConfig{Level: 1})
	if err != nil {
		t.Fatal(err)
	}
	writeTar(t, bw, ms)
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeTar(t testing.TB, w io.Writer, ms []member) {
	t.Helper()
	tw := tar.NewWriter(w)
	for _, m := range ms {
		if strings.HasSuffix(m.name, "/") {
			if err := tw.WriteHeader(&tar.Header{Name: m.name, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// zipArchive builds a zip as newer CAPE serves it; encrypted sets the
// "encrypted" flag on every member.
func zipArchive(t testing.TB, ms []member, encrypted bool) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		if encrypted {
			h.Flags |= 0x1
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
