package main

import (
	"context"
	"fmt"
	"io"

	"github.com/verdictbot/verdictbot/app"
)

// runBot is `verdictbot run`: it reads the settings from env, wires the
// bot (app.New), connects to Slack over Socket Mode and serves until ctx
// ends or a fatal error.
func runBot(ctx context.Context, env environment, opts Options, args []string, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: run takes no arguments, got %q (settings come from the environment: verdictbot help run)", errUsage, args)
	}
	cfg, err := loadValidConfig(env, true) // every problem at once
	if err != nil {
		return err
	}
	o := opts.Options
	o.Logger, o.Version = app.LoggerFor(stderr, cfg), currentBuild().Version
	a, err := app.New(cfg, o)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
