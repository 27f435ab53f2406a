package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// flipPostWaitEnv sets app.Options.FlipPostWait in the bot process.
const flipPostWaitEnv = "GO_TEST_FLIP_POST_WAIT"

// flipRig is one run of the flip-removal kill test: a fake Slack with the
// quarantine's admin token, the simulator, and the bot's environment
// (quarantine at malicious, a recheck 2 s after the first verdict).
type flipRig struct {
	slack   *slackfake.Server
	sim     *sim.Server
	env     map[string]string
	trigger string // created when the flip's flow begins (the failpoint counts from there)
}

func newFlipRig(t *testing.T) *flipRig {
	fake := slackfaketest.Start(t,
		slackfake.WithUserToken(slackfake.UserToken{Token: apptest.AdminToken, User: adminUser, Scopes: []string{"chat:write", "files:write"}}))
	fake.AddUser(slackfake.User{ID: adminUser, Name: "secadmin", IsAdmin: true})
	fake.AddUser(slackfake.User{ID: alice, Name: "alice"})
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickProfile()})
	dir := t.TempDir()
	return &flipRig{slack: fake, sim: srv, trigger: filepath.Join(dir, "flip-begins"), env: flipEnv(map[string]string{
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_ADMINS": adminUser,
		"VERDICTBOT_DATA_DIR": filepath.Join(dir, "data"), "VERDICTBOT_LOG_FORMAT": "json", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
		// A kill between the flip's write and its card's show leaves the
		// removal waiting for the show: 3 s here, a minute in production.
		flipPostWaitEnv: "3s",
	})}
}

func (r *flipRig) start(t *testing.T, ctx context.Context, failpoint string, conns int) *process {
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	if failpoint != "" {
		env[failpointEnv] = failpoint + "@" + r.trigger
	}
	p := startProcess(t, env)
	if err := r.slack.WaitConnected(ctx, conns); err != nil {
		t.Fatalf("not connected: %v\n%s", err, p.logs.String())
	}
	return p
}

// tombstone reports whether the thread's card says the message was
// quarantined.
func (r *flipRig) tombstone(th [2]string) bool {
	for _, m := range r.slack.Messages(th[0], th[1]) {
		if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Quarantined:") {
			return true
		}
	}
	return false
}

// Issue 23 item 2: a removal a recheck flip decides is journalled with
// the flip (one write: UpdateCardQueue) and resumed after a kill. A
// counting run finds the store writes from the flip's recheck to the
// removal being done; then, for each, a fresh bot posts a link that the
// simulator judges clean and then phishing, is killed (SIGKILL,
// from the store's write hook) just before that write commits, and a new
// process starts on its data directory: the message must be removed, its
// card must be the tombstone, and Slack must have been asked to delete it
// once — or twice when the kill fell between the deletion and the write
// that marks it done, the second answered message_not_found (counted and
// reported: the restarted process cannot know the first arrived). A kill
// during the recheck's analysis, before the flip is written, decides no
// removal: the new process gives the dead one's recheck claim back when it
// opens the store (before, the claim held the URL for the analysis
// deadline plus a minute, 11 minutes by default) and makes the recheck
// again. A kill between the recheck's verdict write and the flip's card
// write leaves the flip pending (recorded with the verdict): the next run
// announces it. A kill between the flip's write and its card's show
// leaves the removal waiting for the show (quarantine.Quarantine.PostWait,
// a minute; 3 s here).
func TestKillAtEveryWriteOfAFlipRemovalRemovesOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// outcome is what one run saw.
	type outcome struct {
		writes, deletes    int
		shown              bool // the flip was on the card when the process died
		removed, tombstone bool
		logs               string
	}
	run := func(failpoint string) outcome {
		r := newFlipRig(t)
		p := r.start(t, ctx, failpoint, 1)
		// Clean at its first scan, phishing at every later one (the
		// simulator's table): the recheck flips it, and a recheck made
		// again after a kill flips it too.
		url := "https://login.phish.test/flip-kill-" + failpoint
		r.sim.FlipOnNextScan(url, sim.Scores{})
		th := postFlips(t, r.slack, url, []string{secChannel}, 1)[0]
		if err := os.WriteFile(r.trigger, nil, 0o600); err != nil {
			t.Error(err)
			return outcome{}
		}
		deleted := func() bool { m, _ := r.slack.Message(th[0], th[1]); return m.Deleted }
		shown := func() bool {
			for _, m := range r.slack.Messages(th[0], th[1]) {
				if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), "Malicious") {
					return true
				}
			}
			return false
		}
		var q *process
		o := outcome{shown: true}
		exited := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(exited) }()
		if failpoint != "count" {
			// Until the removal is done and shown, or the process killed
			// itself (it may have removed the message first).
		wait:
			for !(deleted() && r.tombstone(th)) && ctx.Err() == nil {
				select {
				case <-exited: // killed itself: a new process takes over
					o.shown = shown()
					q = r.start(t, ctx, "", 2)
					break wait
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		for deadline := time.Now().Add(30 * time.Second); !(deleted() && r.tombstone(th)) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // a second deletion on its way
		o.removed, o.tombstone = deleted(), r.tombstone(th)
		o.writes = writesIn(p.logs.String())
		o.deletes = deletesByTS(r.slack)[th[1]] + failedDeletes(r.slack, th[1])
		o.logs = p.logs.String()
		if q != nil {
			o.logs += "\nafter the restart:\n" + q.logs.String()
			stop(t, q)
		} else {
			// Not killed (the flow made fewer writes this time): stopped.
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				t.Errorf("failpoint %s: the bot did not exit within 15 s of SIGTERM", failpoint)
			}
		}
		return o
	}

	count := run("count")
	n := count.writes
	if n == 0 || !count.removed || !count.tombstone {
		t.Fatalf("the counting run: %d writes, removed %v, tombstone %v\n%s", n, count.removed, count.tombstone, count.logs)
	}
	t.Logf("%d store writes from the flip's recheck to the removal done", n)
	var mu sync.Mutex
	twice, early := map[int]int{}, []int{}
	sem := make(chan struct{}, 8) // runs at once: each waits on its processes and timers, not on the CPU (alone: 8.7 s of CPU in 45 s at 4)
	var wg sync.WaitGroup
	only, _ := strconv.Atoi(os.Getenv("GO_TEST_FLIPKILL_AT")) // one write only (0: all)
	for k := 1; k <= n; k++ {
		if only > 0 && k != only {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			o := run(strconv.Itoa(k))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case o.removed && o.tombstone:
				if o.deletes > 1 {
					twice[k] = o.deletes
				}
				if !o.shown {
					early = append(early, k)
				}
			default:
				t.Errorf("killed at write %d (flip shown before the kill: %v): removed %v, tombstone %v after the restart\n%s",
					k, o.shown, o.removed, o.tombstone, o.logs)
			}
		})
	}
	wg.Wait()
	slices.Sort(early)
	t.Logf("killed at each of writes 1-%d: removed with its tombstone (kills before the flip was shown: writes %v); deleted twice, the second not found, after kills at writes %v",
		n, early, twice)
}

// failedDeletes counts the chat.delete calls for ts that Slack answered
// message_not_found.
func failedDeletes(fake *slackfake.Server, ts string) int {
	k := 0
	for _, c := range fake.Calls("chat.delete") {
		if c.Params.Get("ts") == ts && c.Error == "message_not_found" {
			k++
		}
	}
	return k
}
