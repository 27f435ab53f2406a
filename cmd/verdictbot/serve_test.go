package main

import (
	"context"
	"log/slog"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/config"
)

// serve is what `run` does, for the tests: app.New with the logger log
// and the hooks o, attach (when set) given the wired app before it runs,
// Run until ctx ends, Close.
func serve(ctx context.Context, cfg config.Config, o Options, log *slog.Logger, attach func(*app.App)) error {
	ao := o.Options
	ao.Logger, ao.Version = log, version
	a, err := app.New(cfg, ao)
	if err != nil {
		return err
	}
	defer a.Close()
	if attach != nil {
		attach(a)
	}
	return a.Run(ctx)
}
