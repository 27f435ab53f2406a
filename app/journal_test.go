package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store/bolt"
)

// The journal's promise (bot/journal.go, docs/operations.md): an envelope
// the bot acks is never lost when the disk fails. Envelopes acked while
// the journal cannot be written wait in memory and are recorded and
// handled once the disk recovers: every message gets its card.

// diskOutage posts n messages while broken is true, then calls recover,
// and checks that each message was acked at once (no Slack retry needed)
// and gets its card. Each message is posted in a channel of its own:
// Slack takes about one post a second in a channel (notify.Poster paces
// them so), and the cards of ten messages in one channel would take 10 s
// to come out, which is Slack's pace, not the journal's.
func diskOutage(t *testing.T, h *harness, n int, failed func() bool, recover func()) {
	t.Helper()
	var ds []slackfake.Delivery
	var channels []string
	for i := range n {
		channel := fmt.Sprintf("C0OUTAGE%d", i)
		h.Slack.AddChannel(slackfake.Channel{ID: channel, Name: fmt.Sprintf("outage-%d", i)})
		// Long messages, so the journal needs fresh pages of the file.
		d, err := h.Slack.DeliverMessage(slackfake.MessageEvent{Channel: channel, User: alice,
			Text: fmt.Sprintf("outage %d <https://evil.test/outage-%d> %s", i, i, strings.Repeat("padding ", 400))})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
		channels = append(channels, channel)
		// Acked before the next arrives: each envelope meets the broken
		// journal on its own (no batch of them), as a trickle of messages
		// would.
		if err := h.Slack.WaitAcked(h.Ctx(5*time.Second), d.EnvelopeID); err != nil {
			t.Fatalf("envelope not acked during the outage: %v", err)
		}
	}
	if !failed() {
		t.Fatalf("the disk did not fail; logs:\n%s", h.Logs.String())
	}
	time.Sleep(300 * time.Millisecond) // let the spool retry against the broken disk
	recover()
	start := time.Now()
	// The spool is written as soon as the disk takes it: its retries
	// back off from 50 ms, and a burst of envelopes arriving during the
	// outage must not push the next retry to the 5 s cap (it did: each
	// arrival doubled the backoff).
	apptest.WaitFor(t, func() bool { return strings.Contains(h.Logs.String(), "the journal can be written again") })
	if took := journalBackAfter(t, h, start); took > 2*time.Second {
		t.Errorf("the held envelopes were recorded %v after the disk recovered, want within 2 s", took)
	}
	// The held messages are handled once the journal takes them (its
	// spool retries within half a second). The tests lift the URL
	// service's run budget (fastBudgets): at the default 1 submission a
	// second, ten messages would take 10 s more, which is the vendor's
	// pace, not the journal's.
	for i, d := range ds {
		h.WaitCardIn(channels[i], d.TS, func(b string) bool {
			return strings.Contains(b, fmt.Sprintf("outage-%d", i)) && strings.Contains(b, "Malicious")
		})
	}
	t.Logf("%d messages acked during the outage; all %d cards posted %v after the disk recovered",
		n, n, time.Since(start).Round(10*time.Millisecond))
	for i, d := range ds {
		if cards := apptest.BotMessages(h.Slack.Messages(channels[i], d.TS)); len(cards) != 1 {
			t.Errorf("message %s has %d cards, want 1", d.TS, len(cards))
		}
	}
	st := h.Slack.AckStats()
	t.Logf("ack latency p50 %v, max %v; redeliveries %d", st.P50.Round(time.Millisecond), st.Max.Round(time.Millisecond), st.Redeliveries)
}

// journalBackAfter is how long after recovered the bot logged that the
// journal took the held envelopes.
func journalBackAfter(t *testing.T, h *harness, recovered time.Time) time.Duration {
	t.Helper()
	for _, line := range strings.Split(h.Logs.String(), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "the journal can be written again: held envelopes recorded" {
			return rec.Time.Sub(recovered)
		}
	}
	t.Fatalf("the journal never took the held envelopes; logs:\n%s", h.Logs.String())
	return 0
}

