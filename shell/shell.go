// Package shell is the terminal adapter, `verdictbot shell`: a chat with
// the bot in a terminal. It runs the real wiring (app.New and Run: the
// same pipeline, store and commands as `verdictbot run`) against an
// in-process fake Slack (internal/slackfake, loopback only) that plays the
// chat adapter: each typed line becomes a delivery in one channel, and
// whatever the bot posts there is printed. The analysis services are the
// built-in simulator (package sim, started here) unless REPUTATION_URL /
// SANDBOX_URL are set.
//
// The shell reads the running app through a narrow surface (appView: its
// settings, its store, its recheck job and its commands' help) and drives
// the fake Slack and the simulator it starts itself. It takes the process's
// environment as a lookup function (main passes os.LookupEnv) and never
// reads it itself.
//
// The files: shell.go (entry, flags and options), env.go (state directory,
// services, fake Slack, configuration, the running bot), repl.go (the read
// loop and what a line does), press.go (feedback buttons), render.go (what
// the bot posted, as terminal text), term.go (the terminal: line editing and
// history).
package shell

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/commands"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/store"
)

// The shell's channel, and the person typing at first (an admin, so that
// every command works; `as @alice` acts as someone who is not).
const (
	// Channel is the shell's channel (#security) in the fake Slack.
	Channel          = "C0SECURITY"
	shellChannelName = "security"
	shellUser        = "U0YOU"
	shellUserName    = "you"
	// shellSimKey is the API key the built-in simulator gets (any works).
	shellSimKey = "shell-sim-key"
	// shellMaxFile bounds a file shared with `file <path>` (it is held in
	// memory by the fake Slack).
	shellMaxFile = 64 << 20
)

// shellHelp lists what the shell understands besides /scan.
const shellHelp = `Type a message to post it in #security; the bot scans the links in it.
  [label](https://…)        a link with a label, as Slack's composer makes one
                            (try [https://okta.com](https://login.example.net/))
  /scan …                   the slash command (its commands are listed below)
  file <path>               share a local file (it goes to the sandbox; an image's QR codes are read)
  show [N]                  print card N (default: the last) in full; later changes print as one line
  fp 1, fn 1, restore 1     press a button of line 1 of the last card
  fp 1 malicious @2         … reporting another category, on card #2
  mode [quiet|verbose|off]  show or set #security's mode (it starts as production's default)
  flip <url> [category [score]|clean]
                            make the simulator's next scan of <url> say something else
                            (a URL not posted yet is posted first; then recheck)
  recheck                   run the recheck job now (each link's next recheck brought forward)
  as [@name]                show or change who you are: @you (an admin), @alice or @bob (not admins)
  help                      this help
  quit                      leave (or Ctrl-D)
At the prompt: ←/→ Home/End Ctrl-A/E/K/U/W edit the line, ↑/↓ go through the history.
`

// ErrUsage marks an error in the shell's arguments: the CLI prints the
// command's usage after it.
var ErrUsage = errors.New("usage")

// Flags are the shell's command-line flags.
type Flags struct {
	// Profile is the built-in simulator's speed (--sim-profile).
	Profile sim.Profile
	// Wait bounds the wait for each line's cards and answers when the
	// input is not a terminal (--wait).
	Wait time.Duration
}

// ParseFlags parses the shell's flags, printing the usage on stderr for
// -h; -h gives flag.ErrHelp, a wrong flag or argument an error wrapping
// ErrUsage.
func ParseFlags(args []string, stderr io.Writer) (Flags, error) {
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
			return Flags{}, err
		}
		return Flags{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return Flags{}, fmt.Errorf("%w: shell takes no arguments, got %q", ErrUsage, fs.Args())
	}
	profile, err := simProfile(*profileName)
	if err != nil {
		return Flags{}, err
	}
	if *wait <= 0 {
		return Flags{}, fmt.Errorf("%w: --wait must be positive", ErrUsage)
	}
	return Flags{Profile: profile, Wait: *wait}, nil
}

// simProfile is the simulator profile --sim-profile names.
func simProfile(name string) (sim.Profile, error) {
	switch name {
	case "demo":
		return sim.DemoProfile(), nil
	case "quick":
		return sim.QuickProfile(), nil
	}
	return sim.Profile{}, fmt.Errorf("%w: --sim-profile: want demo or quick, got %q", ErrUsage, name)
}

// Options are the shell's hooks for tests, and the app's options. The zero
// value is production.
type Options struct {
	// App are the options of the app the shell wires (its hooks, its
	// version); the shell sets their Logger (shell.log in its state
	// directory).
	App app.Options
	// Started, when set, is told about the session before it reads its
	// first line.
	Started func(*Session)
}

// appView is what the shell reads of the running app (*app.App): its
// settings (the default channel mode, the recheck ages and schedule, the
// clean reaction), its store (the cards, the channel's mode, what is still
// in progress), its recheck job and its commands' help. The shell changes
// nothing else of the app; everything else goes through the fake Slack.
type appView interface {
	Config() config.Config
	Store() store.State
	Recheck() *scan.Recheck
	Registry() *commands.Registry
}

