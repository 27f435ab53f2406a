package shell

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/term"
)

// The shell's input: a terminal gets a prompt, line editing and history
// (golang.org/x/term's Terminal: arrows, Home/End, Ctrl-A/E/K/U/W,
// backspace, up/down through the history, and output printed above the
// line being typed); anything else (a pipe, a file) is read line by line
// with no escape codes at all.

// lineSource is where the shell's lines come from.
type lineSource interface {
	// ReadLine returns the next line without its newline; io.EOF at the
	// end (Ctrl-D on an empty line, or Ctrl-C, at a terminal).
	ReadLine() (string, error)
	// SetPrompt sets the prompt of the next ReadLine (a terminal only).
	SetPrompt(prompt string)
}

// pipeLines reads lines from a reader that is not a terminal.
type pipeLines struct{ sc *bufio.Scanner }

func newPipeLines(r io.Reader) *pipeLines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &pipeLines{sc: sc}
}

func (p *pipeLines) ReadLine() (string, error) {
	if p.sc.Scan() {
		return p.sc.Text(), nil
	}
	if err := p.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func (*pipeLines) SetPrompt(string) {}

// termLines is a terminal in raw mode, edited with x/term's Terminal.
type termLines struct {
	t       *term.Terminal
	in, out *os.File
	restore func()
}

// openTerminal puts in (a terminal) into raw mode and edits lines on it,
// echoing to out; close restores the terminal. hist keeps the history.
func openTerminal(in, out *os.File, prompt string, hist term.History) (*termLines, error) {
	fd := int(in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, prompt)
	if hist != nil {
		t.History = hist
	}
	tl := &termLines{t: t, in: in, out: out}
	var once sync.Once
	tl.restore = func() { once.Do(func() { _ = term.Restore(fd, old) }) }
	tl.fitWidth()
	return tl, nil
}

// fitWidth tells the line editor the terminal's size (it wraps long lines
// by it); the size is read again before each line.
func (tl *termLines) fitWidth() {
	if w, h, err := term.GetSize(int(tl.out.Fd())); err == nil && w > 0 && h > 0 {
		_ = tl.t.SetSize(w, h)
	}
}

func (tl *termLines) ReadLine() (string, error) {
	tl.fitWidth()
	return tl.t.ReadLine()
}

func (tl *termLines) SetPrompt(prompt string) { tl.t.SetPrompt(prompt) }

// Write prints above the prompt and the line being typed, which are drawn
// again below it (newlines become CR LF, as raw mode needs).
func (tl *termLines) Write(p []byte) (int, error) { return tl.t.Write(p) }

func (tl *termLines) close() { tl.restore() }

// shellHistoryMax bounds the lines kept in the history file.
const shellHistoryMax = 500

// fileHistory is the line history (term.History), kept in a file when one
// could be opened: each line is appended as it is entered, so a crash
// loses nothing, and the file is cut back to the last shellHistoryMax
// lines when it is loaded. Lines holding control characters are not kept
// (they are refused, never posted), nor a repeat of the line before.
type fileHistory struct {
	mu      sync.Mutex
	entries []string // oldest first
	path    string   // "" when not kept in a file
}

// historyPath is where the shell's history lives: the user's state
// directory ($XDG_STATE_HOME, else ~/.local/state), else the cache
// directory ($XDG_CACHE_HOME), under verdictbot/. The variables come from
// env, read as os.UserHomeDir and os.UserCacheDir read them on Unix.
func historyPath(env environment) (string, error) {
	if d := env.get("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "verdictbot", "shell_history"), nil
	}
	if home := env.get("HOME"); home != "" {
		return filepath.Join(home, ".local", "state", "verdictbot", "shell_history"), nil
	}
	if d := env.get("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "verdictbot", "shell_history"), nil
	}
	return "", errors.New("no home, state or cache directory")
}

// openHistory loads the history file at path, creating it (and its
// directory, private to the user) when missing. When it cannot be read or
// written, the history is kept in memory only and err says why.
func openHistory(path string) (*fileHistory, error) {
	h := &fileHistory{}
	if path == "" {
		return h, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return h, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return h, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !HasControl(l) {
			h.entries = append(h.entries, l)
		}
	}
	if len(h.entries) > shellHistoryMax {
		h.entries = h.entries[len(h.entries)-shellHistoryMax:]
	}
	// Write it back cut to size (and check that it can be written).
	tmp := path + ".tmp"
	body := strings.Join(h.entries, "\n")
	if body != "" {
		body += "\n"
	}
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return h, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return h, err
	}
	h.path = path
	return h, nil
}

// Add records a line entered (term.History).
func (h *fileHistory) Add(entry string) {
	entry = strings.TrimSpace(entry)
	if entry == "" || HasControl(entry) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == entry {
		return
	}
	h.entries = append(h.entries, entry)
	if len(h.entries) > shellHistoryMax {
		h.entries = h.entries[len(h.entries)-shellHistoryMax:]
	}
	if h.path == "" {
		return
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		h.path = "" // keep going in memory
		return
	}
	defer f.Close()
	if _, err := f.WriteString(entry + "\n"); err != nil {
		h.path = ""
	}
}

// Len is the number of lines kept (term.History).
func (h *fileHistory) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// At returns a line, 0 the most recent (term.History).
func (h *fileHistory) At(idx int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries[len(h.entries)-1-idx]
}

// HasControl reports whether s holds a control character (an escape
// sequence's ESC included) other than a tab: such a line is never posted
// nor kept in the history.
func HasControl(s string) bool {
	for _, r := range s {
		if r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return true
		}
	}
	return false
}
