package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/verdictbot/verdictbot/card"
	"image"
	_ "image/jpeg" // screenshot sizes
	_ "image/png"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// `verdictbot shell` is a terminal chat with the bot. It runs the real
// `run` wiring (serve: the same pipeline, store and commands) against an
// in-process fake Slack (internal/slackfake, loopback only) that plays the
// chat adapter: each typed line becomes a delivery in one channel, and
// whatever the bot posts there is printed. The analysis services are the
// built-in simulator unless REPUTATION_URL / SANDBOX_URL are set.

// The shell's one channel and one user (an admin, so every command works).
const (
	shellChannel     = "C0SECURITY"
	shellChannelName = "security"
	shellUser        = "U0YOU"
	shellUserName    = "you"
	// shellSimKey is the API key the built-in simulator gets (any works).
	shellSimKey = "shell-sim-key"
	// shellMaxFile bounds a file shared with `file <path>` (it is held in
	// memory by the fake Slack).
	shellMaxFile = 64 << 20
)

// Simulator profiles for the built-in services. demo is realistic but
// quick, so a card shows "scanning…" before its verdict; quick is for
// tests and scripts.
var (
	simDemoProfile = sim.Profile{Name: "demo",
		URLPending: 500 * time.Millisecond, URLProcessing: 1500 * time.Millisecond,
		SandboxPending: time.Second, SandboxRunning: 3 * time.Second,
		SandboxCompleted: 200 * time.Millisecond, SandboxReporting: 800 * time.Millisecond}
	simQuickProfile = sim.Profile{Name: "quick",
		URLPending: 100 * time.Millisecond, URLProcessing: 200 * time.Millisecond,
		SandboxPending: 100 * time.Millisecond, SandboxRunning: 200 * time.Millisecond,
		SandboxCompleted: 50 * time.Millisecond, SandboxReporting: 100 * time.Millisecond}
)

func simProfile(name string) (sim.Profile, error) {
	switch name {
	case "demo":
		return simDemoProfile, nil
	case "quick":
		return simQuickProfile, nil
	}
	return sim.Profile{}, fmt.Errorf("%w: --sim-profile: want demo or quick, got %q", errUsage, name)
}

const shellHelp = `Type a message to post it in #security; the bot scans the links in it.
  /scan …                  the slash command (/scan help lists what it does)
  file <path>              share a local file (it goes to the sandbox)
  fp 1, fn 1, restore 1    press a button of line 1 of the last card
  fp 1 malicious @2        … reporting another category, on card #2
  help                     this help
  quit                     leave (or Ctrl-D)
`

