package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// process is a real verdictbot process (this test binary, see TestMain).
type process struct {
	cmd  *exec.Cmd
	logs *testutil.SyncBuffer
}

func startProcess(t testing.TB, env map[string]string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run")
	cmd.Env = []string{"GO_TEST_AS_VERDICTBOT=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: logs}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

func (p *process) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

func TestKill9InTheMiddleOf100AnalysesThenRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	fake := slackfaketest.Start(t)
	clock := &stoppableClock{}
	srv, base := simtest.Start(t, sim.Config{Now: clock.Now})
	env := map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_CHANNEL_MODE": "quiet",
		"VERDICTBOT_REPUTATION_RUN_RATE": "500", "VERDICTBOT_REPUTATION_REPORT_RATE": "500",
		"VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
	}
	first := startProcess(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("first process did not connect: %v\n%s", err, first.logs.String())
	}
	// 100 messages over 20 channels (Slack paces posts per channel at
	// about one a second). Each link is phishing and its analysis takes 1
	// to 6 s (d<N>s.test), so at the kill some cards are posted, some
	// analyses are in flight, and some posts may be under way.
	const n = 100
	type thread struct{ channel, ts string }
	var threads []thread
	var ids []string
	for i := range n {
		ch := fmt.Sprintf("C0CRASH%02d", i%20)
		url := fmt.Sprintf("https://d%ds.test/crash/%d", 1+i%6, i)
		srv.FlipOnNextScan(url, sim.Scores{Phishing: 0.97})
		d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: ch, User: alice, Text: fmt.Sprintf("look <%s>", url)})
		if err != nil {
			t.Fatal(err)
		}
		threads = append(threads, thread{ch, d.TS})
		ids = append(ids, d.EnvelopeID)
	}
	if err := fake.WaitAcked(ctx, ids...); err != nil {
		t.Fatal(err)
	}
	final := func() int {
		done := 0
		for _, th := range threads {
			for _, m := range fake.Messages(th.channel, th.ts) {
				if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Malicious") {
					done++
					break
				}
			}
		}
		return done
	}
	// Kill once every URL was submitted and some cards are out. The
	// simulator's clock stops once ten cards are final, until the restart:
	// no analysis ends after that, so some are in flight at the kill
	// however long the submissions took (on a loaded machine the last ones
	// used to come after every other card was out).
	for final() < 10 {
		if ctx.Err() != nil {
			t.Fatalf("submissions: %d, final %d\n%s", srv.Count(sim.ServiceReputation, sim.OpScan), final(), first.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	clock.Stop()
	for srv.Count(sim.ServiceReputation, sim.OpScan) < n {
		if ctx.Err() != nil {
			t.Fatalf("submissions: %d, final %d\n%s", srv.Count(sim.ServiceReputation, sim.OpScan), final(), first.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.kill9(t)
	t.Logf("killed at %s", time.Now().Format("15:04:05.000"))
	if f := final(); f == n {
		t.Fatalf("all %d cards were final before the kill; the test proves nothing", n)
	} else {
		t.Logf("killed with %d of %d cards final", f, n)
	}

	clock.Start()
	second := startProcess(t, env)
	if err := fake.WaitConnected(ctx, 2); err != nil {
		t.Fatalf("second process did not connect: %v\n%s", err, second.logs.String())
	}
	for final() < n {
		if ctx.Err() != nil {
			var missing []string
			for i, th := range threads {
				ok := false
				for _, m := range fake.Messages(th.channel, th.ts) {
					ok = ok || (m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Malicious"))
				}
				if !ok {
					url := fmt.Sprintf("https://d%ds.test/crash/%d", 1+i%6, i)
					var tasks []string
					for _, id := range srv.URLTasks(url) {
						task, _ := srv.URLTask(id)
						tasks = append(tasks, fmt.Sprintf("%s created %s", id, task.Created.Format("15:04:05.000")))
					}
					missing = append(missing, fmt.Sprintf("#%d %s/%s tasks %v", i, th.channel, th.ts, tasks))
				}
			}
			if path := os.Getenv("KILL9_LOG"); path != "" {
				os.WriteFile(path, []byte(first.logs.String()+"\n=====\n"+second.logs.String()), 0o644)
			}
			t.Fatalf("only %d of %d cards final after the restart; missing %v", final(), n, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, th := range threads {
		cards := 0
		for _, m := range fake.Messages(th.channel, th.ts) {
			if m.Bot {
				cards++
			}
		}
		if cards != 1 {
			t.Errorf("message %d: %d cards, want exactly 1", i, cards)
		}
	}
	if got := srv.Count(sim.ServiceReputation, sim.OpScan); got != n {
		t.Errorf("%d submissions for %d URLs: a target was submitted twice", got, n)
	}
	if !strings.Contains(second.logs.String(), "resumed unfinished work") {
		t.Errorf("the second process did not report resuming work")
	}
	second.cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- second.cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("did not exit within 10 s of SIGTERM")
	}
	for _, secret := range []string{fake.BotToken(), fake.AppToken(), e2eKey} {
		if bytes.Contains([]byte(first.logs.String()+second.logs.String()), []byte(secret)) {
			t.Error("a secret appears in the logs")
		}
	}
}

func TestCorruptStoreStopsStartUpWithAClearLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := bytes.Repeat([]byte("this is not a bbolt file "), 500)
	if err := os.WriteFile(dir+"/verdictbot.db", garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	fake := slackfaketest.Start(t)
	_, base := simtest.Start(t, sim.Config{})
	env := map[string]string{"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_DATA_DIR": dir, "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0"}
	code, _, stderr := runMain(env, "run")
	out := strings.TrimSpace(stderr)
	if code == 0 || strings.Contains(out, "\n") || !strings.Contains(out, "verdictbot.db is unreadable") || !strings.Contains(out, "left untouched") {
		t.Fatalf("exit %d, stderr %q", code, out)
	}
	after, _ := os.ReadFile(dir + "/verdictbot.db")
	if !bytes.Equal(after, garbage) {
		t.Fatal("the store file was changed: it must never be reset silently")
	}
	if n := len(fake.Calls("auth.test")); n != 0 {
		t.Fatalf("connected to Slack (%d auth.test) with an unusable store", n)
	}
}

// stoppableClock is a simulator's clock that a test can stop and start
// again: while it is stopped no analysis moves on, and the time it was
// stopped does not count afterwards.
type stoppableClock struct {
	mu      sync.Mutex
	behind  time.Duration // how far behind the real time it is
	stopped time.Time     // the time it shows while stopped; zero: running
}

func (c *stoppableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped.IsZero() {
		return c.stopped
	}
	return time.Now().Add(-c.behind)
}

// Stop stops the clock at the time it shows.
func (c *stoppableClock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped.IsZero() {
		c.stopped = time.Now().Add(-c.behind)
	}
}

// Start runs the clock again from the time it showed when stopped.
func (c *stoppableClock) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped.IsZero() {
		c.behind = time.Since(c.stopped)
		c.stopped = time.Time{}
	}
}
