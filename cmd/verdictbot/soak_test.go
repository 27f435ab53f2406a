package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
)

// The chaos soak (issue 23): `make soak` (VERDICTBOT_SOAK=30m by default,
// .ci/run runs 2m). Three `verdictbot run` replicas on PostgreSQL, the fake
// Slack and the simulator, a steady mixed load, and every SOAK/30 (at least 10 s) a
// random fault, several overlapping; the invariants are checked once the
// load stops and the cluster has drained.
//
// Settings (environment of go test):
//
//	VERDICTBOT_SOAK         how long the load runs (a duration); unset: skipped
//	VERDICTBOT_SOAK_SEED    the fault schedule's and load's seed (printed at the start)
//	VERDICTBOT_SOAK_FAULTS  the fault kinds to draw from, comma-separated (default: all);
//	                        a leading "-" removes a kind ("-pgstop": all but stopping PostgreSQL)
//	VERDICTBOT_SOAK_DRAIN   the bound on the drain after the load (default 4m)
//	VERDICTBOT_TEST_DATABASE_URL  the PostgreSQL server (the soak needs it)
//
// pgstop stops the machine's PostgreSQL (pg_ctlcluster): never run the
// soak with it beside other tests that use the server.
const (
	soakEnv       = "VERDICTBOT_SOAK"
	soakSeedEnv   = "VERDICTBOT_SOAK_SEED"
	soakFaultsEnv = "VERDICTBOT_SOAK_FAULTS"
	soakDrainEnv  = "VERDICTBOT_SOAK_DRAIN"
)

// The fault kinds, keep in sync with soak.try.
const (
	faultKill9      = "kill9"      // kill -9 of a replica, restarted 5–20 s later
	faultDisconnect = "disconnect" // Slack's disconnect (refresh_requested) or a dropped socket
	faultChat429    = "chat429"    // a 429 storm on chat.postMessage / chat.update
	faultURLService = "urlservice" // the URL service answers 5xx, HTML with 200, or times out
	faultSandbox    = "sandbox"    // the same for the sandbox
	faultPGStop     = "pgstop"     // PostgreSQL stopped for 10–60 s
	faultWebhook    = "webhook"    // the events receiver answers 503
	faultPGSession  = "pgsession"  // a replica's database sessions terminated
)

var soakFaultKinds = []string{faultKill9, faultDisconnect, faultChat429, faultURLService, faultSandbox, faultPGStop, faultWebhook, faultPGSession}

// Thresholds of the invariants.
const (
	soakAckP99 = 20 * time.Millisecond // ack p99 outside fault windows (issue 23)
	// soakAckWarmUp is left out of the ack p99 at the start of the load:
	// the replicas' first envelopes open their database pools and warm
	// their caches (two acks of 77 ms at +3 s broke a CI run on a loaded
	// machine; every ack after them was under 28 ms). They still count in
	// the "all" figures.
	soakAckWarmUp   = 5 * time.Second
	soakFaultMargin = 5 * time.Second // a fault window's effects last this long after its end
	soakDrainMax    = 4 * time.Minute // the drain's bound (VERDICTBOT_SOAK_DRAIN)
	// soakFlatMin is the shortest life of a process over which RSS and
	// goroutines are required flat (shorter ones are reported only);
	// soakRSSSlope and soakGoroutineSlope are the slopes above which they
	// are not.
	soakFlatMin        = 8 * time.Minute
	soakRSSSlope       = 2.0 // MiB per minute
	soakGoroutineSlope = 5.0 // per minute
)

// soakThread is one user message the soak sent and what it expects of it.
type soakThread struct {
	kind      string // link, repeat, text, file, dm
	channel   string
	ts        string
	targets   []string // URLs (the edit's new one appended) or the file's sha256
	envelopes []string
	at        time.Time
	wantCard  bool
	edited    bool
	clicked   bool
}

// soakClick is bob's False positive on a card.
type soakClick struct {
	envelope string
	th       *soakThread
	cardTS   string
	url      string
}

// soakFault is one injected fault.
type soakFault struct {
	kind, detail string
	start, end   time.Time
	done         bool
	// reach is how long after its end the fault's effects can appear:
	// a request the service held 40 s creates its task when the hold
	// ends.
	reach time.Duration
}

// soakSample is one reading of a replica's /metrics.
type soakSample struct {
	at         time.Time
	rss, gorts float64
}

// soakReceiver is the SIEM's webhook input: it checks signatures and
// records the sequence numbers in arrival order; while down it answers
// 503.
type soakReceiver struct {
	secret []byte
	mu     sync.Mutex
	down   bool
	seqs   []uint64
	bad    int
	refuse int
}

