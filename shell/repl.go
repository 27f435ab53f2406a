package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// run reads lines until quit, the input's end, ctx's end or the bot
// stopping, printing what the bot posts meanwhile. When the input is not
// a terminal (a script), each line's cards and answers are complete
// before the next line is read, and before the shell exits.
func (s *Session) run(ctx context.Context, src lineSource, bot *shellBot) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Add(1)
	go func() { defer watching.Done(); s.watch(watchCtx) }()
	defer func() { stopWatch(); watching.Wait(); s.refresh() }()

	// The reader reads one line each time it is asked (next), so that the
	// prompt of the next line says who is typing after `as`. It ends at
	// the input's end, or when asked after the shell ended; a read
	// blocked on a terminal ends when the process does.
	lines := make(chan string)
	next := make(chan struct{}, 1)
	go readLines(src, lines, next, watchCtx.Done())
	for {
		src.SetPrompt(s.prompt())
		next <- struct{}{}
		select {
		case <-ctx.Done():
			return nil // interrupted
		case <-bot.served:
			return bot.stopped()
		case line, ok := <-lines:
			quit := !ok
			if ok {
				quit = s.handle(ctx, line)
			}
			if s.interactive {
				if quit {
					return nil
				}
				continue
			}
			if err := s.settle(ctx); err != nil {
				if quit {
					return err
				}
				s.print("(" + err.Error() + "; carrying on)\n")
			}
			if quit {
				return nil
			}
		}
	}
}

// readLines sends src's lines to out, one for each value on next, and
// closes out at the input's end or when stop is closed.
func readLines(src lineSource, out chan<- string, next, stop <-chan struct{}) {
	defer close(out)
	for {
		select {
		case <-next:
		case <-stop:
			return
		}
		line, err := src.ReadLine()
		if err != nil {
			return
		}
		select {
		case out <- line:
		case <-stop:
			return
		}
	}
}

// Session is one session: it turns lines into deliveries to the fake Slack
// and prints what the bot posts in the channel.
type Session struct {
	out         io.Writer
	fake        *slackfake.Server
	db          store.State
	app         appView   // the running bot: its settings, its recheck job, its commands
	env         *shellEnv // the services (the simulator's flip switch)
	wait        time.Duration
	interactive bool
	color       bool

	mu      sync.Mutex // printing, and the fields below
	user    shellPerson
	shown   map[string]*shownMsg
	cards   []string       // card ts, by number - 1
	ephSeen map[string]int // private answers printed, by user
	reacted map[string]bool
}

// shownMsg is what was printed of one bot message.
type shownMsg struct {
	num      int       // card number (cards only)
	versions int       // the fake's version count when last read
	final    bool      // the stored card was final when last read
	card     card.Card // the card as last printed or described
}

func newShell(out io.Writer, fake *slackfake.Server, a appView, env *shellEnv, wait time.Duration, interactive, color bool) *Session {
	return &Session{out: out, fake: fake, db: a.Store(), app: a, env: env, wait: wait,
		interactive: interactive, color: color, user: shellPeople[0],
		shown: map[string]*shownMsg{}, ephSeen: map[string]int{}, reacted: map[string]bool{}}
}

func (s *Session) print(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.out, text)
}

