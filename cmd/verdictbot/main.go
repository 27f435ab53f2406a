// Command verdictbot is a Slack app that scans the links and files posted in
// the channels it is in and answers in the thread with a verdict card.
//
// Subcommands: run | shell | check | sim | migrate | compact | events | healthcheck | config | doctor | version | help
// (cliCommands, cli.go, describes each). Only this file reads the
// environment (Main hands it down as an environment; package config
// decides the settings from it) and turns signals into a cancelled context.
// Each subcommand is an adapter: `run` loads the settings and hands them to
// package app (app.New, Run, Close), which wires and runs the bot; `check`
// parses its flags and hands the arguments to package check; `doctor`
// hands the settings to package doctor and prints its checklist.
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

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/shell"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error that should print the command's usage.
var errUsage = errors.New("usage")

// environment is the process's environment as the subcommands read it:
// Main passes the real one (os.LookupEnv, os.Environ), tests a map. No
// other file of the program reads the environment.
type environment struct {
	// lookup is os.LookupEnv's.
	lookup func(name string) (string, bool)
	// environ is os.Environ's (NAME=value), for config.Unknown.
	environ func() []string
}

// processEnvironment is the real environment.
func processEnvironment() environment {
	return environment{lookup: os.LookupEnv, environ: os.Environ}
}

// get returns the variable's value, "" when it is unset.
func (e environment) get(name string) string {
	v, _ := e.lookup(name)
	return v
}

// Options are the program's hooks for tests: the app's (app.Options: the
// store's write fault, the resolver, the background jobs' delays) and the
// shell's. The zero value is production (Main passes it).
type Options struct {
	app.Options
	// ShellStarted, when set, is told about `verdictbot shell`'s session
	// before it reads its first line (shell.Options.Started).
	ShellStarted func(*shell.Session)
}

// Main runs one subcommand with the process's environment and returns
// the process exit code. It is what main calls.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(processEnvironment(), Options{}, args, stdin, stdout, stderr)
}

// runCLI is Main with the environment and the wiring's options given:
// tests drive the real program through it with a map and their hooks.
func runCLI(env environment, opts Options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
		writeCommandHelp(stdout, env, c)
		return 0
	case name == "--version" || name == "-v":
	case findCLICommand(name) == nil:
		fmt.Fprint(stderr, unknownCommand(name))
		return 2
	case wantsHelp(args[1:]):
		writeCommandHelp(stdout, env, findCLICommand(name))
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
		err = runBot(ctx, env, opts, args[1:], stderr)
	case "migrate":
		err = runMigrate(ctx, env, args[1:], stdout)
	case "compact":
		err = runCompact(env, args[1:], stdout, stderr)
	case "events":
		err = runEventsCmd(ctx, env, args[1:], stdout, stderr)
	case "healthcheck":
		err = runHealthcheck(ctx, env, args[1:], stdout)
	case "shell":
		err = runShell(ctx, env, opts, args[1:], stdin, stdout, stderr)
	case "check":
		return runCheck(ctx, env, opts, args[1:], stdout, stderr) // its own exit statuses (check.go)
	case "sim":
		err = runSim(ctx, env, args[1:], stdout, stderr)
	case "config":
		err = runConfig(env, args[1:], stdout)
	case "doctor":
		err = runDoctor(ctx, env, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		if len(args) > 1 {
			err = fmt.Errorf("%w: version takes no arguments", errUsage)
		} else {
			fmt.Fprintln(stdout, currentBuild())
		}
	}
	if errors.Is(err, errUsage) || errors.Is(err, shell.ErrUsage) {
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
