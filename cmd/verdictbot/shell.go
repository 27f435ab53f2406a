package main

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
	"github.com/verdictbot/verdictbot/sim"
)

// `verdictbot shell` is a terminal chat with the bot. It runs the real
// `run` wiring (app.New and Run: the same pipeline, store and commands) against an
// in-process fake Slack (internal/slackfake, loopback only) that plays the
// chat adapter: each typed line becomes a delivery in one channel, and
// whatever the bot posts there is printed. The analysis services are the
// built-in simulator unless REPUTATION_URL / SANDBOX_URL are set.
//
// The files: shell.go (entry and flags), shell_env.go (state directory,
// services, fake Slack, configuration, the running bot), shell_repl.go
// (the read loop and what a line does), shell_press.go (feedback buttons),
// shell_render.go (what the bot posted, as terminal text).

// The shell's channel, and the person typing at first (an admin, so that
// every command works; `as @alice` acts as someone who is not).
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

// shellHelp lists what the shell understands besides /scan.
const shellHelp = `Type a message to post it in #security; the bot scans the links in it.
  /scan …                   the slash command (its commands are listed below)
  file <path>               share a local file (it goes to the sandbox)
  show [N]                  print card N (default: the last) in full; later changes print as one line
  fp 1, fn 1, restore 1     press a button of line 1 of the last card
  fp 1 malicious @2         … reporting another category, on card #2
  mode [quiet|verbose|off]  show or set #security's mode (it starts as production's default)
  flip <url> [category [score]|clean]
                            make the simulator's next scan of <url> say something else
  recheck                   run the recheck job now (each link's next recheck brought forward)
  as [@name]                show or change who you are: @you (an admin), @alice or @bob (not admins)
  help                      this help
  quit                      leave (or Ctrl-D)
At the prompt: ←/→ Home/End Ctrl-A/E/K/U/W edit the line, ↑/↓ go through the history.
`

// shellFlags are the shell's command-line flags.
type shellFlags struct {
	profile sim.Profile
	wait    time.Duration
}

// parseShellFlags parses the shell's flags; -h gives flag.ErrHelp.
func parseShellFlags(args []string, stderr io.Writer) (shellFlags, error) {
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
			return shellFlags{}, err
		}
		return shellFlags{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return shellFlags{}, fmt.Errorf("%w: shell takes no arguments, got %q", errUsage, fs.Args())
	}
	profile, err := simProfile(*profileName)
	if err != nil {
		return shellFlags{}, err
	}
	if *wait <= 0 {
		return shellFlags{}, fmt.Errorf("%w: --wait must be positive", errUsage)
	}
	return shellFlags{profile: profile, wait: *wait}, nil
}

// runShell is `verdictbot shell`.
func runShell(ctx context.Context, procEnv environment, opts Options, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags, err := parseShellFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	env, err := openShellEnv(procEnv, flags.profile)
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
	bot, err := startShellBot(ctx, cfg, opts, logger, fake, stderr)
	if err != nil {
		return err
	}
	defer bot.stop()

	services := fmt.Sprintf("URL service: %s; sandbox: %s", env.repName, env.sbName)
	inFile, inTTY := stdin.(*os.File)
	outFile, outTTY := stdout.(*os.File)
	interactive := inTTY && outTTY && isTerminal(inFile) && isTerminal(outFile)
	if !interactive {
		sh := newShell(stdout, fake, bot.app, env, flags.wait, false, false)
		if env.keepLogs {
			services += "; logs in " + env.logFile.Name()
		}
		fmt.Fprint(stderr, sh.banner(services, ""))
		if opts.ShellStarted != nil {
			opts.ShellStarted(sh)
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
	sh := newShell(tl, fake, bot.app, env, flags.wait, true, procEnv.get("NO_COLOR") == "")
	sh.print(sh.banner(services, histNote))
	if opts.ShellStarted != nil {
		opts.ShellStarted(sh)
	}
	return sh.run(ctx, tl, bot)
}

// banner is the shell's greeting: what it runs against, who you are and
// the channel's mode, what to try, and how to leave.
func (s *shell) banner(services, histNote string) string {
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
func (s *shell) help() string {
	return shellHelp + "\n" + s.app.Registry().TerminalHelp() + "\n"
}
