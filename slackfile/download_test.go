package slackfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

const testToken = "xoxb-1111-2222-S3CRETtok3n"

// hitCounter is a server that must never be contacted: it records every
// request and the Authorization header it carried.
type hitCounter struct {
	*httptest.Server
	hits  atomic.Int32
	token atomic.Bool
}

func newHitCounter(t *testing.T) *hitCounter {
	t.Helper()
	h := &hitCounter{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			h.token.Store(true)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.WriteString(w, "MZ pretend malware")
	}))
	t.Cleanup(h.Close)
	return h
}

func TestDownloaderHostPolicy(t *testing.T) {
	t.Parallel()
	d, err := NewDownloader(testToken, "http://127.0.0.1:1234/api/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://files.slack.com/files-pri/T1-F1/download/a.pdf", true},
		{"https://slack.com/files-pri/T1-F1/download/a.pdf", true},
		{"https://FILES.Slack.COM./files-pri/T1-F1/a.pdf", true},
		{"https://files.slack.com:443/files-pri/T1-F1/a.pdf", true},
		{"https://files.slack-gov.com/files-pri/T1-F1/a.pdf", true},
		{"http://127.0.0.1:1234/files-pri/T1-F1/download/a.pdf", true}, // the API host
		{"http://files.slack.com/files-pri/T1-F1/a.pdf", false},        // not https
		{"https://files.slack.com:8443/files-pri/T1-F1/a.pdf", false},
		{"https://evilslack.com/a.pdf", false},
		{"https://slack.com.evil.test/a.pdf", false},
		{"https://files.slack.com@evil.test/a.pdf", false},
		{"https://user:pw@files.slack.com/a.pdf", false},
		{"https://evil.test/?u=https://files.slack.com/", false},
		{"https://slack-files.com/T1-F1-abc", false}, // public permalinks: no token needed
		{"https://a.slack-edge.com/x.png", false},    // static assets
		{"http://127.0.0.1:1235/files-pri/T1-F1/a.pdf", false},
		{"https://127.0.0.1:1234/files-pri/T1-F1/a.pdf", false},
		{"http://localhost:1234/files-pri/T1-F1/a.pdf", false},
		{"", false},
		{"/files-pri/T1-F1/a.pdf", false},
		{"files.slack.com/files-pri/T1-F1/a.pdf", false},
		{"https://drive.google.com/file/d/1/view", false},
	} {
		err := d.CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUntrustedHost) {
			t.Errorf("CheckURL(%q) = %v, want ErrUntrustedHost", tc.url, err)
		}
	}

	// The default API URL trusts only the Slack domains.
	def, err := NewDownloader(testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if def.CheckURL("https://files.slack.com/x") != nil || def.CheckURL("http://127.0.0.1:1234/x") == nil {
		t.Error("default API URL policy")
	}
	for _, bad := range []string{"ftp://slack.com/", "127.0.0.1:99", "http://u@127.0.0.1/"} {
		if _, err := NewDownloader(testToken, bad); err == nil {
			t.Errorf("NewDownloader accepted API URL %q", bad)
		}
	}
	if _, err := NewDownloader(" ", ""); err == nil {
		t.Error("NewDownloader accepted an empty token")
	}
}

// The token is never sent to a host that is not Slack's: a file URL on
// another host is refused before any request.
func TestDownloadRefusesForeignHostBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t)
	foreign := newHitCounter(t)
	d, err := NewDownloader(fake.BotToken(), fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := d.Download(t.Context(), foreign.URL+"/files-pri/T1-F1/download/a.exe", 0, &buf)
	if !errors.Is(err, ErrUntrustedHost) || n != 0 || buf.Len() != 0 {
		t.Fatalf("Download = %d, %v", n, err)
	}
	if strings.Contains(err.Error(), fake.BotToken()) {
		t.Errorf("token in error: %v", err)
	}
	// The same host name with another port is another host.
	other := strings.Replace(fake.URL(), "127.0.0.1", "localhost", 1) + "/files-pri/x"
	if _, err := d.Download(t.Context(), other, 0, io.Discard); !errors.Is(err, ErrUntrustedHost) {
		t.Errorf("localhost alias: %v", err)
	}
	if foreign.hits.Load() != 0 {
		t.Fatalf("the foreign host was contacted %d times", foreign.hits.Load())
	}
	if calls := fake.Calls(slackfake.MethodFileDownload); len(calls) != 0 {
		t.Errorf("%d download calls at the fake", len(calls))
	}
}