// runShell is `verdictbot shell`.
func runShell(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verdictbot shell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profileName := fs.String("sim-profile", "demo", "speed of the built-in simulator: demo (a URL takes ~2 s, a file ~5 s) or quick")
	wait := fs.Duration("wait", 60*time.Second, "when input is not a terminal: how long to wait for each line's cards and answers")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: verdictbot shell [--sim-profile demo|quick] [--wait 60s]\n\n"+shellHelp+
			"\nThe services are the built-in simulator unless REPUTATION_URL (with REPUTATION_API_KEY)\n"+
			"or SANDBOX_URL (with SANDBOX_API_KEY) are set. State lives in a temporary directory\n"+
			"unless VERDICTBOT_DATA_DIR is set; logs go to shell.log there.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: shell takes no arguments, got %q", errUsage, fs.Args())
	}
	profile, err := simProfile(*profileName)
	if err != nil {
		return err
	}
	if *wait <= 0 {
		return fmt.Errorf("%w: --wait must be positive", errUsage)
	}

	// State: VERDICTBOT_DATA_DIR, or a directory removed on the way out.
	dir := strings.TrimSpace(os.Getenv("VERDICTBOT_DATA_DIR"))
	keepLogs := dir != ""
	if dir == "" {
		tmp, err := os.MkdirTemp("", "verdictbot-shell-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("VERDICTBOT_DATA_DIR: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "shell.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("VERDICTBOT_DATA_DIR: %w", err)
	}
	defer logFile.Close()

	// The services: the environment's, else the built-in simulator.
	repURL, repKey := strings.TrimSpace(os.Getenv("REPUTATION_URL")), os.Getenv("REPUTATION_API_KEY")
	sbURL, sbKey := strings.TrimSpace(os.Getenv("SANDBOX_URL")), os.Getenv("SANDBOX_API_KEY")
	if repURL != "" && repKey == "" {
		return errors.New("REPUTATION_API_KEY is not set (REPUTATION_URL is)")
	}
	repName, sbName := repURL, sbURL
	if repURL == "" || sbURL == "" {
		base, stop, err := startLocalSim(sim.Config{Profile: profile})
		if err != nil {
			return err
		}
		defer stop()
		if repURL == "" {
			repURL, repKey, repName = base, shellSimKey, "built-in simulator"
		}
		if sbURL == "" {
			sbURL, sbKey, sbName = base, shellSimKey, "built-in simulator"
		}
	}

	fake, err := slackfake.New() // 127.0.0.1, a free port
	if err != nil {
		return err
	}
	defer fake.Close()
	fake.AddChannel(slackfake.Channel{ID: shellChannel, Name: shellChannelName, Members: []string{shellUser}})
	fake.AddUser(slackfake.User{ID: shellUser, Name: shellUserName, RealName: shellUserName, IsAdmin: true})

	cfg, err := defaultConfig()
	if err != nil {
		return err
	}
	cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAPIURL = Secret(fake.BotToken()), Secret(fake.AppToken()), fake.APIURL()
	cfg.ReputationURL, cfg.ReputationAPIKey = repURL, Secret(repKey)
	cfg.SandboxURL, cfg.SandboxAPIKey = sbURL, Secret(sbKey)
	cfg.DataDir = dir
	cfg.Admins = []string{shellUser}
	cfg.ChannelMode = "verbose" // a card for every message with a link, shown at once
	cfg.HTTPAddr = "off"        // no health or metrics port
	if err := cfg.Validate(true); err != nil {
		return err
	}
	logger := newLogger(logFile, "text", "info", cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey, cfg.SandboxAPIKey)

	// serve, the same as `run`; the hook hands over the wired app so the
	// shell can read the cards from its store.
	botCtx, stopBot := context.WithCancel(ctx)
	defer stopBot()
	ready := make(chan *app, 1)
	served := make(chan struct{}) // closed when serve returns, with serveErr set
	var serveErr error
	go func() {
		defer close(served)
		serveErr = serve(withAppHook(botCtx, func(a *app) { ready <- a }), cfg, logger)
	}()
	defer func() {
		stopBot()
		select {
		case <-served:
		case <-time.After(20 * time.Second):
			fmt.Fprintln(stderr, "verdictbot shell: the bot did not stop within 20s")
		}
	}()
	var a *app
	select {
	case a = <-ready:
	case <-served:
		return fmt.Errorf("the bot did not start: %w", errOrStopped(serveErr))
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	go func() { // stop waiting if serve gives up
		select {
		case <-served:
			cancel()
		case <-cctx.Done():
		}
	}()
	err = fake.WaitConnected(cctx, 1)
	cancel()
	select {
	case <-served:
		return fmt.Errorf("the bot did not start: %w", errOrStopped(serveErr))
	default:
	}
	if err != nil {
		return fmt.Errorf("the bot did not connect: %w", err)
	}

	sh := &shell{out: stdout, fake: fake, db: a.db, wait: *wait,
		interactive: isTerminal(stdin), color: isTerminal(stdout) && os.Getenv("NO_COLOR") == "",
		shown: map[string]*shownMsg{}}
	services := fmt.Sprintf("URL service: %s; sandbox: %s", repName, sbName)
	if sh.interactive {
		sh.print("verdictbot shell: you are " + shellUser + " (an admin) in #" + shellChannelName + "; " + services + ".\n" +
			"Post a message with a link, try /scan help, share a file with file <path>; help for more, Ctrl-D to leave.\n")
	} else {
		if keepLogs {
			services += "; logs in " + logFile.Name()
		}
		fmt.Fprintf(stderr, "verdictbot shell: %s\n", services)
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Add(1)
	go func() { defer watching.Done(); sh.watch(watchCtx) }()
	defer func() { stopWatch(); watching.Wait(); sh.refresh() }()

	lines := make(chan string)
	go readLines(stdin, lines, watchCtx.Done())
	for {
		select {
		case <-ctx.Done():
			return nil // interrupted
		case <-served:
			return fmt.Errorf("the bot stopped: %w", errOrStopped(serveErr))
		case line, ok := <-lines:
			quit := !ok
			if ok {
				quit = sh.handle(line)
			}
			if sh.interactive {
				if quit {
					return nil
				}
				continue
			}
			// Scripted: each line's cards and answers are complete before
			// the next line is read, and before the shell exits.
			if err := sh.settle(ctx); err != nil {
				if quit {
					return err
				}
				sh.print("(" + err.Error() + "; carrying on)\n")
			}
			if quit {
				return nil
			}
		}
	}
}

func errOrStopped(err error) error {
	if err == nil {
		return errors.New("it stopped")
	}
	return err
}

// readLines sends stdin's lines to out and closes it at EOF.
func readLines(r io.Reader, out chan<- string, stop <-chan struct{}) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		select {
		case out <- sc.Text():
		case <-stop:
			return
		}
	}
}