func TestAckedEnvelopesSurviveAFailingJournalWrite(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	var failures atomic.Int64
	opts := apptest.QuickPolling()
	opts.StoreWriteFault = func() error {
		if broken.Load() {
			failures.Add(1)
			return &os.PathError{Op: "write", Path: "verdictbot.db", Err: syscall.EIO}
		}
		return nil
	}
	h := startBotOptions(t, fastBudgets, sim.Config{}, opts)
	d := h.Post("before <https://evil.test/before>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	broken.Store(true)
	diskOutage(t, h, 10, func() bool { return failures.Load() > 0 }, func() { broken.Store(false) })
	t.Logf("%d store writes failed during the outage", failures.Load())
	// The store is fully usable after the failed commits.
	d = h.Post("after <https://evil.test/after>")
	h.WaitCard(d.TS, func(b string) bool {
		return strings.Contains(b, "evil[.]test/after") && strings.Contains(b, "Malicious")
	})
}

// TestAckedEnvelopesSurviveAFullFilesystem runs the store on a small tmpfs
// and fills it: bbolt's commits fail with ENOSPC until space is freed.
func TestAckedEnvelopesSurviveAFullFilesystem(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full filesystem needs a tmpfs mount, impossible here (%v: %s); the injected-failure test covers the journal", err, strings.TrimSpace(string(out)))
	}
	h := startBot(t, withEnv(fastBudgets, map[string]string{"VERDICTBOT_DATA_DIR": dir}), sim.Config{})
	t.Cleanup(func() {
		h.Stop()
		exec.Command("umount", dir).Run()
	})
	d := h.Post("before <https://evil.test/before>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	filler := filepath.Join(dir, "filler")
	fillDisk(t, filler)
	enospc := func() bool { return strings.Contains(h.Logs.String(), "no space left on device") }
	diskOutage(t, h, 10, enospc, func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	})
}

// fillDisk writes path until the filesystem is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Fill the last partial block too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

// Issue 14: a message with nothing to scan is acked at once and dropped,
// without a journal write; one with a link is still journalled before its
// ack (its event id is recorded, so a redelivery is recognised).
func TestMessagesWithNothingToScanAreNotJournalled(t *testing.T) {
	t.Parallel()
	h := startBot(t, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet"}, sim.Config{})
	dataDir := h.Env["VERDICTBOT_DATA_DIR"]
	var quiet []slackfake.Delivery
	for _, e := range []slackfake.MessageEvent{
		{Channel: secChannel, User: alice, Text: "lunch at noon? no links here"},
		{Channel: secChannel, User: alice, Text: "joined", SubType: "channel_join"},
	} {
		d, err := h.Slack.DeliverMessage(e)
		if err != nil {
			t.Fatal(err)
		}
		quiet = append(quiet, d)
	}
	link := h.Post("see <https://evil.test/journalled>")
	h.WaitCard(link.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	ids := []string{link.EnvelopeID}
	for _, d := range quiet {
		ids = append(ids, d.EnvelopeID)
	}
	if err := h.Slack.WaitAcked(h.Ctx(10*time.Second), ids...); err != nil {
		t.Fatal(err)
	}
	if st := h.Slack.AckStats(ids...); !st.ExactlyOnce() {
		t.Fatalf("acks: %+v", st)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(dataDir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, d := range quiet {
		if fresh, err := db.SeenEvent(d.EventID); err != nil || !fresh {
			t.Errorf("event %s (nothing to scan) was recorded in the journal (fresh=%v, err=%v)", d.EventID, fresh, err)
		}
	}
	if fresh, err := db.SeenEvent(link.EventID); err != nil || fresh {
		t.Errorf("event %s (a link) was not recorded in the journal (fresh=%v, err=%v)", link.EventID, fresh, err)
	}
}

// An edit that removes the links of a message with a card is work (the
// card changes), though the edited message has nothing to scan: the
// pre-check cannot see the card, so it must let the edit through.
func TestEditThatRemovesTheLinksStillUpdatesTheCard(t *testing.T) {
	t.Parallel()
	h := startBot(t, nil, sim.Config{})
	d := h.Post("see <https://evil.test/removed>")
	h.WaitCard(d.TS, func(b string) bool { return strings.Contains(b, "Malicious") })
	edit, err := h.Slack.EditMessage(secChannel, d.TS, "never mind, wrong paste")
	if err != nil {
		t.Fatal(err)
	}
	h.WaitCard(d.TS, func(b string) bool { return !strings.Contains(b, "evil[.]test") && strings.Contains(b, "Not checked") })
	if n := len(apptest.BotMessages(h.Slack.Messages(secChannel, d.TS))); n != 1 {
		t.Fatalf("%d cards, want the one card updated in place", n)
	}
	// The ack reaches the fake over the socket, the card's update over
	// the Web API: under load the update can arrive first.
	if err := h.Slack.WaitAcked(h.Ctx(10*time.Second), edit.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if st := h.Slack.AckStats(edit.EnvelopeID); !st.ExactlyOnce() {
		t.Fatalf("edit's ack: %+v", st)
	}
}