func (r *soakReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		r.refuse++
		http.Error(w, "<html><body>503 Service Unavailable</body></html>", http.StatusServiceUnavailable)
		return
	}
	if !signedBy(r.secret, body, req.Header) {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		Metadata struct {
			Sequence uint64 `json:"sequence"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(body, &ev)
	r.seqs = append(r.seqs, ev.Metadata.Sequence)
}

func (r *soakReceiver) setDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

func (r *soakReceiver) received() ([]uint64, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seqs), r.bad, r.refuse
}

// soak is one run.
type soak struct {
	t        *testing.T
	c        *cluster
	dur      time.Duration
	interval time.Duration
	drainMax time.Duration
	seed     uint64
	kinds    []string
	rng      *rand.Rand // the conductor's (faults)
	rcv      *soakReceiver
	pg       *soakPG
	begin    time.Time

	mu      sync.Mutex
	threads []*soakThread
	slashes []string       // envelope ids of slash commands
	clicks  []soakClick    // button clicks
	load    map[string]int // what the load sent, by kind
	faults  []*soakFault   // every fault, in order
	ends    []soakAction   // pending end (or restart) actions
	samples map[string][]soakSample
	exits   []soakExit
	simBusy *soakFault // the simulator holds one fault at a time
	pgDown  *soakFault
}

type soakAction struct {
	at time.Time
	fn func()
}

// TestSoak is the chaos soak; see the constants above. It is skipped
// unless VERDICTBOT_SOAK is set (make soak).
func TestSoak(t *testing.T) {
	spec := os.Getenv(soakEnv)
	if spec == "" {
		t.Skip(soakEnv + " unset: the chaos soak is skipped (make soak)")
	}
	if testing.Short() {
		t.Skip("-short: the chaos soak is skipped")
	}
	dur, err := time.ParseDuration(spec)
	if err != nil || dur < 30*time.Second {
		t.Fatalf("%s=%q: want a duration of at least 30s", soakEnv, spec)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(soakSeedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a number", soakSeedEnv, s)
		}
	}
	kinds, err := soakKinds(os.Getenv(soakFaultsEnv))
	if err != nil {
		t.Fatal(err)
	}
	drainMax := soakDrainMax
	if d := os.Getenv(soakDrainEnv); d != "" {
		if drainMax, err = time.ParseDuration(d); err != nil || drainMax <= 0 {
			t.Fatalf("%s=%q: want a duration", soakDrainEnv, d)
		}
	}
	interval := max(10*time.Second, dur/30)
	t.Logf("soak: %s of load, a fault every %s from %v; %s=%d replays it", dur, interval, kinds, soakSeedEnv, seed)

	// make soak runs go test without -timeout (it cannot add SOAK to
	// the drain): the soak bounds itself, with the goroutines' stacks as
	// go test's timeout prints them.
	watchdog := time.AfterFunc(dur+drainMax+10*time.Minute, func() {
		panic(fmt.Sprintf("TestSoak: still running %s after its start (load %s, drain bound %s)", dur+drainMax+10*time.Minute, dur, drainMax))
	})
	defer watchdog.Stop()
	s := &soak{t: t, dur: dur, interval: interval, seed: seed, kinds: kinds, rng: rand.New(rand.NewPCG(seed, 1)),
		load: map[string]int{}, samples: map[string][]soakSample{}, drainMax: drainMax}
	if slices.Contains(kinds, faultPGStop) {
		s.pg = newSoakPG(t)
	}
	s.run()
}

// soakKinds parses VERDICTBOT_SOAK_FAULTS.
func soakKinds(spec string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return slices.Clone(soakFaultKinds), nil
	}
	var in, out []string
	for k := range strings.SplitSeq(spec, ",") {
		k = strings.TrimSpace(k)
		name := strings.TrimPrefix(k, "-")
		if !slices.Contains(soakFaultKinds, name) {
			return nil, fmt.Errorf("%s: unknown fault kind %q (known: %v)", soakFaultsEnv, name, soakFaultKinds)
		}
		if strings.HasPrefix(k, "-") {
			out = append(out, name)
		} else {
			in = append(in, name)
		}
	}
	if len(in) == 0 {
		in = slices.Clone(soakFaultKinds)
	}
	in = slices.DeleteFunc(in, func(k string) bool { return slices.Contains(out, k) })
	if len(in) == 0 {
		return nil, fmt.Errorf("%s=%q leaves no fault kind", soakFaultsEnv, spec)
	}
	return in, nil
}

// Channels of the load: four verbose channels and one quarantining
// malicious messages.
const soakQuarantine = "C0SOAKQ"

var soakChannels = []string{"C0SOAK0", "C0SOAK1", "C0SOAK2", "C0SOAK3"}

func (s *soak) run() {
	t := s.t
	s.rcv = &soakReceiver{secret: []byte("whsec-soak-5150")}
	hook := httptest.NewServer(s.rcv)
	t.Cleanup(hook.Close)
	c := startCluster(t, sim.Config{}, map[string]string{
		"VERDICTBOT_CHANNEL_MODE":  "verbose",
		"VERDICTBOT_LEASE":         "5s",
		"VERDICTBOT_URL_DEADLINE":  "20s",
		"VERDICTBOT_EVENTS_URL":    hook.URL + "/siem",
		"VERDICTBOT_EVENTS_SECRET": string(s.rcv.secret),
		"SLACK_ADMIN_USER_TOKEN":   apptest.AdminToken,
		eventsBackoffEnv:           "5s",
		// No rechecks in the run: every second task of a URL is then a
		// duplicate submission.
		"VERDICTBOT_RECHECK_AFTER": "720h",
		// The load is one person's; the cap is not the subject.
		"VERDICTBOT_USER_LINKS_PER_HOUR": "0",
	}, apptest.WithAdminToken(adminUser))
	s.c = c
	if s.pg != nil {
		// Before the schema's cleanup (registered by startCluster) drops it.
		t.Cleanup(func() { s.pg.ensureStarted(t) })
	}
	apptest.SeedQuarantine(c.slack)
	c.slack.AddUser(slackfake.User{ID: bob, Name: "bob"})

	ctx, cancel := context.WithTimeout(context.Background(), s.dur+s.drainMax+5*time.Minute)
	defer cancel()
	for range 3 {
		s.spawn(true)
	}
	// The quarantine channel, set by an admin.
	d, err := c.slack.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: "channel quarantine malicious", UserID: adminUser, ChannelID: soakQuarantine})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.slack.WaitAcked(ctx, d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)

	s.begin = time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.generate(loadCtx) })

	warmup := max(30*time.Second, s.dur/10)
	nextFault := s.begin.Add(s.interval / 2)
	nextSample := s.begin.Add(warmup)
	for time.Since(s.begin) < s.dur {
		now := time.Now()
		s.supervise()
		s.runEnds(now, false)
		if !now.Before(nextFault) {
			s.inject()
			nextFault = nextFault.Add(s.interval)
		}
		if !now.Before(nextSample) {
			s.sample()
			nextSample = nextSample.Add(10 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopLoad()
	wg.Wait()
	loadEnd := time.Now()
	// The drain: every fault ended now, every replica up.
	s.runEnds(time.Now(), true)
	s.supervise()
	s.runEnds(time.Now(), true)
	for len(s.c.live()) < 3 {
		s.spawn(false)
	}
	t.Logf("load stopped after %s; draining (at most %s)", loadEnd.Sub(s.begin).Round(time.Second), s.drainMax)
	drained := s.drain(ctx, loadEnd)
	s.sample()
	s.report(drained, loadEnd)
}

// soakExit is a replica process that ended by itself.
type soakExit struct {
	name     string
	at       time.Time
	pgOutage bool // during a PostgreSQL outage (or just after)
	last     string
}

// supervise does what an orchestrator does: a replica that exited by
// itself (one started while PostgreSQL is stopped cannot open its store)
// is started again 2 s later. Each exit is recorded.
func (s *soak) supervise() {
	for _, r := range s.c.live() {
		if !exited(r.process) {
			continue
		}
		_ = r.cmd.Wait()
		r.dead = true
		e := soakExit{name: r.name, at: time.Now(), pgOutage: s.inFault(time.Now(), faultPGStop), last: r.tail(1)}
		s.mu.Lock()
		s.exits = append(s.exits, e)
		s.mu.Unlock()
		s.t.Logf("%7s %s exited by itself (%v): %.300s", time.Since(s.begin).Round(100*time.Millisecond), r.name, r.cmd.ProcessState, e.last)
		s.after(2*time.Second, func() {
			n := s.spawn(false)
			s.t.Logf("%7s restart %s as %s", time.Since(s.begin).Round(100*time.Millisecond), r.name, n.name)
		})
	}
}

// exited reports whether the process ended (a zombie, not yet waited for).
func exited(p *process) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// spawn starts a replica (waiting for its connection when wait).
func (s *soak) spawn(wait bool) *replica {
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return s.c.start(ctx)
	}
	return s.c.spawn()
}

// runEnds runs the end actions due at now (all when all).
func (s *soak) runEnds(now time.Time, all bool) {
	for {
		s.mu.Lock()
		i := slices.IndexFunc(s.ends, func(a soakAction) bool { return all || !now.Before(a.at) })
		if i < 0 {
			s.mu.Unlock()
			return
		}
		a := s.ends[i]
		s.ends = slices.Delete(s.ends, i, i+1)
		s.mu.Unlock()
		a.fn()
	}
}

// after schedules fn at d from now.
func (s *soak) after(d time.Duration, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends = append(s.ends, soakAction{time.Now().Add(d), fn})
}

// scaled is d for a 10-minute or longer soak, shortened in proportion
// below (at least lo): a 2-minute soak's faults last a fifth as long.
func (s *soak) scaled(d, lo time.Duration) time.Duration {
	if s.dur >= 10*time.Minute {
		return d
	}
	return max(lo, time.Duration(float64(d)*float64(s.dur)/float64(10*time.Minute)))
}

func (s *soak) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

func (s *soak) newFault(kind, detail string) *soakFault {
	f := &soakFault{kind: kind, detail: detail, start: time.Now()}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	s.t.Logf("%7s fault %-10s %s", time.Since(s.begin).Round(100*time.Millisecond), kind, detail)
	return f
}

func (s *soak) endFault(f *soakFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.end, f.done = time.Now(), true
}

// inject starts one random fault. A kind that cannot be injected now (the
// simulator or PostgreSQL already faulted, one replica left) is drawn
// again, at most a few times.
func (s *soak) inject() {
	for range 8 {
		if s.try(s.kinds[s.rng.IntN(len(s.kinds))]) {
			return
		}
	}
}

func (s *soak) try(kind string) bool {
	c := s.c
	switch kind {
	case faultKill9:
		live := c.live()
		if len(live) < 2 {
			return false
		}
		r := live[s.rng.IntN(len(live))]
		restart := s.between(5*time.Second, 20*time.Second)
		f := s.newFault(kind, fmt.Sprintf("%s, restarted after %s", r.name, restart.Round(100*time.Millisecond)))
		r.kill9(s.t)
		r.dead = true
		s.after(restart, func() {
			n := s.spawn(false)
			s.t.Logf("%7s restart %s as %s", time.Since(s.begin).Round(100*time.Millisecond), r.name, n.name)
			s.endFault(f)
		})
	case faultDisconnect:
		if s.rng.IntN(2) == 0 {
			f := s.newFault(kind, "refresh_requested on every connection")
			c.slack.Disconnect("refresh_requested")
			s.after(5*time.Second, func() { s.endFault(f) })
		} else {
			f := s.newFault(kind, "every socket dropped")
			c.slack.DropConnection()
			s.after(5*time.Second, func() { s.endFault(f) })
		}
	case faultChat429:
		n := 10 + s.rng.IntN(30)
		retry := s.between(time.Second, 3*time.Second).Round(time.Second)
		f := s.newFault(kind, fmt.Sprintf("%d calls each of chat.postMessage and chat.update answer 429 (Retry-After %s)", n, retry))
		c.slack.RateLimit("chat.postMessage", n, retry)
		c.slack.RateLimit("chat.update", n, retry)
		s.after(s.scaled(30*time.Second, 10*time.Second), func() { s.endFault(f) })
	case faultURLService, faultSandbox:
		s.mu.Lock()
		busy := s.simBusy != nil
		s.mu.Unlock()
		if busy {
			return false
		}
		service := sim.ServiceReputation
		if kind == faultSandbox {
			service = sim.ServiceSandbox
		}
		d := s.scaled(30*time.Second, 10*time.Second)
		var faults sim.Faults
		var what string
		switch s.rng.IntN(3) {
		case 0:
			faults = sim.Faults{Service: service, ErrorRate: 1, ErrorStatus: 502, Seed: s.seed}
			what = "502 to every request"
		case 1:
			faults = sim.Faults{Service: service, ErrorRate: 0.7, ErrorStatus: 200, Seed: s.seed}
			what = "an HTML page with 200 to 70% of requests"
		default:
			faults = sim.Faults{Service: service, Delay: 40 * time.Second}
			what = "answers held 40 s (timeouts)"
		}
		f := s.newFault(kind, fmt.Sprintf("%s for %s", what, d))
		s.mu.Lock()
		f.reach = faults.Delay
		s.simBusy = f
		s.mu.Unlock()
		c.sim.SetFaults(faults)
		s.after(d, func() {
			c.sim.SetFaults(sim.Faults{})
			s.mu.Lock()
			s.simBusy = nil
			s.mu.Unlock()
			s.endFault(f)
		})
	case faultPGStop:
		s.mu.Lock()
		busy := s.pgDown != nil
		s.mu.Unlock()
		if busy || s.pg == nil {
			return false
		}
		d := s.between(s.scaled(10*time.Second, 5*time.Second), s.scaled(60*time.Second, 15*time.Second))
		f := s.newFault(kind, fmt.Sprintf("PostgreSQL stopped for %s", d.Round(time.Second)))
		if err := s.pg.ctl("stop"); err != nil {
			s.t.Errorf("stopping PostgreSQL: %v", err)
			s.endFault(f)
			return true
		}
		s.mu.Lock()
		s.pgDown = f
		s.mu.Unlock()
		s.after(d, func() {
			if err := s.pg.ctl("start"); err != nil {
				s.t.Errorf("starting PostgreSQL: %v", err)
			}
			s.mu.Lock()
			s.pgDown = nil
			s.mu.Unlock()
			s.endFault(f)
		})
	case faultWebhook:
		d := s.scaled(30*time.Second, 10*time.Second)
		f := s.newFault(kind, fmt.Sprintf("the receiver answers 503 for %s", d))
		s.rcv.setDown(true)
		s.after(d, func() {
			s.rcv.setDown(false)
			s.endFault(f)
		})
	case faultPGSession:
		s.mu.Lock()
		busy := s.pgDown != nil
		s.mu.Unlock()
		live := c.live()
		if busy || len(live) == 0 {
			return false
		}
		r := live[s.rng.IntN(len(live))]
		n, err := s.killSessions(r)
		f := s.newFault(kind, fmt.Sprintf("%s: %d database sessions terminated (%v)", r.name, n, err))
		s.after(2*time.Second, func() { s.endFault(f) })
	default:
		s.t.Fatalf("unknown fault kind %q", kind)
	}
	return true
}

// killSessions terminates the replica's PostgreSQL sessions: those whose
// client port is one of the process's sockets to the server.
func (s *soak) killSessions(r *replica) (int, error) {
	u, err := url.Parse(s.c.schemaURL)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	ports, err := clientPorts(r.cmd.Process.Pid, port)
	if err != nil || len(ports) == 0 {
		return 0, fmt.Errorf("sockets of pid %d: %d found, %v", r.cmd.Process.Pid, len(ports), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.c.schemaURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE client_port = ANY($1) AND application_name LIKE 'verdictbot%' AND pid <> pg_backend_pid()`, ports).Scan(&n)
	return n, err
}

