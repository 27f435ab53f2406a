package main

import (
	"fmt"
	"io"

	"github.com/verdictbot/verdictbot/config"
)

// runConfig is `verdictbot config`: every setting, its effective value and
// where it comes from, secrets masked (config.WriteListing); then the
// problems `run` would report, if any (exit 1).
func runConfig(env environment, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: config takes no arguments, got %q", errUsage, args)
	}
	cfg, err := loadValidConfig(env, true)
	config.WriteListing(stdout, cfg, env.lookup)
	return err
}

// loadValidConfig is the settings from env, checked (needSlack: for
// `run`): config.Load, config.Unknown and Validate, with every problem of
// the three in one error, one line each.
func loadValidConfig(env environment, needSlack bool) (config.Config, error) {
	cfg, loadErr := config.Load(env.lookup)
	return cfg, config.Join(loadErr, config.Unknown(env.environ()), cfg.Validate(needSlack))
}
