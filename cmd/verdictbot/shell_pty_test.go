package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/shell"
)

// ptyShell is `verdictbot shell` run through Main on a pseudo-terminal, as
// a person at a terminal runs it: the test types into the pty's master
// side and reads what the terminal would show.
type ptyShell struct {
	t      *testing.T
	master *os.File
	sh     *shell.Session
	done   chan int // Main's exit code
	stderr bytes.Buffer

	mu   sync.Mutex
	out  bytes.Buffer // everything the terminal received
	seen int          // expect's cursor into the cleaned output
	read chan struct{}
}

// startPtyShell starts the shell on a new pty; stateDir is its
// XDG_STATE_HOME (where the history is kept).
func startPtyShell(t *testing.T, stateDir string, args ...string) *ptyShell {
	t.Helper()
	env := mapEnv(map[string]string{"VERDICTBOT_DATA_DIR": t.TempDir(), "XDG_STATE_HOME": stateDir, "NO_COLOR": "",
		"REPUTATION_URL": "", "REPUTATION_API_KEY": "", "SANDBOX_URL": "", "SANDBOX_API_KEY": ""})
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 220}); err != nil {
		t.Fatal(err)
	}
	p := &ptyShell{t: t, master: master, done: make(chan int, 1), read: make(chan struct{})}
	started := make(chan *shell.Session, 1)
	opts := testOptions()
	opts.ShellStarted = func(s *shell.Session) { started <- s }
	go func() { // owned by the test: ends when master is closed
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { p.done <- runCLI(env, opts, append([]string{"shell"}, args...), tty, tty, &p.stderr) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			// A failed expectation left the shell running: it is ended
			// as a person would (the line cleared, then Ctrl-D), so that
			// the test fails instead of waiting on it.
			master.Write([]byte("\x15\x04"))
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				t.Error("the shell did not end")
			}
		}
		tty.Close()
		master.Close()
		select {
		case <-p.read:
		case <-time.After(5 * time.Second):
			t.Error("the terminal's reader did not end")
		}
		if t.Failed() {
			t.Logf("terminal:\n%s\nstderr: %s", p.screen(), p.stderr.String())
		}
	})
	select {
	case p.sh = <-started:
	case code := <-p.done:
		t.Fatalf("the shell ended at start: exit %d, stderr %s", code, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not start")
	}
	return p
}

// csi matches the terminal's control sequences (cursor moves, colours).
var csi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// screen is the output as text: control sequences and CRs removed.
func (p *ptyShell) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.ReplaceAll(csi.ReplaceAllString(p.out.String(), ""), "\r", "")
}

// raw is the output as the terminal received it.
func (p *ptyShell) raw() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// typ types keys.
func (p *ptyShell) typ(keys string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(keys)); err != nil {
		p.t.Fatal(err)
	}
}