// clientPorts lists the local ports of pid's TCP connections to
// serverPort (from /proc: its socket inodes, matched in /proc/net/tcp*).
func clientPorts(pid int, serverPort string) ([]int32, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	sp, err := strconv.Atoi(serverPort)
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("%04X", sp)
	var out []int32
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, rem, _ := strings.Cut(fields[2], ":")
			_, loc, _ := strings.Cut(fields[1], ":")
			if rem != want {
				continue
			}
			p, err := strconv.ParseUint(loc, 16, 16)
			if err == nil {
				out = append(out, int32(p))
			}
		}
	}
	return out, nil
}

// soakPG stops and starts the machine's PostgreSQL cluster.
type soakPG struct {
	version string
	mu      sync.Mutex
	stopped bool
}

func newSoakPG(t *testing.T) *soakPG {
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) != 1 {
		t.Fatalf("the %s fault needs one local PostgreSQL cluster (/etc/postgresql: %v); %s=-%s leaves it out", faultPGStop, err, soakFaultsEnv, faultPGStop)
	}
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		t.Fatalf("the %s fault needs pg_ctlcluster: %v; %s=-%s leaves it out", faultPGStop, err, soakFaultsEnv, faultPGStop)
	}
	p := &soakPG{version: versions[0].Name()}
	t.Cleanup(func() { p.ensureStarted(t) })
	return p
}

// ensureStarted starts the server if the soak stopped it (a test that
// failed during an outage).
func (p *soakPG) ensureStarted(t *testing.T) {
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		if err := p.ctl("start"); err != nil {
			t.Errorf("starting PostgreSQL again: %v", err)
		}
	}
}