// Run is `verdictbot shell` once its flags are parsed: it starts the
// simulator (for each service the environment does not name), the fake
// Slack and the app, then reads lines from stdin until quit, its end or
// ctx's end.
// lookup is the process's environment (os.LookupEnv in main): it is read
// for VERDICTBOT_DATA_DIR, the services' settings, NO_COLOR and the
// history's directory (XDG_STATE_HOME, HOME, XDG_CACHE_HOME). At a
// terminal (stdin and stdout both one) the shell edits lines and keeps a
// history; otherwise it reads a script, each line's cards and answers
// complete (for at most flags.Wait) before the next line is read.
func Run(ctx context.Context, lookup func(name string) (string, bool), flags Flags, opts Options, stdin io.Reader, stdout, stderr io.Writer) error {
	procEnv := environment(lookup)
	env, err := openShellEnv(procEnv, flags.Profile)
	if err != nil {
		return err
	}
	defer env.close()
	fake, err := startShellSlack()
	if err != nil {
		return err
	}
	defer fake.Close()
	cfg, err := env.config(fake)
	if err != nil {
		return err
	}
	logger := app.NewLogger(env.logFile, "text", "info", cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey, cfg.SandboxAPIKey)
	o := opts.App
	// Against the built-in simulator, whose timings are known, status is
	// polled often: the card follows the simulator's answer within a
	// quarter of a second (the production schedule, which learns a
	// service's pace, first checks after a second and then backs off:
	// a 2 s demo analysis showed after 5.3 s).
	if env.repName == builtinSim && o.URLPolling == (reputation.Backoff{}) {
		o.URLPolling = reputation.Backoff{Initial: 250 * time.Millisecond, Factor: 1, Max: 250 * time.Millisecond}
	}
	if env.sbName == builtinSim && o.SandboxPolling == (sandbox.Backoff{}) {
		o.SandboxPolling = sandbox.Backoff{Initial: 250 * time.Millisecond, Factor: 1, Max: 250 * time.Millisecond}
	}
	bot, err := startShellBot(ctx, cfg, o, logger, fake, stderr)
	if err != nil {
		return err
	}
	defer bot.stop()

	services := fmt.Sprintf("URL service: %s; sandbox: %s", env.repName, env.sbName)
	inFile, inTTY := stdin.(*os.File)
	outFile, outTTY := stdout.(*os.File)
	interactive := inTTY && outTTY && isTerminal(inFile) && isTerminal(outFile)
	if !interactive {
		sh := newShell(stdout, fake, bot.app, env, flags.Wait, false, false)
		if env.keepLogs {
			services += "; logs in " + env.logFile.Name()
		}
		fmt.Fprint(stderr, sh.banner(services, ""))
		if opts.Started != nil {
			opts.Started(sh)
		}
		return sh.run(ctx, newPipeLines(stdin), bot)
	}

	// A terminal: a prompt, line editing and a history kept in the
	// user's state directory (in memory only when it cannot be written).
	histNote := ""
	path, err := historyPath(procEnv)
	if err == nil {
		histNote = "history in " + path
	}
	hist, herr := openHistory(path)
	if err != nil || herr != nil {
		histNote = "history not kept: " + errors.Join(err, herr).Error()
	}
	tl, err := openTerminal(inFile, outFile, "", hist)
	if err != nil {
		return err
	}
	defer tl.close()
	sh := newShell(tl, fake, bot.app, env, flags.Wait, true, procEnv.get("NO_COLOR") == "")
	sh.print(sh.banner(services, histNote))
	if opts.Started != nil {
		opts.Started(sh)
	}
	return sh.run(ctx, tl, bot)
}

// environment is the process's environment as the shell reads it: main's
// os.LookupEnv, a test's map.
type environment func(name string) (string, bool)

// get returns the variable's value, "" when it is unset.
func (e environment) get(name string) string {
	v, _ := e(name)
	return v
}

// Slack is the fake Slack the session drives: tests read what was posted
// in Channel through it.
func (s *Session) Slack() *slackfake.Server { return s.fake }

// banner is the shell's greeting: what it runs against, who you are and
// the channel's mode, what to try, and how to leave.
func (s *Session) banner(services, histNote string) string {
	mode := s.app.Config().ChannelMode
	var b strings.Builder
	fmt.Fprintf(&b, "verdictbot shell: the bot against a fake Slack, nothing leaves this machine; %s.\n", services)
	fmt.Fprintf(&b, "You are @%s (an admin) in #%s, mode %s as in production: %s (mode verbose: a card every time).\n",
		shellUserName, shellChannelName, mode, modeWords[mode])
	b.WriteString("Try: see https://login.phish.test/verify · /scan help · flip https://example.com/ then recheck · as @alice\n")
	b.WriteString("help lists every command; Ctrl-D leaves")
	if histNote != "" {
		b.WriteString("; " + histNote)
	}
	b.WriteString(".\n")
	return b.String()
}

// help is the shell's commands, then /scan's (the command registry's
// help, as the terminal shows Slack's text).
func (s *Session) help() string {
	return shellHelp + "\n" + s.app.Registry().TerminalHelp() + "\n"
}
