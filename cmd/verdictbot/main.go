// Command verdictbot is a Slack app that scans the links and files posted in
// the channels it is in and answers in the thread with a verdict card.
//
// Subcommands: run | shell | check | sim | migrate | compact | events | healthcheck | config | version | help
// (cliCommands, cli.go, describes each). Only this package reads
// the environment and turns signals into a cancelled context.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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

// errUsage marks an error that should print the command's usage.
var errUsage = errors.New("usage")

// Main runs one subcommand and returns the process exit code. It is what
// main calls, and what tests call to drive the real program.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	switch name := args[0]; {
	case name == "help" || name == "-h" || name == "--help" || name == "-help":
		if len(args) == 1 {
			writeUsage(stdout)
			return 0
		}
		topic := args[1]
		if wantsHelp(args[1:2]) {
			topic = "help"
		}
		c := findCLICommand(topic)
		if c == nil {
			fmt.Fprint(stderr, unknownCommand(args[1]))
			return 2
		}
		writeCommandHelp(stdout, c)
		return 0
	case name == "--version" || name == "-v":
	case findCLICommand(name) == nil:
		fmt.Fprint(stderr, unknownCommand(name))
		return 2
	case wantsHelp(args[1:]):
		writeCommandHelp(stdout, findCLICommand(name))
		return 0
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
	case "events":
		err = runEventsCmd(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		err = runHealthcheck(ctx, args[1:], stdout)
	case "shell":
		err = runShell(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr) // its own exit statuses (check.go)
	case "sim":
		err = runSim(ctx, args[1:], stdout, stderr)
	case "config":
		err = runConfig(args[1:], stdout)
	case "version", "--version", "-v":
		if len(args) > 1 {
			err = fmt.Errorf("%w: version takes no arguments", errUsage)
		} else {
			fmt.Fprintf(stdout, "verdictbot %s (commit %s)\n", version, commit)
		}
	}
	if errors.Is(err, errUsage) {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), errUsage.Error()), ": ")
		if msg == "" {
			msg = "wrong arguments"
		}
		fmt.Fprintf(stderr, "verdictbot %s: %s\nUsage: %s\nRun \"verdictbot help %s\" for its flags and settings.\n",
			args[0], msg, findCLICommand(args[0]).synopsis, args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "verdictbot %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