func (p *soakPG) ctl(action string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", p.version, "main", action).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %s: %v: %s", action, err, out)
	}
	p.stopped = action == "stop"
	return nil
}

// sample reads RSS and goroutines of every live replica.
func (s *soak) sample() {
	for _, r := range s.c.live() {
		if r.cmd.ProcessState != nil {
			continue
		}
		code, body := r.get("/metrics")
		if code != http.StatusOK {
			continue
		}
		smp := soakSample{at: time.Now(), rss: seriesValue(body, "process_resident_memory_bytes"), gorts: seriesValue(body, "go_goroutines")}
		s.mu.Lock()
		s.samples[r.name] = append(s.samples[r.name], smp)
		s.mu.Unlock()
	}
}

func seriesValue(body, series string) float64 {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// generate is the load: two actions a second until ctx ends, about one
// message with a link a second. Verbose cards whose analysis outlasts the
// 2 s grace are posted, then updated: with the edits, clicks and
// tombstones that needs about 35 chat.update a minute, two thirds of the
// three replicas' budget (Slack's tier 3, 50 a minute for the app,
// notify.PosterOptions), so the backlog a kill or a 429 storm leaves is
// worked off in the run.
func (s *soak) generate(ctx context.Context) {
	rng := rand.New(rand.NewPCG(s.seed, 2))
	c := s.c
	dm := c.slack.IMWith(alice)
	n := 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n++
		if err := s.act(rng, n, dm); err != nil {
			if errors.Is(err, slackfake.ErrNotConnected) {
				// A slash command or a click while every replica
				// reconnects (a disconnect fault): Slack shows the
				// user an error and delivers nothing; the load goes on.
				s.mu.Lock()
				s.load["not_connected"]++
				s.mu.Unlock()
				continue
			}
			s.t.Errorf("load: %v", err)
			return
		}
	}
}

// soakURL is the link of load item n: malicious (half), clean (a third),
// or malicious and slow (a sixth: 2 to 5 s, so analyses are in flight
// across faults, and their verbose cards are posted, then updated).
func soakURL(rng *rand.Rand, n int) string {
	switch rng.IntN(6) {
	case 0, 1, 2:
		return fmt.Sprintf("https://login-%d.phish.test/verify", n)
	case 3, 4:
		return fmt.Sprintf("https://docs-%d.example.com/page", n)
	}
	return fmt.Sprintf("https://u%d.d%ds.test/login/%d", n, 2+n%4, n)
}

func (s *soak) add(th *soakThread) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.threads = append(s.threads, th)
	s.load[th.kind]++
}

func (s *soak) act(rng *rand.Rand, n int, dm string) error {
	c := s.c
	channel := soakChannels[rng.IntN(len(soakChannels))]
	if rng.IntN(5) == 0 {
		channel = soakQuarantine
	}
	post := func(kind, ch, url string) error {
		text := "have a look <" + url + ">"
		if url == "" {
			text = fmt.Sprintf("plain words, no link (%d)", n)
		}
		d, err := c.slack.DeliverMessage(slackfake.MessageEvent{Channel: ch, User: alice, Text: text})
		if err != nil {
			return err
		}
		th := &soakThread{kind: kind, channel: ch, ts: d.TS, envelopes: []string{d.EnvelopeID}, at: time.Now(), wantCard: url != ""}
		if url != "" {
			th.targets = []string{url}
		}
		s.add(th)
		return nil
	}
	switch w := rng.IntN(100); {
	case w < 30:
		return post("link", channel, soakURL(rng, n))
	case w < 38: // a link posted a moment ago, in another channel
		s.mu.Lock()
		var recent []*soakThread
		for _, th := range s.threads {
			if th.kind == "link" && th.channel != channel && time.Since(th.at) < 5*time.Second {
				recent = append(recent, th)
			}
		}
		s.mu.Unlock()
		if len(recent) == 0 {
			return post("link", channel, soakURL(rng, n))
		}
		return post("repeat", channel, recent[rng.IntN(len(recent))].targets[0])
	case w < 54:
		return post("text", channel, "")
	case w < 64: // a file: EICAR or a clean text, each distinct
		content := fmt.Sprintf("quarterly notes %d SIM:SHOTS=0 SIM:DURATION=%d", n, 1+n%3)
		name := fmt.Sprintf("notes-%d.txt", n)
		if rng.IntN(2) == 0 {
			content = fmt.Sprintf("%s SIM:SHOTS=0 SIM:DURATION=%d sample %d", apptest.Eicar, 1+n%3, n)
			name = fmt.Sprintf("invoice-%d.exe", n)
		}
		f := c.slack.AddFile(slackfake.File{Name: name, Content: []byte(content)})
		ds, err := c.slack.ShareFile(channel, alice, f.ID, "")
		if err != nil {
			return err
		}
		sum := sha256.Sum256(f.Content)
		s.add(&soakThread{kind: "file", channel: channel, ts: ds[0].TS, targets: []string{hex.EncodeToString(sum[:])},
			envelopes: []string{ds[0].EnvelopeID, ds[1].EnvelopeID}, at: time.Now(), wantCard: true})
		return nil
	case w < 69: // an edit: a link message (not in the quarantine channel) gets a new link
		s.mu.Lock()
		var th *soakThread
		for _, x := range s.threads {
			if x.kind == "link" && !x.edited && x.channel != soakQuarantine && time.Since(x.at) > time.Second {
				th = x
				break
			}
		}
		if th != nil {
			th.edited = true
		}
		s.mu.Unlock()
		if th == nil {
			return post("text", channel, "")
		}
		url := fmt.Sprintf("https://login-%d.phish.test/edited", n)
		d, err := c.slack.EditMessage(th.channel, th.ts, "have a look <"+th.targets[0]+"> and <"+url+">")
		if err != nil {
			return err
		}
		s.mu.Lock()
		th.targets = append(th.targets, url)
		th.envelopes = append(th.envelopes, d.EnvelopeID)
		s.load["edit"]++
		s.mu.Unlock()
		return nil
	case w < 77: // a slash command
		texts := []string{"recent 5", "help"}
		s.mu.Lock()
		for i := len(s.threads) - 1; i >= 0 && i >= len(s.threads)-20; i-- {
			if th := s.threads[i]; th.kind == "link" && th.channel == channel {
				texts = append(texts, "history "+th.targets[0])
				if tasks := c.sim.URLTasks(th.targets[0]); len(tasks) > 0 {
					texts = append(texts, "status "+tasks[0])
				}
				break
			}
		}
		s.mu.Unlock()
		d, err := c.slack.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: texts[rng.IntN(len(texts))], UserID: alice, ChannelID: channel})
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.slashes = append(s.slashes, d.EnvelopeID)
		s.load["slash"]++
		s.mu.Unlock()
		return nil
	case w < 82: // bob reports a final malicious card as a false positive
		s.mu.Lock()
		var cands []*soakThread
		for _, th := range s.threads {
			// The card's menu names every category: the link's host says
			// whether it is malicious (every soakURL but example.com's).
			if (th.kind == "link" || th.kind == "repeat") && !th.clicked && !th.edited && th.channel != soakQuarantine && time.Since(th.at) > 3*time.Second &&
				!strings.Contains(th.targets[0], "example.com") {
				cands = append(cands, th)
			}
		}
		s.mu.Unlock()
		for _, th := range cands {
			for _, m := range apptest.BotMessages(c.slack.Messages(th.channel, th.ts)) {
				b := apptest.BlocksText(m.Blocks)
				if m.Deleted || strings.Contains(b, "Scanning") || strings.Contains(b, "Could not check") || !strings.Contains(b, notify.ActionFalsePositive) {
					continue
				}
				d, err := c.slack.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: th.channel, MessageTS: m.TS, ActionID: notify.ActionFalsePositive})
				if err != nil {
					return err
				}
				s.mu.Lock()
				th.clicked = true
				s.clicks = append(s.clicks, soakClick{envelope: d.EnvelopeID, th: th, cardTS: m.TS, url: th.targets[0]})
				s.load["click"]++
				s.mu.Unlock()
				return nil
			}
		}
		return post("text", channel, "")
	case w < 88: // a direct message to the bot
		return post("dm", dm, soakURL(rng, n))
	default:
		return post("link", channel, soakURL(rng, n))
	}
}

