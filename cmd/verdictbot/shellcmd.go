package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/verdictbot/verdictbot/shell"
)

// runShell is `verdictbot shell`: package shell parses its flags and runs
// it with the environment's lookup, the app's options (the version
// included) and the test hook.
func runShell(ctx context.Context, procEnv environment, opts Options, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags, err := shell.ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	o := shell.Options{App: opts.Options, Started: opts.ShellStarted}
	o.App.Version = currentBuild().Version
	return shell.Run(ctx, procEnv.lookup, flags, o, stdin, stdout, stderr)
}