// A redirect from Slack's host to another host is refused before the
// redirected request is sent.
func TestDownloadRefusesRedirectToForeignHost(t *testing.T) {
	t.Parallel()
	foreign := newHitCounter(t)
	var slackHits atomic.Int32
	slackHost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slackHits.Add(1)
		switch r.URL.Path {
		case "/files-pri/T1-F1/download/a.exe":
			http.Redirect(w, r, foreign.URL+"/steal", http.StatusFound)
		case "/files-pri/T1-F2/download/b.exe":
			http.Redirect(w, r, "/files-pri/T1-F2/real/b.exe", http.StatusFound)
		case "/files-pri/T1-F2/real/b.exe":
			if r.Header.Get("Authorization") != "Bearer "+testToken {
				http.Error(w, "no token", http.StatusForbidden)
				return
			}
			_, _ = io.WriteString(w, "MZ the file")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(slackHost.Close)
	d, err := NewDownloader(testToken, slackHost.URL+"/api/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Download(t.Context(), slackHost.URL+"/files-pri/T1-F1/download/a.exe", 0, io.Discard)
	if !errors.Is(err, ErrUntrustedHost) {
		t.Fatalf("redirect to a foreign host: %v", err)
	}
	if foreign.hits.Load() != 0 || foreign.token.Load() {
		t.Fatal("the foreign host was contacted")
	}
	// A redirect on the same host is followed, with the token.
	var buf bytes.Buffer
	if n, err := d.Download(t.Context(), slackHost.URL+"/files-pri/T1-F2/download/b.exe", 0, &buf); err != nil || n != 11 || buf.String() != "MZ the file" {
		t.Fatalf("same-host redirect: %d %v %q", n, err, buf.String())
	}
}

func TestDownloadFromTheFake(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t)
	content := []byte("%PDF-1.7 a document")
	file := fake.AddFile(slackfake.File{Name: "invoice.pdf", User: "U1", Content: content, Channels: []string{"C1"}})
	d, err := NewDownloader(fake.BotToken(), fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := d.Download(t.Context(), file.URLPrivateDownload, 0, &buf)
	if err != nil || n != int64(len(content)) || !bytes.Equal(buf.Bytes(), content) {
		t.Fatalf("Download = %d, %v", n, err)
	}
	calls := fake.Calls(slackfake.MethodFileDownload)
	if len(calls) != 1 || calls[0].TokenKind != slackfake.TokenBot || calls[0].TokenSource != "header" {
		t.Errorf("calls %+v", calls)
	}
}

// Without the right token Slack redirects to its HTML sign-in page; that is
// a clear error, never a file to analyse.
func TestDownloadSignInPage(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t)
	file := fake.AddFile(slackfake.File{Name: "invoice.pdf", User: "U1", Content: []byte("%PDF-1.7"), Channels: []string{"C1"}})
	page := fake.AddFile(slackfake.File{Name: "page.html", User: "U1", Content: []byte("<!DOCTYPE html><html><body>hi</body></html>"), Channels: []string{"C1"}})
	wrong, err := NewDownloader("xoxb-someone-else", fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{file.URLPrivateDownload, page.URLPrivateDownload} {
		var buf bytes.Buffer
		_, err := wrong.Download(t.Context(), u, 0, &buf, ExpectHTML(strings.HasSuffix(u, ".html")))
		if !errors.Is(err, ErrSignInPage) || buf.Len() != 0 {
			t.Errorf("%s with a wrong token: %v, %d bytes written", u, err, buf.Len())
		}
		if err != nil && strings.Contains(err.Error(), "xoxb-someone-else") {
			t.Errorf("token in error: %v", err)
		}
	}
	// With the right token an HTML file is the file when Slack says so.
	d, _ := NewDownloader(fake.BotToken(), fake.APIURL())
	var buf bytes.Buffer
	if _, err := d.Download(t.Context(), page.URLPrivateDownload, 0, &buf, ExpectHTML(true)); err != nil || !strings.Contains(buf.String(), "hi") {
		t.Errorf("HTML file: %v %q", err, buf.String())
	}
	if _, err := d.Download(t.Context(), page.URLPrivateDownload, 0, io.Discard); !errors.Is(err, ErrSignInPage) {
		t.Errorf("HTML where a file was expected: %v", err)
	}
}

// HTML instead of the file is recognised by Content-Type and by its first
// bytes, without a redirect too.
func TestDownloadHTMLInsteadOfTheFile(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/typed":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<p>sign in</p>")
		case "/sniffed":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = io.WriteString(w, "\xef\xbb\xbf \r\n<!doctype HTML>\n<html><title>Slack</title>")
		case "/html-tag":
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = io.WriteString(w, "<HTML lang=en><body>")
		case "/not-html":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "<htmlish> is not a tag")
		}
	}))
	t.Cleanup(srv.Close)
	d, _ := NewDownloader(testToken, srv.URL+"/api/")
	for _, p := range []string{"/typed", "/sniffed", "/html-tag"} {
		if _, err := d.Download(t.Context(), srv.URL+p, 0, io.Discard); !errors.Is(err, ErrSignInPage) {
			t.Errorf("%s: %v", p, err)
		}
		if _, err := d.Download(t.Context(), srv.URL+p, 0, io.Discard, ExpectHTML(true)); err != nil {
			t.Errorf("%s as an HTML file: %v", p, err)
		}
	}
	if _, err := d.Download(t.Context(), srv.URL+"/not-html", 0, io.Discard); err != nil {
		t.Errorf("/not-html: %v", err)
	}
}