// who is the person typing.
func (s *Session) who() shellPerson {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// prompt is "#security @you> ".
func (s *Session) prompt() string {
	return "#" + shellChannelName + " @" + s.who().name + "> "
}

// handle runs one input line; it reports whether the shell should end.
func (s *Session) handle(ctx context.Context, line string) (quit bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	me := s.who()
	if !s.interactive {
		s.print(me.name + ": " + caretNotation(line) + "\n")
	}
	if HasControl(line) {
		// An arrow key typed where no line editor reads it arrives as
		// "ESC [ A": never post that as a message.
		s.print("! not posted: the line holds control characters (an arrow or function key sends ^[[A and the like " +
			"when nothing edits the line). Type it again; at a terminal the shell edits lines itself.\n")
		return false
	}
	line = strings.ReplaceAll(line, "\t", " ")
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	var err error
	switch strings.ToLower(word) {
	case "quit", "exit":
		return true
	case "help", "?":
		s.print(s.help())
	case "/scan":
		_, err = s.fake.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", Text: rest, UserID: me.id, ChannelID: Channel})
	case "file":
		err = s.shareFile(rest)
	case "fp", "fn", "restore":
		err = s.press(strings.ToLower(word), strings.Fields(rest))
	case "show":
		err = s.show(rest)
	case "mode":
		err = s.mode(rest)
	case "recheck":
		if rest != "" {
			err = errors.New("usage: recheck (it takes no arguments)")
			break
		}
		err = s.recheck(ctx)
	case "flip":
		err = s.flip(ctx, strings.Fields(rest))
	case "as":
		err = s.as(rest)
	default:
		if strings.HasPrefix(word, "/") {
			err = fmt.Errorf("only /scan is a command here (help lists what you can type)")
			break
		}
		_, err = s.fake.DeliverMessage(slackfake.MessageEvent{Channel: Channel, User: me.id, Text: slackText(line)})
	}
	if err != nil {
		s.print("! " + termSafe(err.Error()) + "\n")
	}
	return false
}

// caretNotation shows control characters as ^X (ESC as ^[), so that an
// echoed line never sends an escape sequence to the terminal.
func caretNotation(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteRune(' ')
		case r < 0x20:
			b.WriteString("^" + string(rune(r+'@')))
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f:
			b.WriteString(fmt.Sprintf("\\u%04x", r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// shareFile shares a local file in the channel, as the current person
// uploading it.
func (s *Session) shareFile(path string) error {
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
	me := s.who()
	f := s.fake.AddFile(slackfake.File{Name: filepath.Base(path), Content: content, User: me.id})
	_, err = s.fake.ShareFile(Channel, me.id, f.ID, "")
	return err
}

// show prints card N (default: the last) in full, as it is now.
func (s *Session) show(arg string) error {
	s.mu.Lock()
	n := len(s.cards)
	s.mu.Unlock()
	if arg != "" {
		v, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(arg, "@"), "#"))
		if err != nil || v < 1 {
			return errors.New("usage: show [N], e.g. show 1")
		}
		n = v
	}
	s.mu.Lock()
	var ts string
	if n >= 1 && n <= len(s.cards) {
		ts = s.cards[n-1]
	}
	s.mu.Unlock()
	if ts == "" {
		if n == 0 {
			return errors.New("there is no card yet")
		}
		return fmt.Errorf("there is no card #%d", n)
	}
	rec, err := s.db.CardByTS(Channel, ts)
	if err != nil {
		return fmt.Errorf("card #%d: %w", n, err)
	}
	s.print(fmt.Sprintf("── card #%d ──\n", n) + byName(notify.Text(&rec.Card, s.color)))
	return nil
}

// modeWords says what a channel mode does.
var modeWords = map[string]string{
	"quiet":   "a clean link gets a ✓ reaction, a card only when something is not clean",
	"verbose": "every message with a link or file gets a card",
	"off":     "nothing is scanned",
}

// mode shows or sets #security's mode, the shell's switch for what an
// admin sets in Slack with /scan channel.
func (s *Session) mode(arg string) error {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if arg == "" {
		cur, err := s.db.ChannelMode(Channel)
		if err != nil {
			return err
		}
		if cur == "" {
			cur = s.app.Config().ChannelMode
			s.print(fmt.Sprintf("mode: #%s is %s, the default (VERDICTBOT_CHANNEL_MODE, as in production): %s. mode verbose for a card every time.\n",
				shellChannelName, cur, modeWords[cur]))
			return nil
		}
		s.print(fmt.Sprintf("mode: #%s is %s: %s (the default is %s).\n", shellChannelName, cur, modeWords[cur], s.app.Config().ChannelMode))
		return nil
	}
	if modeWords[arg] == "" {
		return errors.New("usage: mode [quiet|verbose|off]")
	}
	if err := s.db.SetChannelMode(Channel, arg); err != nil {
		return err
	}
	s.print(fmt.Sprintf("mode: #%s is now %s: %s. (In Slack an admin types /scan channel %s.)\n", shellChannelName, arg, modeWords[arg], arg))
	return nil
}

// recheck runs the recheck job now, the cron's code, with every link's
// next recheck brought forward (a link scanned a minute ago is due at its
// first age, an hour by default).
func (s *Session) recheck(ctx context.Context) error {
	ages := s.app.Config().RecheckAfter
	if len(ages) == 0 {
		return errors.New("no recheck ages are set (VERDICTBOT_RECHECK_AFTER)")
	}
	if s.interactive { // a run takes a scan's time: say something at once
		s.print("recheck: running the recheck job…\n")
	}
	st, err := s.app.Recheck().RunDueBy(ctx, time.Now().Add(ages[len(ages)-1]))
	if errors.Is(err, scan.ErrRunning) {
		return errors.New("the recheck job is running already (its cron run); try again in a moment")
	}
	if err != nil {
		return fmt.Errorf("recheck: %w", err)
	}
	s.refresh() // the cards it changed and its replies first
	if st.Due == 0 {
		s.print("recheck: nothing to recheck (no link scanned yet, or each has had all its rechecks: " + agesText(ages) + ").\n")
		return nil
	}
	deferred := ""
	if st.Deferred > 0 {
		deferred = fmt.Sprintf(", %d deferred link(s) checked (%d failed)", st.Deferred, st.DeferredFailed)
	}
	s.print(fmt.Sprintf("recheck: %d due, %d checked, %d changed, %d failed%s in %s (each link's next recheck brought forward; the cron runs the job %s).\n",
		st.Due, st.Checked, st.Changed, st.Failed, deferred, st.Took.Round(time.Millisecond), s.app.Config().RecheckSchedule))
	return nil
}

func agesText(ages []time.Duration) string {
	var parts []string
	for _, a := range ages {
		parts = append(parts, strings.TrimSuffix(strings.TrimSuffix(a.String(), "0s"), "0m"))
	}
	return "after " + strings.Join(parts, ", ")
}

// flip sets what the simulator's next scan of a URL says: the category
// and score given ("clean": nothing), else phishing 97% when its last
// verdict was clean and clean when it was not. A URL never posted here is
// posted first (postFirst), so that a recheck has a verdict to change.
func (s *Session) flip(ctx context.Context, args []string) error {
	usage := errors.New("usage: flip <url> [clean | phishing|advertising|malicious|illegal [score 0–1]], e.g. flip https://example.com/")
	if len(args) == 0 || len(args) > 3 {
		return usage
	}
	u, err := links.Normalize(args[0])
	if err != nil {
		return fmt.Errorf("flip: not a URL: %w", err)
	}
	var scores sim.Scores
	cat, score := verdict.Category(""), 0.97
	switch {
	case len(args) >= 2 && strings.EqualFold(args[1], "clean"):
		if len(args) == 3 {
			return usage
		}
	case len(args) >= 2:
		if cat, err = verdict.ParseCategory(args[1]); err != nil {
			return usage
		}
		if len(args) == 3 {
			if score, err = strconv.ParseFloat(args[2], 64); err != nil || score < 0 || score > 1 {
				return usage
			}
		}
	}
	// A URL never posted here has no verdict to change: it is posted
	// first, as the person typing, and its verdict waited for, so that
	// `flip` then `recheck` shows a change whatever the URL.
	if _, err := s.db.Target(u); errors.Is(err, store.ErrNotFound) {
		if err := s.postFirst(ctx, u); err != nil {
			return err
		}
	}
	if len(args) == 1 {
		tg, err := s.db.Target(u)
		if err != nil || tg.Level < verdict.Suspicious {
			cat = verdict.CatPhishing
		}
	}
	switch cat {
	case verdict.CatPhishing:
		scores.Phishing = score
	case verdict.CatAdvertising:
		scores.Advertising = score
	case verdict.CatMalicious:
		scores.Malicious = score
	case verdict.CatIllegal:
		scores.Illegal = score
	}
	if err := s.env.flip(ctx, u, scores); err != nil {
		return err
	}
	says := "clean"
	if cat != "" {
		says = fmt.Sprintf("%s %.0f%%", cat, score*100)
	}
	last := "never scanned"
	if tg, err := s.db.Target(u); err == nil {
		last = "last verdict " + tg.Level.String()
	}
	s.print(fmt.Sprintf("flip: the simulator's next scan of %s will say %s (%s). recheck to have the bot check it again.\n",
		termSafe(links.DefangTruncate(u, 80)), says, last))
	return nil
}

// postFirst posts u as the person typing, for flip, and waits (up to the
// shell's --wait) until the bot has its verdict and is done with the
// message.
func (s *Session) postFirst(ctx context.Context, u string) error {
	s.print(fmt.Sprintf("flip: %s was never posted here; posting it first, so that there is a verdict to change.\n",
		termSafe(links.DefangTruncate(u, 80))))
	if _, err := s.fake.DeliverMessage(slackfake.MessageEvent{Channel: Channel, User: s.who().id, Text: slackText(u)}); err != nil {
		return err
	}
	posted := time.Now()
	deadline := posted.Add(s.wait)
	for {
		// The verdict, and the bot done with the message (its reaction or
		// card printed before what flip says next).
		if tg, err := s.db.Target(u); err == nil && tg.Level != verdict.Pending && s.busy(ctx) == "" {
			s.refresh()
			return nil
		}
		// The bot is done with the message and the URL has no verdict:
		// it was never sent (allowlisted, internal, Slack's own, or the
		// channel is off), so there is nothing for flip to change.
		if time.Since(posted) > 300*time.Millisecond && s.busy(ctx) == "" {
			if _, err := s.db.Target(u); errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("flip: %s is not sent to the URL service here (its card or `mode` says why), so there is no verdict to change", links.DefangTruncate(u, 80))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("flip: no verdict for %s after %s; try again once its card is final", links.DefangTruncate(u, 80), s.wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// as shows or changes who is typing.
func (s *Session) as(arg string) error {
	var others []string
	for _, p := range shellPeople {
		desc := "@" + p.name
		if p.admin {
			desc += " (admin)"
		}
		others = append(others, desc)
	}
	if arg == "" {
		me := s.who()
		s.print(fmt.Sprintf("as: you are @%s (%s), %s. People here: %s.\n", me.name, me.id, adminWords(me), strings.Join(others, ", ")))
		return nil
	}
	p, ok := findPerson(arg)
	if !ok {
		return fmt.Errorf("as: nobody called %s in #%s; people here: %s", termSafe(arg), shellChannelName, strings.Join(others, ", "))
	}
	s.mu.Lock()
	s.user = p
	s.mu.Unlock()
	s.print(fmt.Sprintf("as: you are now @%s (%s), %s.\n", p.name, p.id, adminWords(p)))
	return nil
}

func adminWords(p shellPerson) string {
	if p.admin {
		return "an admin (VERDICTBOT_ADMINS)"
	}
	return "not an admin: what only admins may do is refused"
}

// watch prints what the bot posts, as it posts it, until ctx ends.
func (s *Session) watch(ctx context.Context) {
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

// settle waits until nothing is in progress (every delivery acked, every
// job finished, every card final) and all of it printed, for at most
// s.wait.
func (s *Session) settle(ctx context.Context) error {
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
func (s *Session) busy(ctx context.Context) string {
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