// expect waits until want shows after the previous expectation's match.
func (p *ptyShell) expect(want string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if i := strings.Index(s[p.seen:], want); i >= 0 {
			p.seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal does not show %q after byte %d:\n%s", want, p.seen, s[p.seen:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// userMessages are the texts of the messages people posted in #security.
func (p *ptyShell) userMessages() []string {
	var out []string
	p.sh.Slack().Inspect(func(st *slackfake.State) {
		for _, m := range st.AllMessages() {
			if !m.Bot && m.Channel == shell.Channel {
				out = append(out, m.Text)
			}
		}
	})
	return out
}

// waitMessages waits until n messages were posted by people.
func (p *ptyShell) waitMessages(n int) []string {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := p.userMessages()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("want %d messages posted, have %q", n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quit leaves with Ctrl-D and checks the exit code.
func (p *ptyShell) quit() {
	p.t.Helper()
	p.typ("\x04")
	select {
	case code := <-p.done:
		p.done <- code // for the cleanup
		if code != 0 {
			p.t.Fatalf("exit %d; stderr %s", code, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.t.Fatal("Ctrl-D did not end the shell")
	}
}

// At a terminal: the banner and prompt, a line edited with backspace,
// Home and End, history recalled with the up arrow, a function key that
// never reaches Slack, card updates as one change line, mode, a recheck
// after a flip, and an admin command refused as @alice. Then a second
// session recalls the first one's history from its file.
func TestShellOnATerminal(t *testing.T) {
	t.Parallel()
	apptest.SkipIfShort(t, "two shell sessions on a pseudo-terminal (about 17 s)")
	state := t.TempDir()
	p := startPtyShell(t, state)
	p.expect("verdictbot shell: the bot against a fake Slack")
	p.expect("You are @you (an admin) in #security, mode quiet as in production")
	p.expect("history in " + filepath.Join(state, "verdictbot", "shell_history"))
	p.expect("#security @you> ")

	p.typ("mode\r")
	p.expect("mode: #security is quiet, the default (VERDICTBOT_CHANNEL_MODE, as in production)")
	p.typ("mode verbose\r")
	p.expect("mode: #security is now verbose")

	// Typed with a typo, fixed with backspace, Home and End.
	// A 4-second analysis (the simulator's d4s.test): longer than the
	// card's post grace, so the card shows "scanning" first.
	p.typ("ee https://login.phish.d4s.test/verifyXX\x7f\x7f\x1b[Hs\x1b[F\r")
	if got := p.waitMessages(1); got[0] != "see <https://login.phish.d4s.test/verify>" {
		t.Fatalf("the edited line was posted as %q", got[0])
	}
	// The card in full once, then its verdict as one change line.
	p.expect("── card #1 ──")
	p.expect("SCANNING…")
	p.expect("card #1 · hxxps://login[.]phish[.]d4s[.]test/verify · scanning → MALICIOUS (phishing 97%)")
	if n := strings.Count(p.screen(), "── card #1 ──"); n != 1 {
		t.Fatalf("card #1 printed in full %d times", n)
	}
	if strings.Contains(p.screen(), "1. MALICIOUS") {
		t.Fatal("the verdict reprinted the whole card")
	}
	p.typ("show 1\r")
	p.expect("── card #1 ──")
	p.expect("1. MALICIOUS · hxxps://login[.]phish[.]d4s[.]test/verify")

	// The up arrow recalls the line before `show 1`: the same message
	// again, a second card.
	p.typ("\x1b[A\x1b[A\r")
	if got := p.waitMessages(2); got[1] != got[0] {
		t.Fatalf("history recall posted %q, want %q", got[1], got[0])
	}
	p.expect("── card #2 ──")

	// A function key (F5) and an arrow typed mid-line edit nothing into
	// the message.
	p.typ("hi\x1b[15~ there\x1b[D\x1b[C\r")
	if got := p.waitMessages(3); got[2] != "hi there" {
		t.Fatalf("posted %q", got[2])
	}

	// A clean link, flipped in the simulator, then rechecked.
	p.typ("see https://example.com/landing\r")
	// Within the post grace the card shows its verdict at once; on a
	// loaded machine it may show "scanning" first, then the change line.
	p.expect("── card #3 ──")
	p.expect("CLEAN")
	p.typ("flip https://example.com/landing\r")
	p.expect("flip: the simulator's next scan of hxxps://example[.]com/landing will say phishing 97% (last verdict clean)")
	p.typ("recheck\r")
	p.expect("card #3 · hxxps://example[.]com/landing · clean → MALICIOUS (phishing 97%)")
	p.expect("verdictbot: @you a link you shared was checked again: hxxps://example[.]com/landing is now malicious (was clean).")
	p.expect("recheck: 2 due, 2 checked, 1 changed, 0 failed")

	// Someone who is not an admin.
	p.typ("as @alice\r")
	p.expect("as: you are now @alice (U0ALICE), not an admin")
	p.expect("#security @alice> ")
	p.typ("/scan channel quiet\r")
	p.expect("» Only admins can change this channel's mode.")
	p.typ("as\r")
	p.expect("as: you are @alice (U0ALICE)")

	for _, m := range p.userMessages() {
		if shell.HasControl(m) {
			t.Errorf("a control character reached Slack: %q", m)
		}
	}
	if strings.Contains(p.raw(), "\x1b[31m") == false {
		t.Error("no colour at a terminal (NO_COLOR unset)")
	}
	p.quit()

	hist, err := os.ReadFile(filepath.Join(state, "verdictbot", "shell_history"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "mode\nmode verbose\nsee https://login.phish.d4s.test/verify\nshow 1\nsee https://login.phish.d4s.test/verify\nhi there\n"; !strings.HasPrefix(string(hist), want) {
		t.Fatalf("history file:\n%s\nwant it to start with:\n%s", hist, want)
	}

	// A new session: the up arrow recalls the last session's last line.
	p2 := startPtyShell(t, state)
	p2.expect("#security @you> ")
	p2.typ("\x1b[A\r")
	p2.expect("as: you are @you (U0YOU), an admin")
	p2.quit()
}

// When the history file cannot be written, the shell says so and keeps
// the history in memory.
func TestShellOnATerminalWithoutAHistoryFile(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(state, nil, 0o600); err != nil { // a file where a directory should be
		t.Fatal(err)
	}
	p := startPtyShell(t, state)
	p.expect("history not kept: mkdir ")
	p.expect("#security @you> ")
	p.typ("as\r")
	p.expect("as: you are @you")
	p.typ("\x1b[A\r")
	p.expect("as: you are @you")
	p.quit()
}
