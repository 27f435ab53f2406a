package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/store"
)

// run reads lines from stdin until quit, EOF, ctx's end or the bot
// stopping, printing what the bot posts meanwhile. When stdin is not a
// terminal (a script), each line's cards and answers are complete before
// the next line is read, and before the shell exits.
func (s *shell) run(ctx context.Context, stdin io.Reader, bot *shellBot) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Add(1)
	go func() { defer watching.Done(); s.watch(watchCtx) }()
	defer func() { stopWatch(); watching.Wait(); s.refresh() }()

	lines := make(chan string)
	go readLines(stdin, lines, watchCtx.Done())
	for {
		select {
		case <-ctx.Done():
			return nil // interrupted
		case <-bot.served:
			return bot.stopped()
		case line, ok := <-lines:
			quit := !ok
			if ok {
				quit = s.handle(line)
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
	db          store.State
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
