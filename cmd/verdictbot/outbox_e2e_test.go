package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// failpointEnv names the store write at which the process kills itself
// (SIGKILL, before that write commits), or "count" to only count them.
// Each write announces itself on standard error ("failpoint: write N").
// "N@path" (or "count@path") counts only the writes made once the file
// path exists: the test creates it when the flow it studies begins.
const failpointEnv = "GO_TEST_FAILPOINT_WRITE"

// killAtWrite returns the embedded store's write hook of the failpoint:
// it runs at the end of each update transaction, before its commit.
func killAtWrite(spec string) func() error {
	spec, trigger, _ := strings.Cut(spec, "@")
	at, _ := strconv.Atoi(spec) // "count": 0, never
	var n atomic.Int64
	return func() error {
		if trigger != "" {
			if _, err := os.Stat(trigger); err != nil {
				return nil // the flow has not begun
			}
		}
		k := n.Add(1)
		fmt.Fprintf(os.Stderr, "failpoint: write %d\n", k)
		if at > 0 && k == int64(at) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return nil
	}
}

var failpointWrite = regexp.MustCompile(`failpoint: write (\d+)`)

// writesIn returns the number of the last store write a process's log
// announced (0 for none).
func writesIn(logs string) int {
	last := 0
	for _, m := range failpointWrite.FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.Atoi(m[1])
		last = max(last, n)
	}
	return last
}

// outboxRig is one run of the outbox test: a fake Slack, the simulator, a
// webhook receiver that is up, and the bot's environment on its own data
// directory.
type outboxRig struct {
	slack *slackfake.Server
	rcv   *siem
	env   map[string]string
}

func newOutboxRig(t *testing.T) *outboxRig {
	fake := slackfaketest.Start(t)
	_, base := simtest.Start(t, sim.Config{Profile: sim.QuickProfile()})
	const secret = "whsec-outbox-Secret-77"
	rcv := &siem{t: t, secret: []byte(secret), port: reservePort(t)}
	rcv.up(t)
	return &outboxRig{slack: fake, rcv: rcv, env: map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_CHANNEL_MODE": "quiet",
		"VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
		"VERDICTBOT_EVENTS_URL": "http://" + rcv.port.addr + "/hook/outbox", "VERDICTBOT_EVENTS_SECRET": secret,
		"VERDICTBOT_REPUTATION_RUN_RATE": "50", "VERDICTBOT_REPUTATION_REPORT_RATE": "200",
		eventsBackoffEnv: "1s",
	}}
}

// verdictEvents returns how many verdict events for target the receiver got.
func (r *outboxRig) verdictEvents(target string) int {
	_, bodies, _ := r.rcv.received()
	n := 0
	for _, b := range bodies {
		var ev struct {
			Unmapped struct{ Kind, Target string } `json:"unmapped"`
		}
		if json.Unmarshal(b, &ev) == nil && ev.Unmapped.Kind == "verdict" && ev.Unmapped.Target == target {
			n++
		}
	}
	return n
}

// start starts the bot with the failpoint spec (none: "") and waits
// until the fake has seen conns Socket Mode connections in all.
func (r *outboxRig) start(t *testing.T, ctx context.Context, failpoint string, conns int) *process {
	env := r.env
	if failpoint != "" {
		env = map[string]string{failpointEnv: failpoint}
		for k, v := range r.env {
			env[k] = v
		}
	}
	p := startProcess(t, env)
	if err := r.slack.WaitConnected(ctx, conns); err != nil {
		t.Fatalf("not connected: %v\n%s", err, p.logs.String())
	}
	return p
}

// Issue 23 item 1: the verdict's event is queued in the same write as the
// card's verdict (the outbox), so killing the process between any two of
// the store writes a verdict makes loses no event. A counting run finds
// the writes a malicious link's message makes, from its delivery to its
// event's; then, for each of them, a fresh bot is killed (SIGKILL, from
// the store's write hook: a failpoint, not a sleep) just before that
// write commits, a new process starts on its data directory, and the
// receiver must get the link's verdict event (at least once; duplicates
// are counted and reported).
func TestKillAtEveryWriteOfAVerdictLosesNoEvent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const link = "https://login.phish.test/outbox"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The counting run.
	r := newOutboxRig(t)
	p := r.start(t, ctx, "count", 1)
	before := writesIn(p.logs.String())
	if _, err := r.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "see <" + link + ">"}); err != nil {
		t.Fatal(err)
	}
	for r.verdictEvents(link) == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no verdict event in the counting run\n%s", p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	after := writesIn(p.logs.String())
	stop(t, p)
	if after <= before {
		t.Fatalf("the counting run saw no store write for the message (%d before, %d after)", before, after)
	}
	t.Logf("writes: %d at start, %d once the event was delivered", before, after)

	var mu sync.Mutex
	dups := map[int]int{}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for n := before + 1; n <= after; n++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := newOutboxRig(t)
			p := r.start(t, ctx, strconv.Itoa(n), 1)
			if _, err := r.slack.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "see <" + link + ">"}); err != nil {
				t.Error(err)
				return
			}
			if err := p.cmd.Wait(); err == nil || writesIn(p.logs.String()) != n {
				// A timer's write may shift the count by one: the kill
				// came at another write of the same flow.
				t.Logf("write %d: the process ended with %v after write %d", n, err, writesIn(p.logs.String()))
			}
			q := r.start(t, ctx, "", 2)
			// Delivered within 30 s of the restart, or lost.
			deadline := time.Now().Add(30 * time.Second)
			for r.verdictEvents(link) == 0 {
				if time.Now().After(deadline) || ctx.Err() != nil {
					t.Errorf("killed at write %d: the verdict event never reached the receiver\nfirst process:\n%s\nsecond:\n%s", n, p.logs.String(), q.logs.String())
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // a duplicate on its way
			mu.Lock()
			dups[n] = r.verdictEvents(link) - 1
			mu.Unlock()
			stop(t, q)
		})
	}
	wg.Wait()
	if !t.Failed() {
		t.Logf("killed at each of writes %d-%d: every verdict event delivered; duplicates by write: %v", before+1, after, dups)
	}
}
