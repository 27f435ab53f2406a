// Command verdictbot is a Slack app that scans the links and files posted in
// the channels it is in and answers in the thread with a verdict card.
//
// Subcommands: run | shell | check | sim | migrate | compact | healthcheck | version. Only this package reads
// the environment and turns signals into a cancelled context.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Set by the linker (see Makefile).
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error that should print the usage text.
var errUsage = errors.New("usage")

const usage = `verdictbot scans links and files shared in Slack channels.

Usage:
  verdictbot run                                  connect to Slack (settings from the environment)
  verdictbot shell                                chat with the bot in the terminal, no Slack needed (built-in
                                                  simulator unless REPUTATION_URL / SANDBOX_URL are set)
  verdictbot check [--json] [--sim] <url|file>…   scan links and files once, for scripts and CI; exit status
                                                  0 clean, 1 suspicious, 2 malicious, 3 could not check, 4 usage
  verdictbot sim [--addr 127.0.0.1:8099] [flags]   serve a simulator of both analysis services
  verdictbot migrate                              bring the state's schema up to date (PostgreSQL when
                                                  VERDICTBOT_DATABASE_URL is set, else the file) and exit
  verdictbot compact [--data-dir DIR]             shrink the store file to its live records (offline: stop
                                                  the bot first; keeps the original as verdictbot.db.precompact)
  verdictbot healthcheck [addr]                   exit 0 if /healthz answers (for container health checks)
  verdictbot version                              print version and commit

Run "verdictbot <command> -h" for the flags of a command.
`

// Main runs one subcommand and returns the process exit code. It is what
// main calls, and what tests call to drive the real program.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// The first SIGINT/SIGTERM cancels ctx: intake stops, work in flight
	// reaches the store, and the process exits within 10 s. A second one
	// exits at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-finished:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "verdictbot: second signal: exiting now")
			os.Exit(130)
		case <-finished:
		}
	}()

	var err error
	switch args[0] {
	case "run":
		err = runBot(ctx, args[1:], stderr)
	case "migrate":
		err = runMigrate(ctx, args[1:], stdout)
	case "compact":
		err = runCompact(args[1:], stdout, stderr)
	case "healthcheck":
		err = runHealthcheck(ctx, args[1:], stdout)
	case "shell":
		err = runShell(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr) // its own exit statuses (check.go)
	case "sim":
		err = runSim(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "verdictbot %s (commit %s)\n", version, commit)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "verdictbot: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, errUsage) {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "verdictbot %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