// soakCards is the state of the threads' bot messages.
type soakCards struct {
	final  []bool     // a final card and no other bot message (or none, and none wanted)
	cards  []int      // bot messages per thread
	levels []string   // the final card's level word
	texts  [][]string // for the report
}

var soakLevels = []string{"Quarantined", "Malicious", "Suspicious", "Could not check", "Not checked", "Clean"}

func (s *soak) cardState(threads []*soakThread) soakCards {
	st := soakCards{final: make([]bool, len(threads)), cards: make([]int, len(threads)), levels: make([]string, len(threads)), texts: make([][]string, len(threads))}
	s.c.slack.Inspect(func(fs *slackfake.State) {
		for i, th := range threads {
			final := false
			for _, m := range fs.Messages(th.channel, th.ts) {
				if !m.Bot {
					continue
				}
				st.cards[i]++
				b := apptest.BlocksText(m.Blocks)
				st.texts[i] = append(st.texts[i], fmt.Sprintf("deleted=%v %.160q", m.Deleted, b))
				if m.Deleted || strings.Contains(b, "Scanning") {
					continue
				}
				for _, l := range soakLevels {
					if strings.Contains(b, l) {
						final = true
						st.levels[i] = l
						break
					}
				}
			}
			if th.wantCard {
				st.final[i] = final
			} else {
				st.final[i] = st.cards[i] == 0
			}
		}
	})
	return st
}

