package slackfake_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

func TestFileInfoAndDownload(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	api := newAPI(f)
	ctx := testCtx(t)
	img := makePNG(t)
	file := f.AddFile(slackfake.File{Name: "invoice.png", User: alice, Content: img, Channels: []string{chanSec}})

	info, _, _, err := api.GetFileInfoContext(ctx, file.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != file.ID || info.Name != "invoice.png" || info.Mimetype != "image/png" || info.Filetype != "png" ||
		info.Size != len(img) || info.User != alice || info.IsExternal || info.URLPrivateDownload != file.URLPrivateDownload ||
		!strings.HasPrefix(info.URLPrivate, f.URL()+"/files-pri/") || !strings.HasPrefix(info.URLPrivateDownload, f.URL()+"/files-pri/") {
		t.Errorf("files.info = %+v", info)
	}

	var buf bytes.Buffer
	if err := api.GetFileContext(ctx, info.URLPrivateDownload, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), img) {
		t.Error("downloaded bytes differ")
	}
	dl := f.Calls(slackfake.MethodFileDownload)
	if len(dl) != 1 || dl[0].TokenKind != slackfake.TokenBot || dl[0].TokenSource != "header" || dl[0].Status != http.StatusOK {
		t.Errorf("download calls = %+v", dl)
	}

	// Without a token Slack answers its HTML sign-in page, status 200.
	resp, err := http.Get(info.URLPrivateDownload)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "Sign in") {
		t.Errorf("tokenless download: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	// With a token that cannot read the file, slack-go recognises the redirect.
	wrong := slack.New("xoxb-someone-else", slack.OptionAPIURL(f.APIURL()))
	if err := wrong.GetFileContext(ctx, info.URLPrivateDownload, io.Discard); err == nil || !strings.Contains(err.Error(), "sign-in page") {
		t.Errorf("wrong token download: %v", err)
	}

	// slack-go sends the token only to the OptionAPIURL host: the same file
	// under another host name is refused before any request.
	other := strings.Replace(info.URLPrivateDownload, "127.0.0.1", "localhost", 1)
	if err := api.GetFileContext(ctx, other, io.Discard); err == nil || !strings.Contains(err.Error(), "refusing to send the token") {
		t.Errorf("other host: %v", err)
	}
	if n := len(f.Calls(slackfake.MethodFileDownload)); n != 3 {
		t.Errorf("%d download requests, want 3 (none for the refused host)", n)
	}

	if _, _, _, err := api.GetFileInfoContext(ctx, "F0NOTHERE1", 0, 0); errString(err) != "file_not_found" {
		t.Errorf("unknown file: %v", err)
	}
}

func TestExternalFileIsNotDownloadedWithTheToken(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	api := newAPI(f)
	ctx := testCtx(t)
	file := f.AddFile(slackfake.File{Name: "report.docx", User: alice, IsExternal: true, ExternalURL: "https://drive.example.com/file/d/1"})
	info, _, _, err := api.GetFileInfoContext(ctx, file.ID, 0, 0)
	if err != nil || !info.IsExternal || info.URLPrivate != "https://drive.example.com/file/d/1" {
		t.Fatalf("files.info = %+v, %v", info, err)
	}
	if err := api.GetFileContext(ctx, info.URLPrivateDownload, io.Discard); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("external download: %v", err)
	}
}

func TestUploadFileToThread(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.AddChannel(slackfake.Channel{ID: chanSec, Name: "security"})
	api := newAPI(f)
	ctx := testCtx(t)
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "<https://evil.example>"}))

	img := makePNG(t)
	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: "screenshot.png", FileSize: len(img), Reader: bytes.NewReader(img), Title: "evil.example",
		AltTxt: "Screenshot of evil.example", Channel: chanSec, ThreadTimestamp: root.TS,
	})
	if err != nil {
		t.Fatal(err)
	}
	ups := must[[]slackfake.Upload](t)(f.WaitUploads(ctx, chanSec, root.TS, 1))
	u := ups[0]
	if u.FileID != sum.ID || u.ContentType != "image/png" || !bytes.Equal(u.Content, img) || u.Title != "evil.example" ||
		u.DeclaredLength != len(img) || u.AltText != "Screenshot of evil.example" || u.MessageTS == "" {
		t.Errorf("upload = %+v", u)
	}
	msgs := must[[]slackfake.Message](t)(f.WaitMessages(ctx, chanSec, root.TS, 1))
	if len(msgs[0].Files) != 1 || msgs[0].Files[0] != sum.ID || msgs[0].TS != u.MessageTS {
		t.Errorf("thread message = %+v", msgs[0])
	}
	up := f.Calls(slackfake.MethodFileUpload)
	if len(up) != 1 || up[0].Status != http.StatusOK {
		t.Errorf("upload calls = %+v", up)
	}
	done := f.Calls("files.completeUploadExternal")
	if len(done) != 1 || done[0].Params.Get("thread_ts") != root.TS || done[0].Params.Get("channel_id") != chanSec {
		t.Errorf("complete calls = %+v", done)
	}

	info, _, _, err := api.GetFileInfoContext(ctx, sum.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	shares := info.Shares.Public[chanSec]
	if info.Mimetype != "image/png" || info.User != f.BotUserID() || len(shares) != 1 || shares[0].Ts != u.MessageTS || shares[0].ThreadTs != root.TS {
		t.Errorf("uploaded file info = %+v, shares %+v", info, shares)
	}

	jpg := makeJPEG(t)
	if _, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "shot.jpg", FileSize: len(jpg), Content: string(jpg),
		Channel: chanSec, ThreadTimestamp: root.TS}); err != nil {
		t.Fatal(err)
	}
	if ups := f.Uploads(chanSec, root.TS); len(ups) != 2 || ups[1].ContentType != "image/jpeg" {
		t.Errorf("uploads = %+v", ups)
	}

	// Completing a file that was never uploaded fails.
	if _, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: "F0NEVERUP1"}}, Channel: chanSec,
	}); errString(err) != "file_not_found" {
		t.Errorf("complete without upload: %v", err)
	}
}
