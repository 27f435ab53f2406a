package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// TestVerdictIsPostedBeforeScreenshots: with a screenshot endpoint that
// hangs or serves broken shots, the file card shows its verdict as soon as
// the report is in, before VERDICTBOT_SCREENSHOT_TIMEOUT could have run out, and then
// says the screenshots could not be fetched. A broken endpoint costs a few
// requests, not one per number up to 9999.
//
// Time to first card (logged): go test -count=1 -run TestVerdictIsPostedBeforeScreenshots -v ./app/
func TestVerdictIsPostedBeforeScreenshots(t *testing.T) {
	t.Parallel()
	// A verdict that waited for the screenshots would come at least this
	// long after the bot asked for them (the hanging endpoint), so the
	// first card must come before it, counted from the share: that bound
	// holds however long the upload and the analysis take on a loaded
	// machine (about 0.5 s alone, the analysis polled on
	// apptest.QuickPolling; up to 4.6 s was seen with -race in a full
	// parallel run when the first status check came after a second).
	const timeout = 6 * time.Second
	for _, tc := range []struct {
		name   string
		faults sim.Faults
	}{
		{"hanging", sim.Faults{ShotsDelay: time.Hour}},
		{"corrupt", sim.Faults{ShotsCorrupt: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startFileBot(t, map[string]string{"VERDICTBOT_SCREENSHOT_TIMEOUT": timeout.String()})
			h.Sim.SetFaults(tc.faults)
			start := time.Now()
			_, ds := h.Share(secChannel, slackfake.File{Name: "dropper.exe", Content: []byte(apptest.Eicar + " SIM:SHOTS=3 " + tc.name)}, "")
			ts := ds[0].TS
			h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Malicious") })
			// The first post or update of the card that shows the verdict
			// (later updates may have changed it since): no word on
			// screenshots yet.
			var first slackfake.Call
			for _, c := range h.Slack.Calls("") {
				if (c.Method == "chat.postMessage" || c.Method == "chat.update") && c.Params.Get("channel") == secChannel &&
					strings.Contains(c.Params.Get("blocks"), "dropper.exe") && strings.Contains(c.Params.Get("blocks"), "Malicious") {
					first = c
					break
				}
			}
			if first.Time.IsZero() {
				t.Fatalf("no chat.postMessage or chat.update of the card with its verdict")
			}
			took := first.Time.Sub(start)
			t.Logf("%s screenshot endpoint: first card (verdict) after %v (screenshot timeout %v)", tc.name, took.Round(time.Millisecond), timeout)
			if took >= timeout {
				t.Fatalf("the verdict waited for the screenshots: first card after %v", took)
			}
			if b := strings.ToLower(first.Params.Get("blocks")); strings.Contains(b, "screenshot") {
				t.Fatalf("the first card already speaks of screenshots: %s", b)
			}
			card := h.WaitCardIn(secChannel, ts, func(b string) bool { return strings.Contains(b, "Screenshots could not be fetched") })
			noted := time.Since(start)
			t.Logf("%s screenshot endpoint: card says screenshots could not be fetched after %v", tc.name, noted.Round(time.Millisecond))
			if !strings.Contains(apptest.BlocksText(card.Blocks), "Malicious") {
				t.Errorf("the note replaced the verdict:\n%s", apptest.BlocksText(card.Blocks))
			}
			if tc.name == "hanging" && noted < timeout-time.Second {
				t.Errorf("gave up on a hanging endpoint after %v, before the %v timeout", noted, timeout)
			}
			if ups := h.Slack.Uploads(secChannel, ts); len(ups) != 0 {
				t.Errorf("%d uploads from a broken screenshot endpoint", len(ups))
			}
			archive, numbered := h.Sim.Count(sim.ServiceSandbox, sim.OpScreenshotArchive), h.Sim.Count(sim.ServiceSandbox, sim.OpScreenshot)
			t.Logf("%s screenshot endpoint: %d archive + %d numbered screenshot requests", tc.name, archive, numbered)
			if archive+numbered > 5 {
				t.Errorf("%d archive and %d numbered screenshot requests for one file, want at most 5", archive, numbered)
			}
		})
	}
}