// drain waits until every thread is settled, the database holds no
// unfinished work and the receiver has every event, or soakDrainMax.
func (s *soak) drain(ctx context.Context, loadEnd time.Time) bool {
	s.mu.Lock()
	threads := slices.Clone(s.threads)
	s.mu.Unlock()
	deadline := time.Now().Add(s.drainMax)
	for {
		st := s.cardState(threads)
		settled := !slices.Contains(st.final, false)
		jobs, unfinished, err := s.c.pending(ctx)
		last, dead, qerr := s.eventsQueued(ctx)
		seqs, _, _ := s.rcv.received()
		got := map[uint64]bool{}
		for _, q := range seqs {
			got[q] = true
		}
		delivered := qerr == nil && int64(len(got))+dead >= last
		if settled && err == nil && jobs == 0 && unfinished == 0 && delivered {
			s.t.Logf("drained %s after the load stopped", time.Since(loadEnd).Round(100*time.Millisecond))
			time.Sleep(2 * time.Second) // a late duplicate would show
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			n := 0
			for _, f := range st.final {
				if !f {
					n++
				}
			}
			s.t.Logf("not drained after %s: %d threads unsettled, %d journal jobs, %d unfinished cards (%v), events %d of %d received (%d dead, %v)",
				s.drainMax, n, jobs, unfinished, err, len(got), last, dead, qerr)
			for _, r := range s.c.replicas {
				s.t.Logf("=== %s (dead %v), last lines:\n%s", r.name, r.dead, r.tail(10))
			}
			// Slack's view of the last minute, and every live replica's
			// goroutines (SIGQUIT: Go prints them and exits) in its log,
			// kept in the artifacts.
			var calls []string
			for _, m := range []string{"chat.postMessage", "chat.update"} {
				n, failed := 0, 0
				for _, call := range s.c.slack.Calls(m) {
					if time.Since(call.Time) < time.Minute {
						n++
						if call.Error != "" {
							failed++
						}
					}
				}
				calls = append(calls, fmt.Sprintf("%s %d (%d failed)", m, n, failed))
			}
			s.t.Logf("Slack calls in the last minute: %s", strings.Join(calls, ", "))
			for _, r := range s.c.live() {
				_ = r.cmd.Process.Signal(syscall.SIGQUIT)
				_ = r.cmd.Wait()
				r.dead = true
			}
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// leftovers describes the work the database still holds: journal jobs
// and unfinished cards (a few of each).
func (s *soak) leftovers() string {
	return s.inspectDB(func(ctx context.Context, conn *pgx.Conn) string { return leftoversIn(ctx, conn, s.begin) })
}

// inspectDB runs a description of the database on a connection of its
// own, within 5 s; a connection that fails describes itself.
func (s *soak) inspectDB(describe func(ctx context.Context, conn *pgx.Conn) string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.c.schemaURL)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(context.Background())
	return describe(ctx, conn)
}

func leftoversIn(ctx context.Context, conn *pgx.Conn, begin time.Time) string {
	var out []string
	rows, err := conn.Query(ctx, `SELECT kind, event_id, received FROM jobs ORDER BY id LIMIT 5`)
	if err == nil {
		for rows.Next() {
			var kind, ev string
			var at time.Time
			if rows.Scan(&kind, &ev, &at) == nil {
				out = append(out, fmt.Sprintf("job %s %s at +%s", kind, ev, at.Sub(begin).Round(100*time.Millisecond)))
			}
		}
		rows.Close()
	}
	rows, err = conn.Query(ctx, `SELECT channel, source_ts, card_ts, left(record::text, 300) FROM cards WHERE unfinished LIMIT 5`)
	if err == nil {
		for rows.Next() {
			var ch, src, cts, rec string
			if rows.Scan(&ch, &src, &cts, &rec) == nil {
				out = append(out, fmt.Sprintf("unfinished card %s/%s (card %q) %s", ch, src, cts, rec))
			}
		}
		rows.Close()
	}
	var jobs, unfinished int
	_ = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM cards WHERE unfinished)`).Scan(&jobs, &unfinished)
	return fmt.Sprintf("%d journal jobs, %d unfinished cards: %s", jobs, unfinished, strings.Join(out, "; "))
}

// storedCard is what the database holds of a thread's card (its links'
// card, or its file card): the record's state, for a message the soak
// found without a final card.
func (s *soak) storedCard(th *soakThread) string {
	return s.inspectDB(func(ctx context.Context, conn *pgx.Conn) string { return storedCardIn(ctx, conn, th) })
}

func storedCardIn(ctx context.Context, conn *pgx.Conn, th *soakThread) string {
	src := th.ts
	if th.kind == "file" {
		src += "/files"
	}
	var cardTS, rec string
	var unfinished bool
	var updated time.Time
	err := conn.QueryRow(ctx, `SELECT card_ts, unfinished, updated, left(record::text, 600) FROM cards WHERE channel = $1 AND source_ts = $2`,
		th.channel, src).Scan(&cardTS, &unfinished, &updated, &rec)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("card_ts %q unfinished %v updated %s %s", cardTS, unfinished, updated.Format("15:04:05.000"), rec)
}

// eventsQueued returns the last event sequence number given and how many
// events were dead-lettered.
func (s *soak) eventsQueued(ctx context.Context) (last, dead int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.c.schemaURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, `SELECT (SELECT last FROM event_seq), (SELECT count(*) FROM event_dead)`).Scan(&last, &dead)
	return last, dead, err
}

// overlapsFault reports whether [from, to] meets a fault window of a kind
// in kinds, its reach and margin included.
func (s *soak) overlapsFault(from, to time.Time, kinds ...string) bool {
	for _, f := range s.faults {
		end := f.end
		if !f.done {
			end = time.Now()
		}
		if slices.Contains(kinds, f.kind) && !to.Before(f.start) && from.Before(end.Add(f.reach+soakFaultMargin)) {
			return true
		}
	}
	return false
}

// inFault reports whether at falls in a fault window (of a kind in kinds,
// or any when none are given), its margin included.
func (s *soak) inFault(at time.Time, kinds ...string) bool {
	for _, f := range s.faults {
		end := f.end
		if !f.done {
			end = time.Now()
		}
		if (len(kinds) == 0 || slices.Contains(kinds, f.kind)) && !at.Before(f.start) && at.Before(end.Add(soakFaultMargin)) {
			return true
		}
	}
	return false
}

// report checks the invariants and prints the table.
func (s *soak) report(drained bool, loadEnd time.Time) {
	t, c := s.t, s.c
	s.mu.Lock()
	defer s.mu.Unlock()
	var broken []string
	breakf := func(format string, args ...any) {
		broken = append(broken, fmt.Sprintf(format, args...))
	}
	examples := func(name string, ex []string) {
		if len(ex) == 0 {
			return
		}
		n, more := len(ex), ""
		if n > 5 {
			more = fmt.Sprintf(" … and %d more", n-5)
			ex = ex[:5]
		}
		breakf("%s: %d: %s%s", name, n, strings.Join(ex, "; "), more)
	}
	if !drained {
		breakf("drain: the cluster did not settle within %s of the load's end: %s", s.drainMax, s.leftovers())
	}

	// Every message exactly one final card (none for a message without a
	// link), no bot message at a channel's top level.
	st := s.cardState(s.threads)
	var noFinal, notOne []string
	levelCount := map[string]int{}
	cards := 0
	wantCards := 0
	for i, th := range s.threads {
		cards += st.cards[i]
		if th.wantCard {
			wantCards++
			levelCount[st.levels[i]]++
		}
		desc := fmt.Sprintf("%s %s/%s %v", th.kind, th.channel, th.ts, th.targets)
		switch {
		case !st.final[i] && th.wantCard:
			noFinal = append(noFinal, fmt.Sprintf("%s: %q; stored: %s", desc, st.texts[i], s.storedCard(th)))
		case th.wantCard && st.cards[i] != 1:
			notOne = append(notOne, fmt.Sprintf("%s: %d bot messages %q", desc, st.cards[i], st.texts[i]))
		case !th.wantCard && st.cards[i] != 0:
			notOne = append(notOne, fmt.Sprintf("%s (no link): %d bot messages %q", desc, st.cards[i], st.texts[i]))
		}
	}
	examples("messages without a final card", noFinal)
	examples("messages without exactly one card", notOne)
	var top []string
	c.slack.Inspect(func(fs *slackfake.State) {
		for _, ch := range append(slices.Clone(soakChannels), soakQuarantine) {
			for _, m := range fs.Messages(ch, "") {
				if m.Bot {
					top = append(top, fmt.Sprintf("%s: %.120s", ch, m.Text))
				}
			}
		}
	})
	examples("bot messages at the top level of a channel", top)

	// Each URL and file submitted once; a second task is excused when a
	// fault that can hide a submission's answer (a kill, the database or
	// its session, the service's timeouts) covers the first one, and
	// expected when a report was made on the first one before it (a
	// reported verdict is checked again, not reused: scanstore's Recall).
	//
	// A service fault hides the answer of every analysis it meets, not
	// only of those it saw created: the bot polls a URL's task for up to
	// its deadline (VERDICTBOT_URL_DEADLINE, 20 s here), and one whose
	// polls all failed or timed out ends "could not check" with nothing
	// recorded, so the next message with the URL submits it again (the
	// first soaks' duplicates). A task a held request created is created
	// when the hold ends (the fault's reach).
	hiding := []string{faultKill9, faultPGStop, faultPGSession, faultURLService, faultSandbox}
	const urlDeadline = 20 * time.Second // VERDICTBOT_URL_DEADLINE below
	urls, files := map[string]bool{}, map[string]bool{}
	for _, th := range s.threads {
		for _, tg := range th.targets {
			if th.kind == "file" {
				files[tg] = true
			} else {
				urls[tg] = true
			}
		}
	}
	var dupURL, dupFile []string
	excused, afterReport := 0, 0
	urlTasks, fileTasks := 0, 0
	for u := range urls {
		ids := c.sim.URLTasks(u)
		urlTasks += len(ids)
		for k := 1; k < len(ids); k++ {
			prev, _ := c.sim.URLTask(ids[k-1])
			next, _ := c.sim.URLTask(ids[k])
			if slices.ContainsFunc(prev.Dispositions, func(d sim.Disposition) bool { return d.Time.Before(next.Created) }) {
				afterReport++
				continue
			}
			if s.inFault(prev.Created, hiding...) || s.overlapsFault(prev.Created, prev.Created.Add(urlDeadline), faultURLService) {
				excused++
				continue
			}
			var times, where []string
			for _, id := range ids {
				task, _ := c.sim.URLTask(id)
				times = append(times, task.Created.Format("15:04:05.000"))
			}
			for _, th := range s.threads {
				if slices.Contains(th.targets, u) {
					where = append(where, fmt.Sprintf("%s %s/%s edited=%v", th.kind, th.channel, th.ts, th.edited))
				}
			}
			dupURL = append(dupURL, fmt.Sprintf("%s: %d tasks created at %v, in messages %v", u, len(ids), times, where))
		}
	}
	for h := range files {
		ids := c.sim.SandboxTasksFor(h)
		fileTasks += len(ids)
		for k := 1; k < len(ids); k++ {
			prev, _ := c.sim.SandboxTask(ids[k-1])
			if s.inFault(prev.Created, hiding...) {
				excused++
				continue
			}
			dupFile = append(dupFile, fmt.Sprintf("%.12s…: tasks %v (first at %s)", h, ids, prev.Created.Format("15:04:05.000")))
		}
	}
	examples("URLs submitted more than once outside a fault", dupURL)
	examples("files uploaded more than once outside a fault", dupFile)

	// A false positive is reported to the service once per task.
	var twice []string
	reports := 0
	for u := range urls {
		for _, id := range c.sim.URLTasks(u) {
			task, _ := c.sim.URLTask(id)
			fp := 0
			for _, d := range task.Dispositions {
				if d.Option == "fp" {
					fp++
				}
			}
			reports += fp
			if fp > 1 {
				// When each report reached the service, and each click of
				// the URL: when, on which card, and what bob was told.
				var at, clicks []string
				for _, d := range task.Dispositions {
					if d.Option == "fp" {
						at = append(at, "+"+d.Time.Sub(s.begin).Round(100*time.Millisecond).String())
					}
				}
				for _, k := range s.clicks {
					if k.url != u {
						continue
					}
					e, _ := c.slack.Envelope(k.envelope)
					told := ""
					for _, x := range c.slack.Ephemerals(k.th.channel, bob) {
						if !x.At.Before(e.SentAt) {
							told = fmt.Sprintf(" told +%s %.80q", x.At.Sub(s.begin).Round(100*time.Millisecond), x.Text)
							break
						}
					}
					clicks = append(clicks, fmt.Sprintf("%s/%s +%s acks %d%s", k.th.channel, k.cardTS,
						e.SentAt.Sub(s.begin).Round(100*time.Millisecond), len(e.Acks), told))
				}
				// What the store says of the task's cards.
				stored := s.inspectDB(func(ctx context.Context, conn *pgx.Conn) string {
					var out []string
					rows, err := conn.Query(ctx, `SELECT c.channel, c.card_ts, c.record->>'gen', c.updated,
						COALESCE(jsonb_path_query_array(c.record, '$.card.lines[*].task_id')::text, ''),
						COALESCE(jsonb_path_query_array(c.record, '$.card.lines[*].reports[*].user')::text, '')
						FROM tasks t JOIN target_cards tc ON tc.target = t.target
						JOIN cards c ON c.channel = tc.channel AND c.source_ts = tc.source_ts WHERE t.task_id = $1`, id)
					if err != nil {
						return err.Error()
					}
					defer rows.Close()
					for rows.Next() {
						var ch, ts, gen, tasks, users string
						var upd time.Time
						if err := rows.Scan(&ch, &ts, &gen, &upd, &tasks, &users); err != nil {
							return err.Error()
						}
						out = append(out, fmt.Sprintf("%s/%s gen %s updated +%s tasks %s reporters %s", ch, ts, gen,
							upd.Sub(s.begin).Round(100*time.Millisecond), tasks, users))
					}
					return strings.Join(out, "; ")
				})
				twice = append(twice, fmt.Sprintf("%s task %s: %d fp reports (at %v; clicks %v; cards of the task: %s)", u, id, fp, at, clicks, stored))
			}
		}
	}
	examples("false positives reported twice", twice)

	// Events: 1…last each received at least once, first arrivals in order.
	last, dead, qerr := s.eventsQueued(context.Background())
	if qerr != nil {
		breakf("events: the queue could not be read: %v", qerr)
	}
	seqs, bad, refused := s.rcv.received()
	first := map[uint64]int{}
	dups := 0
	var order []uint64
	for _, q := range seqs {
		if _, ok := first[q]; ok {
			dups++
			continue
		}
		first[q] = len(order)
		order = append(order, q)
	}
	var missing []string
	for q := int64(1); q <= last; q++ {
		if _, ok := first[uint64(q)]; !ok {
			missing = append(missing, strconv.FormatInt(q, 10))
		}
	}
	examples("events never delivered", missing)
	var outOfOrder []string
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			outOfOrder = append(outOfOrder, fmt.Sprintf("%d after %d", order[i], order[i-1]))
		}
	}
	examples("events first delivered out of order", outOfOrder)
	if bad > 0 {
		breakf("events: %d with a bad signature", bad)
	}
	if dead > 0 {
		breakf("events: %d dead-lettered", dead)
	}

	// Envelopes: every event acked (at least one of its envelopes); every
	// acked slash command and click answered; ack p99 outside faults.
	envs := c.slack.Envelopes()
	acked := map[string]bool{}
	var lat []time.Duration
	var latAll []time.Duration
	var slow []slackfake.Envelope // outside faults, slowest first
	unackedEnv := 0
	for _, e := range envs {
		if len(e.Acks) > 0 {
			if e.EventID != "" {
				acked[e.EventID] = true
			}
			acked[e.ID] = true
			latAll = append(latAll, e.Acks[0].Latency)
			if !s.inFault(e.SentAt) && e.SentAt.Sub(s.begin) >= soakAckWarmUp {
				lat = append(lat, e.Acks[0].Latency)
				slow = append(slow, e)
			}
		} else if !e.SentAt.IsZero() {
			unackedEnv++
		}
	}
	var neverAcked []string
	events := map[string]bool{}
	for _, e := range envs {
		if e.EventID != "" && !e.Echo {
			events[e.EventID] = true
			if !acked[e.EventID] && !slices.Contains(neverAcked, e.EventID) {
				neverAcked = append(neverAcked, fmt.Sprintf("%s (%s %s)", e.EventID, e.InnerType, e.SubType))
			}
		}
	}
	examples("events never acked", neverAcked)
	answered := map[string]bool{}
	for _, p := range c.slack.ResponsePosts() {
		answered[p.EnvelopeID] = true
	}
	var lostSlash []string
	slashAcked, slashLost := 0, 0
	for _, id := range s.slashes {
		e, _ := c.slack.Envelope(id)
		switch {
		case len(e.Acks) == 0:
			slashLost++ // never written, or its socket closed first: Slack's loss, not the bot's
		case !answered[id] && !ackAnswered(e):
			lostSlash = append(lostSlash, fmt.Sprintf("%s (sent %s)", id, e.SentAt.Format("15:04:05.000")))
		default:
			slashAcked++
		}
	}
	examples("acked slash commands never answered", lostSlash)
	// A click acked is shown: the report of a URL adds its audit line (who
	// reported) to the card clicked. Clicks on two cards of one URL may be
	// handled in either order (by two replicas, or one redelivered after
	// a kill): the report is sent once, and shown on the card of the click
	// that sent it, so of a URL's acked clicks, one card at least shows it.
	clicksAcked := 0
	shownURL := map[string]bool{}
	for _, k := range s.clicks {
		if e, _ := c.slack.Envelope(k.envelope); len(e.Acks) > 0 {
			m, ok := c.slack.Message(k.th.channel, k.cardTS)
			if ok && strings.Contains(apptest.BlocksText(m.Blocks), "<@"+bob+">") {
				shownURL[k.url] = true
			}
		}
	}
	var unshown []string
	for _, k := range s.clicks {
		e, _ := c.slack.Envelope(k.envelope)
		if len(e.Acks) == 0 {
			continue
		}
		clicksAcked++
		m, _ := c.slack.Message(k.th.channel, k.cardTS)
		if !shownURL[k.url] {
			shownURL[k.url] = true // one line per URL
			// What bob was told, and what the card says, for the log.
			var told []string
			for _, x := range c.slack.Ephemerals(k.th.channel, bob) {
				if !x.At.Before(e.SentAt) {
					told = append(told, fmt.Sprintf("+%s %q", x.At.Sub(s.begin).Round(100*time.Millisecond), x.Text))
				}
			}
			for _, p := range c.slack.ResponsePosts() {
				if p.EnvelopeID == k.envelope {
					told = append(told, fmt.Sprintf("response %.200s", p.Body))
				}
			}
			unshown = append(unshown, fmt.Sprintf("%s/%s (card %s, %s, clicked at +%s; told %s; card now %.300q)", k.th.channel, k.th.ts, k.cardTS, k.url,
				e.SentAt.Sub(s.begin).Round(100*time.Millisecond), strings.Join(told, ", "), apptest.BlocksText(m.Blocks)))
		}
	}
	examples("acked clicks whose report the card does not show", unshown)
	p50, p99 := soakPercentile(lat, 50), soakPercentile(lat, 99)
	slices.SortFunc(slow, func(a, b slackfake.Envelope) int { return cmp.Compare(b.Acks[0].Latency, a.Acks[0].Latency) })
	var slowest []string
	for _, e := range slow[:min(3, len(slow))] {
		slowest = append(slowest, fmt.Sprintf("%s (%s %s%s, +%s, conn %d)", e.Acks[0].Latency.Round(10*time.Microsecond), e.Type, e.InnerType, map[bool]string{true: " echo"}[e.Echo],
			e.SentAt.Sub(s.begin).Round(100*time.Millisecond), e.ConnID))
	}
	if len(lat) > 0 && p99 >= soakAckP99 {
		breakf("ack p99 outside fault windows %s, want < %s (%d envelopes)", p99, soakAckP99, len(lat))
	}

	// RSS and goroutines after warm-up, per process.
	type slope struct {
		name          string
		span          time.Duration
		n             int
		rss, goroutin float64
		rssEnd        float64
		gEnd          float64
	}
	var slopes []slope
	for _, r := range c.replicas {
		smp := s.samples[r.name]
		if len(smp) < 3 {
			continue
		}
		x := make([]float64, len(smp))
		rss := make([]float64, len(smp))
		g := make([]float64, len(smp))
		for i, v := range smp {
			x[i] = v.at.Sub(smp[0].at).Minutes()
			rss[i] = v.rss / (1 << 20)
			g[i] = v.gorts
		}
		sl := slope{name: r.name, span: smp[len(smp)-1].at.Sub(smp[0].at), n: len(smp), rss: linSlope(x, rss), goroutin: linSlope(x, g), rssEnd: rss[len(rss)-1], gEnd: g[len(g)-1]}
		slopes = append(slopes, sl)
		if sl.span >= soakFlatMin && (sl.rss > soakRSSSlope || sl.goroutin > soakGoroutineSlope) {
			breakf("%s grows over %s: RSS %+.2f MiB/min (want ≤ %.1f), goroutines %+.2f/min (want ≤ %.1f)",
				r.name, sl.span.Round(time.Second), sl.rss, soakRSSSlope, sl.goroutin, soakGoroutineSlope)
		}
	}

	// A replica exits by itself only when it starts during a PostgreSQL
	// outage (it cannot open its store; the orchestrator restarts it).
	var crashed []string
	for _, e := range s.exits {
		if !e.pgOutage {
			crashed = append(crashed, fmt.Sprintf("%s at +%s: %.200s", e.name, e.at.Sub(s.begin).Round(100*time.Millisecond), e.last))
		}
	}
	examples("replicas that exited by themselves outside a PostgreSQL outage", crashed)

	// The table.
	var b strings.Builder
	fmt.Fprintf(&b, "\n== chaos soak: %s of load, seed %d (%s=%d), faults every %s, load average %s\n", loadEnd.Sub(s.begin).Round(time.Second), s.seed, soakSeedEnv, s.seed, s.interval, loadAvg())
	fmt.Fprintf(&b, "%-28s %s\n", "faults injected", "")
	byKind := map[string]int{}
	var faultTime time.Duration
	for _, f := range s.faults {
		byKind[f.kind]++
		faultTime += f.end.Sub(f.start)
	}
	for _, k := range soakFaultKinds {
		if slices.Contains(s.kinds, k) {
			fmt.Fprintf(&b, "  %-26s %d\n", k, byKind[k])
		}
	}
	fmt.Fprintf(&b, "  %-26s %d (%s of fault time in all)\n", "total", len(s.faults), faultTime.Round(time.Second))
	fmt.Fprintf(&b, "%-28s %d started in all, %d exited by themselves (%d during a PostgreSQL outage)\n", "replica processes", len(c.replicas), len(s.exits), len(s.exits)-len(crashed))
	fmt.Fprintf(&b, "%-28s %d (links %d, repeats %d, no link %d, files %d, DMs %d); edits %d, slash commands %d, clicks %d; %d commands or clicks refused by Slack with no connection open\n", "messages", len(s.threads),
		s.load["link"], s.load["repeat"], s.load["text"], s.load["file"], s.load["dm"], s.load["edit"], s.load["slash"], s.load["click"], s.load["not_connected"])
	var lv []string
	for _, l := range append(slices.Clone(soakLevels), "") {
		if levelCount[l] > 0 {
			name := l
			if name == "" {
				name = "none final"
			}
			lv = append(lv, fmt.Sprintf("%s %d", name, levelCount[l]))
		}
	}
	fmt.Fprintf(&b, "%-28s %d bot messages in threads for %d messages wanting one (%s)\n", "cards", cards, wantCards, strings.Join(lv, ", "))
	fmt.Fprintf(&b, "%-28s URL %d tasks for %d URLs, files %d tasks for %d files (second tasks: %d after a report, %d excused by a fault); fp reports %d\n", "submissions",
		urlTasks, len(urls), fileTasks, len(files), afterReport, excused, reports)
	fmt.Fprintf(&b, "%-28s queued %d, delivered %d distinct, duplicates %d, dead %d, refused while down %d\n", "events", last, len(first), dups, dead, refused)
	fmt.Fprintf(&b, "%-28s %d envelopes (%d events), %d never acked; slash commands %d answered, %d lost before reaching the bot; clicks %d acked of %d\n", "envelopes",
		len(envs), len(events), unackedEnv, slashAcked, slashLost, clicksAcked, len(s.clicks))
	fmt.Fprintf(&b, "%-28s p50 %s p99 %s over %d envelopes outside fault windows and the first 5 s; all: p50 %s p99 %s max %s\n", "acks",
		p50, p99, len(lat), soakPercentile(latAll, 50), soakPercentile(latAll, 99), soakPercentile(latAll, 100))
	fmt.Fprintf(&b, "%-28s %s\n", "slowest acks outside faults", strings.Join(slowest, ", "))
	fmt.Fprintf(&b, "%-28s\n", "RSS and goroutines (slope after warm-up, per process)")
	for _, sl := range slopes {
		fmt.Fprintf(&b, "  %-4s %2d samples over %-8s RSS %6.1f MiB (%+.2f MiB/min)  goroutines %4.0f (%+.2f/min)\n",
			sl.name, sl.n, sl.span.Round(time.Second), sl.rssEnd, sl.rss, sl.gEnd, sl.goroutin)
	}
	fmt.Fprintf(&b, "%-28s %d\n", "invariants broken", len(broken))
	for _, x := range broken {
		fmt.Fprintf(&b, "  BROKEN %s\n", x)
	}
	fmt.Fprintf(&b, "fault log:\n")
	for _, f := range s.faults {
		fmt.Fprintf(&b, "  %7s–%-7s %-10s %s\n", f.start.Sub(s.begin).Round(100*time.Millisecond), f.end.Sub(s.begin).Round(100*time.Millisecond), f.kind, f.detail)
	}
	t.Log(b.String())
	if len(broken) > 0 {
		t.Errorf("%d invariants broken (seed %d)", len(broken), s.seed)
	}
}

// ackAnswered reports whether the command was answered in its ack
// (response_payload).
func ackAnswered(e slackfake.Envelope) bool {
	for _, a := range e.Acks {
		if len(a.Payload) > 0 && string(a.Payload) != "null" {
			return true
		}
	}
	return false
}

func soakPercentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	return d[min(max(i-1, 0), len(d)-1)].Round(10 * time.Microsecond)
}

// linSlope is the least-squares slope of y over x.
func linSlope(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
