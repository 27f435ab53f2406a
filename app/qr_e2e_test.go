package app_test

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// posterPNG is a 900×1200 "poster": light background, a dark title bar,
// and a QR code holding text in its lower half.
func posterPNG(t *testing.T, text string) []byte {
	t.Helper()
	m, err := qrcode.NewQRCodeWriter().Encode(text, gozxing.BarcodeFormat_QR_CODE, 360, 360, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 900, 1200))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{250, 244, 230, 255}}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(0, 0, 900, 200), &image.Uniform{color.RGBA{40, 40, 90, 255}}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(270, 700, 630, 1060), m, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestQRCodeInASharedImageIsChecked: a poster image whose QR code holds a
// phishing link gets the link checked as the message's own ("QR code in
// poster.png links to …", malicious), with no sandbox configured (the image
// is read here and sent nowhere); an edit of the message's text keeps the
// line (an edit carries no files: the verdict must not drop off the card);
// a QR code of plain text and a channel whose files are off download or
// show nothing.
func TestQRCodeInASharedImageIsChecked(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "verbose"}, sim.Config{})
	const phish = "https://login.phish.test/qr-poster"
	_, ds := h.Share(secChannel, slackfake.File{Name: "poster.png", Content: posterPNG(t, phish)}, "come to the party!")
	ts := ds[0].TS
	c := h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Malicious") })
	b := apptest.BlocksText(c.Blocks)
	if !strings.Contains(b, "QR code in `poster.png` links to `hxxps://login[.]phish[.]test/qr-poster`") {
		t.Errorf("the card does not say where the link came from:\n%s", b)
	}
	if n := len(h.Sim.URLTasks(phish)); n != 1 {
		t.Errorf("the QR code's link was submitted %d times", n)
	}
	if n := h.Sim.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 0 {
		t.Errorf("the image went to the sandbox %d times", n)
	}
	if got := h.Metric(`verdictbot_local_signals_total{kind="qr_code"}`); got != "1" {
		t.Errorf("qr_code signals %q, want 1", got)
	}

	// An edit of the text: the QR code's line stays, still malicious.
	if _, err := h.Slack.EditMessage(secChannel, ts, "come to the party! <https://example.com/agenda>"); err != nil {
		t.Fatal(err)
	}
	c = h.WaitCardIn(secChannel, ts, func(b string) bool {
		return strings.Contains(b, "example[.]com/agenda") && !strings.Contains(b, "Scanning")
	})
	if b := apptest.BlocksText(c.Blocks); !strings.Contains(b, "QR code in `poster.png`") || !strings.Contains(b, "Malicious") {
		t.Errorf("after an edit the QR code's verdict left the card:\n%s", b)
	}

	// A QR code of plain text: no link, no card.
	before := len(h.Slack.Calls(slackfake.MethodFileDownload))
	_, ds = h.Share(secChannel, slackfake.File{Name: "wifi.png", Content: posterPNG(t, "WIFI:S:guest;T:WPA;P:letmein;;")}, "the wifi")
	apptest.WaitFor(t, func() bool { return len(h.Slack.Calls(slackfake.MethodFileDownload)) > before })
	time.Sleep(500 * time.Millisecond)
	for _, m := range apptest.BotMessages(h.Slack.Messages(secChannel, ds[0].TS)) {
		// Only the file card (no sandbox here: "not checked").
		if b := apptest.BlocksText(m.Blocks); strings.Contains(b, "QR code") || !strings.Contains(b, "no sandbox service") {
			t.Errorf("a QR code without a link got a link card: %s", b)
		}
	}

	// Files off in the channel: its images are not downloaded.
	if got := h.Slash(adminUser, "channel files off"); !strings.Contains(got, "not scanned") {
		t.Fatalf("files off: %q", got)
	}
	before = len(h.Slack.Calls(slackfake.MethodFileDownload))
	_, ds = h.Share(secChannel, slackfake.File{Name: "poster2.png", Content: posterPNG(t, "https://login.phish.test/qr-off")}, "again")
	// The message is handled: its file card says files are off here.
	h.WaitCardIn(secChannel, ds[0].TS, func(b string) bool { return strings.Contains(b, "file scanning is off") })
	if n := len(h.Slack.Calls(slackfake.MethodFileDownload)) - before; n != 0 {
		t.Errorf("%d downloads in a channel whose files are off", n)
	}
	if n := len(h.Sim.URLTasks("https://login.phish.test/qr-off")); n != 0 {
		t.Errorf("a QR code was read in a channel whose files are off")
	}
}

// TestShortcutReadsQRCodes: "Scan this message" on a message with a
// poster, in a channel whose mode is off (nothing was checked when it was
// posted), checks the link of the poster's QR code with the message's
// own, as a message checked when posted is.
func TestShortcutReadsQRCodes(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	if got := h.Slash(adminUser, "channel off"); !strings.Contains(got, "off") {
		t.Fatalf("mode off: %q", got)
	}
	const phish = "https://login.phish.test/qr-asked"
	_, ds := h.Share(secChannel, slackfake.File{Name: "flyer.png", Content: posterPNG(t, phish)}, "see you there")
	ts := ds[0].TS
	time.Sleep(300 * time.Millisecond)
	if n := len(h.Sim.URLTasks(phish)); n != 0 {
		t.Fatalf("checked in an off channel before anyone asked (%d tasks)", n)
	}
	if _, err := h.Slack.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: commands.ShortcutScanMessage, UserID: alice, Channel: secChannel, MessageTS: ts}); err != nil {
		t.Fatal(err)
	}
	c := h.WaitCardIn(secChannel, ts, func(b string) bool {
		return strings.Contains(b, "QR code in `flyer.png`") && strings.Contains(b, "Malicious")
	})
	if b := apptest.BlocksText(c.Blocks); !strings.Contains(b, "hxxps://login[.]phish[.]test/qr-asked") {
		t.Errorf("the card does not name the QR code's link:\n%s", b)
	}
	if n := len(h.Sim.URLTasks(phish)); n != 1 {
		t.Errorf("the QR code's link was submitted %d times, want 1", n)
	}
}