// shell is one session: it turns lines into deliveries to the fake Slack
// and prints what the bot posts in the channel.
type shell struct {
	out         io.Writer
	fake        *slackfake.Server
	db          *store.DB
	wait        time.Duration
	interactive bool
	color       bool

	mu      sync.Mutex // printing, and the fields below
	shown   map[string]*shownMsg
	cards   []string // card ts, by number - 1
	ephSeen int
}

// shownMsg is what was printed of one bot message.
type shownMsg struct {
	num      int    // card number (cards only)
	versions int    // the fake's version count when last read
	final    bool   // the stored card was final when last read
	key      string // what was printed, without progress words
}

func (s *shell) print(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.out, text)
}

// handle runs one input line; it reports whether the shell should end.
func (s *shell) handle(line string) (quit bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	if !s.interactive {
		s.print("you: " + termSafe(line) + "\n")
	}
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	var err error
	switch strings.ToLower(word) {
	case "quit", "exit":
		return true
	case "help", "?":
		s.print(shellHelp)
	case "/scan":
		_, err = s.fake.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: rest, UserID: shellUser, ChannelID: shellChannel})
	case "file":
		err = s.shareFile(rest)
	case "fp", "fn", "restore":
		err = s.press(strings.ToLower(word), strings.Fields(rest))
	default:
		if strings.HasPrefix(word, "/") {
			err = fmt.Errorf("only /scan is a command here (help lists what you can type)")
			break
		}
		_, err = s.fake.DeliverMessage(slackfake.MessageEvent{Channel: shellChannel, User: shellUser, Text: slackText(line)})
	}
	if err != nil {
		s.print("! " + err.Error() + "\n")
	}
	return false
}