func TestLooksLikeHTML(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"<!DOCTYPE html>":         true,
		"<!doctype html><html>":   true,
		"  \n<html>":              true,
		"<html":                   true,
		"\xef\xbb\xbf<html lang>": true,
		"<htmlx>":                 false,
		"MZ\x90\x00<html>":        false,
		"%PDF-1.7 <html>":         false,
		"":                        false,
		"<!DOCTYPE svg>":          false,
	} {
		if got := LooksLikeHTML([]byte(in)); got != want {
			t.Errorf("LooksLikeHTML(%q) = %v", in, got)
		}
	}
}

func TestDownloadSizeLimit(t *testing.T) {
	t.Parallel()
	var bodyRead atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := int64(1000)
		if r.URL.Path == "/chunked" {
			// No Content-Length: the limit cuts the copy.
			w.Header().Set("Content-Type", "application/octet-stream")
			for i := 0; i < 100; i++ {
				n, err := w.Write(bytes.Repeat([]byte{'A'}, 1000))
				bodyRead.Add(int64(n))
				if err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = w.Write(bytes.Repeat([]byte{'A'}, int(size)))
	}))
	t.Cleanup(srv.Close)
	d, _ := NewDownloader(testToken, srv.URL+"/api/")
	var buf bytes.Buffer
	if n, err := d.Download(t.Context(), srv.URL+"/exact", 1000, &buf); err != nil || n != 1000 {
		t.Errorf("exactly the limit: %d %v", n, err)
	}
	buf.Reset()
	if n, err := d.Download(t.Context(), srv.URL+"/exact", 999, &buf); !errors.Is(err, ErrTooLarge) || n != 0 || buf.Len() != 0 {
		t.Errorf("Content-Length over the limit: %d %v (%d bytes written)", n, err, buf.Len())
	}
	buf.Reset()
	n, err := d.Download(t.Context(), srv.URL+"/chunked", 5000, &buf)
	if !errors.Is(err, ErrTooLarge) || n != 5001 {
		t.Errorf("chunked over the limit: %d %v", n, err)
	}
	var de *DownloadError
	if !errors.As(err, &de) || de.Retryable() {
		t.Errorf("too large is a *DownloadError, not retryable: %#v", err)
	}
}

func TestDownloadStatusAndTransportErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/down":
			w.WriteHeader(http.StatusBadGateway)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}
	}))
	t.Cleanup(srv.Close)
	d, _ := NewDownloader(testToken, srv.URL+"/api/", WithDownloadTimeout(200*time.Millisecond))
	check := func(path string, status int, retryable bool) *DownloadError {
		t.Helper()
		_, err := d.Download(t.Context(), srv.URL+path, 0, io.Discard)
		var de *DownloadError
		if !errors.As(err, &de) || de.StatusCode != status || de.Retryable() != retryable {
			t.Fatalf("%s: %#v", path, err)
		}
		if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), path) {
			t.Errorf("%s: error names the token or the path: %v", path, err)
		}
		return de
	}
	if de := check("/gone", 404, false); de.Error() != "slack file download from "+strings.TrimPrefix(srv.URL, "http://")+": HTTP 404" {
		t.Errorf("text %q", de.Error())
	}
	if de := check("/busy", 429, true); de.RetryAfter != 7*time.Second {
		t.Errorf("Retry-After %v", de.RetryAfter)
	}
	check("/down", 502, true)
	if de := check("/slow", 0, true); !errors.Is(de, context.DeadlineExceeded) {
		t.Errorf("slow: %v", de)
	}
	// A closed port.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	d2, _ := NewDownloader(testToken, closed.URL+"/api/")
	_, err := d2.Download(t.Context(), closed.URL+"/files-pri/x", 0, io.Discard)
	var de *DownloadError
	if !errors.As(err, &de) || !de.Retryable() || strings.Contains(err.Error(), testToken) {
		t.Errorf("connection refused: %v", err)
	}
	// A cancelled context is not retried.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = d.Download(ctx, srv.URL+"/gone", 0, io.Discard)
	if !errors.As(err, &de) || de.Retryable() || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
