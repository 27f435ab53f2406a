package app_test

import (
	"testing"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// The end-to-end tests of this package run the bot's real wiring
// (app.New, Run) against the fake Slack and the simulator, through the
// shared harness (package app/apptest). Their settings are a map
// loaded with package config, as `verdictbot run` loads the environment;
// nothing reads the process's environment, so they run side by side.

// The harness's people, channel and service key, by their short names.
const (
	e2eKey     = apptest.Key
	secChannel = apptest.Channel
	alice      = apptest.Alice
	adminUser  = apptest.Admin
	bob        = apptest.Bob
)

// harness is the shared harness with this package's own helpers on it
// (openHome, clickOn, postIn, …).
type harness struct{ *apptest.Harness }

// startBot is apptest.StartBot.
func startBot(t testing.TB, env map[string]string, simCfg sim.Config, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBot(t, env, simCfg, opts...)}
}

// startBotWith is apptest.StartBotWith.
func startBotWith(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBotWith(t, env, simCfg, withSandbox, opts...)}
}

// startBotSeeded is apptest.StartBotSeeded.
func startBotSeeded(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed apptest.Seed, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBotSeeded(t, env, simCfg, withSandbox, seed, opts...)}
}

// startBotOptions is apptest.StartBotOptions.
func startBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o app.Options, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBotOptions(t, env, simCfg, o, opts...)}
}

// startQuarantine is apptest.StartQuarantine.
func startQuarantine(t *testing.T, env map[string]string, tokenUser string) *harness {
	t.Helper()
	return &harness{apptest.StartQuarantine(t, env, tokenUser)}
}

// startQuarantineSim is startQuarantine with the simulator's settings.
func startQuarantineSim(t *testing.T, env map[string]string, tokenUser string, simCfg sim.Config) *harness {
	t.Helper()
	return &harness{apptest.StartQuarantineWith(t, env, simCfg, apptest.SeedQuarantine, tokenUser)}
}