// shareFile shares a local file in the channel, as a user uploading it.
func (s *shell) shareFile(path string) error {
	path = strings.Trim(path, `"'`)
	if path == "" {
		return errors.New("usage: file <path>")
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case st.Size() > shellMaxFile:
		return fmt.Errorf("%s is too large for the shell (over %d MB)", path, shellMaxFile>>20)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f := s.fake.AddFile(slackfake.File{Name: filepath.Base(path), Content: content, User: shellUser})
	_, err = s.fake.ShareFile(shellChannel, shellUser, f.ID, "")
	return err
}

// press clicks a feedback button: args are the line number, then
// optionally a category and "@<card number>" (default: the last card).
func (s *shell) press(option string, args []string) error {
	usage := fmt.Errorf("usage: %s <line> [category] [@card], e.g. %s 1", option, option)
	if len(args) == 0 || len(args) > 3 {
		return usage
	}
	line, err := strconv.Atoi(args[0])
	if err != nil || line < 1 {
		return usage
	}
	var cat verdict.Category
	cardNum := 0
	for _, a := range args[1:] {
		if n, ok := strings.CutPrefix(a, "@"); ok {
			if cardNum, err = strconv.Atoi(strings.TrimPrefix(n, "#")); err != nil || cardNum < 1 {
				return usage
			}
			continue
		}
		if cat, err = verdict.ParseCategory(a); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if cardNum == 0 {
		cardNum = len(s.cards)
	}
	var ts string
	if cardNum >= 1 && cardNum <= len(s.cards) {
		ts = s.cards[cardNum-1]
	}
	s.mu.Unlock()
	if ts == "" {
		if cardNum == 0 {
			return errors.New("there is no card yet")
		}
		return fmt.Errorf("there is no card #%d", cardNum)
	}
	action := map[string]string{"fp": notify.ActionFalsePositive, "fn": notify.ActionFalseNegative, "restore": notify.ActionRestore}[option]
	msg, ok := s.fake.Message(shellChannel, ts)
	value := ""
	if ok && !msg.Deleted {
		value = buttonValue(msg.Blocks, notify.LineBlockID(line-1), action)
	}
	if value == "" {
		return fmt.Errorf("card #%d has no %s button on line %d (only checked links have them)", cardNum, option, line)
	}
	if cat != "" { // what picking another category in the line's menu does
		idx, task, _, err := notify.DecodeActionValue(value)
		if err != nil {
			return err
		}
		value = notify.EncodeActionValue(idx, task, cat)
	}
	_, err = s.fake.DeliverBlockAction(slackfake.BlockAction{UserID: shellUser, Channel: shellChannel, MessageTS: ts, ActionID: action, Value: value})
	return err
}

// buttonValue returns the value of the element actionID in the block
// blockID of a message's blocks, as Slack holds them.
func buttonValue(blocks []byte, blockID, actionID string) string {
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return ""
	}
	for _, b := range bs {
		if b.BlockID != blockID {
			continue
		}
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}

// watch prints what the bot posts, as it posts it, until ctx ends.
func (s *shell) watch(ctx context.Context) {
	for ctx.Err() == nil {
		s.refresh()
		// Wake on the fake's next change, or after a while (progress kept
		// in the store shows even when Slack was not updated yet).
		wctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		first := true
		_ = s.fake.WaitFor(wctx, func(*slackfake.State) bool {
			if first {
				first = false
				return false
			}
			return true
		})
		cancel()
	}
}

// refresh prints every bot message, card change and private answer in the
// channel not printed yet, in the order they happened. Cards are rendered
// from the store (the same card model Slack's Block Kit comes from).
func (s *shell) refresh() {
	var msgs []slackfake.Message
	var eph []slackfake.Ephemeral
	var ups []slackfake.Upload
	s.fake.Inspect(func(st *slackfake.State) {
		for _, m := range st.AllMessages() {
			if m.Bot && m.Channel == shellChannel {
				msgs = append(msgs, m)
			}
		}
		eph = st.Ephemerals(shellChannel, shellUser)
		ups = st.Uploads(shellChannel, "")
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	type item struct {
		at   time.Time
		text string
	}
	var items []item
	for _, m := range msgs {
		sh := s.shown[m.TS]
		switch {
		case m.Deleted:
		case len(m.Files) > 0: // the bot's uploads: sandbox screenshots
			if sh == nil {
				s.shown[m.TS] = &shownMsg{}
				items = append(items, item{m.PostedAt, uploadText(m, ups)})
			}
		case len(m.Blocks) > 0: // a card
			if sh != nil && sh.final && sh.versions == len(m.Versions) {
				continue
			}
			rec, err := s.db.CardByTS(shellChannel, m.TS)
			if err != nil {
				continue // its ts is saved just after the post: next time
			}
			if sh == nil {
				sh = &shownMsg{num: len(s.cards) + 1}
				s.cards = append(s.cards, m.TS)
				s.shown[m.TS] = sh
			}
			sh.versions, sh.final = len(m.Versions), rec.Card.Final
			key := cardKey(&rec.Card)
			if key == sh.key {
				continue // only progress words changed
			}
			head := fmt.Sprintf("── card #%d ──\n", sh.num)
			if sh.key != "" {
				head = fmt.Sprintf("── card #%d, updated ──\n", sh.num)
			}
			sh.key = key
			items = append(items, item{m.Versions[len(m.Versions)-1].At, head + notify.Text(&rec.Card, s.color)})
		default: // a plain reply (a recheck's mention, an in-channel answer)
			if sh == nil {
				s.shown[m.TS] = &shownMsg{}
				items = append(items, item{m.PostedAt, "verdictbot: " + indent(s.answer(m.Text)) + "\n"})
			}
		}
	}
	for _, e := range eph[min(s.ephSeen, len(eph)):] {
		if !e.Deleted && e.Text != "" {
			items = append(items, item{e.At, "» " + indent(s.answer(e.Text)) + "\n"})
		}
	}
	s.ephSeen = len(eph)
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	for _, it := range items {
		io.WriteString(s.out, it.text)
	}
}

// cardKey is the card's text without progress words ("submitted",
// "pending"…): a change of those alone is not printed again.
func cardKey(c *card.Card) string {
	cp := c.Clone()
	for i := range cp.Lines {
		cp.Lines[i].Status = ""
	}
	return notify.Text(&cp, false)
}

// uploadText describes the bot's upload: "[screenshot 0001.jpg, 64×48 JPEG]".
func uploadText(m slackfake.Message, ups []slackfake.Upload) string {
	var b strings.Builder
	for _, id := range m.Files {
		i := slices.IndexFunc(ups, func(u slackfake.Upload) bool { return u.FileID == id })
		if i < 0 {
			b.WriteString("[screenshot]\n")
			continue
		}
		u := ups[i]
		desc := termSafe(u.Filename)
		if ic, format, err := image.DecodeConfig(bytes.NewReader(u.Content)); err == nil {
			desc += fmt.Sprintf(", %d×%d %s", ic.Width, ic.Height, strings.ToUpper(format))
		}
		b.WriteString("[screenshot " + desc + "]\n")
	}
	return b.String()
}

// settle waits until nothing is in progress (every delivery acked, every
// job finished, every card final) and all of it printed, for at most
// s.wait.
func (s *shell) settle(ctx context.Context) error {
	deadline := time.Now().Add(s.wait)
	for {
		why := s.busy(ctx)
		if why == "" {
			s.refresh()
			if why = s.busy(ctx); why == "" {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up waiting after %s: %s", s.wait, why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// busy says what is still in progress, or "".
func (s *shell) busy(ctx context.Context) string {
	actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := s.fake.WaitAcked(actx)
	cancel()
	if err != nil {
		return "Slack deliveries not acknowledged yet"
	}
	if cards, err := s.db.UnfinishedCards(); err != nil || len(cards) > 0 {
		return fmt.Sprintf("%d card(s) still being analysed", len(cards))
	}
	if jobs, err := s.db.PendingJobs(); err != nil || len(jobs) > 0 {
		return fmt.Sprintf("%d message(s) or command(s) still being handled", len(jobs))
	}
	return ""
}

// slackText is a typed line as a Slack client sends it: &, < and >
// escaped, and http(s) links in <…>.
func slackText(line string) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var b strings.Builder
	rest := line
	for {
		loc := typedURL.FindStringIndex(rest)
		if loc == nil {
			b.WriteString(esc.Replace(rest))
			return b.String()
		}
		u := strings.TrimRight(rest[loc[0]:loc[1]], ".,;:!?)]}'\"")
		b.WriteString(esc.Replace(rest[:loc[0]]))
		b.WriteString("<" + esc.Replace(u) + ">")
		rest = rest[loc[0]+len(u):]
	}
}

var typedURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>]+`)

// slackRef is a Slack mrkdwn reference: <@U…>, <#C…|name>, <url|label>.
var slackRef = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)

// plainText turns the bot's mrkdwn into terminal text: references shown
// as words, entities unescaped, control characters removed.
func plainText(s string) string {
	s = slackRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := slackRef.FindStringSubmatch(m)
		target, label := sub[1], sub[2]
		switch {
		case strings.HasPrefix(target, "@"):
			return "@" + strings.TrimPrefix(target, "@")
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			return "@" + target[1:]
		case label != "":
			return label
		}
		return target
	})
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return termSafe(s)
}

var mrkdwnBold = regexp.MustCompile(`\*([^*\n]+)\*`)

// answer is the bot's mrkdwn text for the terminal: *bold* in bold (or
// plain without colours).
func (s *shell) answer(text string) string {
	repl := "$1"
	if s.color {
		repl = "\x1b[1m$1\x1b[0m"
	}
	return mrkdwnBold.ReplaceAllString(plainText(text), repl)
}

// termSafe removes control characters (escape sequences included) but
// newlines and tabs.
func termSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return -1
		}
		return r
	}, s)
}

// indent indents the lines after the first of a multi-line answer.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// appHookKey carries, in serve's context, a function that gets the wired
// app before the bot starts: the shell reads cards from its store (bbolt
// lets one handle per file, so it cannot open the store a second time).
type appHookKey struct{}

func withAppHook(ctx context.Context, f func(*app)) context.Context {
	return context.WithValue(ctx, appHookKey{}, f)
}

// appHook returns the hook in ctx, if any.
func appHook(ctx context.Context) func(*app) {
	f, _ := ctx.Value(appHookKey{}).(func(*app))
	return f
}

// startLocalSim serves a simulator of both services on a free loopback
// port and returns its base URL.
func startLocalSim(cfg sim.Config) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: sim.New(cfg), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: stdlog.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// defaultConfig is the Config loadConfig returns in an empty environment
// (every field at its `default` tag, as envconfig parses it), without
// reading any variable. config_test checks the two agree.
func defaultConfig() (*Config, error) {
	var cfg Config
	v := reflect.ValueOf(&cfg).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		def, ok := f.Tag.Lookup("default")
		if !ok || !f.IsExported() {
			continue
		}
		if err := setDefault(v.Field(i), def); err != nil {
			return nil, fmt.Errorf("the default of %s: %w", f.Tag.Get("envconfig"), err)
		}
	}
	cfg.trim()
	return &cfg, nil
}

func setDefault(v reflect.Value, s string) error {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(x)
	case reflect.Slice:
		parts := strings.Split(s, ",")
		sl := reflect.MakeSlice(v.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := setDefault(sl.Index(i), p); err != nil {
				return err
			}
		}
		v.Set(sl)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}
