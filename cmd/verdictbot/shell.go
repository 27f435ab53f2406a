package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

// `verdictbot shell` is a terminal chat with the bot. It runs the real
// `run` wiring (serve: the same pipeline, store and commands) against an
// in-process fake Slack (internal/slackfake, loopback only) that plays the
// chat adapter: each typed line becomes a delivery in one channel, and
// whatever the bot posts there is printed. The analysis services are the
// built-in simulator unless REPUTATION_URL / SANDBOX_URL are set.
//
// The files: shell.go (entry and flags), shell_env.go (state directory,
// services, fake Slack, configuration, the running bot), shell_repl.go
// (the read loop and what a line does), shell_press.go (feedback buttons),
// shell_render.go (what the bot posted, as terminal text).

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

const shellHelp = `Type a message to post it in #security; the bot scans the links in it.
  /scan …                  the slash command (/scan help lists what it does)
  file <path>              share a local file (it goes to the sandbox)
  fp 1, fn 1, restore 1    press a button of line 1 of the last card
  fp 1 malicious @2        … reporting another category, on card #2
  help                     this help
  quit                     leave (or Ctrl-D)
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
func runShell(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags, err := parseShellFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	env, err := openShellEnv(flags.profile)
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
	logger := newLogger(env.logFile, "text", "info", cfg.SlackBotToken, cfg.SlackAppToken, cfg.ReputationAPIKey, cfg.SandboxAPIKey)
	bot, err := startShellBot(ctx, cfg, logger, fake, stderr)
	if err != nil {
		return err
	}
	defer bot.stop()

	sh := &shell{out: stdout, fake: fake, db: bot.app.db, wait: flags.wait,
		interactive: isTerminal(stdin), color: isTerminal(stdout) && os.Getenv("NO_COLOR") == "",
		shown: map[string]*shownMsg{}}
	services := fmt.Sprintf("URL service: %s; sandbox: %s", env.repName, env.sbName)
	if sh.interactive {
		sh.print("verdictbot shell: you are " + shellUser + " (an admin) in #" + shellChannelName + "; " + services + ".\n" +
			"Post a message with a link, try /scan help, share a file with file <path>; help for more, Ctrl-D to leave.\n")
	} else {
		if env.keepLogs {
			services += "; logs in " + env.logFile.Name()
		}
		fmt.Fprintf(stderr, "verdictbot shell: %s\n", services)
	}
	return sh.run(ctx, stdin, bot)
}
